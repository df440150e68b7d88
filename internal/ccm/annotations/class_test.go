package annotations_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

func TestClass(t *testing.T) {
	other := "example.com/lb"
	withClass := func(class *string, ann map[string]string) *corev1.Service {
		s := service(ann)
		s.Spec.LoadBalancerClass = class
		return s
	}
	nodePort := service(nil)
	nodePort.Spec.Type = corev1.ServiceTypeNodePort
	nlb := annotations.NLBClass
	type D = annotations.Decision
	none, clb, nlbOwner := annotations.OwnerNone, annotations.OwnerCLB, annotations.OwnerNLB
	cases := []struct {
		name string
		svc  *corev1.Service
		gate bool
		want D
	}{
		{"nil", nil, false, D{Owner: none, Explicit: true}},
		{"not a load balancer", nodePort, true, D{Owner: none, Explicit: true}},
		{"plain: CLB by default only", service(nil), false, D{Owner: clb}},
		{"plain, gate on: the absent type chose CLB", service(nil), true, D{Owner: clb, Explicit: true}},
		{"nlb class", withClass(&nlb, nil), false, D{Owner: nlbOwner, Explicit: true}},
		{"nlb class wins over opt-outs", withClass(&nlb, map[string]string{annotations.ClassKey: "x", annotations.TunnelTypeKey: ""}), false, D{Owner: nlbOwner, Explicit: true}},
		{"other class", withClass(&other, nil), true, D{Owner: none, Explicit: true}},
		{"class annotation", service(map[string]string{annotations.ClassKey: "alb"}), false, D{Owner: none}},
		{"empty class annotation", service(map[string]string{annotations.ClassKey: ""}), false, D{Owner: clb}},
		{"tunnel-type even empty", service(map[string]string{annotations.TunnelTypeKey: ""}), false, D{Owner: none}},
		// A type the gate does not let us serve is never taken for CLB.
		{"type nlb, gate off", service(map[string]string{annotations.LoadBalancerTypeKey: "nlb"}), false, D{Owner: none, Unserved: "nlb"}},
		{"type nlb, gate on", service(map[string]string{annotations.LoadBalancerTypeKey: "NLB"}), true, D{Owner: nlbOwner, Explicit: true}},
		{"type other, gate on", service(map[string]string{annotations.LoadBalancerTypeKey: "alb"}), true, D{Owner: none, Unserved: "alb"}},
		{"type empty, gate on", service(map[string]string{annotations.LoadBalancerTypeKey: ""}), true, D{Owner: clb, Explicit: true}},
		{"type other, gate off", service(map[string]string{annotations.LoadBalancerTypeKey: "alb"}), false, D{Owner: none, Unserved: "alb"}},
		{"type clb, gate off", service(map[string]string{annotations.LoadBalancerTypeKey: "clb"}), false, D{Owner: clb}},
		{"type clb, gate on", service(map[string]string{annotations.LoadBalancerTypeKey: "CLB"}), true, D{Owner: clb, Explicit: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := annotations.Decide(tc.svc, tc.gate); got != tc.want {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
			}
			if got := annotations.Class(tc.svc, tc.gate); got != tc.want.Owner {
				t.Errorf("Class = %v, want %v", got, tc.want.Owner)
			}
		})
	}
}

