package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// eciENI seeds what an ECI container group is to the CCM: an ENI in the
// cluster's VPC attached to no Node of the cluster (here a secondary ENI of
// an instance that is no Node, whose id is the group's, eci-...), holding
// the pod's address. It returns the ENI and its addresses; the group's id
// is eciGroup(name).
func eciENI(t *testing.T, name string) (string, []string) {
	t.Helper()
	node, err := emulatorEnv().Instance(instances[nodeNames[0]])
	if err != nil {
		t.Fatal(err)
	}
	ids, err := cloud.Seed(&api.Seed{Instances: []api.SeedInstance{{
		ID: eciGroup(name), Name: name, VSwitchID: node.VpcAttributes.VSwitchId, SecondaryENIs: []api.SeedENI{{PrivateIPs: make([]string, 2)}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	eni := ids["eni"][len(ids["eni"])-1]
	ips, err := emulatorEnv().ENIAddresses(eni)
	if err != nil {
		t.Fatal(err)
	}
	return eni, ips
}

// eciGroup is the ECI container group id eciENI seeds for name.
func eciGroup(name string) string { return "eci-" + name }

// virtualNode registers a virtual-kubelet Node as ACK's virtual node looks:
// label type=virtual-kubelet, its provider taint, no providerID. kwok keeps
// it Ready and gives a hostNetwork pod on it the Node's address, ip, as ECI
// gives a pod its ENI's. kwok is let in only once the address is set, and
// the Node is returned Ready: a pod kwok starts on a Node whose address it
// does not know yet gets 127.0.0.1 for good.
func virtualNode(t *testing.T, name, ip string) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{service.LabelVirtualKubelet: service.ValueVirtualKubelet, "kubernetes.io/hostname": name},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "virtual-kubelet.io/provider", Value: "alibabacloud", Effect: corev1.TaintEffectNoSchedule}}},
	}
	if _, err := kube(t).CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube(t).CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	status, _ := json.Marshal(map[string]any{"status": map[string]any{"addresses": []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name},
	}}})
	if _, err := kube(t).CoreV1().Nodes().PatchStatus(ctx, name, status); err != nil {
		t.Fatal(err)
	}
	// The label kwok selects on too, not only the annotation its mirror
	// copies: a mirror patch lost to the client's rate limiter is not
	// retried, and kwok would never see the Node.
	mark := map[string]string{localcluster.KwokNodeAnnotation: localcluster.KwokNodeValue}
	kwok, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": mark, "labels": mark}})
	if _, err := kube(t).CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, kwok, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "virtual Node "+name+" Ready", func(ctx context.Context) (bool, error) {
		n, err := kube(t).CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// runPod starts a pod of app on node (bound directly, as the scheduler
// would); hostNetwork gives it the Node's address. annotations are the
// pod's (the ECI container group of a pod on a virtual Node).
func runPod(t *testing.T, name, app, node string, hostNetwork bool, annotations ...string) {
	t.Helper()
	ann := map[string]string{}
	for i := 0; i+1 < len(annotations); i += 2 {
		ann[annotations[i]] = annotations[i+1]
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}, Annotations: ann},
		Spec: corev1.PodSpec{NodeName: node, HostNetwork: hostNetwork,
			Containers: []corev1.Container{{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
	}
	if _, err := kube(t).CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePod(t, name) })
}

func deletePod(t *testing.T, name string) {
	_ = kube(t).CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
}

