package routes_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// seeded are the unmarked entries a test seeds before the controller runs,
// as the existing CCM and a user leave them.
type seeded struct {
	// node is the Node whose route the existing CCM made: adopted is its
	// entry, cidr its podCIDR.
	node, cidr, adopted string
	// userCIDR via a non-Node instance and viaNodeCIDR via the Node's
	// instance are the user's: they match no Node's route.
	userCIDR, user, viaNodeCIDR, viaNode string
}

// TestAdoptionMarksExistingCCMRoutes: an unmarked entry on a Node's podCIDR
// via its instance (as the existing CCM leaves them) gets our marker with
// exactly one ModifyRouteEntry and no create or delete; from then on it is
// ours, so it goes with its Node and is replaced for a Node reusing its
// podCIDR; unmarked entries matching no Node are never touched.
func TestAdoptionMarksExistingCCMRoutes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		label string
		base  int
		// pendingFor keeps the adopted entry Pending that long after it is
		// seeded, so the controller first sees it busy.
		pendingFor time.Duration
		// then changes the Nodes after the adoption and returns the routes
		// of the Nodes expected afterwards.
		then func(h *harness, s seeded) want
		// check runs last, on the table's entries.
		check func(t *testing.T, h *harness, s seeded, list []vpc.RouteEntry)
	}{
		{
			name: "node deleted: the adopted entry goes", label: "adopt-del", base: 70,
			then: func(h *harness, s seeded) want { h.deleteNode(s.node); return want{} },
			check: func(t *testing.T, h *harness, s seeded, _ []vpc.RouteEntry) {
				h.expectEvent(5*time.Second, s.node, routes.EventDeletedRoute, s.cidr)
			},
		},
		{
			name: "podCIDR reused by a new node: one entry, to the new node", label: "adopt-reuse", base: 74,
			then: func(h *harness, s seeded) want {
				h.deleteNode(s.node)
				h.addNode(h.nodeName(1), h.instances[1], s.cidr)
				return want{s.cidr: h.instances[1]}
			},
			check: func(t *testing.T, h *harness, s seeded, list []vpc.RouteEntry) {
				var on []vpc.RouteEntry
				for _, e := range list {
					if e.DestinationCidrBlock == s.cidr {
						on = append(on, e)
					}
				}
				if len(on) != 1 || nextHop(on[0]) != h.instances[1] || on[0].RouteEntryId == s.adopted ||
					on[0].Description != "k8s/"+clusterID+"/"+h.nodeName(1) {
					t.Errorf("entries for %s: %+v; want one, new, via %s, marked for %s", s.cidr, on, h.instances[1], h.nodeName(1))
				}
				h.expectCondition(10*time.Second, h.nodeName(1), corev1.ConditionFalse, routes.ReasonRouteCreated)
			},
		},
		{
			name: "pending when first seen: marked once it settles", label: "adopt-pend", base: 78, pendingFor: 2 * time.Second,
			then: func(h *harness, s seeded) want { h.deleteNode(s.node); return want{} },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tc.label, 3, 0)
			table := h.tables[0]
			s := seeded{
				node: h.nodeName(0), cidr: podCIDR(tc.base),
				userCIDR: podCIDR(tc.base + 1), viaNodeCIDR: podCIDR(tc.base + 2),
			}
			// The user's entries first, so that the adopted one is the
			// freshest, still Pending when the controller starts.
			s.user = h.createEntry(table, s.userCIDR, h.instances[2], "")
			s.viaNode = h.createEntry(table, s.viaNodeCIDR, h.instances[0], "")
			if tc.pendingFor > 0 {
				setRouteDelay(t, h, tc.pendingFor)
			}
			s.adopted = h.createEntry(table, s.cidr, h.instances[0], "")
			setRouteDelay(t, h, routeDelay)
			seq := h.lastSeq()
			if tc.pendingFor > 0 {
				if e := h.entryByID(table, s.adopted); e.Status != "Pending" {
					t.Fatalf("seeded entry is %s, want Pending", e.Status)
				}
			}

			h.start(nil)
			adoptStart := time.Now()
			h.addNode(s.node, h.instances[0], s.cidr)
			poll(t, 10*time.Second+tc.pendingFor, "adopted entry marked", func() error {
				if d := h.entryByID(table, s.adopted).Description; d != "k8s/"+clusterID+"/"+s.node {
					return fmt.Errorf("Description %q", d)
				}
				return nil
			})
			t.Logf("adopted entry %s marked in %s", s.adopted, time.Since(adoptStart).Round(time.Millisecond))
			h.expectCondition(10*time.Second, s.node, corev1.ConditionFalse, routes.ReasonRouteCreated)
			h.expectEvent(5*time.Second, s.node, routes.EventAdoptedRoute, s.cidr)
			time.Sleep(2500 * time.Millisecond) // a few more resyncs: the mark is written once
			calls := h.routeCalls(seq)
			t.Logf("after adoption: %s", calls)
			if calls.modifyOK != 1 || calls.modifyFailed != 0 || calls.modified[s.adopted] != 1 {
				t.Errorf("ModifyRouteEntry: %d OK (%v), %d failed %v; want exactly one OK, for %s", calls.modifyOK, calls.modified, calls.modifyFailed, calls.codes, s.adopted)
			}
			if calls.creates != 0 || calls.deletes != 0 {
				t.Errorf("adoption made %d CreateRouteEntries and %d DeleteRouteEntries calls, want none", calls.creates, calls.deletes)
			}
			if e := h.entryByID(table, s.adopted); nextHop(e) != h.instances[0] || e.DestinationCidrBlock != s.cidr {
				t.Errorf("adopted entry changed: %+v", e)
			}

			w := tc.then(h, s)
			w[s.userCIDR], w[s.viaNodeCIDR] = h.instances[2], h.instances[0]
			h.expectRoutes(15*time.Second, h.tables, w)
			time.Sleep(1500 * time.Millisecond) // another resync or so
			list, err := h.entryList(table)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range list {
				if e.RouteEntryId == s.adopted {
					t.Errorf("adopted entry %s is still there: %+v", s.adopted, e)
				}
			}
			if tc.check != nil {
				tc.check(t, h, s, list)
			}

			// The user's entries, untouched throughout.
			for id, hop := range map[string]string{s.user: h.instances[2], s.viaNode: h.instances[0]} {
				if e := h.entryByID(table, id); e.Description != "" || nextHop(e) != hop {
					t.Errorf("user's entry changed: %+v", e)
				}
			}
			calls = h.routeCalls(seq)
			t.Logf("whole test: %s", calls)
			if calls.modifyOK != 1 || calls.modified[s.user] != 0 || calls.modified[s.viaNode] != 0 {
				t.Errorf("ModifyRouteEntry calls %v, want only the adoption's", calls.modified)
			}
			if calls.deleted[s.user] != 0 || calls.deleted[s.viaNode] != 0 {
				t.Errorf("DeleteRouteEntries named the user's entries: %v", calls.deleted)
			}
		})
	}
}

