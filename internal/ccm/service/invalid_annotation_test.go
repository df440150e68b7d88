package service_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// TestInvalidAnnotation: an invalid value gets a Warning event naming the
// key, the value and what is accepted, and no cloud call for that
// Service; a valid Service created alongside is served; fixing the value
// lets the first one through.
func TestInvalidAnnotation(t *testing.T) {
	seq := lastSeq()
	bad := createService(t, svcSpec{name: "invalid", ports: []int32{80}, annotations: map[string]string{
		annotations.Key("scheduler"):               "fastest",
		annotations.LegacyKey("healthy-threshold"): "42",
	}})
	createService(t, svcSpec{name: "valid-neighbour", ports: []int32{80}})
	ev := waitEvent(t, "invalid", "InvalidAnnotation", "fastest")
	for _, want := range []string{annotations.Key("scheduler"), "wrr, rr", annotations.LegacyKey("healthy-threshold"), `"42"`, "2 to 10"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("event %q lacks %q", ev.Message, want)
		}
	}
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type %s", ev.Type)
	}
	waitIngress(t, "valid-neighbour", 30*time.Second)
	defName := naming.DefaultLBName(bad)
	for _, r := range cloud.Requests(gateway.RequestFilter{Product: "slb", AfterSeq: seq}) {
		if strings.Contains(r.Params["LoadBalancerName"]+r.Params["Tags"], defName) && r.Action != "DescribeLoadBalancers" || r.Action == "CreateLoadBalancer" && r.Params["LoadBalancerName"] == defName {
			t.Errorf("cloud call %s for the invalid Service", r.Action)
		}
	}
	if s := getService(t, "invalid"); len(s.Finalizers) != 0 || len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("invalid Service got finalizers %v status %v", s.Finalizers, s.Status.LoadBalancer.Ingress)
	}
	updateService(t, "invalid", func(s *corev1.Service) {
		s.Annotations[annotations.Key("scheduler")] = "wrr"
		s.Annotations[annotations.LegacyKey("healthy-threshold")] = "4"
	})
	svc := waitIngress(t, "invalid", 30*time.Second)
	for _, l := range listeners(t, lbID(svc)) {
		if l.Scheduler != "wrr" || l.TCPListenerConfig.HealthyThreshold != 4 {
			t.Errorf("listener scheduler %s threshold %d, want wrr and 4", l.Scheduler, l.TCPListenerConfig.HealthyThreshold)
		}
	}
	// An immutable attribute changed on the existing LB is reported, not applied.
	updateService(t, "invalid", func(s *corev1.Service) { s.Annotations[annotations.Key("address-type")] = "intranet" })
	waitEvent(t, "invalid", "ImmutableAttributeChanged", "address-type")
	deleteService(t, "invalid")
	deleteService(t, "valid-neighbour")
}
