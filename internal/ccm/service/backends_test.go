package service_test

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// member is one backend server as the SLB API reports it.
type member struct {
	ServerID, IP, Type string
	Port, Weight       int
}

// members returns the backend servers of a load balancer's vServer group.
func members(t *testing.T, lbID, group string) []member {
	t.Helper()
	areq := slb.CreateDescribeVServerGroupAttributeRequest()
	areq.VServerGroupId = groupID(t, lbID, group)
	a, err := slbClient(t).DescribeVServerGroupAttribute(areq)
	if err != nil {
		t.Fatal(err)
	}
	var out []member
	for _, b := range a.BackendServers.BackendServer {
		out = append(out, member{ServerID: b.ServerId, IP: b.ServerIp, Type: b.Type, Port: b.Port, Weight: b.Weight})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IP < out[j].IP })
	return out
}

// TestENIBackends: backend-type eni puts the ready endpoint IPs, held by
// ENIs, in the vServer group with their ENI ids and the target port, and
// follows endpoint readiness.
//
// kwok gives pods addresses from the Nodes' podCIDR (the cluster CIDR),
// which no ENI can hold, while the CLB applier resolves each endpoint IP
// to the ENI holding it (ECS DescribeNetworkInterfaces) as on a Terway
// cluster. So the test takes three addresses of the pod host's secondary
// ENI (a Node's, as Terway's are) and publishes them as the Service's
// endpoints in an EndpointSlice of its own, which is what Terway pods look
// like to the CCM.
func TestENIBackends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The pod host's ENI, attached to a Node's instance as Terway's are.
	eniID, podIPs := podHostENI, podHostIPs[:3]
	name := "eni"
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.BackendTypeKey: "eni"}})
	svc.Spec.Selector = nil // endpoints are published by the test, as Terway pods would be
	if _, err := kube(t).CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-pods", Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "svc-test",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p80"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for i, ip := range podIPs {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(i < 2)}, NodeName: ptr.To(nodeNames[i]),
		})
	}
	slices := kube(t).DiscoveryV1().EndpointSlices(ns)
	if _, err := slices.Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer slices.Delete(ctx, slice.Name, metav1.DeleteOptions{})

	got := waitIngress(t, name, 30*time.Second)
	id := lbID(got)
	group := naming.For(got, clusterID).CLBVGroup("8080")
	want := func(n int) []member {
		var out []member
		for _, ip := range podIPs[:n] {
			out = append(out, member{ServerID: eniID, IP: ip, Type: "eni", Port: 8080, Weight: annotations.DefaultWeight})
		}
		return out
	}
	// The first sync may run before the CCM sees the EndpointSlice; the
	// slice then triggers a backend pass on its own.
	poll(t, 20*time.Second, "the two ready pod IPs on ENI "+eniID+" port 8080", func(ctx context.Context) (bool, error) {
		return reflect.DeepEqual(members(t, id, group), want(2)), nil
	})
	// The third endpoint becomes ready: an EndpointSlice change alone syncs it.
	patch, _ := json.Marshal(map[string]any{"endpoints": []discoveryv1.Endpoint{
		{Addresses: []string{podIPs[0]}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		{Addresses: []string{podIPs[1]}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		{Addresses: []string{podIPs[2]}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
	}})
	if _, err := slices.Patch(ctx, slice.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 20*time.Second, "third pod IP added", func(ctx context.Context) (bool, error) {
		return reflect.DeepEqual(members(t, id, group), want(3)), nil
	})
	deleteService(t, name)
}

// TestNodeExclusions: Nodes carrying an exclusion label or taint leave
// every Service's backends, backend-label selects Nodes by label, and the
// Nodes come back when the marks go. It changes shared Nodes, so it does
// not run in parallel with other tests.
func TestNodeExclusions(t *testing.T) {
	cs := kube(t)
	ctx := context.Background()
	patchNode := func(node string, patch map[string]any) {
		t.Helper()
		data, _ := json.Marshal(patch)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, data, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	label := func(node, key string, value any) {
		patchNode(node, map[string]any{"metadata": map[string]any{"labels": map[string]any{key: value}}})
	}
	taint := func(node string, on bool) {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var taints []corev1.Taint
		for _, tn := range n.Spec.Taints {
			if tn.Key != "ToBeDeletedByClusterAutoscaler" {
				taints = append(taints, tn)
			}
		}
		if on {
			taints = append(taints, corev1.Taint{Key: "ToBeDeletedByClusterAutoscaler", Value: "1700000000", Effect: corev1.TaintEffectNoSchedule})
		}
		n.Spec.Taints = taints
		if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	marks := []struct {
		node  string
		set   func()
		clear func()
	}{
		{nodeNames[1], func() { label(nodeNames[1], "node.kubernetes.io/exclude-from-external-load-balancers", "true") }, func() { label(nodeNames[1], "node.kubernetes.io/exclude-from-external-load-balancers", nil) }},
		{nodeNames[2], func() { label(nodeNames[2], "node-role.kubernetes.io/control-plane", "") }, func() { label(nodeNames[2], "node-role.kubernetes.io/control-plane", nil) }},
		{nodeNames[3], func() { label(nodeNames[3], "node-role.kubernetes.io/master", "") }, func() { label(nodeNames[3], "node-role.kubernetes.io/master", nil) }},
		{nodeNames[4], func() { taint(nodeNames[4], true) }, func() { taint(nodeNames[4], false) }},
		{nodeNames[5], func() { label(nodeNames[5], "service.alibabacloud.com/exclude-node", "true") }, func() { label(nodeNames[5], "service.alibabacloud.com/exclude-node", nil) }},
		{nodeNames[6], func() { label(nodeNames[6], "service.beta.kubernetes.io/exclude-node", "true") }, func() { label(nodeNames[6], "service.beta.kubernetes.io/exclude-node", nil) }},
	}
	pool := []string{nodeNames[7], nodeNames[8], nodeNames[1]}

	createService(t, svcSpec{name: "exclusions", ports: []int32{80}})
	createService(t, svcSpec{name: "pool-blue", ports: []int32{80}, annotations: map[string]string{annotations.Key("backend-label"): "pool=blue"}})
	all := waitIngress(t, "exclusions", 30*time.Second)
	blue := waitIngress(t, "pool-blue", 30*time.Second)
	groupOf := func(svc *corev1.Service) map[string]int {
		return groupMembers(t, lbID(svc))[naming.For(svc, clusterID).CLBVGroup(itoa(svc.Spec.Ports[0].NodePort))]
	}
	waitMembers := func(what string, svc *corev1.Service, nodes ...string) {
		t.Helper()
		want := map[string]bool{}
		for _, n := range nodes {
			want[instances[n]] = true
		}
		poll(t, 20*time.Second, what, func(ctx context.Context) (bool, error) {
			got := map[string]bool{}
			for id := range groupOf(svc) {
				got[id] = true
			}
			return reflect.DeepEqual(got, want), nil
		})
	}
	// No Node matches the selector yet: the group is empty.
	waitMembers("no blue Node yet", blue)
	defer func() {
		for _, m := range marks {
			m.clear()
		}
		for _, n := range pool {
			label(n, "pool", nil)
		}
	}()
	for _, m := range marks {
		m.set()
	}
	for _, n := range pool {
		label(n, "pool", "blue")
	}
	waitMembers("marked Nodes excluded", all, nodeNames[0], nodeNames[7], nodeNames[8], nodeNames[9])
	// An excluded Node stays out even when backend-label selects it.
	waitMembers("blue Nodes that are not excluded", blue, nodeNames[7], nodeNames[8])

	// exclude-from-external-load-balancers=false does not exclude.
	label(nodeNames[1], "node.kubernetes.io/exclude-from-external-load-balancers", "false")
	waitMembers("Node back with the label false", all, nodeNames[0], nodeNames[1], nodeNames[7], nodeNames[8], nodeNames[9])
	waitMembers("blue Node back with the label false", blue, nodeNames[1], nodeNames[7], nodeNames[8])

	for _, m := range marks {
		m.clear()
	}
	waitMembers("every Node back", all, nodeNames...)
	label(nodeNames[7], "pool", "green")
	waitMembers("a Node relabelled away from the pool", blue, nodeNames[1], nodeNames[8])
	deleteService(t, "exclusions")
	deleteService(t, "pool-blue")
}
