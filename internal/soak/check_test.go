package soak

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/ecs"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/slb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

// The checks on hand-made states: each must report what is wrong with the
// evidence, and nothing on a state that is right.

func readyNode(name, cidr, instance string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{PodCIDR: cidr, ProviderID: "cn-hangzhou." + instance},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func newChecker(st *cloudState) *checker {
	return &checker{e: &env{table: "vtb-1"}, cloud: st, checked: Counts{}, owners: map[string]string{"agone": "soak-a/gone"}}
}

func wantViolations(t *testing.T, c *checker, want ...string) {
	t.Helper()
	if len(c.out) != len(want) {
		t.Fatalf("violations %v, want %d", c.out, len(want))
	}
	for i, w := range want {
		if s := c.out[i].String(); !strings.Contains(s, w) {
			t.Errorf("violation %q does not say %q", s, w)
		}
	}
}

func TestCheckRoutes(t *testing.T) {
	nodes := []*corev1.Node{readyNode("n1", "10.128.1.0/24", "i-1"), readyNode("n2", "10.128.2.0/24", "i-2"), readyNode("n3", "10.128.3.0/24", "i-3")}
	st := &cloudState{VPC: vpc.State{RouteEntries: map[string]*vpc.RouteEntry{
		"r1": {TableID: "vtb-1", DestCIDR: "10.128.1.0/24", NextHopID: "i-1"},
		"r2": {TableID: "vtb-1", DestCIDR: "10.128.2.0/24", NextHopID: "i-9"},
		"r4": {TableID: "vtb-1", DestCIDR: "10.128.4.0/24", NextHopID: "i-4"},
		// Outside the cluster CIDR (a sentinel) and in another table: not ours.
		"rs": {TableID: "vtb-1", DestCIDR: "172.31.0.0/24", NextHopID: "i-vm"},
		"rt": {TableID: "vtb-2", DestCIDR: "10.128.5.0/24", NextHopID: "i-5"},
	}}}
	c := newChecker(st)
	c.routes(nodes)
	wantViolations(t, c, "10.128.2.0/24: next hops [i-9], want [i-2]", "10.128.3.0/24: next hops [], want [i-3]", "10.128.4.0/24: route to [i-4], but no Node")
	c = newChecker(&cloudState{VPC: vpc.State{RouteEntries: map[string]*vpc.RouteEntry{
		"r1": {TableID: "vtb-1", DestCIDR: "10.128.1.0/24", NextHopID: "i-1"},
	}}})
	c.routes(nodes[:1])
	wantViolations(t, c)
}

func TestCheckLeaks(t *testing.T) {
	mine := func(name string) []api.Tag {
		return []api.Tag{{Key: naming.TagKeyCluster, Value: clusterID}, {Key: naming.TagKeyDefaultName, Value: name}}
	}
	st := &cloudState{
		SLB: slb.State{
			LoadBalancers: map[string]*slb.LoadBalancer{"lb-live": {Tags: mine("alive")}, "lb-other": {Tags: []api.Tag{{Key: naming.TagKeyDefaultName, Value: "agone"}}}},
			ACLs:          map[string]*slb.ACL{"acl-1": {Tags: mine("agone")}},
		},
		ECS: ecs.State{SecurityGroups: map[string]*ecs.SecurityGroup{"sg-1": {Tags: mine("aunknown")}}},
	}
	c := newChecker(st)
	c.leaks(map[string]string{"alive": "soak-a/alive"})
	wantViolations(t, c, "access control list acl-1: tagged kubernetes.do.not.delete=agone (cluster soak): left by Service soak-a/gone, deleted",
		"security group sg-1: tagged kubernetes.do.not.delete=aunknown (cluster soak): left by a Service the soak did not create")
}

func TestCheckService(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "soak-a", UID: "1234", Labels: map[string]string{naming.LabelLoadBalancerID: "lb-1"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080}, {Port: 53, Protocol: corev1.ProtocolUDP, NodePort: 30053},
		}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}},
	}
	tags := []api.Tag{{Key: naming.TagKeyCluster, Value: clusterID}, {Key: naming.TagKeyDefaultName, Value: naming.DefaultLBName(svc)}}
	nodes := []*corev1.Node{readyNode("n1", "10.128.1.0/24", "i-1"), readyNode("n2", "10.128.2.0/24", "i-2")}
	st := &cloudState{SLB: slb.State{
		LoadBalancers: map[string]*slb.LoadBalancer{"lb-1": {Tags: tags, Listeners: map[string]*slb.Listener{
			"tcp:80":  {Port: 80, Protocol: "tcp", VServerGroupID: "rsp-80"},
			"tcp:53":  {Port: 53, Protocol: "tcp", VServerGroupID: "rsp-53"},
			"tcp:443": {Port: 443, Protocol: "tcp"},
		}}},
		VServerGroups: map[string]*slb.VServerGroup{
			"rsp-80": {Backends: []slb.Backend{{ServerID: "i-1", Port: 30080}, {ServerID: "i-2", Port: 30080}}},
			"rsp-53": {Backends: []slb.Backend{{ServerID: "i-1", Port: 30053}}},
		},
	}}
	c := newChecker(st)
	c.service(svc, nodes, nil)
	wantViolations(t, c, "has a tcp listener on 443, which is no Service port", "listener 53 of lb-1 is tcp, want udp",
		"port 53 on lb-1: backends [i-1:30053], want [i-1:30053 i-2:30053]")
	// A second load balancer with the Service's tag is a duplicate.
	st.SLB.LoadBalancers["lb-2"] = &slb.LoadBalancer{Tags: tags}
	c = newChecker(st)
	c.service(svc, nodes, nil)
	wantViolations(t, c, "2 load balancers tagged")
}

func TestCheckPanics(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "ccm.log")
	body := "I1126 fine\nE1126 runtime.go:79] Observed a panic: boom\npanic: boom [recovered]\n"
	if err := os.WriteFile(log, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newChecker(&cloudState{})
	c.panics([]string{log})
	wantViolations(t, c, "ccm.log:2: E1126 runtime.go:79] Observed a panic", "ccm.log:3: panic: boom")
}
