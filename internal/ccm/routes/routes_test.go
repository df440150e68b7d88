package routes_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// TestRouteLifecycle: one entry per Node in each of two route tables, the
// NetworkUnavailable condition, a resync that changes nothing costs only
// the list calls, an entry deleted out of band comes back, and a deleted
// Node's entries go.
func TestRouteLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "life", 3, 1)
	if len(h.tables) != 2 {
		t.Fatalf("seeded tables %v, want the system and one custom table", h.tables)
	}
	h.start(nil)
	start := time.Now()
	w := want{}
	for i, inst := range h.instances {
		h.addNode(h.nodeName(i), inst, podCIDR(i+1))
		w[podCIDR(i+1)] = inst
	}
	h.expectRoutes(15*time.Second, h.tables, w)
	for i := range h.instances {
		h.expectCondition(10*time.Second, h.nodeName(i), corev1.ConditionFalse, routes.ReasonRouteCreated)
	}
	t.Logf("3 Nodes routed in 2 tables and marked RouteCreated in %s", time.Since(start).Round(time.Millisecond))
	for _, table := range h.tables {
		got, err := h.entries(table)
		if err != nil {
			t.Fatal(err)
		}
		for i := range h.instances {
			if d := got[podCIDR(i+1)].Description; d != "k8s/"+clusterID+"/"+h.nodeName(i) {
				t.Errorf("table %s entry %s Description = %q", table, podCIDR(i+1), d)
			}
		}
		if created := metric(t, "alicloud_route_entries_created_total", map[string]string{"route_table": table}); created != 3 {
			t.Errorf("entries created in %s = %v, want 3", table, created)
		}
	}
	h.expectEvent(5*time.Second, h.nodeName(0), routes.EventCreatedRoute, podCIDR(1))
	// The patch merged into the status: Ready is still there.
	n, err := h.kube.CoreV1().Nodes().Get(context.Background(), h.nodeName(0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Status.Conditions) != 2 {
		t.Errorf("conditions %+v, want Ready and NetworkUnavailable", n.Status.Conditions)
	}

	// Nothing to change: passes only list, one call per table.
	seq := h.lastSeq()
	time.Sleep(3500 * time.Millisecond)
	lists := map[string]int{}
	for _, r := range h.env.Emulator.Requests(gateway.RequestFilter{AfterSeq: seq}) {
		if r.Action != "DescribeRouteEntryList" {
			t.Errorf("idle resync made a %s call", r.Action)
			continue
		}
		lists[r.Params["RouteTableId"]]++
	}
	if lists[h.tables[0]] < 2 || lists[h.tables[0]] != lists[h.tables[1]] {
		t.Errorf("idle resyncs listed %v, want the same number (≥2) of calls per table", lists)
	}
	t.Logf("idle resyncs over 3.5s: list calls per table %v, no other call", lists)

	// An entry deleted out of band comes back at the next resync.
	got, err := h.entries(h.tables[1])
	if err != nil {
		t.Fatal(err)
	}
	oldID := got[podCIDR(2)].RouteEntryId
	deleted := time.Now()
	h.deleteEntry(oldID)
	h.expectRoutes(10*time.Second, h.tables, w)
	t.Logf("entry deleted out of band recreated in %s", time.Since(deleted).Round(time.Millisecond))
	if got, _ := h.entries(h.tables[1]); got[podCIDR(2)].RouteEntryId == oldID {
		t.Errorf("entry %s was not recreated", oldID)
	}

	// A deleted Node's entries go from every table.
	h.deleteNode(h.nodeName(2))
	delete(w, podCIDR(3))
	h.expectRoutes(10*time.Second, h.tables, w)
	h.expectEvent(5*time.Second, h.nodeName(2), routes.EventDeletedRoute, podCIDR(3))
}

