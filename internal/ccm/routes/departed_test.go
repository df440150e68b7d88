package routes

import (
	"net/netip"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// TestDepartedNodes: a deleted Node's last state, from its delete event or a
// tombstone, reaches the passes until one has deleted its unmarked entries;
// excluded Nodes and Nodes that could have no route are not remembered.
func TestDepartedNodes(t *testing.T) {
	cl, err := cloud.New(cloud.Options{Region: "cn-hangzhou", Credentials: cloud.StaticProvider{Creds: cloud.NewCredentials("id", "secret", "", time.Time{})}})
	if err != nil {
		t.Fatal(err)
	}
	a := node("a", "cn-hangzhou.i-a", []string{"10.244.1.0/24", "fd00::/64"}, nil)
	b := node("b", "cn-hangzhou.i-b", []string{"10.244.2.0/24"}, nil)
	ex := node("ex", "cn-hangzhou.i-ex", []string{"10.244.3.0/24"}, map[string]string{nodes.LabelExcludeNode: ""})
	noPod := node("nopod", "cn-hangzhou.i-np", nil, nil)
	noID := node("noid", "", []string{"10.244.4.0/24"}, nil)
	wantA := departed{Node: "a", Instance: "i-a", CIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00::/64")}}
	wantB := departed{Node: "b", Instance: "i-b", CIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.2.0/24")}}
	for _, tc := range []struct {
		name string
		// deleted are the delete events' objects (a Node or a tombstone).
		deleted []any
		// live are the Nodes the lister has at the pass.
		live []*corev1.Node
		// undeleted are the keys whose deletion failed in the pass.
		undeleted map[string]bool
		// pass are the Departed the pass sees; kept those left after it.
		pass, kept []departed
	}{
		{
			name:    "deleted and tombstoned Nodes reach the pass, then are forgotten",
			deleted: []any{a, cache.DeletedFinalStateUnknown{Key: "b", Obj: b}},
			pass:    []departed{wantA, wantB},
		},
		{
			name:      "a failed deletion keeps the Node for the next pass",
			deleted:   []any{a, b},
			undeleted: map[string]bool{wantA.key(): true},
			pass:      []departed{wantA, wantB}, kept: []departed{wantA},
		},
		{
			name:    "excluded, without podCIDR or without providerID: nothing to remember",
			deleted: []any{ex, noPod, noID, cache.DeletedFinalStateUnknown{Key: "x", Obj: "not a Node"}},
		},
		{
			// As for a marked entry: the new Node keeps only what it wants.
			name:    "a Node listed again under the name does not save the old one's entries",
			deleted: []any{a, b},
			live:    []*corev1.Node{node("a", "cn-hangzhou.i-a2", []string{"10.244.1.0/24"}, nil)},
			pass:    []departed{wantA, wantB},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset()
			c, err := New(Options{
				KubeClient: kube, NodeInformer: informers.NewSharedInformerFactory(kube, 0).Core().V1().Nodes(),
				Recorder: record.NewFakeRecorder(10), Cloud: cloud.VPCRoutes{Client: cl}, VpcID: "vpc-1", ClusterCIDR: "10.244.0.0/16,fd00::/48",
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range tc.deleted {
				c.nodeDeleted(obj)
			}
			byName := map[string]*corev1.Node{}
			for _, n := range tc.live {
				byName[n.Name] = n
			}
			ns := nodeSet{ExcludedNodes: map[string]bool{}, ExcludedInstances: map[string]bool{}, Released: map[string]bool{}}
			gone := c.withGoneNodes(&ns, byName)
			if got := sortedDeparted(ns.Departed); !reflect.DeepEqual(got, tc.pass) {
				t.Errorf("pass sees %+v, want %+v", got, tc.pass)
			}
			c.forgetGone(gone, nil, tc.undeleted)
			var kept []departed
			for _, d := range c.departed {
				kept = append(kept, d)
			}
			if got := sortedDeparted(kept); !reflect.DeepEqual(got, tc.kept) {
				t.Errorf("kept %+v, want %+v", got, tc.kept)
			}
		})
	}
}

func sortedDeparted(ds []departed) []departed {
	if len(ds) == 0 {
		return nil
	}
	out := append([]departed(nil), ds...)
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}
