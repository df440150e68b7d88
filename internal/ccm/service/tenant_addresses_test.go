package service_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// Addresses are checked every sync, not remembered: an endpoint's address
// is registered only while the pod it names runs and holds it, a Node's
// address never through an endpoint that names no pod, and however many
// untargeted addresses a Service has, one sync reads the pods at most
// twice. Attacker in team-a, victim in team-b, as in tenant_test.go.

// setPodStatus waits for kwok to start the pod, then overwrites its status
// with phase and address ip, as the kubelet reports a pod that completed
// (Succeeded) or one the CNI gave ip to (Running). kwok leaves a pod that
// has an address alone.
func setPodStatus(t *testing.T, namespace, name string, phase corev1.PodPhase, ip string) *corev1.Pod {
	t.Helper()
	podAddress(t, namespace, name)
	ctx := context.Background()
	pods := kube(t).CoreV1().Pods(namespace)
	var out *corev1.Pod
	poll(t, 10*time.Second, "status of pod "+namespace+"/"+name, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p.Status.Phase, p.Status.PodIP, p.Status.PodIPs = phase, ip, []corev1.PodIP{{IP: ip}}
		if phase != corev1.PodRunning {
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == corev1.PodReady || p.Status.Conditions[i].Type == corev1.ContainersReady {
					p.Status.Conditions[i].Status = corev1.ConditionFalse
				}
			}
		}
		out, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err == nil, nil
	})
	// kwok must not put its own address back.
	time.Sleep(time.Second)
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.PodIP != ip || p.Status.Phase != phase {
		t.Fatalf("pod %s/%s is %s at %s, want %s at %s", namespace, name, p.Status.Phase, p.Status.PodIP, phase, ip)
	}
	return out
}

// startPod creates a pod in namespace on node and deletes it at the end.
func startPod(t *testing.T, namespace, name, node string, hostNetwork bool, ann map[string]string) *corev1.Pod {
	t.Helper()
	pods := kube(t).CoreV1().Pods(namespace)
	p, err := pods.Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": name}, Annotations: ann},
		Spec: corev1.PodSpec{NodeName: node, HostNetwork: hostNetwork,
			Containers: []corev1.Container{{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	return p
}

// TestTenantCompletedPodAddress (item 4): an endpoint naming the
// attacker's own completed pod, whose old address the CNI has since given
// to another namespace's pod (on a Node's ENI, so registrable), is refused
// by name and never registered.
func TestTenantCompletedPodAddress(t *testing.T) {
	t.Parallel()
	tenants(t)
	ip := podHostIPs[6]
	mine := startPod(t, attackerNS, "done-job", nodeNames[2], false, nil)
	setPodStatus(t, attackerNS, mine.Name, corev1.PodSucceeded, ip)
	startPod(t, victimNS, "victim-new-holder", nodeNames[2], false, nil)
	setPodStatus(t, victimNS, "victim-new-holder", corev1.PodRunning, ip)

	name := "attack-completed"
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.BackendTypeKey: "eni"}})
	svc.Spec.Selector = nil
	createIn(t, attackerNS, svc)
	seq := lastSeq()
	publish(t, attackerNS, name, readyEndpoint(ip, &corev1.ObjectReference{Kind: "Pod", Namespace: attackerNS, Name: mine.Name, UID: mine.UID}))
	waitIngressIn(t, attackerNS, name, 60*time.Second)
	w := waitEventIn(t, attackerNS, name, service.EventBackendRejected, ip)
	if !strings.Contains(w.Message, attackerNS+"/"+mine.Name) || !strings.Contains(w.Message, "Succeeded") {
		t.Errorf("Warning %q does not say the pod completed", w.Message)
	}
	if w := writesOn("slb", seq, ip); len(w) > 0 {
		t.Fatalf("writes registering the completed pod's address: %v", actions(w))
	}
	deleteServiceIn(t, attackerNS, name, 30*time.Second)
	if w := writesOn("slb", seq, ip); len(w) > 0 {
		t.Fatalf("writes registering the completed pod's address: %v", actions(w))
	}
}

// TestTenantVirtualNodePodOnForeignENI (item 4, virtual Nodes): a pod of
// the attacker on a virtual Node that holds the address of a VM that is no
// Node (and claims an ECI container group it does not have) is not
// registered: the ENI holding a virtual Node pod's address must be its own
// ECI container group's.
func TestTenantVirtualNodePodOnForeignENI(t *testing.T) {
	t.Parallel()
	tenants(t)
	node, err := emulatorEnv().Instance(instances[nodeNames[0]])
	if err != nil {
		t.Fatal(err)
	}
	ids, err := cloud.Seed(&api.Seed{Instances: []api.SeedInstance{{Name: "vm-behind-vk", VSwitchID: node.VpcAttributes.VSwitchId}}})
	if err != nil {
		t.Fatal(err)
	}
	vm, err := emulatorEnv().Instance(ids["instance"][0])
	if err != nil {
		t.Fatal(err)
	}
	vmIP := vm.VpcAttributes.PrivateIpAddress.IpAddress[0]
	vk := "vk-attack"
	virtualNode(t, vk, vmIP)
	name := "attack-vk"
	pod := startPod(t, attackerNS, name+"-pod", vk, true, map[string]string{service.AnnotationECIInstance: "eci-forged"})
	poll(t, 30*time.Second, "the pod on the virtual Node at the VM's address", func(ctx context.Context) (bool, error) {
		p, err := kube(t).CoreV1().Pods(attackerNS).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || p.Status.PodIP == "" {
			return false, err
		}
		if p.Status.PodIP != vmIP {
			return false, fmt.Errorf("kwok gave the pod %s, not the Node's address %s", p.Status.PodIP, vmIP)
		}
		return true, nil
	})
	seq := lastSeq()
	svc := newService(svcSpec{name: name, ports: []int32{80}, selector: map[string]string{"app": pod.Name}})
	createIn(t, attackerNS, svc)
	waitIngressIn(t, attackerNS, name, 60*time.Second)
	w := waitEventIn(t, attackerNS, name, service.EventBackendRejected, vmIP)
	if !strings.Contains(w.Message, "eci-forged") {
		t.Errorf("Warning %q does not name the claimed ECI container group", w.Message)
	}
	if w := writesOn("slb", seq, vmIP, vm.InstanceId); len(w) > 0 {
		t.Fatalf("writes registering the VM: %v", actions(w))
	}
	deleteServiceIn(t, attackerNS, name, 30*time.Second)
}

