package plancmdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/plan"
	cloudapi "github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

const ns = "default"

// ccmOptions are the CCM's and the plan's shared settings: routes on.
func ccmOptions(name string) ccmtest.CCMOptions {
	return ccmtest.CCMOptions{
		Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(),
		AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		CloudConfig: "Global:\n  clusterID: " + clusterID + "\n",
		Args:        []string{"--leader-elect=false", "--cluster-cidr=" + clusterCIDR, "--configure-cloud-routes=true", "--v=2"},
		LogPath:     filepath.Join(cluster.Dir, "logs", name+".log"),
	}
}

func startCCM(t *testing.T, name string) *ccmtest.CCM {
	t.Helper()
	c, err := ccmtest.StartCCM(context.Background(), ccmOptions(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// planReadOnly runs the plan and fails the test if it wrote to the cloud.
func planReadOnly(t *testing.T, name string) (*plan.Report, int) {
	t.Helper()
	mark := lastSeq()
	r, code := runPlan(t, name)
	reads, writes := calls(mark)
	t.Logf("plan %s: cloud reads %v", name, reads)
	if len(writes) > 0 {
		t.Errorf("plan %s wrote to the cloud: %v", name, actions(writes))
	}
	return r, code
}

// runPlan runs `cloud-controller-manager plan -o json` as an operator
// would, with the CCM's cloud-config and routes settings, and returns its
// report and exit code.
func runPlan(t *testing.T, name string) (*plan.Report, int) {
	t.Helper()
	start := time.Now()
	run, err := ccmtest.RunPlan(ccmOptions(name), cluster.Dir, "--cluster-cidr="+clusterCIDR, "--timeout=2m")
	if err != nil {
		t.Fatal(err)
	}
	r := run.Report
	t.Logf("plan %s exited %d in %v: %d cloud writes, %d Kubernetes writes, %d items; its log:\n%s",
		name, run.ExitCode, time.Since(start).Round(time.Millisecond), r.CloudWrites, r.KubeWrites, len(r.Items), run.Log)
	return r, run.ExitCode
}

func lbService(name string, class *string, ann map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name}, LoadBalancerClass: class,
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
				{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8443)},
			},
		},
	}
}

// until polls cond for up to timeout, failing with the CCM's log tail.
func until(t *testing.T, c *ccmtest.CCM, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := c.Until(timeout, cond); err != nil {
		t.Fatalf("%s: %v; CCM log tail:\n%s", what, err, c.Tail(30))
	}
}

// synced reports whether the Service is addressed and carries the hash of
// its current spec.
func synced(ctx context.Context, cs kubernetes.Interface, name string) (bool, error) {
	s, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, nil
	}
	return len(s.Status.LoadBalancer.Ingress) > 0 && s.Labels[naming.LabelHash] == naming.Hash(s), nil
}

// routed reports whether every Node has its route (NetworkUnavailable
// False, which the route controller sets once the route exists).
func routed(ctx context.Context, cs kubernetes.Interface) (bool, error) {
	for _, name := range nodes {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ok := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionFalse {
				ok = true
			}
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// lastSeq is the newest request log sequence number.
func lastSeq() uint64 {
	rs := cloud.Requests()
	if len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1].Seq
}

// quiet waits until the emulator has seen no call for window.
func quiet(t *testing.T, window time.Duration) {
	t.Helper()
	last, changed := lastSeq(), time.Now()
	deadline := time.Now().Add(90 * time.Second)
	for time.Since(changed) < window {
		if time.Now().After(deadline) {
			t.Fatal("cloud calls never stopped")
		}
		time.Sleep(200 * time.Millisecond)
		if s := lastSeq(); s != last {
			last, changed = s, time.Now()
		}
	}
}

// calls are the CCM's calls after seq, split into reads and writes.
func calls(after uint64) (reads map[string]int, writes []gateway.RequestRecord) {
	reads = map[string]int{}
	for _, r := range cloud.Requests(gateway.RequestFilter{AfterSeq: after, AccessKeyID: accessKeyID}) {
		if cloudapi.IsRead(r.Action) {
			reads[r.Product+" "+r.Action]++
			continue
		}
		writes = append(writes, r)
	}
	return reads, writes
}

func actions(ws []gateway.RequestRecord) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Action)
	}
	return out
}