func setRouteDelay(t *testing.T, h *harness, d time.Duration) {
	t.Helper()
	if err := h.env.Emulator.Store.Settings().SetDelay(store.DelayRouteEntry, d); err != nil {
		t.Fatal(err)
	}
}

// entryList lists a table's custom entries through the VPC SDK, every one
// of them (entries keys them by destination, which would hide duplicates).
func (h *harness) entryList(table string) ([]vpc.RouteEntry, error) {
	var out []vpc.RouteEntry
	token := ""
	for {
		req := vpc.CreateDescribeRouteEntryListRequest()
		req.RouteTableId, req.RouteEntryType, req.NextToken = table, "Custom", token
		req.MaxResult = requests.NewInteger(100)
		resp, err := h.vpc.DescribeRouteEntryList(req)
		if err != nil {
			return nil, err
		}
		out = append(out, resp.RouteEntrys.RouteEntry...)
		if resp.NextToken == "" {
			return out, nil
		}
		token = resp.NextToken
	}
}

// entryByID returns one entry of a table, failing the test when it is gone.
func (h *harness) entryByID(table, id string) vpc.RouteEntry {
	h.t.Helper()
	req := vpc.CreateDescribeRouteEntryListRequest()
	req.RouteTableId, req.RouteEntryId = table, id
	resp, err := h.vpc.DescribeRouteEntryList(req)
	if err != nil {
		h.t.Fatalf("describe entry %s: %v", id, err)
	}
	if len(resp.RouteEntrys.RouteEntry) != 1 {
		h.t.Fatalf("entry %s: %+v", id, resp.RouteEntrys.RouteEntry)
	}
	return resp.RouteEntrys.RouteEntry[0]
}

// routeCallCounts are the route writes the emulator logged.
type routeCallCounts struct {
	modifyOK, modifyFailed, creates, deletes int
	codes                                    []string
	// modified and deleted count successful calls per entry id.
	modified, deleted map[string]int
}

func (c routeCallCounts) String() string {
	return fmt.Sprintf("ModifyRouteEntry %d OK %d failed %v, CreateRouteEntries %d, DeleteRouteEntries %d",
		c.modifyOK, c.modifyFailed, c.codes, c.creates, c.deletes)
}

// routeCalls counts the route writes since seq.
func (h *harness) routeCalls(afterSeq uint64) routeCallCounts {
	c := routeCallCounts{modified: map[string]int{}, deleted: map[string]int{}}
	for _, r := range h.env.Emulator.Requests(gateway.RequestFilter{Product: "vpc", AfterSeq: afterSeq}) {
		ok := r.Code == gateway.CodeOK
		switch r.Action {
		case "ModifyRouteEntry":
			if ok {
				c.modifyOK++
				c.modified[r.Params["RouteEntryId"]]++
			} else {
				c.modifyFailed++
				c.codes = append(c.codes, r.Code)
			}
		case "CreateRouteEntries", "CreateRouteEntry":
			if ok {
				c.creates++
			}
		case "DeleteRouteEntries", "DeleteRouteEntry":
			if !ok {
				continue
			}
			c.deletes++
			c.deleted[r.Params["RouteEntryId"]]++
			for i := 1; r.Params[fmt.Sprintf("RouteEntries.%d.RouteTableId", i)] != ""; i++ {
				c.deleted[r.Params[fmt.Sprintf("RouteEntries.%d.RouteEntryId", i)]]++
			}
		}
	}
	return c
}
