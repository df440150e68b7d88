package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

// existingCCMState writes, through the SLB SDK, what the existing CCM
// leaves for a two-port Service: a CLB named and tagged after the Service
// UID with both protections, one vServer group per port named
// k8s/<nodePort>/<svc>/<ns>/<cluster> holding every Node at weight 100,
// and running TCP listeners described k8s/<port>/<svc>/<ns>/<cluster>.
func existingCCMState(t *testing.T, svc *corev1.Service) *slb.CreateLoadBalancerResponse {
	t.Helper()
	c := slbClient(t)
	defName := naming.DefaultLBName(svc)
	cr := slb.CreateCreateLoadBalancerRequest()
	cr.LoadBalancerName, cr.AddressType, cr.LoadBalancerSpec = defName, "internet", "slb.s1.small"
	cr.DeleteProtection, cr.ModificationProtectionStatus, cr.ModificationProtectionReason = "on", "ConsoleProtection", "managed.by.ack"
	cr.Tag = &[]slb.CreateLoadBalancerTag{{Key: naming.TagKeyDefaultName, Value: defName}, {Key: naming.TagKeyCluster, Value: clusterID}}
	lb, err := c.CreateLoadBalancer(cr)
	if err != nil {
		t.Fatal(err)
	}
	ref := naming.For(svc, clusterID)
	for _, sp := range svc.Spec.Ports {
		var servers []map[string]any
		for _, n := range nodeNames {
			// The existing CCM's spelling: lower-case keys, integers.
			servers = append(servers, map[string]any{"serverId": instances[n], "weight": 100, "port": sp.NodePort, "type": "ecs", "description": ref.CLBVGroup(itoa(sp.NodePort))})
		}
		body, _ := json.Marshal(servers)
		gr := slb.CreateCreateVServerGroupRequest()
		gr.LoadBalancerId, gr.VServerGroupName, gr.BackendServers = lb.LoadBalancerId, ref.CLBVGroup(itoa(sp.NodePort)), string(body)
		g, err := c.CreateVServerGroup(gr)
		if err != nil {
			t.Fatal(err)
		}
		lr := slb.CreateCreateLoadBalancerTCPListenerRequest()
		lr.LoadBalancerId, lr.ListenerPort, lr.VServerGroupId = lb.LoadBalancerId, requests.NewInteger(int(sp.Port)), g.VServerGroupId
		lr.Bandwidth, lr.Scheduler, lr.Description = requests.NewInteger(-1), "rr", ref.CLBListener(sp.Port)
		if _, err := c.CreateLoadBalancerTCPListener(lr); err != nil {
			t.Fatal(err)
		}
		st := slb.CreateStartLoadBalancerListenerRequest()
		st.LoadBalancerId, st.ListenerPort, st.ListenerProtocol = lb.LoadBalancerId, requests.NewInteger(int(sp.Port)), "tcp"
		if _, err := c.StartLoadBalancerListener(st); err != nil {
			t.Fatal(err)
		}
	}
	return lb
}

// TestAdoptExistingCCMState: cloud and Service state written exactly as
// the existing CCM leaves them are adopted with zero SLB write calls,
// whether our hash matches its hash label (LB and listeners not even
// read) or not (one full read-only sync, then our hash is recorded).
func TestAdoptExistingCCMState(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ourHash  bool
		wantRead string
	}{
		{"adopt-same-hash", true, "DescribeVServerGroups"},
		{"adopt-other-hash", false, "DescribeLoadBalancerListeners"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := kube(t)
			ctx := context.Background()
			// Another controller's class keeps ours away while the "existing
			// CCM" state is built.
			svc := createService(t, svcSpec{name: tc.name, ports: []int32{80, 443}, annotations: map[string]string{annotations.ClassKey: "existing-ccm"}})
			lb := existingCCMState(t, svc)
			st, _ := json.Marshal(map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": []map[string]string{{"ip": lb.Address}}}}})
			if _, err := cs.CoreV1().Services(ns).Patch(ctx, tc.name, types.MergePatchType, st, metav1.PatchOptions{}, "status"); err != nil {
				t.Fatal(err)
			}
			final := svc.DeepCopy()
			final.Annotations = nil
			hash := "0123456789abcdef0123456789abcdef0123456789abcdef01234567"
			if tc.ourHash {
				hash = naming.Hash(final)
			}
			seq := lastSeq()
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
				"annotations": map[string]any{annotations.ClassKey: nil},
				"finalizers":  []string{naming.FinalizerCLB},
				"labels":      map[string]string{naming.LabelLoadBalancerID: lb.LoadBalancerId, naming.LabelHash: hash},
			}})
			if _, err := cs.CoreV1().Services(ns).Patch(ctx, tc.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			poll(t, 20*time.Second, "the CCM reads the adopted load balancer", func(ctx context.Context) (bool, error) {
				for _, r := range cloud.Requests(gateway.RequestFilter{Product: "slb", Action: tc.wantRead, AfterSeq: seq}) {
					if r.Params["LoadBalancerId"] == lb.LoadBalancerId || r.Params["LoadBalancerId.1"] == lb.LoadBalancerId {
						return true, nil
					}
				}
				return false, nil
			})
			s := waitIngress(t, tc.name, 10*time.Second)
			time.Sleep(time.Second)
			if w := writesSince(seq); len(w) != 0 {
				t.Errorf("adoption made %d SLB write calls: %v", len(w), actions(w))
			}
			reads := cloud.Requests(gateway.RequestFilter{Product: "slb", AfterSeq: seq})
			t.Logf("adoption: %d SLB calls, all reads: %v", len(reads), actions(reads))
			if s.Status.LoadBalancer.Ingress[0].IP != lb.Address || lbID(s) != lb.LoadBalancerId {
				t.Errorf("status %v label %s, want %s and %s", s.Status.LoadBalancer.Ingress, lbID(s), lb.Address, lb.LoadBalancerId)
			}
			// Adopted means managed: a new port is reconciled on the same LB.
			updateService(t, tc.name, func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "p8080", Port: 8080, Protocol: corev1.ProtocolTCP})
			})
			poll(t, 20*time.Second, "third listener on the adopted load balancer", func(ctx context.Context) (bool, error) {
				return len(listeners(t, lb.LoadBalancerId)) == 3, nil
			})
			deleteService(t, tc.name)
			if _, ok := describeLB(t, lb.LoadBalancerId); ok {
				t.Errorf("adopted load balancer %s survived its Service", lb.LoadBalancerId)
			}
		})
	}
}