// TestPodCIDRAndProviderIDChanges: Node events, not the resync, drive the
// passes (the resync period is a minute here).
func TestPodCIDRAndProviderIDChanges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "change", 2, 1)
	h.start(func(o *routes.Options) { o.ResyncPeriod = time.Minute })
	name := h.nodeName(0)
	h.addNode(name, h.instances[0], podCIDR(10))
	h.expectRoutes(10*time.Second, h.tables, want{podCIDR(10): h.instances[0]})

	// podCIDR is immutable on a Node object: a re-registered Node with a
	// new podCIDR replaces the entry.
	h.deleteNode(name)
	h.expectGone(name)
	h.addNode(name, h.instances[0], podCIDR(11))
	h.expectRoutes(10*time.Second, h.tables, want{podCIDR(11): h.instances[0]})
	h.expectCondition(10*time.Second, name, corev1.ConditionFalse, routes.ReasonRouteCreated)

	// A Node without providerID gets no route until initialization sets it.
	late := h.nodeName(1)
	h.addNode(late, "", podCIDR(12))
	time.Sleep(time.Second)
	if s, _, err := h.condition(late); err != nil || s != "" {
		t.Errorf("Node without providerID: NetworkUnavailable %q, %v; want untouched", s, err)
	}
	patch := []byte(`{"spec":{"providerID":"` + h.env.Region + "." + h.instances[1] + `"}}`)
	if _, err := h.kube.CoreV1().Nodes().Patch(context.Background(), late, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	h.expectRoutes(10*time.Second, h.tables, want{podCIDR(11): h.instances[0], podCIDR(12): h.instances[1]})
	h.expectCondition(10*time.Second, late, corev1.ConditionFalse, routes.ReasonRouteCreated)

	// Labelled exclude-node: left alone, its route is not removed.
	if _, err := h.kube.CoreV1().Nodes().Patch(context.Background(), late, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+nodes.LabelExcludeNode+`":"true"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	seq := h.lastSeq()
	time.Sleep(1500 * time.Millisecond)
	if ok, _, _ := h.writes("DeleteRouteEntries", seq); len(ok) != 0 {
		t.Errorf("an excluded Node's route was deleted: %v", ok)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestBurstOfNodes: 20 Nodes added at once cost at most 2
// CreateRouteEntries calls per table, and the TaskConflicts the second
// table's write meets are retried, never reported.
func TestBurstOfNodes(t *testing.T) {
	t.Parallel()
	const n = 20
	h := newHarness(t, "burst", n, 1)
	h.start(func(o *routes.Options) { o.ResyncPeriod = time.Minute })
	poll(t, 10*time.Second, "first pass", func() error {
		if h.env.Emulator.Calls("vpc", "DescribeRouteEntryList") < 2 {
			return errString("no pass yet")
		}
		return nil
	})
	seq := h.lastSeq()
	start := time.Now()
	w := want{}
	var wg sync.WaitGroup
	for i, inst := range h.instances {
		w[podCIDR(i+1)] = inst
		wg.Add(1)
		go func() { defer wg.Done(); h.addNode(h.nodeName(i), inst, podCIDR(i+1)) }()
	}
	wg.Wait()
	h.expectRoutes(20*time.Second, h.tables, w)
	for i := range h.instances {
		h.expectCondition(10*time.Second, h.nodeName(i), corev1.ConditionFalse, routes.ReasonRouteCreated)
	}
	elapsed := time.Since(start)
	ok, failed, codes := h.writes("CreateRouteEntries", seq)
	for _, table := range h.tables {
		if ok[table] < 1 || ok[table] > 2 {
			t.Errorf("table %s: %d successful CreateRouteEntries calls, want 1 or 2", table, ok[table])
		}
	}
	for _, c := range codes {
		if c != "TaskConflict" {
			t.Errorf("CreateRouteEntries failed with %s", c)
		}
	}
	for i := range h.instances {
		for _, reason := range []string{routes.EventCreateRouteFailed, routes.EventSyncRouteFailed} {
			if msgs, err := h.events(h.nodeName(i), reason); err != nil || len(msgs) > 0 {
				t.Errorf("Node %s: %s events %v (%v)", h.nodeName(i), reason, msgs, err)
			}
		}
	}
	t.Logf("20 Nodes in 2 tables converged in %s: CreateRouteEntries OK per table %v, TaskConflict retries per table %v",
		elapsed.Round(time.Millisecond), ok, failed)
}

// TestQuotaExhausted: the Node whose entry exceeds the table's quota gets a
// Warning event and NetworkUnavailable=True; the others are served; once
// the quota is raised the next resync serves it too.
func TestQuotaExhausted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "quota", 3, 1)
	settings := h.env.Emulator.Store.Settings()
	if err := settings.SetQuota(store.QuotaVPCCustomRoutesPerTable, 2); err != nil {
		t.Fatal(err)
	}
	h.start(nil)
	for i, inst := range h.instances {
		h.addNode(h.nodeName(i), inst, podCIDR(20+i))
	}
	// Targets are ordered by Node name, so the third one hits the quota.
	h.expectRoutes(15*time.Second, h.tables, want{podCIDR(20): h.instances[0], podCIDR(21): h.instances[1]})
	h.expectEvent(10*time.Second, h.nodeName(2), routes.EventCreateRouteFailed, "QuotaExceeded")
	h.expectCondition(10*time.Second, h.nodeName(2), corev1.ConditionTrue, routes.ReasonNoRouteCreated)
	for i := 0; i < 2; i++ {
		h.expectCondition(10*time.Second, h.nodeName(i), corev1.ConditionFalse, routes.ReasonRouteCreated)
	}
	if f := metric(t, "alicloud_route_entry_failures_total", map[string]string{"op": "create", "code": "QuotaExceeded"}); f < 2 {
		t.Errorf("quota failures metric = %v, want ≥ 2", f)
	}
	if err := settings.SetQuota(store.QuotaVPCCustomRoutesPerTable, 200); err != nil {
		t.Fatal(err)
	}
	h.expectRoutes(10*time.Second, h.tables, want{podCIDR(20): h.instances[0], podCIDR(21): h.instances[1], podCIDR(22): h.instances[2]})
	h.expectCondition(10*time.Second, h.nodeName(2), corev1.ConditionFalse, routes.ReasonRouteCreated)
}

// TestThrottlingConverges: 30% of route writes and lists refused with
// Throttling.User; everything still converges.
func TestThrottlingConverges(t *testing.T) {
	t.Parallel()
	const n = 10
	h := newHarness(t, "throttle", n, 1)
	var rules []gateway.FaultRule
	for _, action := range []string{"CreateRouteEntries", "DeleteRouteEntries", "DescribeRouteEntryList"} {
		r, err := h.env.Emulator.Gateway.AddFault(gateway.FaultRule{
			Product: "vpc", Action: action, Probability: 0.3,
			Error: &gateway.FaultError{Code: "Throttling.User", Status: 400, Message: "Request was denied due to user flow control."},
		})
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	h.start(nil)
	start := time.Now()
	w := want{}
	for i, inst := range h.instances {
		h.addNode(h.nodeName(i), inst, podCIDR(30+i))
		w[podCIDR(30+i)] = inst
	}
	h.expectRoutes(30*time.Second, h.tables, w)
	for i := range h.instances {
		h.expectCondition(10*time.Second, h.nodeName(i), corev1.ConditionFalse, routes.ReasonRouteCreated)
	}
	// Then a deletion, under the same faults.
	h.deleteNode(h.nodeName(0))
	delete(w, podCIDR(30))
	h.expectRoutes(30*time.Second, h.tables, w)
	fired := 0
	for _, r := range h.env.Emulator.Gateway.Faults() {
		fired += r.Fired
	}
	if fired == 0 {
		t.Error("no fault fired")
	}
	t.Logf("converged under 30%% Throttling.User in %s; %d faults injected over rules %d", time.Since(start).Round(time.Millisecond), fired, len(rules))
}

// TestConflictsAndAdoption: a route inside the cluster CIDR made by
// someone else is reported on the Node it collides with, never deleted;
// routes outside the cluster CIDR are not touched; an unmarked route that
// matches a Node (as the existing CCM leaves them) is adopted without churn.
func TestConflictsAndAdoption(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "conflict", 4, 0)
	table := h.tables[0]
	foreign := h.instances[3]
	conflictID := h.createEntry(table, podCIDR(40), foreign, "made by hand")
	outsideID := h.createEntry(table, "172.16.0.0/24", foreign, "")
	adoptedID := h.createEntry(table, podCIDR(41), h.instances[1], "")
	seq := h.lastSeq()
	h.start(nil)
	for i := 0; i < 3; i++ {
		h.addNode(h.nodeName(i), h.instances[i], podCIDR(40+i))
	}
	h.expectRoutes(15*time.Second, h.tables, want{podCIDR(40): foreign, podCIDR(41): h.instances[1], podCIDR(42): h.instances[2]})
	h.expectEvent(10*time.Second, h.nodeName(0), routes.EventRouteConflict, conflictID)
	h.expectCondition(10*time.Second, h.nodeName(0), corev1.ConditionTrue, routes.ReasonNoRouteCreated)
	h.expectCondition(10*time.Second, h.nodeName(1), corev1.ConditionFalse, routes.ReasonRouteCreated)
	h.expectCondition(10*time.Second, h.nodeName(2), corev1.ConditionFalse, routes.ReasonRouteCreated)
	time.Sleep(2 * time.Second) // a few more resyncs
	got, err := h.entries(table)
	if err != nil {
		t.Fatal(err)
	}
	for dst, id := range map[string]string{podCIDR(40): conflictID, "172.16.0.0/24": outsideID, podCIDR(41): adoptedID} {
		if got[dst].RouteEntryId != id {
			t.Errorf("entry %s for %s was replaced by %q", id, dst, got[dst].RouteEntryId)
		}
	}
	if ok, _, _ := h.writes("DeleteRouteEntries", seq); len(ok) != 0 {
		t.Errorf("DeleteRouteEntries called: %v", ok)
	}
	if g := metric(t, "alicloud_route_conflicting_entries", map[string]string{"route_table": table}); g != 1 {
		t.Errorf("conflicting entries gauge = %v, want 1", g)
	}
	// The conflicting entry is the cloud's: deleting it is the operator's call.
	req := vpc.CreateDeleteRouteEntryRequest()
	req.RouteEntryId = "rte-doesnotexist"
	_, err = h.vpc.DeleteRouteEntry(req)
	serverError(t, err, "InvalidRouteEntry.NotFound", 404)
	h.deleteEntry(conflictID)
	h.expectRoutes(10*time.Second, h.tables, want{podCIDR(40): h.instances[0], podCIDR(41): h.instances[1], podCIDR(42): h.instances[2]})
	h.expectCondition(10*time.Second, h.nodeName(0), corev1.ConditionFalse, routes.ReasonRouteCreated)
}

// TestRouteTableDiscovery: without routeTableIDs the VPC's only table is
// used; with several the error names them.
func TestRouteTableDiscovery(t *testing.T) {
	t.Parallel()
	one := newHarness(t, "disc-one", 1, 0)
	one.start(func(o *routes.Options) { o.RouteTableIDs = nil })
	tables, err := one.ctrl.RouteTables(context.Background())
	if err != nil || len(tables) != 1 || tables[0] != one.tables[0] {
		t.Fatalf("RouteTables = %v, %v; want [%s]", tables, err, one.tables[0])
	}
	one.addNode(one.nodeName(0), one.instances[0], podCIDR(50))
	one.expectRoutes(10*time.Second, one.tables, want{podCIDR(50): one.instances[0]})

	two := newHarness(t, "disc-two", 0, 1)
	two.start(func(o *routes.Options) { o.RouteTableIDs = nil })
	_, err = two.ctrl.RouteTables(context.Background())
	if err == nil || !strings.Contains(err.Error(), two.tables[0]) || !strings.Contains(err.Error(), two.tables[1]) || !strings.Contains(err.Error(), "routeTableIDs") {
		t.Fatalf("RouteTables error = %v, want one naming %v and routeTableIDs", err, two.tables)
	}
}

// TestBatchSize: writes are split by --route-reconcile-batch-size, both
// ways, and each call carries at most that many entries.
func TestBatchSize(t *testing.T) {
	t.Parallel()
	const n, batch = 10, 4
	h := newHarness(t, "batch", n, 0)
	h.start(func(o *routes.Options) { o.BatchSize = batch; o.ResyncPeriod = time.Minute })
	seq := h.lastSeq()
	w := want{}
	var wg sync.WaitGroup
	for i, inst := range h.instances {
		w[podCIDR(60+i)] = inst
		wg.Add(1)
		go func() { defer wg.Done(); h.addNode(h.nodeName(i), inst, podCIDR(60+i)) }()
	}
	wg.Wait()
	h.expectRoutes(15*time.Second, h.tables, w)
	for i := 0; i < n; i++ {
		h.expectCondition(10*time.Second, h.nodeName(i), corev1.ConditionFalse, routes.ReasonRouteCreated)
	}
	for i := 0; i < n; i++ {
		h.deleteNode(h.nodeName(i))
	}
	h.expectRoutes(15*time.Second, h.tables, want{})
	for _, action := range []string{"CreateRouteEntries", "DeleteRouteEntries"} {
		calls, entries := 0, 0
		for _, r := range h.env.Emulator.Requests(gateway.RequestFilter{Product: "vpc", Action: action, AfterSeq: seq}) {
			if r.Code != gateway.CodeOK {
				continue
			}
			calls++
			k := 0
			for k < 60 && r.Params[fmt.Sprintf("RouteEntries.%d.RouteTableId", k+1)] != "" {
				k++
			}
			if k > batch {
				t.Errorf("%s carried %d entries, batch size is %d", action, k, batch)
			}
			entries += k
		}
		if entries != n || calls < (n+batch-1)/batch {
			t.Errorf("%s: %d entries in %d calls, want %d in at least %d", action, entries, calls, n, (n+batch-1)/batch)
		}
		t.Logf("%s: %d entries in %d calls of at most %d", action, entries, calls, batch)
	}
	if v := metric(t, "alicloud_route_reconciles_total", map[string]string{"result": "success"}); v < 1 {
		t.Errorf("successful reconciles metric = %v", v)
	}
}

// TestUninitializedNodeWaitsForInitialization: a Node whose providerID
// kubelet set (--provider-id) but which still carries the uninitialized
// taint gets no route and no NetworkUnavailable write, over several
// resyncs; once initialization removes the taint, the update event brings
// its route and RouteCreated.
func TestUninitializedNodeWaitsForInitialization(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "uninit", 1, 0)
	h.start(nil)
	name := h.nodeName(0)
	h.addNodeWith(name, h.instances[0], podCIDR(20), func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	})
	seq := h.lastSeq()
	time.Sleep(2500 * time.Millisecond) // the add event's pass and two 1s resyncs
	if ok, failed, _ := h.writes("CreateRouteEntries", seq); len(ok)+len(failed) != 0 {
		t.Fatalf("an uninitialized Node got a route: %v %v", ok, failed)
	}
	if s, _, err := h.condition(name); err != nil || s != "" {
		t.Fatalf("uninitialized Node: NetworkUnavailable %q, %v; want untouched", s, err)
	}
	start := time.Now()
	if _, err := h.kube.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(`{"spec":{"taints":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	h.expectRoutes(10*time.Second, h.tables, want{podCIDR(20): h.instances[0]})
	h.expectCondition(10*time.Second, name, corev1.ConditionFalse, routes.ReasonRouteCreated)
	t.Logf("route and RouteCreated %v after the taint was removed", time.Since(start).Round(10*time.Millisecond))
}

// TestRestartCost: a route controller started over routes that are already
// right (a CCM restart) lists each route table once and writes nothing.
func TestRestartCost(t *testing.T) {
	t.Parallel()
	const n = 10
	h := newHarness(t, "restart", n, 1)
	stop := h.start(nil)
	w := want{}
	for i, inst := range h.instances {
		h.addNode(h.nodeName(i), inst, podCIDR(60+i))
		w[podCIDR(60+i)] = inst
	}
	h.expectRoutes(30*time.Second, h.tables, w)
	for i := range h.instances {
		h.expectCondition(10*time.Second, h.nodeName(i), corev1.ConditionFalse, routes.ReasonRouteCreated)
	}
	stop()
	// By arrival, not by log sequence: the log numbers a call when it
	// finishes, and a listing the stopped controller abandoned (the SDK
	// takes no context) can finish after the restart.
	restarted := time.Now()
	h.start(func(o *routes.Options) { o.ResyncPeriod = routes.DefaultResyncPeriod })
	const window = 5 * time.Second
	time.Sleep(window)
	lists := map[string]int{}
	others := map[string]int{}
	var refused []string
	for _, r := range h.env.Emulator.Requests(gateway.RequestFilter{Since: restarted}) {
		switch {
		case r.Code != gateway.CodeOK:
			// A throttled or failed attempt retried is not a second pass.
			refused = append(refused, r.Action+" "+r.Params["RouteTableId"]+" "+r.Code)
		case r.Action == "DescribeRouteEntryList":
			lists[r.Params["RouteTableId"]]++
		default:
			others[r.Action]++
		}
	}
	t.Logf("restart over %d converged Nodes in %d tables: list calls per table %v, other calls %v, refused attempts %v in %v", n, len(h.tables), lists, others, refused, window)
	if len(others) != 0 {
		t.Errorf("the restart made other calls than listings: %v", others)
	}
	for _, table := range h.tables {
		if lists[table] != 1 {
			t.Errorf("table %s listed %d times, want once", table, lists[table])
		}
	}
	h.expectRoutes(time.Second, h.tables, w)
}

// TestLostDeleteResponse: a DeleteRouteEntries whose answer is lost after
// the cloud applied it is replayed, and the replay's not-found answer for
// the entry counts as deleted: the route is reported deleted, no failure
// is counted, and the entry is not deleted again. Not parallel: the fault
// rule matches the action in the emulator the tests share.
func TestLostDeleteResponse(t *testing.T) {
	h := newHarness(t, "lostdel", 1, 0)
	h.start(nil)
	name := h.nodeName(0)
	h.addNode(name, h.instances[0], podCIDR(40))
	h.expectRoutes(10*time.Second, h.tables, want{podCIDR(40): h.instances[0]})
	notFound := map[string]string{"op": "delete", "code": "InvalidRouteEntry.NotFound"}
	before := metric(t, "alicloud_route_entry_failures_total", notFound)
	seq := h.lastSeq()
	rule, err := h.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "vpc", Action: "DeleteRouteEntries", Drop: true, After: true, Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.env.Emulator.Gateway.RemoveFault(rule.ID)
	h.deleteNode(name)
	h.expectRoutes(10*time.Second, h.tables, want{})
	h.expectEvent(5*time.Second, name, routes.EventDeletedRoute, podCIDR(40))
	// The replay may first find the VPC busy with the delete it replays.
	ok, _, codes := h.writes("DeleteRouteEntries", seq)
	if ok[h.tables[0]] != 2 || slices.ContainsFunc(codes, func(c string) bool { return c != "TaskConflict" }) {
		t.Errorf("DeleteRouteEntries answered OK %v, failed %v; want 2 OK in %s (the lost one and its replay), failures only busy", ok, codes, h.tables[0])
	}
	if after := metric(t, "alicloud_route_entry_failures_total", notFound); after != before {
		t.Errorf("the replay's not-found counted as %v failures", after-before)
	}
}
