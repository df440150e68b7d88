package routes_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// migrated is a route table set as the existing CCM leaves it, with the
// user's unmarked entries next to it.
type migrated struct {
	// nodes are the Nodes, instances[i] and podCIDR(base+i) each; entries
	// their unmarked entries, one per table.
	nodes   []string
	cidrs   []string
	entries [][]string
	// user is the user's unmarked entry inside the cluster CIDR via an
	// instance that is no Node; outside an unmarked entry outside the
	// cluster CIDR via Node 0's instance. Both must stay byte-identical.
	user, outside string
}

// TestMigrationFromExistingCCM: routes as the existing CCM leaves them
// (empty Description, a Node's podCIDR via its instance) are used as they
// are: 0 cloud writes over several passes, and the Nodes get RouteCreated.
// Their cleanup is kept: a deleted Node's entry goes, from its delete event
// or, when the controller was down meanwhile, once its instance is gone;
// a reused podCIDR gets the new Node's route. The user's unmarked entries
// (to an existing instance that is no Node, outside the cluster CIDR) stay
// byte-identical throughout.
func TestMigrationFromExistingCCM(t *testing.T) {
	t.Parallel()
	const nodes = 3
	cases := []struct {
		name, label string
		base        int
		// remove takes Node 0 away, stop stopping the running controller;
		// it returns the routes wanted afterwards for podCIDR(base).
		remove func(t *testing.T, h *harness, m migrated, stop func()) want
		// creates are the CreateRouteEntries entries the removal costs.
		creates int
	}{
		{
			name: "node deleted while running: its entries go (delete event)", label: "mig-del", base: 100,
			remove: func(t *testing.T, h *harness, m migrated, _ func()) want {
				h.deleteNode(m.nodes[0])
				return want{}
			},
		},
		{
			name: "node deleted and its instance released while stopped: its entries go (fallback)", label: "mig-restart", base: 110,
			remove: func(t *testing.T, h *harness, m migrated, stop func()) want {
				stop()
				h.deleteNode(m.nodes[0])
				h.expectGone(m.nodes[0])
				h.releaseInstance(h.instances[0])
				h.start(nil)
				return want{}
			},
		},
		{
			name: "node deleted, its podCIDR given to a new node: replaced", label: "mig-reuse", base: 120, creates: 2,
			remove: func(t *testing.T, h *harness, m migrated, _ func()) want {
				h.deleteNode(m.nodes[0])
				h.addNode(h.nodeName(nodes), h.instances[nodes+1], m.cidrs[0])
				return want{m.cidrs[0]: h.instances[nodes+1]}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Instances: one per Node, one that is no Node, one spare.
			h := newHarness(t, tc.label, nodes+2, 1)
			other := h.instances[nodes]
			var m migrated
			w := want{}
			for i := 0; i < nodes; i++ {
				m.nodes = append(m.nodes, h.nodeName(i))
				m.cidrs = append(m.cidrs, podCIDR(tc.base+i))
				var ids []string
				for _, table := range h.tables {
					ids = append(ids, h.createEntry(table, m.cidrs[i], h.instances[i], ""))
				}
				m.entries = append(m.entries, ids)
				w[m.cidrs[i]] = h.instances[i]
			}
			m.user = h.createEntry(h.tables[0], podCIDR(tc.base+nodes), other, "")
			m.outside = h.createEntry(h.tables[0], "172.16.9.0/24", h.instances[0], "")
			untouched := map[string]vpc.RouteEntry{}
			for _, id := range []string{m.user, m.outside} {
				poll(t, 5*time.Second, "entry "+id+" settled", func() error {
					if e := h.entryByID(h.tables[0], id); e.Status != "Available" {
						return fmt.Errorf("status %s", e.Status)
					}
					return nil
				})
				untouched[id] = h.entryByID(h.tables[0], id)
			}
			// The existing CCM's Nodes, already there when ours starts.
			for i := 0; i < nodes; i++ {
				h.addNode(m.nodes[i], h.instances[i], m.cidrs[i])
			}
			seq := h.lastSeq()
			stop := h.start(nil)
			began := time.Now()
			for _, n := range m.nodes {
				h.expectCondition(10*time.Second, n, corev1.ConditionFalse, routes.ReasonRouteCreated)
			}
			time.Sleep(3 * time.Second) // three resyncs
			if wr := h.cloudWrites(seq); len(wr) != 0 {
				t.Errorf("the switch wrote to the cloud: %v", wr)
			}
			checks := len(h.describeInstances(seq))
			bound := int(time.Since(began)/time.Second) + 1
			t.Logf("switch over %d Nodes in %d tables: 0 writes, %d DescribeInstances in %v (resync 1s)", nodes, len(h.tables), checks, time.Since(began).Round(100*time.Millisecond))
			if checks == 0 || checks > bound {
				t.Errorf("%d DescribeInstances for the user's entry, want 1..%d (one per resync at most)", checks, bound)
			}
			for i, n := range m.nodes {
				got := h.eventCounts(n, routes.EventAdoptedRoute)
				if len(got) != len(h.tables) {
					t.Errorf("Node %s: AdoptedRoute events %v, want one per table", n, got)
				}
				for msg, count := range got {
					if count != 1 {
						t.Errorf("Node %s: AdoptedRoute %q sent %d times, want once", n, msg, count)
					}
				}
				for j, table := range h.tables {
					if e := h.entryByID(table, m.entries[i][j]); e.Description != "" {
						t.Errorf("adopted entry %s was rewritten: %+v", e.RouteEntryId, e)
					}
				}
			}

			seq = h.lastSeq()
			after := tc.remove(t, h, m, stop)
			delete(w, m.cidrs[0])
			for dst, inst := range after {
				w[dst] = inst
			}
			h.expectRoutes(15*time.Second, h.tables[1:], w)
			w[podCIDR(tc.base+nodes)] = other
			h.expectRoutes(time.Second, h.tables[:1], w)
			time.Sleep(1500 * time.Millisecond) // another resync or so
			calls := h.routeCalls(seq)
			t.Logf("removal: %s, DescribeInstances %d", calls, len(h.describeInstances(seq)))
			for _, id := range m.entries[0] {
				if calls.deleted[id] != 1 {
					t.Errorf("entry %s of the removed Node deleted %d times, want once", id, calls.deleted[id])
				}
			}
			if len(calls.deleted) != len(h.tables) || calls.modifyOK+calls.modifyFailed != 0 {
				t.Errorf("deleted %v and %d ModifyRouteEntry, want only the removed Node's %v", calls.deleted, calls.modifyOK+calls.modifyFailed, m.entries[0])
			}
			if n, refused := h.created(seq, m.cidrs[0]); n != tc.creates {
				t.Errorf("%d entries created for %s (refused: %v), want %d", n, m.cidrs[0], refused, tc.creates)
			}
			for id, before := range untouched {
				if got := h.entryByID(h.tables[0], id); !reflect.DeepEqual(got, before) {
					t.Errorf("the user's entry changed:\n got %+v\nwant %+v", got, before)
				}
			}
		})
	}
}