func item(t *testing.T, r *plan.Report, kind, name string) plan.Item {
	t.Helper()
	for _, it := range r.Items {
		if it.Kind == kind && it.Name == name {
			return it
		}
	}
	t.Fatalf("the plan has no %s %s; it has %v", kind, name, names(r))
	return plan.Item{}
}

func names(r *plan.Report) []string {
	var out []string
	for _, it := range r.Items {
		out = append(out, it.Kind+" "+it.Name)
	}
	return out
}

// has reports whether it plans action with every field of want.
func has(it plan.Item, action string, want map[string]string) bool {
	return slices.ContainsFunc(it.Cloud, func(w plan.CloudWrite) bool {
		if w.Action != action {
			return false
		}
		for k, v := range want {
			if w.Fields[k] != v {
				return false
			}
		}
		return true
	})
}

// match pairs every planned write with one the CCM made: same product,
// action and parameters, each placeholder standing for one id throughout
// (the id the CCM's create returned, first seen in a later write). It
// returns what is left on either side.
func match(planned []plan.CloudWrite, calls []gateway.RequestRecord) (unmade []string, unplanned []string) {
	// The plan lists a batch route write per entry.
	var made []gateway.RequestRecord
	for _, c := range calls {
		for _, fields := range plan.SplitEntries(cloudapi.WithoutEnvelope(c.Params)) {
			m := c
			m.Params = fields
			made = append(made, m)
		}
	}
	bound := map[string]string{}
	used := make([]bool, len(made))
	same := func(p plan.CloudWrite, m gateway.RequestRecord, bind map[string]string) bool {
		if p.Product != m.Product || p.Action != m.Action {
			return false
		}
		got := cloudapi.WithoutEnvelope(m.Params)
		if !slices.Equal(slices.Sorted(maps.Keys(p.Fields)), slices.Sorted(maps.Keys(got))) {
			return false
		}
		for k, v := range p.Fields {
			if !strings.Contains(v, cloudapi.PlaceholderPrefix) {
				if got[k] != v {
					return false
				}
				continue
			}
			if id, ok := bound[v]; ok {
				if got[k] != id {
					return false
				}
				continue
			}
			if id, ok := bind[v]; ok && got[k] != id {
				return false
			}
			bind[v] = got[k]
		}
		return true
	}
	for _, p := range planned {
		found := false
		for i, m := range made {
			bind := map[string]string{}
			if used[i] || !same(p, m, bind) {
				continue
			}
			used[i], found = true, true
			maps.Copy(bound, bind)
			break
		}
		if !found {
			unmade = append(unmade, fmt.Sprintf("%s %s %v", p.Product, p.Action, p.Fields))
		}
	}
	for i, m := range made {
		if !used[i] {
			unplanned = append(unplanned, fmt.Sprintf("%s %s %v", m.Product, m.Action, cloudapi.WithoutEnvelope(m.Params)))
		}
	}
	return unmade, unplanned
}