// TestScaleAndRestart: with 20 ms added to every cloud call, 50 CLB
// Services with 2 ports each on 10 Nodes all get an address in under 60 s;
// with 10 NLB Services beside them, a CCM restart then costs, in its first
// 60 s, one tag listing per load balancer kind (a page per 100 load
// balancers) plus the node controller's instance listings, and no write.
func TestScaleAndRestart(t *testing.T) {
	const services, nlbServices = 50, 10
	rule, err := cloud.Gateway.AddFault(gateway.FaultRule{Latency: gateway.Duration(20 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	defer cloud.Gateway.RemoveFault(rule.ID)
	names := make([]string, services)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%02d", i)
	}
	seq := lastSeq()
	start := time.Now()
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() { createService(t, svcSpec{name: n, ports: []int32{80, 443}}) })
	}
	wg.Wait()
	poll(t, 60*time.Second, "every Service has an address", func(ctx context.Context) (bool, error) {
		list, err := kube(t).CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		done := 0
		for _, s := range list.Items {
			if len(s.Status.LoadBalancer.Ingress) > 0 && len(s.Name) > 6 && s.Name[:6] == "scale-" {
				done++
			}
		}
		return done == services, nil
	})
	took := time.Since(start)
	calls := cloud.Requests(gateway.RequestFilter{Product: "slb", AfterSeq: seq})
	writes := writesSince(seq)
	t.Logf("%d Services × 2 ports on %d Nodes, 20 ms per call: all addressed in %v; %d SLB calls (%.1f per Service, %.1f writes per Service)",
		services, nodeCount, took.Round(10*time.Millisecond), len(calls), float64(len(calls))/services, float64(len(writes))/services)
	t.Logf("calls per action: %v", perAction(calls))
	if took > 60*time.Second {
		t.Errorf("took %v, want under 60s", took)
	}
	zoneMaps := ccmtest.ZoneMaps(ccmtest.SeedDoc(ccmtest.SeedSpec{}))
	for i := range nlbServices {
		n := fmt.Sprintf("scale-nlb-%02d", i)
		svc := newService(svcSpec{name: n, ports: []int32{80, 443}, annotations: map[string]string{annotations.Key("zone-maps"): strings.Join(zoneMaps, ",")}})
		svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
		if _, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	// Let the last label and status writes land before the restart.
	for _, n := range names {
		waitIngress(t, n, 60*time.Second)
		poll(t, 10*time.Second, n+" has its backends-hash label", func(ctx context.Context) (bool, error) {
			return getService(t, n).Labels[naming.LabelBackendsHash] != "", nil
		})
	}

	ccm.Stop()
	// By arrival, not by log sequence: the log numbers a call when it is
	// answered, and the stopped process's last calls (up to one per
	// worker, 16) can be answered after it exited.
	restarted := time.Now()
	if err := startCCM(); err != nil {
		t.Fatal(err)
	}
	const window = 60 * time.Second
	time.Sleep(window)
	after := cloud.Requests(gateway.RequestFilter{Since: restarted})
	total := len(names)
	byAction := map[string]int{}
	var written []string
	for _, r := range after {
		t.Logf("  +%v %s %s %s %s%s", r.Time.Sub(restarted).Round(10*time.Millisecond), r.Product, r.Action, r.Code, r.Params["LoadBalancerId"], r.Params["ServerGroupId"])
		byAction[r.Product+" "+r.Action]++
		if isWrite(r.Action) {
			written = append(written, r.Product+" "+r.Action)
		}
	}
	t.Logf("restart with %d converged Services (%d CLB, %d NLB) and %d Nodes: %d cloud calls in the first %v: %v",
		total, services, nlbServices, nodeCount, len(after), window, byAction)
	if len(written) != 0 {
		t.Errorf("the restart made %d write calls: %v", len(written), written)
	}
	// One page per 100 load balancers per kind, and the node controller's
	// instance listings: one at start, then one per instance cache period
	// (15 s) while the status updates, every 10 s in these tests (5 min by
	// default), ask for instances.
	pages := func(n int) int { return (n + 99) / 100 }
	if n := byAction["slb DescribeLoadBalancers"]; n != pages(services) {
		t.Errorf("%d CLB listings, want %d", n, pages(services))
	}
	if n := byAction["nlb ListLoadBalancers"]; n != pages(nlbServices) {
		t.Errorf("%d NLB listings, want %d", n, pages(nlbServices))
	}
	if limit := pages(services) + pages(nlbServices) + 4; len(after) > limit {
		t.Errorf("%d calls in the first %v after the restart, want at most %d", len(after), window, limit)
	}
	// The restarted CCM still deletes what it proved from the listing.
	cloud.Gateway.RemoveFault(rule.ID)
	for _, n := range names {
		if err := kube(t).CoreV1().Services(ns).Delete(context.Background(), n, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}
	for _, n := range names {
		deleteService(t, n)
	}
}

func perAction(rs []gateway.RequestRecord) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		out[r.Action]++
	}
	return out
}