// created counts the entries for dst that CreateRouteEntries calls since
// seq created, with the codes of the refused calls.
func (h *harness) created(afterSeq uint64, dst string) (int, []string) {
	n := 0
	var refused []string
	for _, r := range h.env.Emulator.Requests(gateway.RequestFilter{Product: "vpc", Action: "CreateRouteEntries", AfterSeq: afterSeq}) {
		for i := 1; r.Params[fmt.Sprintf("RouteEntries.%d.RouteTableId", i)] != ""; i++ {
			if r.Params[fmt.Sprintf("RouteEntries.%d.DstCidrBlock", i)] != dst {
				continue
			}
			if r.Code == gateway.CodeOK {
				n++
			} else {
				refused = append(refused, r.Code)
			}
		}
	}
	return n, refused
}

// releaseInstance deletes an instance from the emulator, as releasing it
// in the console would; its routes stay, routing to nothing.
func (h *harness) releaseInstance(id string) {
	h.t.Helper()
	req := ecs.CreateDeleteInstanceRequest()
	req.InstanceId, req.Force = id, requests.NewBoolean(true)
	if _, err := h.env.ECS(h.t).DeleteInstance(req); err != nil {
		h.t.Fatalf("release instance %s: %v", id, err)
	}
}

// cloudWrites are the calls since seq other than reads, by action.
func (h *harness) cloudWrites(afterSeq uint64) map[string]int {
	out := map[string]int{}
	for _, r := range h.env.Emulator.Requests(gateway.RequestFilter{AfterSeq: afterSeq}) {
		if !strings.HasPrefix(r.Action, "Describe") && !strings.HasPrefix(r.Action, "List") && !strings.HasPrefix(r.Action, "Get") {
			out[r.Action]++
		}
	}
	return out
}

// describeInstances are the DescribeInstances calls since seq.
func (h *harness) describeInstances(afterSeq uint64) []gateway.RequestRecord {
	return h.env.Emulator.Requests(gateway.RequestFilter{Product: "ecs", Action: "DescribeInstances", AfterSeq: afterSeq})
}

// eventCounts returns a Node's events with reason, by message, with how
// many times each was sent (the recorder folds repeats into a count).
func (h *harness) eventCounts(node, reason string) map[string]int32 {
	h.t.Helper()
	list, err := h.kube.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node + ",reason=" + reason,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]int32{}
	for _, e := range list.Items {
		out[e.Message] += e.Count
	}
	return out
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
			if id := r.Params["RouteEntryId"]; id != "" {
				c.deleted[id]++
			}
			for i := 1; r.Params[fmt.Sprintf("RouteEntries.%d.RouteTableId", i)] != ""; i++ {
				c.deleted[r.Params[fmt.Sprintf("RouteEntries.%d.RouteEntryId", i)]]++
			}
		}
	}
	return c
}
