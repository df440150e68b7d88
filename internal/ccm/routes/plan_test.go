package routes

import (
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

const testCluster = "c1"

var testCIDRs = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}

func tgt(node, inst, cidr string) target {
	return target{Node: node, Instance: inst, CIDR: netip.MustParsePrefix(cidr)}
}

func ent(id, table, dst, hop, desc string) entry {
	return entry{ID: id, Table: table, Dst: dst, HopType: nextHopInstance, HopID: hop, Description: desc, Status: "Available"}
}

func withStatus(e entry, status string) entry {
	e.Status = status
	return e
}

func mark(node string) string { return description(testCluster, node) }

// summary renders a plan compactly so that cases read as expectations.
type summary struct {
	Creates, Deletes, Conflicts, Present, Blocked, Marks, Deferred, Adopted, Unverified []string
}

func summarize(p plan) summary {
	var s summary
	for _, c := range p.Creates {
		s.Creates = append(s.Creates, c.Table+":"+c.Target.CIDR.String()+">"+c.Target.Instance)
	}
	for _, d := range p.Deletes {
		s.Deletes = append(s.Deletes, deleteSummary(d))
	}
	for _, a := range p.Adopted {
		s.Adopted = append(s.Adopted, a.Entry.ID+"@"+a.Node)
	}
	s.Unverified = p.Unverified
	for _, c := range p.Conflicts {
		s.Conflicts = append(s.Conflicts, c.Entry.ID+"@"+strings.Join(c.Nodes, "+"))
	}
	for k := range p.Present {
		s.Present = append(s.Present, k.Table+":"+k.Dst)
	}
	for k := range p.Blocked {
		s.Blocked = append(s.Blocked, k.Table+":"+k.Dst)
	}
	for _, m := range p.Marks {
		s.Marks = append(s.Marks, markSummary(m))
	}
	for _, m := range p.Deferred {
		s.Deferred = append(s.Deferred, markSummary(m))
	}
	sort.Strings(s.Present)
	sort.Strings(s.Blocked)
	return s
}

// deleteSummary is "id@node" for a stale marked entry, with " departed
// <key>" or " vanished" for the unmarked ones.
func deleteSummary(d deletion) string {
	s := d.Entry.ID + "@" + d.Node
	switch d.Why {
	case whyStale:
	case whyDeparted:
		s += " departed " + d.Departed
	case whyVanished:
		s += " vanished"
	default:
		s += " why " + d.Why
	}
	return s
}

// markSummary is "id@node" for an adoption, "id@node released" for a
// hand-off; it checks the Description matches the kind.
func markSummary(m marking) string {
	want, kind := description(testCluster, m.Node), ""
	if m.Release {
		want, kind = releasedDescription(testCluster, m.Node), " released"
	}
	if m.Description != want {
		kind += " with wrong Description " + m.Description
	}
	return m.Entry.ID + "@" + m.Node + kind
}

