package routes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// holdFinalizer keeps a deleted Node in deletion until the test lets go.
const holdFinalizer = "routes-test.alicloud-ccm/hold"

// createsFor counts the entries naming dst in the CreateRouteEntries calls
// since seq, whatever their outcome.
func (h *harness) createsFor(afterSeq uint64, dst string) int {
	n := 0
	for _, r := range h.env.Emulator.Requests(gateway.RequestFilter{Product: "vpc", Action: "CreateRouteEntries", AfterSeq: afterSeq}) {
		for i := 1; r.Params[fmt.Sprintf("RouteEntries.%d.RouteTableId", i)] != ""; i++ {
			if r.Params[fmt.Sprintf("RouteEntries.%d.DstCidrBlock", i)] == dst {
				n++
			}
		}
	}
	return n
}

func (h *harness) patchNode(name, patch string) {
	h.t.Helper()
	if _, err := h.kube.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		h.t.Fatalf("patch Node %s with %s: %v", name, patch, err)
	}
}

// hold puts the hold finalizer on a Node and lets go of it when the test
// ends, so that the harness's cleanup can delete it.
func (h *harness) hold(name string) {
	h.t.Helper()
	h.patchNode(name, `{"metadata":{"finalizers":["`+holdFinalizer+`"]}}`)
	h.t.Cleanup(func() { h.release(name) })
}

// release removes the hold finalizer; a deleted Node then goes.
func (h *harness) release(name string) {
	_, err := h.kube.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		h.t.Errorf("release Node %s: %v", name, err)
	}
}

// deleteHeld deletes a held Node and waits until the controller's cache
// can have seen its deletionTimestamp.
func (h *harness) deleteHeld(name string) {
	h.t.Helper()
	h.deleteNode(name)
	poll(h.t, 5*time.Second, "Node "+name+" in deletion", func() error {
		n, err := h.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.DeletionTimestamp == nil {
			return errString("no deletionTimestamp")
		}
		return nil
	})
}

