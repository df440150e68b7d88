// Package annotations turns a Service's load-balancer annotations into
// typed, validated settings, once, so the CLB and NLB controllers never read
// raw annotation strings. The annotation table (Registry) is the single
// source of truth for parsing, validation messages and docs/annotations.md.
package annotations

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Prefix is the current annotation prefix; a suffix such as "id" becomes
// service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id.
const Prefix = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-"

// LegacyPrefix is the older prefix the existing CCM still reads for every
// suffix; the current prefix wins when a Service carries both.
const LegacyPrefix = "service.beta.kubernetes.io/alicloud-loadbalancer-"

// Keys outside the prefix scheme (read verbatim, no legacy form).
const (
	// BackendTypeKey selects ecs (node) or eni (pod) backends.
	BackendTypeKey = "service.beta.kubernetes.io/backend-type"
	// ClassKey, when non-empty, hands the Service to another controller.
	ClassKey = "service.beta.kubernetes.io/class"
	// LoadBalancerTypeKey routes a Service to NLB when the
	// LoadBalancerTypeAnnotation feature gate is on.
	LoadBalancerTypeKey = Prefix + "type"
	// TunnelTypeKey, when present with any value, opts the Service out of CLB.
	TunnelTypeKey = Prefix + "tunnel-type"
)

// Key returns the current-prefix key of a suffix.
func Key(suffix string) string { return Prefix + suffix }

// LegacyKey returns the legacy-prefix key of a suffix.
func LegacyKey(suffix string) string { return LegacyPrefix + suffix }

// lookup finds the value of an annotation, preferring the current key over
// the legacy one, and reports the key the user actually wrote so messages
// can quote it.
func lookup(ann map[string]string, a *Annotation) (key, value string, ok bool) {
	if v, found := ann[a.Key]; found {
		return a.Key, v, true
	}
	if a.Legacy != "" {
		if v, found := ann[a.Legacy]; found {
			return a.Legacy, v, true
		}
	}
	return "", "", false
}

// Get returns the value of the annotation with the given suffix (or full
// key for the keys outside the prefix), honouring the legacy prefix, and
// the key it was read from.
func Get(svc *corev1.Service, suffixOrKey string) (key, value string, ok bool) {
	if svc == nil {
		return "", "", false
	}
	a := &Annotation{Key: suffixOrKey}
	if !strings.Contains(suffixOrKey, "/") {
		a = &Annotation{Key: Key(suffixOrKey), Legacy: LegacyKey(suffixOrKey)}
	}
	return lookup(svc.Annotations, a)
}
