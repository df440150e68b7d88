package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

// TestReadinessGate: with eni backends, a pod that lists the Service's
// readiness gate is registered in the vServer group while it is not Ready,
// and only then gets its gate condition (reason ServerRegistered), upon
// which kwok, like the kubelet, makes it Ready. A pod without the gate is
// registered once Ready and never written to; a gated pod whose IP no ENI
// holds is not registered and stays not Ready; a pod that leaves the
// backends keeps its condition, as with the existing CCM.
//
// The registrable pods use the host network, so that their IP is their
// Node's, which the Node's ECS instance holds on its primary ENI: the CLB
// applier resolves each pod IP to an ENI as on a Terway cluster. The other
// gated pod gets a pod-network address from kwok, which no ENI holds.
// CLB (vServer group) and NLB (Instance server group) alike.
func TestReadinessGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind  string
		nodes []string
		// backendIPs reads the server IPs of the Service's group.
		backendIPs func(t *testing.T, svc *corev1.Service) map[string]bool
	}{
		{"CLB", nodeNames[6:9], func(t *testing.T, svc *corev1.Service) map[string]bool {
			out := map[string]bool{}
			for _, m := range members(t, lbID(svc), naming.For(svc, clusterID).CLBVGroup("8080")) {
				out[m.IP] = true
			}
			return out
		}},
		{"NLB", nodeNames[3:6], func(t *testing.T, svc *corev1.Service) map[string]bool {
			ls := nlb.CreateListListenersRequest()
			ls.LoadBalancerIds = &[]string{lbID(svc)}
			listeners, err := nlbClient(t).ListListeners(ls)
			if err != nil || len(listeners.Listeners) != 1 {
				t.Fatalf("listeners of %s: %v", lbID(svc), err)
			}
			sv := nlb.CreateListServerGroupServersRequest()
			sv.ServerGroupId = listeners.Listeners[0].ServerGroupId
			servers, err := nlbClient(t).ListServerGroupServers(sv)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]bool{}
			for _, s := range servers.Servers {
				out[s.ServerIp] = true
			}
			return out
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			readinessGate(t, strings.ToLower(tc.kind), tc.nodes, tc.backendIPs)
		})
	}
}

