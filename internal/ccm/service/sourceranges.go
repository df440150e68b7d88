package service

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Event reasons of loadBalancerSourceRanges, shared by CLB and NLB.
const (
	// EventInvalidSourceRanges reports elements of loadBalancerSourceRanges
	// that are not CIDR blocks; the cloud side is left exactly as it was.
	EventInvalidSourceRanges = "InvalidLoadBalancerSourceRanges"
	// EventSourceRangesIgnored reports source ranges the load balancer
	// cannot apply (a user access control list wins, or listeners are not
	// ours to change).
	EventSourceRangesIgnored = "LoadBalancerSourceRangesIgnored"
)

// SourceRangesAnnotation is the legacy form of spec.loadBalancerSourceRanges
// (comma-separated), read only when the spec field is empty, as
// k8s.io/cloud-provider's service helpers do.
const SourceRangesAnnotation = "service.beta.kubernetes.io/load-balancer-source-ranges"

// SourceRanges is a Service's parsed loadBalancerSourceRanges.
type SourceRanges struct {
	// Prefixes are the valid ranges, masked (10.0.0.1/8 → 10.0.0.0/8),
	// deduplicated and sorted.
	Prefixes []netip.Prefix
	// Invalid are the elements that are not CIDR blocks, as written.
	Invalid []string
}

// Empty reports that the Service restricts nothing (and nothing is invalid).
func (r SourceRanges) Empty() bool { return len(r.Prefixes) == 0 && len(r.Invalid) == 0 }

// Frozen reports that an invalid element keeps the cloud side unchanged:
// applying only the valid part could open the load balancer wider than the
// user meant (all elements invalid would mean no restriction at all).
func (r SourceRanges) Frozen() bool { return len(r.Invalid) > 0 }

// Warning is the event for the invalid elements, naming each.
func (r SourceRanges) Warning() Warning {
	return Warning{Reason: EventInvalidSourceRanges, Message: fmt.Sprintf(
		"loadBalancerSourceRanges: %s not a CIDR block (e.g. 10.0.0.0/8); the load balancer's access control is left as it is until fixed",
		strings.Join(quoteAll(r.Invalid), ", "))}
}

func quoteAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// Strings returns the prefixes in their canonical text form.
func (r SourceRanges) Strings() []string {
	out := make([]string, len(r.Prefixes))
	for i, p := range r.Prefixes {
		out[i] = p.String()
	}
	return out
}

// ParseSourceRanges reads spec.loadBalancerSourceRanges, else the legacy
// annotation. 0.0.0.0/0 alone means no restriction, as in Kubernetes.
func ParseSourceRanges(svc *corev1.Service) SourceRanges {
	raw := svc.Spec.LoadBalancerSourceRanges
	if len(raw) == 0 {
		if v := strings.TrimSpace(svc.Annotations[SourceRangesAnnotation]); v != "" {
			raw = strings.Split(v, ",")
		}
	}
	var out SourceRanges
	seen := map[netip.Prefix]bool{}
	for _, s := range raw {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			out.Invalid = append(out.Invalid, s)
			continue
		}
		p = p.Masked()
		if !seen[p] {
			seen[p] = true
			out.Prefixes = append(out.Prefixes, p)
		}
	}
	sort.Slice(out.Prefixes, func(i, j int) bool {
		a, b := out.Prefixes[i], out.Prefixes[j]
		if a.Addr() != b.Addr() {
			return a.Addr().Less(b.Addr())
		}
		return a.Bits() < b.Bits()
	})
	if len(out.Prefixes) == 1 && len(out.Invalid) == 0 && out.Prefixes[0].Bits() == 0 && out.Prefixes[0].Addr().Is4() {
		out.Prefixes = nil
	}
	return out
}