// TestVirtualNodePods: with ecs backends (the default), a Service whose
// pods run on an ECS Node and on a virtual-kubelet Node gets the ECI pod
// as a backend next to the ECS Nodes, as the existing CCM registers it: by
// its ENI on the target port, weighing one endpoint (Local: each ECS Node
// weighs its endpoints; Cluster: every eligible Node and the pod the
// default weight); on CLB (vServer group) and NLB (Instance server group)
// alike. The pod's going takes its ENI out and leaves the ECS Nodes.
func TestVirtualNodePods(t *testing.T) {
	t.Parallel()
	all := kinds(t)
	for i, tc := range []struct {
		kind  lbKind
		local bool
	}{{all[0], true}, {all[1], true}, {all[0], false}} {
		kind := tc.kind
		policy := map[bool]string{true: "local", false: "cluster"}[tc.local]
		t.Run(kind.name+"-"+policy, func(t *testing.T) {
			t.Parallel()
			name := "eci-" + kind.name + "-" + policy
			eni, ips := eciENI(t, "svc-"+name)
			vk := "vk-" + kind.name + "-" + policy
			virtualNode(t, vk, ips[0])
			svc := kind.service(t, name, nil)
			if tc.local {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
			create(t, svc)
			defer deleteService(t, name)
			ecsNode := nodeNames[3+i]
			runPod(t, name+"-ecs", name, ecsNode, false)
			runPod(t, name+"-eci", name, vk, true, service.AnnotationECIInstance, eciGroup("svc-"+name))
			poll(t, 30*time.Second, "the ECI pod running on its ENI's address", func(ctx context.Context) (bool, error) {
				p, err := kube(t).CoreV1().Pods(ns).Get(ctx, name+"-eci", metav1.GetOptions{})
				if err != nil || p.Status.PodIP == "" {
					return false, err
				}
				if p.Status.PodIP != ips[0] {
					return false, fmt.Errorf("kwok gave the pod %s, not the Node's address %s", p.Status.PodIP, ips[0])
				}
				return true, nil
			})
			got := waitIngress(t, name, 90*time.Second)
			nodePort := got.Spec.Ports[0].NodePort
			ecsMembers := []string{fmt.Sprintf("ecs %s:%d weight 1", instances[ecsNode], nodePort)}
			eciMember := fmt.Sprintf("eni %s %s:8080 weight 1", eni, ips[0])
			if !tc.local {
				ecsMembers = nil
				for _, n := range nodeNames {
					ecsMembers = append(ecsMembers, fmt.Sprintf("ecs %s:%d weight 100", instances[n], nodePort))
				}
				eciMember = fmt.Sprintf("eni %s %s:8080 weight 100", eni, ips[0])
			}
			slices.Sort(ecsMembers)
			read := func() []string {
				var out []string
				if kind.name == "clb" {
					for _, m := range members(t, lbID(got), naming.For(got, clusterID).CLBVGroup(fmt.Sprint(nodePort))) {
						if m.Type == "eni" {
							out = append(out, fmt.Sprintf("eni %s %s:%d weight %d", m.ServerID, m.IP, m.Port, m.Weight))
						} else {
							out = append(out, fmt.Sprintf("ecs %s:%d weight %d", m.ServerID, m.Port, m.Weight))
						}
					}
				} else {
					for _, g := range nlbGroups(t, got) {
						for _, s := range nlbServers(t, g.ServerGroupId) {
							if s.ServerType == "Eni" {
								out = append(out, fmt.Sprintf("eni %s %s:%d weight %d", s.ServerId, s.ServerIp, s.Port, s.Weight))
							} else {
								out = append(out, fmt.Sprintf("ecs %s:%d weight %d", s.ServerId, s.Port, s.Weight))
							}
						}
					}
				}
				slices.Sort(out)
				return out
			}
			want := append([]string{eciMember}, ecsMembers...)
			slices.Sort(want)
			var last []string
			defer func() {
				if t.Failed() {
					t.Logf("members last read: %v (want %v)", last, want)
				}
			}()
			poll(t, 60*time.Second, "the ECS Node and the ECI pod as backends", func(ctx context.Context) (bool, error) {
				last = read()
				return slices.Equal(last, want), nil
			})
			for _, e := range events(t, name) {
				if e.Reason == service.EventBackendRejected {
					t.Errorf("Warning %s: %s", e.Reason, e.Message)
				}
			}
			deletePod(t, name+"-eci")
			poll(t, 60*time.Second, "the ECI pod's ENI out, the ECS Node kept", func(ctx context.Context) (bool, error) {
				last = read()
				return slices.Equal(last, ecsMembers), nil
			})
		})
	}
}

// TestENIAttachedLater: a pod whose address no ENI holds yet (its ECI
// container group's ENI still being attached) is registered once the ENI
// holds it, with no change to the Service, its endpoints or the pod: the
// pass that left it out asks for another (2 s doubling). Without that the
// member would wait for the next unrelated change of the Service.
func TestENIAttachedLater(t *testing.T) {
	t.Parallel()
	const name = "eni-later"
	node, err := emulatorEnv().Instance(instances[nodeNames[0]])
	if err != nil {
		t.Fatal(err)
	}
	ip := unusedAddress(t, node.VpcAttributes.VSwitchId)
	vk := "vk-" + name
	virtualNode(t, vk, ip)
	create(t, newService(svcSpec{name: name, ports: []int32{80}}))
	defer deleteService(t, name)
	runPod(t, name+"-eci", name, vk, true, service.AnnotationECIInstance, eciGroup(name))
	poll(t, 30*time.Second, "the ECI pod running on the address its ENI will hold", func(ctx context.Context) (bool, error) {
		p, err := kube(t).CoreV1().Pods(ns).Get(ctx, name+"-eci", metav1.GetOptions{})
		if err != nil || p.Status.PodIP == "" || !podReady(p) {
			return false, err
		}
		if p.Status.PodIP != ip {
			return false, fmt.Errorf("kwok gave the pod %s, not the Node's address %s", p.Status.PodIP, ip)
		}
		return true, nil
	})
	got := waitIngress(t, name, 60*time.Second)
	group := naming.For(got, clusterID).CLBVGroup(fmt.Sprint(got.Spec.Ports[0].NodePort))
	eniMembers := func() []string {
		var out []string
		for _, m := range members(t, lbID(got), group) {
			if m.Type == "eni" {
				out = append(out, fmt.Sprintf("%s %s:%d", m.ServerID, m.IP, m.Port))
			}
		}
		return out
	}
	// A sync has seen the pod's endpoint and found no ENI for it.
	waitLog(t, 30*time.Second, "held by no ENI yet: "+ip)
	if m := eniMembers(); len(m) != 0 {
		t.Fatalf("eni members %v before any ENI holds %s", m, ip)
	}
	ids, err := cloud.Seed(&api.Seed{Instances: []api.SeedInstance{{
		ID: eciGroup(name), Name: name, VSwitchID: node.VpcAttributes.VSwitchId, SecondaryENIs: []api.SeedENI{{PrivateIPs: []string{ip}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	eni := ids["eni"][len(ids["eni"])-1]
	want := fmt.Sprintf("%s %s:8080", eni, ip)
	poll(t, 60*time.Second, "the pod registered by its ENI with no change in the cluster", func(ctx context.Context) (bool, error) {
		if m := eniMembers(); !slices.Equal(m, []string{want}) {
			return false, fmt.Errorf("eni members %v, want %s", m, want)
		}
		return true, nil
	})
}

// unusedAddress is an address of vSwitch vsw that nothing holds: the
// emulator hands addresses out from the bottom of a vSwitch, and this is
// near its top.
func unusedAddress(t *testing.T, vsw string) string {
	t.Helper()
	for _, sw := range vswitches(t) {
		if sw.VSwitchId != vsw {
			continue
		}
		p := netip.MustParsePrefix(sw.CidrBlock).Masked()
		a := p.Addr().As4()
		u := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
		u += uint32(1)<<(32-p.Bits()) - 10
		return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}).String()
	}
	t.Fatalf("vSwitch %s not found", vsw)
	return ""
}

// waitLog waits for the suite's CCM to log a line holding s.
func waitLog(t *testing.T, timeout time.Duration, s string) {
	t.Helper()
	poll(t, timeout, "the CCM to log "+s, func(context.Context) (bool, error) {
		b, err := os.ReadFile(ccm.LogPath)
		return err == nil && strings.Contains(string(b), s), err
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
