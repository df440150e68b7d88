package routes

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// fakeRouteCloud answers the route controller's writes from fixed
// failures and records what it was asked, so that apply's per-entry
// handling is tested without the SDK's request shapes.
type fakeRouteCloud struct {
	createFailed, deleteFailed map[string]cloud.EntryFailure
	created                    []cloud.NewRouteEntry
	deleted                    []cloud.RouteEntry
	described                  map[string]string
}

func (f *fakeRouteCloud) Region() string { return "cn-hangzhou" }
func (f *fakeRouteCloud) RouteTables(context.Context, string) ([]string, error) {
	return []string{"vtb-1"}, nil
}
func (f *fakeRouteCloud) RouteEntries(context.Context, string) ([]cloud.RouteEntry, error) {
	return nil, nil
}
func (f *fakeRouteCloud) CreateRouteEntries(_ context.Context, _ string, batch []cloud.NewRouteEntry) (map[string]cloud.EntryFailure, error) {
	f.created = append(f.created, batch...)
	return f.createFailed, nil
}
func (f *fakeRouteCloud) DeleteRouteEntries(_ context.Context, _ string, batch []cloud.RouteEntry) (map[string]cloud.EntryFailure, error) {
	f.deleted = append(f.deleted, batch...)
	return f.deleteFailed, nil
}
func (f *fakeRouteCloud) SetRouteEntryDescription(_ context.Context, id, d string) error {
	f.described[id] = d
	return nil
}
func (f *fakeRouteCloud) ExistingInstances(context.Context, []string) (map[string]bool, error) {
	return map[string]bool{}, nil
}
func (f *fakeRouteCloud) VPCHasIPv6(context.Context, string) (bool, error) { return false, nil }

// TestApplyPerEntry: through the Cloud seam, a refused create (quota) is
// reported on its Node and not retried, a duplicate counts as present, a
// delete of an entry already gone succeeds, and marks are written last
// with the cluster's description.
func TestApplyPerEntry(t *testing.T) {
	fc := &fakeRouteCloud{
		createFailed: map[string]cloud.EntryFailure{
			"10.244.1.0/24": {Code: "QuotaExceeded.RouteEntryNum", Message: "quota"},
			"10.244.2.0/24": {Code: codeDuplicate},
		},
		deleteFailed: map[string]cloud.EntryFailure{"rte-old": {Code: codeNotFound}},
		described:    map[string]string{},
	}
	kube := fake.NewClientset()
	rec := record.NewFakeRecorder(20)
	c, err := New(Options{
		KubeClient: kube, NodeInformer: informers.NewSharedInformerFactory(kube, 0).Core().V1().Nodes(),
		Recorder: rec, Cloud: fc, RouteTableIDs: []string{"vtb-1"}, ClusterCIDR: "10.244.0.0/16", ClusterID: testCluster,
	})
	if err != nil {
		t.Fatal(err)
	}
	pl := plan{
		Deletes: []deletion{{Entry: entry{ID: "rte-old", Table: "vtb-1", Dst: "10.244.9.0/24", HopType: nextHopInstance, HopID: "i-old"}, Node: "old"}},
		Creates: []creation{
			{Table: "vtb-1", Target: target{Node: "a", Instance: "i-a", CIDR: netip.MustParsePrefix("10.244.1.0/24")}},
			{Table: "vtb-1", Target: target{Node: "b", Instance: "i-b", CIDR: netip.MustParsePrefix("10.244.2.0/24")}},
			{Table: "vtb-1", Target: target{Node: "c", Instance: "i-c", CIDR: netip.MustParsePrefix("10.244.3.0/24")}},
		},
		Marks: []marking{{Entry: entry{ID: "rte-d", Table: "vtb-1", Dst: "10.244.4.0/24"}, Node: "d", Description: description(testCluster, "d")}},
	}
	out := c.apply(context.Background(), []string{"vtb-1"}, pl, nil)
	if len(out.retry) != 0 {
		t.Errorf("retry = %v, want none (a quota refusal waits for the resync)", out.retry)
	}
	for dst, want := range map[string]bool{"10.244.1.0/24": false, "10.244.2.0/24": true, "10.244.3.0/24": true} {
		if got := out.have[routeKey{"vtb-1", dst}]; got != want {
			t.Errorf("have[%s] = %v, want %v", dst, got, want)
		}
	}
	if len(fc.deleted) != 1 || len(fc.created) != 3 {
		t.Errorf("deleted %v, created %v", fc.deleted, fc.created)
	}
	if got := fc.created[2].Description; got != description(testCluster, "c") {
		t.Errorf("create description = %q", got)
	}
	if fc.described["rte-d"] != description(testCluster, "d") {
		t.Errorf("marks = %v", fc.described)
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	joined := strings.Join(events, "\n")
	for _, want := range []string{"Normal DeletedRoute", "Warning CreateRouteFailed Could not create route 10.244.1.0/24", "Normal CreatedRoute Created route 10.244.3.0/24", "Normal AdoptedRoute"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "Created route 10.244.2.0/24") {
		t.Errorf("a duplicate was announced as created:\n%s", joined)
	}
}