// TestTenantNodeAddressUntargeted (item 5): an endpoint without a
// targetRef carrying a Node's InternalIP on the kubelet's port is refused,
// naming the Node, and never registered.
func TestTenantNodeAddressUntargeted(t *testing.T) {
	t.Parallel()
	tenants(t)
	target := nodeNames[5]
	n, err := kube(t).CoreV1().Nodes().Get(context.Background(), target, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var nodeIP string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
		}
	}
	if nodeIP == "" {
		t.Fatalf("Node %s has no InternalIP", target)
	}
	name := "attack-kubelet"
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.BackendTypeKey: "eni"}})
	svc.Spec.Selector = nil
	createIn(t, attackerNS, svc)
	seq := lastSeq()
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-hand", Namespace: attackerNS, Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "attacker",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p80"), Port: ptr.To[int32](10250), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{readyEndpoint(nodeIP, nil)},
	}
	slices := kube(t).DiscoveryV1().EndpointSlices(attackerNS)
	if _, err := slices.Create(context.Background(), sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slices.Delete(context.Background(), sl.Name, metav1.DeleteOptions{}) })
	waitIngressIn(t, attackerNS, name, 60*time.Second)
	w := waitEventIn(t, attackerNS, name, service.EventBackendRejected, nodeIP)
	if !strings.Contains(w.Message, "Node "+target) {
		t.Errorf("Warning %q does not name Node %s", w.Message, target)
	}
	if w := writesOn("slb", seq, nodeIP); len(w) > 0 {
		t.Fatalf("writes registering the Node's address: %v", actions(w))
	}
	deleteServiceIn(t, attackerNS, name, 30*time.Second)
}

// podLists is the API server's count of pod LISTs so far, all clients
// (apiserver_request_total).
func podLists(t *testing.T) int {
	t.Helper()
	raw, err := kube(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="pods"`) ||
			!strings.Contains(line, `verb="LIST"`) || !strings.Contains(line, `subresource=""`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		total += int(v)
	}
	return total
}

// TestTenantThousandUntargetedAddresses (item 6): a hand-written slice of
// 1,000 addresses without a targetRef costs each sync at most two pod
// reads of the API server (one listing, not one per address), and the
// Service gets a Warning naming the count and the cap; the addresses
// beyond the cap are not looked up in the cloud. It counts the API
// server's requests, so it does not run in parallel with other tests.
func TestTenantThousandUntargetedAddresses(t *testing.T) {
	tenants(t)
	name := "attack-thousand"
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.BackendTypeKey: "eni"}})
	svc.Spec.Selector = nil
	createIn(t, attackerNS, svc)
	eps := make([]discoveryv1.Endpoint, 1000)
	for i := range eps {
		eps[i] = readyEndpoint(fmt.Sprintf("10.250.%d.%d", i/250, 1+i%250), nil)
	}
	publish(t, attackerNS, name, eps...)
	waitIngressIn(t, attackerNS, name, 60*time.Second)
	capMsg := func(n int) string {
		return fmt.Sprintf("%d endpoints without a targetRef, more than the %d", n, service.MaxUntargetedEndpoints)
	}
	waitEventIn(t, attackerNS, name, service.EventUntargetedCapped, capMsg(1000))
	time.Sleep(2 * time.Second) // the syncs the creation queued are over
	before, seq := podLists(t), lastSeq()
	// Each update is one sync, seen done by its Warning (the count moves).
	const syncs = 3
	slices := kube(t).DiscoveryV1().EndpointSlices(attackerNS)
	for i := 1; i <= syncs; i++ {
		sl, err := slices.Get(context.Background(), name+"-hand", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sl.Endpoints = sl.Endpoints[1:]
		if _, err := slices.Update(context.Background(), sl, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitEventIn(t, attackerNS, name, service.EventUntargetedCapped, capMsg(1000-i))
	}
	time.Sleep(time.Second)
	lists := podLists(t) - before
	t.Logf("%d pod LISTs over %d syncs of a Service with 1,000 untargeted addresses", lists, syncs)
	if lists > 2*syncs {
		t.Errorf("%d pod LISTs over %d syncs, want at most %d", lists, syncs, 2*syncs)
	}
	// Only the capped addresses were looked up: 100 a call.
	for _, r := range cloud.Requests() {
		if r.Seq > seq && r.Action == "DescribeNetworkInterfaces" && strings.Contains(fmt.Sprint(r.Params), "10.250.3.") {
			t.Errorf("an address beyond the cap was looked up: %v", r.Params)
			break
		}
	}
	deleteServiceIn(t, attackerNS, name, 30*time.Second)
}