func TestDiff(t *testing.T) {
	nodes := nodeSet{
		Targets: []target{tgt("n1", "i-1", "10.244.1.0/24"), tgt("n2", "i-2", "10.244.2.0/24")},
		// ex is excluded by label; unk's Ready is Unknown (left alone, not released).
		ExcludedNodes:     map[string]bool{"ex": true, "unk": true},
		ExcludedInstances: map[string]bool{"i-ex": true, "i-unk": true},
		Released:          map[string]bool{"ex": true},
		Instances:         map[string]bool{"i-1": true, "i-2": true, "i-ex": true, "i-unk": true},
	}
	// gone3 was deleted with podCIDR .3 via i-3; i-dead exists no more.
	gone := func(ns nodeSet) nodeSet {
		ns.Departed = []departed{{Node: "gone3", Instance: "i-3", CIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.3.0/24"), netip.MustParsePrefix("10.244.4.0/24")}}}
		ns.Vanished = map[string]bool{"i-dead": true, "i-2": true}
		return ns
	}
	tables := []string{"vtb-a", "vtb-b"}
	// everyCreate is both Nodes' route in both tables.
	everyCreate := []string{"vtb-a:10.244.1.0/24>i-1", "vtb-a:10.244.2.0/24>i-2", "vtb-b:10.244.1.0/24>i-1", "vtb-b:10.244.2.0/24>i-2"}
	ecmp := ent("rte-ecmp", "vtb-a", "10.244.9.0/24", "", "")
	ecmp.HopType = "ECMP"
	pending := ent("rte-p", "vtb-a", "10.244.1.0/24", "i-1", mark("n1"))
	pending.Status = "Pending"
	cases := []struct {
		name    string
		nodes   func(nodeSet) nodeSet
		entries map[string][]entry
		want    summary
	}{
		{
			name: "empty tables: every Node in every table",
			want: summary{Creates: everyCreate},
		},
		{
			name: "all present: nothing to do",
			entries: map[string][]entry{
				"vtb-a": {ent("rte-1", "vtb-a", "10.244.1.0/24", "i-1", mark("n1")), ent("rte-2", "vtb-a", "10.244.2.0/24", "i-2", mark("n2"))},
				"vtb-b": {ent("rte-3", "vtb-b", "10.244.1.0/24", "i-1", mark("n1")), ent("rte-4", "vtb-b", "10.244.2.0/24", "i-2", mark("n2"))},
			},
			want: summary{Present: []string{"vtb-a:10.244.1.0/24", "vtb-a:10.244.2.0/24", "vtb-b:10.244.1.0/24", "vtb-b:10.244.2.0/24"}},
		},
		{
			name: "deleted Node's entry is removed, Pending entries are not re-created",
			entries: map[string][]entry{
				"vtb-a": {pending, ent("rte-2", "vtb-a", "10.244.2.0/24", "i-2", mark("n2")), ent("rte-gone", "vtb-a", "10.244.3.0/24", "i-3", mark("gone"))},
				"vtb-b": {ent("rte-3", "vtb-b", "10.244.1.0/24", "i-1", mark("n1")), ent("rte-4", "vtb-b", "10.244.2.0/24", "i-2", mark("n2"))},
			},
			want: summary{Deletes: []string{"rte-gone@gone"}, Present: []string{"vtb-a:10.244.1.0/24", "vtb-a:10.244.2.0/24", "vtb-b:10.244.1.0/24", "vtb-b:10.244.2.0/24"}},
		},
		{
			name: "podCIDR change replaces the entry",
			entries: map[string][]entry{
				"vtb-a": {ent("rte-old", "vtb-a", "10.244.7.0/24", "i-1", mark("n1")), ent("rte-2", "vtb-a", "10.244.2.0/24", "i-2", mark("n2"))},
			},
			want: summary{
				Deletes: []string{"rte-old@n1"},
				Creates: []string{"vtb-a:10.244.1.0/24>i-1", "vtb-b:10.244.1.0/24>i-1", "vtb-b:10.244.2.0/24>i-2"},
				Present: []string{"vtb-a:10.244.2.0/24"},
			},
		},
		{
			name: "wrong next hop is replaced",
			entries: map[string][]entry{
				"vtb-a": {ent("rte-x", "vtb-a", "10.244.1.0/24", "i-old", mark("n1")), ent("rte-2", "vtb-a", "10.244.2.0/24", "i-1", mark("n2"))},
			},
			want: summary{
				Deletes: []string{"rte-x@n1", "rte-2@n2"},
				Creates: everyCreate,
			},
		},
		{
			name: "unmarked entries of the existing CCM are adopted as they are in every table, busy or not",
			entries: map[string][]entry{
				"vtb-a": {ent("rte-old1", "vtb-a", "10.244.1.0/24", "i-1", ""), withStatus(ent("rte-old2", "vtb-a", "10.244.2.0/24", "i-2", ""), "Pending")},
				"vtb-b": {ent("rte-old3", "vtb-b", "10.244.1.0/24", "i-1", "")},
			},
			want: summary{
				Creates: []string{"vtb-b:10.244.2.0/24>i-2"},
				Present: []string{"vtb-a:10.244.1.0/24", "vtb-a:10.244.2.0/24", "vtb-b:10.244.1.0/24"},
				Adopted: []string{"rte-old1@n1", "rte-old2@n2", "rte-old3@n1"},
			},
		},
		{
			name: "matching entries with any Description are kept and never rewritten",
			entries: map[string][]entry{
				"vtb-a": {ent("rte-user", "vtb-a", "10.244.1.0/24", "i-1", "made by hand"), ent("rte-other", "vtb-a", "10.244.2.0/24", "i-2", description("other-cluster", "x"))},
				"vtb-b": {ent("rte-ours", "vtb-b", "10.244.1.0/24", "i-1", mark("n1")), ent("rte-stale", "vtb-b", "10.244.2.0/24", "i-2", mark("renamed"))},
			},
			want: summary{Present: []string{"vtb-a:10.244.1.0/24", "vtb-a:10.244.2.0/24", "vtb-b:10.244.1.0/24", "vtb-b:10.244.2.0/24"}},
		},
		{
			name: "busy handed-off entries are marked again later",
			entries: map[string][]entry{
				"vtb-a": {
					withStatus(ent("rte-p", "vtb-a", "10.244.1.0/24", "i-1", releasedDescription(testCluster, "n1")), "Pending"),
					withStatus(ent("rte-m", "vtb-a", "10.244.2.0/24", "i-2", releasedDescription(testCluster, "n2")), "Modifying"),
				},
				// A status the cloud may add later does not hold marking back.
				"vtb-b": {withStatus(ent("rte-odd", "vtb-b", "10.244.1.0/24", "i-1", releasedDescription(testCluster, "n1")), "SomethingNew")},
			},
			want: summary{
				Creates:  []string{"vtb-b:10.244.2.0/24>i-2"},
				Present:  []string{"vtb-a:10.244.1.0/24", "vtb-a:10.244.2.0/24", "vtb-b:10.244.1.0/24"},
				Marks:    []string{"rte-odd@n1"},
				Deferred: []string{"rte-p@n1", "rte-m@n2"},
			},
		},
		{
			name: "unmarked entries not matching a Node are the user's: never marked nor deleted",
			entries: map[string][]entry{
				"vtb-a": {
					// Via a Node's instance, but not to its podCIDR.
					ent("rte-via-node", "vtb-a", "10.244.5.0/24", "i-2", ""),
					// A Node's podCIDR via another Node's instance.
					ent("rte-swapped", "vtb-a", "10.244.1.0/24", "i-2", ""),
					// A deleted Node's route the existing CCM left behind.
					ent("rte-left", "vtb-a", "10.244.3.0/24", "i-3", ""),
				},
			},
			want: summary{
				Conflicts:  []string{"rte-via-node@", "rte-swapped@n1", "rte-left@"},
				Creates:    []string{"vtb-a:10.244.2.0/24>i-2", "vtb-b:10.244.1.0/24>i-1", "vtb-b:10.244.2.0/24>i-2"},
				Blocked:    []string{"vtb-a:10.244.1.0/24"},
				Unverified: []string{"i-3"},
			},
		},
		{
			name: "an adopted entry, once marked, goes with its Node or is replaced for a new Node on its podCIDR",
			entries: map[string][]entry{
				"vtb-a": {ent("rte-gone", "vtb-a", "10.244.3.0/24", "i-3", mark("gone")), ent("rte-reused", "vtb-a", "10.244.2.0/24", "i-old", mark("old"))},
			},
			want: summary{
				Deletes: []string{"rte-gone@gone", "rte-reused@n2"},
				Creates: everyCreate,
			},
		},
		{
			name: "foreign entries inside the cluster CIDR are conflicts, never deleted",
			entries: map[string][]entry{
				"vtb-a": {
					ent("rte-f1", "vtb-a", "10.244.1.0/24", "i-foreign", ""),
					ent("rte-f2", "vtb-a", "10.244.0.0/16", "i-foreign", ""),
					ent("rte-f3", "vtb-a", "10.244.200.0/24", "i-foreign", ""),
					ent("rte-other", "vtb-a", "10.244.2.0/25", "i-9", description("other-cluster", "x")),
					ecmp,
				},
			},
			want: summary{
				Conflicts:  []string{"rte-f1@n1", "rte-f2@n1+n2", "rte-f3@", "rte-other@n2", "rte-ecmp@"},
				Creates:    []string{"vtb-a:10.244.2.0/24>i-2", "vtb-b:10.244.1.0/24>i-1", "vtb-b:10.244.2.0/24>i-2"},
				Blocked:    []string{"vtb-a:10.244.1.0/24"},
				Unverified: []string{"i-foreign"},
			},
		},
		{
			name: "outside the cluster CIDR, IPv6, malformed and excluded Nodes' entries are untouched",
			entries: map[string][]entry{
				"vtb-a": {
					ent("rte-out", "vtb-a", "172.16.0.0/24", "i-1", mark("gone")),
					ent("rte-v6", "vtb-a", "2408:4000::/64", "i-1", mark("gone")),
					ent("rte-bad", "vtb-a", "not-a-cidr", "i-1", mark("gone")),
					ent("rte-ex", "vtb-a", "10.244.50.0/24", "i-ex", ""),
					ent("rte-ex2", "vtb-a", "10.244.51.0/24", "i-other", mark("ex")),
				},
			},
			want: summary{
				Creates: everyCreate,
				// The excluded Node's entry is not deleted but handed off.
				Marks: []string{"rte-ex2@ex released"},
			},
		},
		{
			name: "an excluded Node's entries are handed off, never deleted; a busy one later; other Descriptions untouched",
			entries: map[string][]entry{
				"vtb-a": {
					ent("rte-ex", "vtb-a", "10.244.50.0/24", "i-ex", mark("ex")),
					ent("rte-ex-user", "vtb-a", "10.244.52.0/24", "i-ex", "the user's"),
					ent("rte-ex-done", "vtb-a", "10.244.53.0/24", "i-ex", releasedDescription(testCluster, "ex")),
				},
				"vtb-b": {withStatus(ent("rte-ex-p", "vtb-b", "10.244.50.0/24", "i-ex", mark("ex")), "Pending")},
			},
			want: summary{
				Creates:  everyCreate,
				Marks:    []string{"rte-ex@ex released"},
				Deferred: []string{"rte-ex-p@ex released"},
			},
		},
		{
			name: "Nodes left alone but not excluded (Ready Unknown, being deleted) keep their entries as they are",
			entries: map[string][]entry{
				"vtb-a": {ent("rte-unk", "vtb-a", "10.244.60.0/24", "i-unk", mark("unk")), ent("rte-unk-old", "vtb-a", "10.244.61.0/24", "i-9", mark("unk"))},
			},
			want: summary{Creates: everyCreate},
		},
		{
			name: "handed-off entries: left alone after their Node is gone, a conflict for a Node reusing the podCIDR, adopted again via the Node's instance",
			entries: map[string][]entry{
				// ex2 is gone; its podCIDR is now n1's, via another instance.
				"vtb-a": {ent("rte-gone-ex", "vtb-a", "10.244.1.0/24", "i-ex2", releasedDescription(testCluster, "ex2")), ent("rte-gone-ex2", "vtb-a", "10.244.70.0/24", "i-ex2", releasedDescription(testCluster, "ex2"))},
				// n2 was excluded, no longer is: its entry is ours again.
				"vtb-b": {ent("rte-back", "vtb-b", "10.244.2.0/24", "i-2", releasedDescription(testCluster, "n2"))},
			},
			want: summary{
				Conflicts: []string{"rte-gone-ex@n1"},
				Blocked:   []string{"vtb-a:10.244.1.0/24"},
				Present:   []string{"vtb-b:10.244.2.0/24"},
				Creates:   []string{"vtb-a:10.244.2.0/24>i-2", "vtb-b:10.244.1.0/24>i-1"},
				Marks:     []string{"rte-back@n2"},
			},
		},
		{
			name: "another cluster's hand-off is a conflict like any foreign entry",
			entries: map[string][]entry{
				"vtb-a": {ent("rte-other", "vtb-a", "10.244.80.0/24", "i-9", releasedDescription("other-cluster", "x"))},
			},
			want: summary{
				Conflicts: []string{"rte-other@"},
				Creates:   everyCreate,
			},
		},
		{
			name: "a left-alone Node's entry on a destination another Node wants blocks it as a conflict",
			entries: map[string][]entry{
				"vtb-a": {ent("rte-unk-dup", "vtb-a", "10.244.1.0/24", "i-unk", mark("unk"))},
			},
			want: summary{
				Conflicts: []string{"rte-unk-dup@n1"},
				Blocked:   []string{"vtb-a:10.244.1.0/24"},
				Creates:   []string{"vtb-a:10.244.2.0/24>i-2", "vtb-b:10.244.1.0/24>i-1", "vtb-b:10.244.2.0/24>i-2"},
			},
		},
		{
			name:  "unmarked entries go as a deleted Node's route (every table) or via a vanished instance of no Node; other shapes stay",
			nodes: gone,
			entries: map[string][]entry{
				"vtb-a": {
					ent("rte-d3", "vtb-a", "10.244.3.0/24", "i-3", ""),
					ent("rte-d4", "vtb-a", "10.244.4.0/24", "i-3", ""),
					// Another Description is not the existing CCM's shape.
					ent("rte-d3-user", "vtb-a", "10.244.4.0/25", "i-3", "made by hand"),
					// Its podCIDR via another instance: not its route.
					ent("rte-d3-other", "vtb-a", "10.244.3.0/25", "i-9", ""),
					ent("rte-dead", "vtb-a", "10.244.90.0/24", "i-dead", ""),
					ent("rte-dead-blocking", "vtb-a", "10.244.1.0/24", "i-dead", ""),
					ent("rte-dead-user", "vtb-a", "10.244.91.0/24", "i-dead", "made by hand"),
					ent("rte-dead-out", "vtb-a", "172.16.0.0/24", "i-dead", ""),
					// i-2 is reported gone, but a listed Node names it.
					ent("rte-node-inst", "vtb-a", "10.244.92.0/24", "i-2", ""),
					ent("rte-unknown", "vtb-a", "10.244.93.0/24", "i-alive", ""),
				},
				"vtb-b": {ent("rte-d3b", "vtb-b", "10.244.3.0/24", "i-3", "")},
			},
			want: summary{
				Deletes: []string{
					"rte-d3@gone3 departed gone3/i-3", "rte-d4@gone3 departed gone3/i-3", "rte-dead@ vanished", "rte-dead-blocking@n1 vanished",
					"rte-d3b@gone3 departed gone3/i-3",
				},
				Conflicts:  []string{"rte-d3-user@", "rte-d3-other@", "rte-dead-user@", "rte-node-inst@", "rte-unknown@"},
				Creates:    everyCreate,
				Unverified: []string{"i-9", "i-alive"},
			},
		},
		{
			name: "a deleted Node's unmarked entry on a podCIDR reused by a Node goes and the Node's route is created",
			nodes: func(ns nodeSet) nodeSet {
				ns.Departed = []departed{{Node: "old", Instance: "i-old", CIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24")}}}
				return ns
			},
			entries: map[string][]entry{"vtb-a": {ent("rte-reused", "vtb-a", "10.244.1.0/24", "i-old", "")}},
			want: summary{
				Deletes: []string{"rte-reused@n1 departed old/i-old"},
				Creates: everyCreate,
			},
		},
		{
			name: "excluded and left-alone Nodes' unmarked entries stay even via a vanished instance or as a deleted Node's route",
			nodes: func(ns nodeSet) nodeSet {
				ns = gone(ns)
				ns.Vanished = map[string]bool{"i-ex": true, "i-unk": true}
				ns.Departed = []departed{{Node: "was-unk", Instance: "i-unk", CIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.60.0/24")}}}
				return ns
			},
			entries: map[string][]entry{
				"vtb-a": {ent("rte-ex", "vtb-a", "10.244.50.0/24", "i-ex", ""), ent("rte-unk", "vtb-a", "10.244.60.0/24", "i-unk", "")},
			},
			want: summary{
				Creates: everyCreate,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := nodes
			if tc.nodes != nil {
				ns = tc.nodes(ns)
			}
			got := summarize(diff(testCluster, testCIDRs, tables, ns, tc.entries))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func node(name, providerID string, cidrs []string, lbls map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Spec: corev1.NodeSpec{ProviderID: providerID, PodCIDRs: cidrs}}
	if len(cidrs) > 0 {
		n.Spec.PodCIDR = cidrs[0]
	}
	return n
}

func TestNodesToTargets(t *testing.T) {
	nodes := []*corev1.Node{
		node("a", "cn-hangzhou.i-a", []string{"10.244.1.0/24", "fd00::/64"}, nil),
		node("b", "alicloud://cn-hangzhou.i-b", []string{"10.244.2.0/24"}, nil),
		node("c", "", []string{"10.244.3.0/24"}, nil),
		node("d", "cn-hangzhou.i-d", []string{"10.244.4.0/24"}, map[string]string{nodes.LabelExcludeNode: "true"}),
		node("e", "cn-hangzhou.i-e", []string{"10.244.5.0/24"}, map[string]string{nodes.LabelExcludeNodeDeprecated: ""}),
		node("f", "ack-hybrid://whatever", []string{"10.244.6.0/24"}, nil),
		node("g", "cn-beijing.i-g", []string{"10.244.7.0/24"}, nil),
		node("h", "garbage", []string{"10.244.8.0/24"}, nil),
		node("i", "cn-hangzhou.i-i", []string{"192.168.9.0/24"}, nil),
		node("j", "cn-hangzhou.i-j", []string{"10.244.1.0/24"}, nil),
		node("k", "cn-hangzhou.i-k", nil, nil),
		node("l", "cn-hangzhou.i-l", []string{"10.244.12.0/24"}, nil),
		node("m", "alicloud:///cn-hangzhou.i-m", []string{"10.244.13.0/24"}, nil),
		node("n", "cn-hangzhou.i-n", []string{"10.244.14.0/24"}, nil),
		node("o", "cn-hangzhou.i-o", []string{"10.244.15.0/24"}, nil),
		node("p", "cn-hangzhou.i-p", []string{"10.244.16.0/24"}, nil),
		node("q", "cn-hangzhou.i-q", []string{"10.244.17.0/24"}, map[string]string{nodes.LabelExcludeNode: ""}),
	}
	// l was registered with kubelet's --provider-id and is not initialized yet.
	nodes[11].Spec.Taints = []corev1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	// n's kubelet stopped reporting; o is NotReady (routed: the kubelet
	// reports); p and the excluded q are being deleted.
	nodes[13].Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}}
	nodes[14].Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	now := metav1.Now()
	nodes[15].DeletionTimestamp, nodes[16].DeletionTimestamp = &now, &now
	ns, skips := nodesToTargets(nodes, testCIDRs, "cn-hangzhou")
	want := []target{tgt("a", "i-a", "10.244.1.0/24"), tgt("b", "i-b", "10.244.2.0/24"), tgt("m", "i-m", "10.244.13.0/24"), tgt("o", "i-o", "10.244.15.0/24")}
	if !reflect.DeepEqual(ns.Targets, want) {
		t.Errorf("targets = %v, want %v", ns.Targets, want)
	}
	if want := map[string]bool{"d": true, "e": true, "f": true, "l": true, "n": true, "p": true, "q": true}; !reflect.DeepEqual(ns.ExcludedNodes, want) {
		t.Errorf("excluded nodes = %v, want %v", ns.ExcludedNodes, want)
	}
	if want := map[string]bool{"i-d": true, "i-e": true, "i-l": true, "i-n": true, "i-p": true, "i-q": true}; !reflect.DeepEqual(ns.ExcludedInstances, want) {
		t.Errorf("excluded instances = %v, want %v", ns.ExcludedInstances, want)
	}
	// Every Node's instance, routed or not, keeps its unmarked entries
	// from the vanished-instance fallback.
	instances := map[string]bool{}
	for _, id := range []string{"a", "b", "d", "e", "g", "i", "j", "k", "l", "m", "n", "o", "p", "q"} {
		instances["i-"+id] = true
	}
	if !reflect.DeepEqual(ns.Instances, instances) {
		t.Errorf("instances = %v, want %v", ns.Instances, instances)
	}
	// Only the excluded ones are released, being deleted or not.
	if want := map[string]bool{"d": true, "e": true, "f": true, "q": true}; !reflect.DeepEqual(ns.Released, want) {
		t.Errorf("released nodes = %v, want %v", ns.Released, want)
	}
	var skippedNodes []string
	for _, s := range skips {
		skippedNodes = append(skippedNodes, s.Node)
	}
	if want := []string{"c", "g", "h", "i", "j", "l", "n", "p"}; !reflect.DeepEqual(skippedNodes, want) {
		t.Errorf("skipped = %v (%v), want %v", skippedNodes, skips, want)
	}
}

func TestRouteRelevantChange(t *testing.T) {
	base := node("n", "cn-hangzhou.i-1", []string{"10.244.1.0/24"}, map[string]string{"a": "b"})
	base.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		name   string
		change func(n *corev1.Node)
		want   bool
	}{
		{"status only", func(n *corev1.Node) { n.Status.Phase = corev1.NodeRunning }, false},
		{"unrelated label", func(n *corev1.Node) { n.Labels["a"] = "c" }, false},
		{"podCIDR", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.9.0/24"}; n.Spec.PodCIDR = "10.244.9.0/24" }, true},
		{"second podCIDR", func(n *corev1.Node) { n.Spec.PodCIDRs = append(n.Spec.PodCIDRs, "fd00::/64") }, true},
		{"providerID", func(n *corev1.Node) { n.Spec.ProviderID = "cn-hangzhou.i-2" }, true},
		{"exclude label", func(n *corev1.Node) { n.Labels[nodes.LabelExcludeNode] = "true" }, true},
		{"deprecated exclude label", func(n *corev1.Node) { n.Labels[nodes.LabelExcludeNodeDeprecated] = "true" }, true},
		{"uninitialized taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"other taint", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}} }, false},
		{"Ready becomes Unknown", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }, true},
		{"Ready becomes False", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, false},
		{"heartbeat", func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }, false},
		// Its routes stay until it is gone: the delete event brings that pass.
		{"deletion starts", func(n *corev1.Node) { now := metav1.Now(); n.DeletionTimestamp = &now }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := base.DeepCopy()
			tc.change(n)
			if got := routeRelevantChange(base, n); got != tc.want {
				t.Errorf("routeRelevantChange = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDescriptionMarker(t *testing.T) {
	d := description("c1", "node-1")
	if d != "k8s/c1/node-1" {
		t.Fatalf("description = %q", d)
	}
	if n, ok := markedNode("c1", d); !ok || n != "node-1" {
		t.Errorf("markedNode = %q %v", n, ok)
	}
	if _, ok := markedNode("c2", d); ok {
		t.Error("another cluster's marker must not be ours")
	}
	// A hand-off is not ours to delete, neither by this version nor by one
	// that knows only the marker.
	r := releasedDescription("c1", "node-1")
	if _, ok := markedNode("c1", r); ok || strings.HasPrefix(r, "k8s/") {
		t.Errorf("hand-off %q reads as marked", r)
	}
	if !released("c1", r) || released("c2", r) || released("c1", d) {
		t.Errorf("released(%q) wrong", r)
	}
	if long := description("c1", strings.Repeat("x", 300)); len(long) != maxDescription {
		t.Errorf("long description has %d characters, want %d", len(long), maxDescription)
	}
	if long := releasedDescription("c1", strings.Repeat("x", 300)); len(long) != maxDescription || !released("c1", long) {
		t.Errorf("long hand-off has %d characters, want %d", len(long), maxDescription)
	}
}

func TestNewValidates(t *testing.T) {
	cl, err := cloud.New(cloud.Options{Region: "cn-hangzhou", Credentials: cloud.StaticProvider{Creds: cloud.NewCredentials("id", "secret", "", time.Time{})}})
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientset()
	valid := func() Options {
		return Options{
			KubeClient: kube, NodeInformer: informers.NewSharedInformerFactory(kube, 0).Core().V1().Nodes(),
			Recorder: record.NewFakeRecorder(10), Cloud: cloud.VPCRoutes{Client: cl}, VpcID: "vpc-1", ClusterCIDR: "10.244.0.0/16",
		}
	}
	for _, tc := range []struct {
		name   string
		change func(o *Options)
		errHas string
	}{
		{"valid", func(*Options) {}, ""},
		{"dual stack", func(o *Options) { o.ClusterCIDR = "10.244.0.0/16,fd00::/48" }, ""},
		{"tables without VPC", func(o *Options) { o.VpcID = ""; o.RouteTableIDs = []string{"vtb-1"} }, ""},
		{"no cluster CIDR", func(o *Options) { o.ClusterCIDR = "" }, "--cluster-cidr"},
		{"three cluster CIDRs", func(o *Options) { o.ClusterCIDR = "10.0.0.0/16,10.1.0.0/16,10.2.0.0/16" }, "at most two"},
		{"IPv6 only", func(o *Options) { o.ClusterCIDR = "fd00::/48" }, "IPv4"},
		{"bad CIDR", func(o *Options) { o.ClusterCIDR = "10.0.0.0/99" }, "cluster CIDR"},
		{"no VPC, no tables", func(o *Options) { o.VpcID = "" }, "VPC id"},
		{"batch too big", func(o *Options) { o.BatchSize = 51 }, "batch size"},
		{"negative resync", func(o *Options) { o.ResyncPeriod = -time.Second }, "resync"},
		{"no cloud", func(o *Options) { o.Cloud = nil }, "cloud client"},
		{"no recorder", func(o *Options) { o.Recorder = nil }, "recorder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.change(&o)
			c, err := New(o)
			switch {
			case tc.errHas == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Fatalf("New error = %v, want one containing %q", err, tc.errHas)
			case err == nil && (c.opts.BatchSize != MaxBatchSize || c.opts.ResyncPeriod != DefaultResyncPeriod || c.opts.ClusterID != "clusterid"):
				t.Errorf("defaults not applied: %+v", c.opts)
			}
		})
	}
}

// TestFailureLookup covers how per-entry failures are matched to entries.
func TestFailureLookup(t *testing.T) {
	failed := map[string]entryFailure{"10.244.1.0/24": {Code: "QuotaExceeded"}, "rte-9": {Code: codeNotFound}}
	if f, bad := failure(nil, failed, "10.244.1.0/24"); !bad || f.Code != "QuotaExceeded" {
		t.Errorf("by destination: %v %v", f, bad)
	}
	if f, bad := failure(nil, failed, "rte-9", "10.244.9.0/24"); !bad || f.Code != codeNotFound {
		t.Errorf("by id: %v %v", f, bad)
	}
	if _, bad := failure(nil, failed, "10.244.2.0/24"); bad {
		t.Error("an entry not in the failures succeeded")
	}
	callErr := &cloud.Error{Code: "TaskConflict", Class: cloud.ClassConflict}
	if f, bad := failure(fmt.Errorf("wrapped: %w", callErr), failed, "10.244.2.0/24"); !bad || f.Code != "TaskConflict" {
		t.Errorf("call error: %v %v", f, bad)
	}
}