func TestWantsLoadBalancer(t *testing.T) {
	deleting := service(nil)
	deleting.DeletionTimestamp = &metav1.Time{}
	cluster := service(nil)
	cluster.Spec.Type = corev1.ServiceTypeClusterIP
	for name, tc := range map[string]struct {
		svc  *corev1.Service
		want bool
	}{"live": {service(nil), true}, "deleting": {deleting, false}, "type changed": {cluster, false}, "nil": {nil, false}} {
		if got := annotations.WantsLoadBalancer(tc.svc); got != tc.want {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func TestDefaultBackendType(t *testing.T) {
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == "SERVICE_FORCE_BACKEND_ENI" && v != "" {
				return v, true
			}
			return "", false
		}
	}
	cases := []struct {
		env, cfg string
		want     annotations.BackendType
	}{
		{"", "", annotations.BackendECS},
		{"", "eni", annotations.BackendENI},
		{"", "ECS", annotations.BackendECS},
		{"true", "ecs", annotations.BackendENI},
		{"false", "eni", annotations.BackendECS},
		{"maybe", "eni", annotations.BackendENI},
	}
	for _, tc := range cases {
		if got := annotations.DefaultBackendType(env(tc.env), tc.cfg); got != tc.want {
			t.Errorf("env %q cfg %q: %q, want %q", tc.env, tc.cfg, got, tc.want)
		}
	}
	if got := annotations.DefaultBackendType(nil, ""); got != annotations.BackendECS {
		t.Error(got)
	}
}

func TestImmutableChanges(t *testing.T) {
	current := annotations.CloudLBAttributes{
		AddressType: "internet", NetworkType: "vpc", VSwitchID: "vsw-1", MasterZoneID: "z1", SlaveZoneID: "z2",
		IPVersion: "ipv4", ResourceGroupID: "rg-1", Address: "10.0.0.1",
	}
	cases := []struct {
		name string
		nlb  bool
		ann  map[string]string
		want []annotations.Change
	}{
		{"nothing set", false, nil, nil},
		{"all equal (case, ip form)", false, map[string]string{
			pre + "address-type": "INTERNET", pre + "network-type": "vpc", pre + "vswitch-id": "vsw-1", pre + "master-zoneid": "z1",
			pre + "slave-zoneid": "z2", pre + "ip-version": "ipv4", pre + "resource-group-id": "rg-1", pre + "ip": "10.0.0.1",
		}, nil},
		{"every attribute differs", false, map[string]string{
			pre + "address-type": "intranet", pre + "network-type": "classic", legacy + "vswitch-id": "vsw-2", pre + "master-zoneid": "z3",
			pre + "slave-zoneid": "z4", pre + "ip-version": "ipv6", pre + "resource-group-id": "rg-2", pre + "ip": "10.0.0.2",
		}, []annotations.Change{
			{Key: pre + "address-type", Current: "internet", Desired: "intranet"},
			{Key: pre + "network-type", Current: "vpc", Desired: "classic"},
			{Key: legacy + "vswitch-id", Current: "vsw-1", Desired: "vsw-2"},
			{Key: pre + "master-zoneid", Current: "z1", Desired: "z3"},
			{Key: pre + "slave-zoneid", Current: "z2", Desired: "z4"},
			{Key: pre + "ip-version", Current: "ipv4", Desired: "ipv6"},
			{Key: pre + "resource-group-id", Current: "rg-1", Desired: "rg-2"},
			{Key: pre + "ip", Current: "10.0.0.1", Desired: "10.0.0.2"},
		}},
		{"nlb: address type is mutable, ip version is not", true, map[string]string{
			pre + "id": "nlb-1", pre + "address-type": "intranet", pre + "ip-version": "DualStack",
		}, []annotations.Change{{Key: pre + "ip-version", Current: "ipv4", Desired: "DualStack"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := service(tc.ann)
			if tc.nlb {
				svc = nlbService(tc.ann)
			}
			s, err := annotations.Parse(svc, annotations.Defaults{})
			if err != nil {
				t.Fatal(err)
			}
			got := annotations.ImmutableChanges(current, s)
			if len(got) != len(tc.want) {
				t.Fatalf("changes = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("change %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	unknown := annotations.CloudLBAttributes{}
	s, _ := annotations.Parse(service(map[string]string{pre + "address-type": "intranet"}), annotations.Defaults{})
	if got := annotations.ImmutableChanges(unknown, s); len(got) != 0 {
		t.Errorf("unknown current values reported: %v", got)
	}
	if annotations.ImmutableChanges(current, nil) != nil {
		t.Error("nil settings")
	}
	c := annotations.Change{Key: "k", Current: "a", Desired: "b"}
	if msg := c.String(); msg != `k is "b" but the load balancer has "a", which cannot change after creation (recreate the Service, or remove the annotation)` {
		t.Error(msg)
	}
}
