package service_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// TestNotAppliedAnnotationWarns: a Service that sets backend-ip-version to
// ipv6 still gets its load balancer (IPv4 backends), plus one Warning
// AnnotationNotApplied naming the key and value; setting it back to the
// default stops the warnings.
func TestNotAppliedAnnotationWarns(t *testing.T) {
	t.Parallel()
	const name = "not-applied"
	createService(t, svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{
		annotations.Key("backend-ip-version"): "ipv6",
	}})
	defer deleteService(t, name)
	waitIngress(t, name, 30*time.Second)
	e := waitEvent(t, name, annotations.EventNotApplied, annotations.Key("backend-ip-version")+`: "ipv6" is not applied`)
	if e.Type != corev1.EventTypeWarning || e.Count != 1 {
		t.Errorf("event %s %q count %d", e.Type, e.Message, e.Count)
	}
	updateService(t, name, func(s *corev1.Service) {
		s.Annotations[annotations.Key("backend-ip-version")] = "ipv4"
	})
	waitIngress(t, name, 30*time.Second)
	waitEvent(t, name, "EnsuredLoadBalancer", "")
	for _, e := range events(t, name) {
		if e.Reason == annotations.EventNotApplied && (e.Count != 1 || !strings.Contains(e.Message, "ipv6")) {
			t.Errorf("AnnotationNotApplied again after the fix: %q count %d", e.Message, e.Count)
		}
	}
}
