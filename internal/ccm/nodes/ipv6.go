package nodes

import (
	"net/netip"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
)

// SetDualStack turns on the IPv6DualStack feature gate: Nodes then get
// their primary ENI's IPv6 addresses as InternalIPs, after the IPv4 ones.
// Off by default, as in the existing CCM: an IPv4 cluster on dual-stack
// instances would otherwise see IPv6 InternalIPs (and dual-stack
// hostNetwork pod IPs) it never asked for.
func (s *Instances) SetDualStack(on bool) { s.ipv6.Store(on) }

func (s *Instances) dualStack() bool { return s.ipv6.Load() }

// primaryIPv6s are an ENI's IPv6 addresses, canonical and in the cloud's
// order; anything that does not parse as IPv6 is skipped.
func primaryIPv6s(ni ecs.NetworkInterface) []string {
	var out []string
	for _, s := range ni.Ipv6Sets.Ipv6Set {
		a, err := netip.ParseAddr(s.Ipv6Address)
		if err != nil || !a.Is6() || a.Is4In6() {
			continue
		}
		if v := a.String(); !contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// canonicalIP writes an address as the index keys it: IPv6 in its
// canonical form (a kubelet's --node-ip may spell it otherwise), anything
// else trimmed and unchanged.
func canonicalIP(ip string) string {
	ip = strings.TrimSpace(ip)
	if a, err := netip.ParseAddr(ip); err == nil && a.Is6() && !a.Is4In6() {
		return a.String()
	}
	return ip
}