// deleteRoute deletes the route entry the CCM made for node, as an
// operator might in the console, and returns the Node and its podCIDR.
func deleteRoute(t *testing.T, node string) (string, string) {
	t.Helper()
	c := emulatortest.For(cloud, accessKeyID, accessKeySecret).VPC(t)
	tables, err := c.DescribeRouteTableList(vpc.CreateDescribeRouteTableListRequest())
	if err != nil || len(tables.RouterTableList.RouterTableListType) == 0 {
		t.Fatalf("route tables: %v", err)
	}
	lr := vpc.CreateDescribeRouteEntryListRequest()
	lr.RouteTableId = tables.RouterTableList.RouterTableListType[0].RouteTableId
	entries, err := c.DescribeRouteEntryList(lr)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries.RouteEntrys.RouteEntry {
		if e.Description != "k8s/"+clusterID+"/"+node {
			continue
		}
		dr := vpc.CreateDeleteRouteEntryRequest()
		dr.RouteEntryId, dr.RouteTableId = e.RouteEntryId, lr.RouteTableId
		if _, err := c.DeleteRouteEntry(dr); err != nil {
			t.Fatal(err)
		}
		return node, e.DestinationCidrBlock
	}
	t.Fatalf("no route entry of Node %s in %s", node, lr.RouteTableId)
	return "", ""
}