func readinessGate(t *testing.T, kind string, nodes []string, backendIPs func(*testing.T, *corev1.Service) map[string]bool) {
	ctx := context.Background()
	cs := kube(t)
	name := "gates-" + kind
	gate := service.ReadinessGate(name)
	spec := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.BackendTypeKey: "eni"}})
	if kind == "nlb" {
		zoneMaps := ccmtest.ZoneMaps(ccmtest.SeedDoc(ccmtest.SeedSpec{}))
		spec.Annotations[annotations.Key("zone-maps")] = strings.Join(zoneMaps, ",")
		spec.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, spec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer deleteService(t, name)
	svc := waitIngress(t, name, 60*time.Second)
	group := "of " + lbID(svc)

	mkPod := func(pod, node string, hostNetwork, gated bool) {
		t.Helper()
		pod = name + "-" + pod
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{
				NodeName: node, HostNetwork: hostNetwork,
				Containers: []corev1.Container{{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
			},
		}
		if gated {
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate}}
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.CoreV1().Pods(ns).Delete(context.Background(), pod, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		})
	}
	getPod := func(ctx context.Context, pod string) (*corev1.Pod, error) {
		return cs.CoreV1().Pods(ns).Get(ctx, name+"-"+pod, metav1.GetOptions{})
	}
	cond := func(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == typ {
				return &p.Status.Conditions[i]
			}
		}
		return nil
	}
	ready := func(p *corev1.Pod) bool {
		c := cond(p, corev1.PodReady)
		return c != nil && c.Status == corev1.ConditionTrue
	}
	ips := func() map[string]bool { return backendIPs(t, svc) }
	// inSlice waits until the pod is published with the given readiness
	// (any when nil) and returns its address.
	inSlice := func(pod string, readyWant *bool) string {
		t.Helper()
		ip := ""
		poll(t, 30*time.Second, fmt.Sprintf("pod %s in the EndpointSlice with ready=%v", pod, ptr.Deref(readyWant, true)), func(ctx context.Context) (bool, error) {
			sl, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
			if err != nil {
				return false, err
			}
			for _, s := range sl.Items {
				for _, e := range s.Endpoints {
					if e.TargetRef != nil && e.TargetRef.Name == name+"-"+pod && len(e.Addresses) > 0 {
						ip = e.Addresses[0]
						return readyWant == nil || ptr.Deref(e.Conditions.Ready, true) == *readyWant, nil
					}
				}
			}
			return false, nil
		})
		return ip
	}

	// A gated pod no ENI can hold: it must wait.
	mkPod("gated-unregistrable", nodes[0], false, true)
	lostIP := inSlice("gated-unregistrable", nil) // asserted not Ready below
	// A pod without the gate: registered once Ready, like any pod.
	mkPod("plain", nodes[1], true, false)
	plainIP := inSlice("plain", ptr.To(true))
	poll(t, 30*time.Second, "the ready pod "+plainIP+" registered", func(ctx context.Context) (bool, error) {
		return ips()[plainIP], nil
	})

	// The gated pod runs not Ready; the CCM registers it and only then
	// sets its gate, which makes it Ready (quickly enough that the test
	// may see its endpoint only once it is ready).
	mkPod("gated", nodes[2], true, true)
	gatedIP := inSlice("gated", nil)
	if gatedIP == plainIP || gatedIP == lostIP {
		t.Fatalf("pod IPs must differ: gated %s, plain %s, unregistrable %s", gatedIP, plainIP, lostIP)
	}
	var registeredAt metav1.Time
	took := poll(t, 30*time.Second, "the gated pod's gate True and the pod Ready", func(ctx context.Context) (bool, error) {
		p, err := getPod(ctx, "gated")
		if err != nil {
			return false, err
		}
		c := cond(p, gate)
		if c == nil || c.Status != corev1.ConditionTrue {
			if ready(p) {
				t.Fatalf("pod Ready before its gate: %+v", p.Status.Conditions)
			}
			return false, nil
		}
		// The gate is set only after the backend is in the group.
		if got := ips(); !got[gatedIP] {
			t.Fatalf("gate %s set but %s is not in group %s: %v", gate, gatedIP, group, got)
		}
		if c.Reason != service.ReasonServerRegistered || c.Message != service.MessageServerRegistered {
			t.Fatalf("gate condition %+v, want reason %s", c, service.ReasonServerRegistered)
		}
		registeredAt = c.LastTransitionTime
		return ready(p), nil
	})
	t.Logf("gated pod registered and Ready in %v", took)
	inSlice("gated", ptr.To(true))

	// The pod without the gate was never given one, and the unregistrable
	// pod (pending in the same syncs as the gated one) is neither
	// registered nor Ready.
	p, err := getPod(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(p, gate); c != nil {
		t.Errorf("pod without the gate got condition %+v", c)
	}
	p, err = getPod(ctx, "gated-unregistrable")
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(p, gate); c != nil || ready(p) {
		t.Errorf("unregistrable pod: gate %+v, Ready %v", c, ready(p))
	}
	if got := ips(); got[lostIP] || !got[plainIP] || !got[gatedIP] {
		t.Errorf("group %s has %v, want %s and %s and not %s", group, got, plainIP, gatedIP, lostIP)
	}

	// The gated pod leaves the Service: it leaves the group, and its
	// condition stays as it was (the gate says it was registered).
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "elsewhere"}}})
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name+"-gated", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "the relabelled pod out of the group", func(ctx context.Context) (bool, error) {
		got := ips()
		return !got[gatedIP] && got[plainIP], nil
	})
	p, err = getPod(ctx, "gated")
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(p, gate); c == nil || c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&registeredAt) {
		t.Errorf("condition of the pod that left: %+v, want True since %v", c, registeredAt)
	}
}