// setReady patches the Node's Ready condition, as kubelet (True) or the
// node lifecycle controller (Unknown) would.
func (h *harness) setReady(name string, status corev1.ConditionStatus) {
	h.t.Helper()
	now := metav1.Now().UTC().Format(time.RFC3339)
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":%q,"reason":"Test","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`, status, now, now)
	if _, err := h.kube.CoreV1().Nodes().PatchStatus(context.Background(), name, []byte(patch)); err != nil {
		h.t.Fatalf("set Ready=%s on Node %s: %v", status, name, err)
	}
}

func (h *harness) expectGone(name string) {
	h.t.Helper()
	poll(h.t, 10*time.Second, "Node "+name+" gone", func() error {
		_, err := h.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

func readyUnknown(n *corev1.Node) {
	n.Status.Conditions[0].Status, n.Status.Conditions[0].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
}

// TestNodesLeftAloneGetNoRoute: a Node whose Ready condition is Unknown and
// a Node being deleted (held by a finalizer) get no route, not a single
// CreateRouteEntries entry, and no NetworkUnavailable write over passes
// brought by their own events, by other Nodes' and by resyncs, while the
// other Nodes are routed; the Unknown Node is routed once it reports Ready
// again, the deleted one never.
func TestNodesLeftAloneGetNoRoute(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, label string
		// setup registers the Node to leave alone and brings a pass that
		// would route it.
		setup func(h *harness, name, instance, cidr string)
		// resume ends the state; routed says whether the Node then has a route.
		resume func(h *harness, name string)
		routed bool
	}{
		{
			name: "Ready Unknown", label: "unknown",
			setup: func(h *harness, name, instance, cidr string) {
				h.addNodeWith(name, instance, cidr, readyUnknown)
			},
			resume: func(h *harness, name string) { h.setReady(name, corev1.ConditionTrue) },
			routed: true,
		},
		{
			name: "being deleted", label: "deleting",
			setup: func(h *harness, name, instance, cidr string) {
				// Uninitialized until it is in deletion: removing the taint
				// is the update that would route it.
				h.addNodeWith(name, instance, cidr, func(n *corev1.Node) {
					n.Spec.Taints = []corev1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
				})
				h.hold(name)
				h.deleteHeld(name)
				h.patchNode(name, `{"spec":{"taints":null}}`)
			},
			resume: func(h *harness, name string) { h.release(name); h.expectGone(name) },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "alone-"+tc.label, 3, 1)
			seq := h.lastSeq()
			h.start(nil)
			name, cidr := h.nodeName(0), podCIDR(90)
			tc.setup(h, name, h.instances[0], cidr)
			w := want{}
			for i := 1; i < 3; i++ {
				h.addNode(h.nodeName(i), h.instances[i], podCIDR(90+i))
				w[podCIDR(90+i)] = h.instances[i]
			}
			h.expectRoutes(15*time.Second, h.tables, w)
			time.Sleep(2500 * time.Millisecond) // two more resyncs
			h.expectRoutes(time.Second, h.tables, w)
			if n := h.createsFor(seq, cidr); n != 0 {
				t.Errorf("%d CreateRouteEntries entries for the %s Node's %s, want 0", n, tc.name, cidr)
			}
			for i := 1; i < 3; i++ {
				// TaskConflict retries may name an entry more than once.
				if n := h.createsFor(seq, podCIDR(90+i)); n < len(h.tables) {
					t.Errorf("%d CreateRouteEntries entries for %s, want one or more per table (%d)", n, podCIDR(90+i), len(h.tables))
				}
			}
			if s, r, err := h.condition(name); err != nil || s != "" {
				t.Errorf("%s Node: NetworkUnavailable %q/%q, %v; want untouched", tc.name, s, r, err)
			}
			t.Logf("%s: other Nodes routed, 0 entries created for %s over %d list calls", tc.name, name,
				len(h.env.Emulator.Requests(gateway.RequestFilter{Product: "vpc", Action: "DescribeRouteEntryList", AfterSeq: seq})))

			resumed := time.Now()
			tc.resume(h, name)
			if tc.routed {
				w[cidr] = h.instances[0]
				h.expectRoutes(10*time.Second, h.tables, w)
				h.expectCondition(10*time.Second, name, corev1.ConditionFalse, routes.ReasonRouteCreated)
				t.Logf("%s: routed %s after it reported Ready", tc.name, time.Since(resumed).Round(10*time.Millisecond))
				return
			}
			time.Sleep(1500 * time.Millisecond)
			h.expectRoutes(time.Second, h.tables, w)
			if n := h.createsFor(seq, cidr); n != 0 {
				t.Errorf("%d CreateRouteEntries entries for %s after the Node went, want 0", n, cidr)
			}
		})
	}
}

// TestRoutesKeptWhileUnknownOrDeleting: a routed Node whose kubelet stops
// reporting (Ready=Unknown), or whose deletion a finalizer holds, keeps its
// entries untouched (0 writes, same entry ids, NetworkUnavailable as it
// was) over several resyncs; the deleted Node's entries go when it is gone.
func TestRoutesKeptWhileUnknownOrDeleting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, label string
		// enter puts the routed Node in the state; leave ends it and
		// returns whether the entries must then be gone.
		enter func(h *harness, name string)
		leave func(h *harness, name string) (gone bool)
	}{
		{
			name: "Ready becomes Unknown", label: "kept-unknown",
			enter: func(h *harness, name string) { h.setReady(name, corev1.ConditionUnknown) },
			leave: func(h *harness, name string) bool { h.setReady(name, corev1.ConditionTrue); return false },
		},
		{
			name: "deletion held by a finalizer", label: "kept-deleting",
			enter: func(h *harness, name string) { h.hold(name); h.deleteHeld(name) },
			leave: func(h *harness, name string) bool { h.release(name); h.expectGone(name); return true },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tc.label, 1, 1)
			h.start(nil)
			name, cidr := h.nodeName(0), podCIDR(95)
			h.addNode(name, h.instances[0], cidr)
			w := want{cidr: h.instances[0]}
			h.expectRoutes(10*time.Second, h.tables, w)
			h.expectCondition(10*time.Second, name, corev1.ConditionFalse, routes.ReasonRouteCreated)
			ids := map[string]string{}
			for _, table := range h.tables {
				got, err := h.entries(table)
				if err != nil {
					t.Fatal(err)
				}
				ids[table] = got[cidr].RouteEntryId
			}

			seq := h.lastSeq()
			tc.enter(h, name)
			time.Sleep(3500 * time.Millisecond) // three resyncs
			calls := h.routeCalls(seq)
			t.Logf("%s over 3.5 s: %s", tc.name, calls)
			if calls.creates+calls.deletes+calls.modifyOK+calls.modifyFailed != 0 {
				t.Errorf("%s: route writes %s, want none", tc.name, calls)
			}
			for _, table := range h.tables {
				got, err := h.entries(table)
				if err != nil {
					t.Fatal(err)
				}
				if e := got[cidr]; e.RouteEntryId != ids[table] || nextHop(e) != h.instances[0] {
					t.Errorf("table %s: entry for %s is %+v, want %s via %s", table, cidr, e, ids[table], h.instances[0])
				}
			}
			if s, r, err := h.condition(name); err != nil || s != corev1.ConditionFalse || r != routes.ReasonRouteCreated {
				t.Errorf("NetworkUnavailable %q/%q (%v), want it left False/%s", s, r, err, routes.ReasonRouteCreated)
			}

			left := time.Now()
			if tc.leave(h, name) {
				h.expectRoutes(10*time.Second, h.tables, want{})
				h.expectEvent(5*time.Second, name, routes.EventDeletedRoute, cidr)
				t.Logf("%s: entries deleted %s after the Node was let go", tc.name, time.Since(left).Round(10*time.Millisecond))
				return
			}
			time.Sleep(1500 * time.Millisecond)
			if calls := h.routeCalls(seq); calls.creates+calls.deletes != 0 {
				t.Errorf("back to Ready: %s, want no create or delete", calls)
			}
			h.expectRoutes(time.Second, h.tables, w)
		})
	}
}

// TestExcludedNodeRoutesSurviveDeletion: the routes of a Node excluded
// with the exclude label are kept when the Node is deleted (0
// DeleteRouteEntries), also across a controller restart; the entries this
// cluster created for it are handed off (one ModifyRouteEntry each), a
// hand-made one is never written to; a new Node given the same podCIDR
// gets a RouteConflict, not the entry.
func TestExcludedNodeRoutesSurviveDeletion(t *testing.T) {
	t.Parallel()
	const exclude = `{"metadata":{"labels":{"` + nodes.LabelExcludeNode + `":"true"}}}`
	cases := []struct {
		name, label string
		base        int
		// setup registers the excluded Node with its route and deletes it;
		// handedOff says whether its entries are ours to hand off.
		setup     func(h *harness, name, cidr string)
		handedOff bool
	}{
		{
			name: "labelled, then deleted", label: "ex-later", base: 100, handedOff: true,
			setup: func(h *harness, name, cidr string) {
				h.addNode(name, h.instances[0], cidr)
				h.expectRoutes(10*time.Second, h.tables, want{cidr: h.instances[0]})
				h.patchNode(name, exclude)
				h.expectEvent(10*time.Second, name, routes.EventReleasedRoute, cidr)
				h.deleteNode(name)
			},
		},
		{
			name: "labelled and deleted in one event window", label: "ex-burst", base: 104, handedOff: true,
			setup: func(h *harness, name, cidr string) {
				h.addNode(name, h.instances[0], cidr)
				h.expectRoutes(10*time.Second, h.tables, want{cidr: h.instances[0]})
				h.patchNode(name, exclude)
				h.deleteNode(name)
			},
		},
		{
			name: "registered excluded, route made by hand", label: "ex-hand", base: 108,
			setup: func(h *harness, name, cidr string) {
				h.addNodeWith(name, h.instances[0], cidr, func(n *corev1.Node) { n.Labels[nodes.LabelExcludeNode] = "" })
				for _, table := range h.tables {
					h.createEntry(table, cidr, h.instances[0], "")
				}
				h.deleteNode(name)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tc.label, 2, 1)
			seq := h.lastSeq()
			stop := h.start(nil)
			name, cidr := h.nodeName(0), podCIDR(tc.base)
			tc.setup(h, name, cidr)
			h.expectGone(name)
			deleted := h.lastSeq()
			wantDesc := ""
			if tc.handedOff {
				wantDesc = "k8s-excluded/" + clusterID + "/" + name
			}
			expectKept := func(when string) {
				t.Helper()
				poll(t, 10*time.Second, "entries handed off "+when, func() error {
					for _, table := range h.tables {
						got, err := h.entries(table)
						if err != nil {
							return err
						}
						if e, ok := got[cidr]; !ok || nextHop(e) != h.instances[0] || e.Description != wantDesc {
							return fmt.Errorf("table %s: entry for %s %+v (present %v), want via %s with Description %q", table, cidr, e, ok, h.instances[0], wantDesc)
						}
					}
					return nil
				})
			}
			expectKept("after the deletion")
			time.Sleep(2500 * time.Millisecond) // two resyncs
			expectKept("two resyncs after the deletion")

			// A restart forgets everything but the cloud's Descriptions.
			stop()
			h.start(nil)
			time.Sleep(2500 * time.Millisecond)
			expectKept("after a restart")

			// The podCIDR given to a new Node: the kept entry is not ours to
			// replace; the Node is told.
			h.addNode(h.nodeName(1), h.instances[1], cidr)
			h.expectEvent(10*time.Second, h.nodeName(1), routes.EventRouteConflict, cidr)
			h.expectCondition(10*time.Second, h.nodeName(1), corev1.ConditionTrue, routes.ReasonNoRouteCreated)
			expectKept("with a new Node on its podCIDR")

			calls := h.routeCalls(seq)
			t.Logf("%s: %s", tc.name, calls)
			if calls.deletes != 0 {
				t.Errorf("%d DeleteRouteEntries calls, want 0", calls.deletes)
			}
			wantModify := 0
			if tc.handedOff {
				wantModify = len(h.tables)
			}
			// A table busy with another Node's create refuses the write
			// with a busy code (TaskConflict); the retry is the write.
			failed := 0
			for _, c := range calls.codes {
				if cloud.Classify(c, 400) != cloud.ClassConflict {
					failed++
				}
			}
			if calls.modifyOK != wantModify || failed != 0 {
				t.Errorf("ModifyRouteEntry %d OK, %d failed %v; want %d OK (one hand-off per table)", calls.modifyOK, calls.modifyFailed, calls.codes, wantModify)
			}
			// The new Node's create is blocked, not sent to come back Duplicate.
			if n := h.createsFor(deleted, cidr); n != 0 {
				t.Errorf("%d CreateRouteEntries entries for %s after the deletion, want 0", n, cidr)
			}
			if n := h.createsFor(seq, cidr); !tc.handedOff && n != 0 {
				t.Errorf("%d CreateRouteEntries entries for the excluded Node's %s, want 0", n, cidr)
			}
		})
	}
}
