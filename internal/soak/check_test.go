package soak

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestCheckOnlyLeader: writers may change only across an end of the
// previous writer's process.
func TestCheckOnlyLeader(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	w := func(seq uint64, s float64, replica string) write {
		return write{seq: seq, at: at(s), replica: replica, action: "slb CreateLoadBalancer"}
	}
	for _, tc := range []struct {
		name string
		in   replicaWrites
		want []string
	}{
		{"one writer", replicaWrites{writes: []write{w(1, 0, "a"), w(2, 1, "a")}}, nil},
		{"handover across a kill", replicaWrites{writes: []write{w(1, 0, "a"), w(2, 20, "b"), w(3, 21, "b")}, ends: map[string][]time.Time{"a": {at(1)}}}, nil},
		{"a call in flight at the kill arrives after it", replicaWrites{writes: []write{w(1, 5.3, "a"), w(2, 20, "b")}, ends: map[string][]time.Time{"a": {at(5)}}}, nil},
		{"split brain: both write, nobody ended", replicaWrites{writes: []write{w(1, 0, "a"), w(2, 1, "b"), w(3, 2, "a")}},
			[]string{"replica b: wrote slb CreateLoadBalancer at 12:00:01.000 (call 2) after replica a wrote", "replica a: wrote slb CreateLoadBalancer at 12:00:02.000 (call 3) after replica b wrote"}},
		{"an end long before the last write does not count", replicaWrites{writes: []write{w(1, 30, "a"), w(2, 40, "b")}, ends: map[string][]time.Time{"a": {at(10)}}},
			[]string{"replica b: wrote"}},
		{"the log dropped calls", replicaWrites{overflowed: true}, []string{"request log dropped calls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(&cloudState{})
			c.onlyLeader(tc.in)
			wantViolations(t, c, tc.want...)
		})
	}
}

// TestCheckSourceRanges: a listener must admit the probes inside the
// Service's ranges and no other, by its CLB access control list or its
// NLB's security groups.
func TestCheckSourceRanges(t *testing.T) {
	st := &cloudState{
		SLB: slb.State{ACLs: map[string]*slb.ACL{
			"acl-a":  {ID: "acl-a", Entries: []slb.ACLEntry{{Entry: "10.0.0.0/8"}}},
			"acl-ab": {ID: "acl-ab", Entries: []slb.ACLEntry{{Entry: "10.0.0.0/8"}, {Entry: "172.16.0.0/12"}}},
		}},
		ECS: ecs.State{SecurityGroups: map[string]*ecs.SecurityGroup{
			"sg-a": {ID: "sg-a", Rules: []*ecs.Rule{
				{Direction: "ingress", Policy: "accept", Priority: "1", SourceCidrIP: "10.0.0.0/8"},
				{Direction: "ingress", Policy: "drop", Priority: "100", SourceCidrIP: "0.0.0.0/0"},
			}},
			"sg-open": {ID: "sg-open", Rules: []*ecs.Rule{{Direction: "ingress", Policy: "accept", Priority: "100", SourceCidrIP: "0.0.0.0/0"}}},
		}},
	}
	for _, tc := range []struct {
		name   string
		ranges []string
		clb    map[string]string
		sgs    []string
		want   []string
	}{
		{"CLB no ranges, access control off", nil, map[string]string{"AclStatus": "off"}, nil, nil},
		{"CLB white list of the ranges", []string{"10.0.0.0/8"}, map[string]string{"AclStatus": "on", "AclType": "white", "AclId": "acl-a"}, nil, nil},
		{"CLB list still has a removed range", []string{"10.0.0.0/8"}, map[string]string{"AclStatus": "on", "AclType": "white", "AclId": "acl-ab"}, nil,
			[]string{"admits 172.16.5.6: true (white list acl-ab, listed: true), want false"}},
		{"CLB ranges but access control off", []string{"10.0.0.0/8"}, map[string]string{"AclStatus": "off"}, nil,
			[]string{"admits 172.16.5.6: true", "admits 203.0.113.9: true"}},
		{"CLB ranges removed, list still on", nil, map[string]string{"AclStatus": "on", "AclType": "white", "AclId": "acl-a"}, nil,
			[]string{"admits 172.16.5.6: false", "admits 203.0.113.9: false"}},
		{"NLB group of the ranges", []string{"10.0.0.0/8"}, nil, []string{"sg-a"}, nil},
		{"NLB no ranges, no group", nil, nil, nil, nil},
		{"NLB ranges but no group", []string{"10.0.0.0/8"}, nil, []string{}, []string{"admits 172.16.5.6: true (no security group)", "admits 203.0.113.9: true"}},
		{"NLB drop at the same priority wins", []string{"10.0.0.0/8"}, nil, []string{"sg-a", "sg-open"}, nil},
		{"NLB ranges removed, group still joined", nil, nil, []string{"sg-a"}, []string{"admits 172.16.5.6: false", "admits 203.0.113.9: false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(st)
			l := listenerView{protocol: "tcp"}
			if tc.clb != nil {
				l.admits = c.clbACL(tc.clb)
			} else {
				l.admits = c.securityGroups(tc.sgs)
			}
			c.sourceRanges("soak-a/web", "lb-1", 80, tc.ranges, l)
			wantViolations(t, c, tc.want...)
		})
	}
}
