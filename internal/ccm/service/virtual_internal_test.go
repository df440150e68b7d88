package service

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// vNode is a Node for the virtual-kubelet tables: an ECS Node (Ready, with
// a providerID) or, when virtual, a virtual-kubelet Node with neither.
func vNode(name string, virtual bool, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if virtual {
		n.Labels[LabelVirtualKubelet] = ValueVirtualKubelet
	} else {
		n.Spec.ProviderID = "cn-hangzhou.i-" + name
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}

// TestComputeBackendsVirtualNodes: with ecs backends, the ready pods on
// virtual Nodes join the ECS Nodes as pod targets on their target port,
// weighing as one endpoint each, whatever the virtual Node's readiness;
// the Node-level exclusions that concern pods still apply.
func TestComputeBackendsVirtualNodes(t *testing.T) {
	ep := func(ip, node string, ready bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(node), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "pod-" + ip}}
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns"},
		Ports:      []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{
			ep("10.0.0.1", "a", true), ep("10.0.0.2", "a", true), ep("10.0.0.3", "b", true),
			ep("10.1.0.1", "vk", true), ep("10.1.0.2", "vk", true), ep("10.1.0.3", "vk", false),
		},
	}
	notReady := func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	}
	excludedLB := func(n *corev1.Node) { n.Labels[LabelExcludeFromLB] = "true" }
	ecs := func(name string, w int) Target {
		return Target{NodeName: name, InstanceID: "i-" + name, Port: 30080, Weight: w}
	}
	pod := func(ip string, w int) Target {
		return Target{NodeName: "vk", IP: ip, Port: 8080, Weight: w, Pod: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "pod-" + ip}}
	}
	for _, tc := range []struct {
		name     string
		local    bool
		settings annotations.Settings
		vk       *corev1.Node
		want     []Target
	}{
		{name: "local", local: true, vk: vNode("vk", true),
			want: []Target{ecs("a", 2), ecs("b", 1), pod("10.1.0.1", 1), pod("10.1.0.2", 1)}},
		{name: "cluster", vk: vNode("vk", true),
			want: []Target{ecs("a", 100), ecs("b", 100), ecs("c", 100), pod("10.1.0.1", 100), pod("10.1.0.2", 100)}},
		{name: "local weight shared by endpoints", local: true, vk: vNode("vk", true),
			settings: annotations.Settings{Backend: annotations.Backend{Weight: ptr.To(100)}},
			want:     []Target{ecs("a", 40), ecs("b", 20), pod("10.1.0.1", 20), pod("10.1.0.2", 20)}},
		{name: "cluster weight shared by backends", vk: vNode("vk", true),
			settings: annotations.Settings{Backend: annotations.Backend{Weight: ptr.To(100)}},
			want:     []Target{ecs("a", 20), ecs("b", 20), ecs("c", 20), pod("10.1.0.1", 20), pod("10.1.0.2", 20)}},
		{name: "a NotReady virtual Node still serves its pods", local: true, vk: vNode("vk", true, notReady, excludedLB),
			want: []Target{ecs("a", 2), ecs("b", 1), pod("10.1.0.1", 1), pod("10.1.0.2", 1)}},
		{name: "backend-label leaves out an unlabelled virtual Node", local: true, vk: vNode("vk", true),
			settings: annotations.Settings{Backend: annotations.Backend{Labels: map[string]string{"pool": "x"}}},
			want:     nil},
		{name: "backend-label keeps a labelled virtual Node", local: true, vk: vNode("vk", true, func(n *corev1.Node) { n.Labels["pool"] = "x" }),
			settings: annotations.Settings{Backend: annotations.Backend{Labels: map[string]string{"pool": "x"}}},
			want:     []Target{pod("10.1.0.1", 1), pod("10.1.0.2", 1)}},
		{name: "autoscaler taint", local: true, vk: vNode("vk", true, func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: TaintToBeDeleted}} }),
			want: []Target{ecs("a", 2), ecs("b", 1)}},
		{name: "not a virtual Node: its endpoints do not count", local: true, vk: vNode("vk", false, notReady),
			want: []Target{ecs("a", 2), ecs("b", 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, TargetPort: intstr.FromInt32(8080)}},
			}}
			if tc.local {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
			s := tc.settings
			s.Backend.Type = annotations.BackendECS
			nodeList := []*corev1.Node{vNode("a", false), vNode("b", false), vNode("c", false), tc.vk}
			got := ComputeBackends(svc, &s, nodeList, []*discoveryv1.EndpointSlice{slice})[80]
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("targets\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestResolveENIsVirtualOnly: with ecs backends an address is registered
// only when the pod it names holds it, is in the Service's namespace and
// runs on a virtual Node (whatever the endpoint claims); the ECS Node
// targets pass through untouched.
func TestResolveENIsVirtualOnly(t *testing.T) {
	cl := &Cluster{Instances: map[string]bool{"i-node": true}, Virtual: map[string]bool{"vk": true, "vk-excluded": true}}
	enis := fakeENIs{
		{ID: "eni-node", InstanceID: "i-node", IPs: []string{"10.0.0.1"}},
		{ID: "eni-eci", InstanceID: "eci-1", IPs: []string{"10.0.5.5", "10.0.5.6", "10.0.5.8"}},
	}
	pod := podRef
	run := corev1.PodRunning
	pods := map[string]podFact{
		"app/eci":    {ips: []string{"10.0.5.5"}, node: "vk", phase: run, eci: "eci-1"},
		"app/onnode": {ips: []string{"10.0.0.1"}, node: "n1", phase: run},
		"app/moved":  {ips: []string{"10.0.5.8"}, node: "vk-excluded", phase: run, eci: "eci-1"},
	}
	req := &Request{
		Service:  &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}},
		Settings: &annotations.Settings{Backend: annotations.Backend{Type: annotations.BackendECS}},
		Backends: map[int32][]Target{80: {
			{InstanceID: "i-node", Port: 30080},                         // the ECS Node itself
			{IP: "10.0.5.5", Pod: pod("app", "eci"), NodeName: "vk"},    // ECI pod: ok
			{IP: "10.0.0.1", Pod: pod("app", "onnode"), NodeName: "vk"}, // claims the virtual Node, runs on n1
			{IP: "10.0.5.6", NodeName: "vk"},                            // names no pod
			{IP: "10.0.5.7", Pod: pod("other", "x"), NodeName: "vk"},    // another namespace
			{IP: "10.0.5.8", Pod: pod("app", "moved"), NodeName: "vk"},  // runs on another virtual Node
		}},
	}
	got, rejected, unresolved, err := ResolveENIs(context.Background(), enis, cl, pods, req)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"10.0.5.5": "eni-eci"}; !reflect.DeepEqual(got, want) {
		t.Errorf("registrable %v, want %v", got, want)
	}
	if len(unresolved) != 0 {
		t.Errorf("unresolved %v", unresolved)
	}
	text := strings.Join(rejected, "\n")
	for _, w := range []string{"10.0.0.1 is the address of pod app/onnode, which is on no virtual Node", "10.0.5.6 names no pod", "10.0.5.7 names pod other/x",
		"10.0.5.8 is the address of pod app/moved, which runs on vk-excluded, not on vk"} {
		if !strings.Contains(text, w) {
			t.Errorf("rejected %q lacks %q", text, w)
		}
	}
	if len(rejected) != 4 {
		t.Errorf("rejected %d: %v", len(rejected), rejected)
	}
}

// podRef is an endpoint's targetRef to pod namespace/name.
func podRef(namespace, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: name}
}