// TestPlan: a converged cluster (CLB and NLB Services, routes) plans no
// writes and makes none; after an annotation change, a new Service, a
// Service deleted while the CCM was stopped and a route deleted out of
// band, the plan lists the changes,
// creates (later writes naming the load balancer to be made) and
// deletes, makes no write itself, and the CCM started afterwards makes
// exactly the planned cloud writes; then the plan is empty again.
func TestPlan(t *testing.T) {
	ctx := context.Background()
	cs, err := cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	nlbAnn := map[string]string{annotations.Key("zone-maps"): strings.Join(zoneMaps, ",")}
	ccm := startCCM(t, "ccm-1")
	if err := ccmtest.WaitNodesInitialized(ctx, cs, nodes, 90*time.Second); err != nil {
		t.Fatalf("Nodes: %v; CCM log tail:\n%s", err, ccm.Tail(30))
	}
	until(t, ccm, 90*time.Second, "routes", func(ctx context.Context) (bool, error) { return routed(ctx, cs) })
	for _, svc := range []*corev1.Service{
		lbService("web", nil, nil),
		lbService("api", ptr.To(annotations.NLBClass), nlbAnn),
		lbService("gone", nil, nil),
	} {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"web", "api", "gone"} {
		until(t, ccm, 90*time.Second, "Service "+name+" synced", func(ctx context.Context) (bool, error) { return synced(ctx, cs, name) })
	}
	quiet(t, 3*time.Second)
	ccm.Stop()

	// Converged: nothing to write, nothing written.
	r, code := planReadOnly(t, "plan-converged")
	if code != plan.ExitNoWrites || r.CloudWrites+r.KubeWrites != 0 {
		t.Errorf("converged cluster: exit %d, %d cloud and %d Kubernetes writes planned; want exit 0 and none: %+v", code, r.CloudWrites, r.KubeWrites, r.Items)
	}
	for _, n := range []string{"web", "api", "gone"} {
		item(t, r, "Service", ns+"/"+n)
	}
	item(t, r, "Node", plan.AllNodes)

	// A route deleted out of band.
	drifted, cidr := deleteRoute(t, nodes[1])

	// Changes made while the CCM is stopped.
	patch := func(name string, ann map[string]string) {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
		if _, err := cs.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch("web", map[string]string{annotations.Key("name"): "web-renamed", annotations.Key("scheduler"): "wrr"})
	patch("api", map[string]string{annotations.Key("name"): "api-renamed"})
	for _, svc := range []*corev1.Service{lbService("fresh", nil, nil), lbService("fresh-nlb", ptr.To(annotations.NLBClass), nlbAnn)} {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.CoreV1().Services(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	r, code = planReadOnly(t, "plan-changed")
	if code != plan.ExitWrites {
		t.Errorf("changed cluster: exit %d, want %d", code, plan.ExitWrites)
	}
	var table strings.Builder
	if err := plan.Render(&table, r, plan.FormatTable); err != nil {
		t.Fatal(err)
	}
	t.Logf("the plan as a table:\n%s", table.String())
	web := item(t, r, "Service", ns+"/web")
	if !has(web, "SetLoadBalancerName", map[string]string{"LoadBalancerName": "web-renamed"}) {
		t.Errorf("web: the rename is not planned: %+v", web.Cloud)
	}
	if !has(web, "SetLoadBalancerTCPListenerAttribute", map[string]string{"ListenerPort": "80", "Scheduler": "wrr"}) {
		t.Errorf("web: the scheduler change is not planned: %+v", web.Cloud)
	}
	if api := item(t, r, "Service", ns+"/api"); !has(api, "UpdateLoadBalancerAttribute", map[string]string{"LoadBalancerName": "api-renamed"}) {
		t.Errorf("api: the rename is not planned: %+v", api.Cloud)
	}
	fresh := item(t, r, "Service", ns+"/fresh")
	newLB := cloudapi.PlaceholderPrefix + "LoadBalancer>"
	if !has(fresh, "CreateLoadBalancer", nil) || !has(fresh, "CreateLoadBalancerTCPListener", map[string]string{"LoadBalancerId": newLB, "ListenerPort": "443"}) ||
		!has(fresh, "StartLoadBalancerListener", map[string]string{"LoadBalancerId": newLB, "ListenerPort": "443"}) {
		t.Errorf("fresh: the create and the listeners on the new load balancer are not planned: %+v", fresh.Cloud)
	}
	freshNLB := item(t, r, "Service", ns+"/fresh-nlb")
	if !has(freshNLB, "CreateLoadBalancer", nil) || !slices.ContainsFunc(freshNLB.Cloud, func(w plan.CloudWrite) bool {
		return w.Action == "CreateListener" && strings.HasPrefix(w.Fields["LoadBalancerId"], cloudapi.PlaceholderPrefix) &&
			strings.HasPrefix(w.Fields["ServerGroupId"], cloudapi.PlaceholderPrefix)
	}) {
		t.Errorf("fresh-nlb: the create and the listeners on the new load balancer and groups are not planned: %+v", freshNLB.Cloud)
	}
	if gone := item(t, r, "Service", ns+"/gone"); !has(gone, "DeleteLoadBalancer", nil) {
		t.Errorf("gone: the delete is not planned: %+v", gone.Cloud)
	}
	if n := item(t, r, "Node", drifted); !has(n, "CreateRouteEntries", map[string]string{"DstCidrBlock": cidr}) {
		t.Errorf("Node %s: its route is not planned: %+v", drifted, n.Cloud)
	}
	var planned []plan.CloudWrite
	for _, it := range r.Items {
		planned = append(planned, it.Cloud...)
	}

	// The CCM applies the changes; its writes are the plan's.
	mark := lastSeq()
	ccm = startCCM(t, "ccm-2")
	for _, name := range []string{"web", "api", "fresh", "fresh-nlb"} {
		until(t, ccm, 90*time.Second, "Service "+name+" synced", func(ctx context.Context) (bool, error) { return synced(ctx, cs, name) })
	}
	until(t, ccm, 60*time.Second, "Service gone deleted", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Services(ns).Get(ctx, "gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	until(t, ccm, 60*time.Second, "routes", func(ctx context.Context) (bool, error) { return routed(ctx, cs) })
	quiet(t, 3*time.Second)
	ccm.Stop()
	_, made := calls(mark)
	t.Logf("planned %d cloud writes; the CCM made %d: %v", len(planned), len(made), actions(made))
	unmade, unplanned := match(planned, made)
	if len(unmade) > 0 || len(unplanned) > 0 {
		t.Errorf("the CCM's writes differ from the plan:\nplanned, not made:\n  %s\nmade, not planned:\n  %s",
			strings.Join(unmade, "\n  "), strings.Join(unplanned, "\n  "))
	}

	// Applied: the plan is empty again.
	r, code = planReadOnly(t, "plan-applied")
	if code != plan.ExitNoWrites {
		t.Errorf("after the CCM applied the plan: exit %d, %+v", code, r.Items)
	}
}
