package routes_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

const dualStackCIDR = clusterCIDR + ",fd00:10:244::/56"

func podCIDR6(i int) string { return fmt.Sprintf("fd00:10:244:%x::/64", i) }

// dualStackNode gives a Node an IPv4 and an IPv6 podCIDR, as nodeipam does
// in a dual-stack cluster.
func dualStackNode(i int) func(n *corev1.Node) {
	return func(n *corev1.Node) { n.Spec.PodCIDRs = []string{podCIDR(i), podCIDR6(i)} }
}

// ipv6Entries are a table's custom entries with an IPv6 destination, by
// destination, with the next hop and the reported IpVersion.
func (h *harness) ipv6Entries(table string) (map[string]string, error) {
	got, err := h.entries(table)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for dst, e := range got {
		if strings.Contains(dst, ":") {
			out[dst] = nextHop(e) + "/" + e.IpVersion + "/" + e.Description
		}
	}
	return out, nil
}

// TestIPv6RoutesInDualStackVPC: in a VPC with IPv6 and a dual-stack
// cluster CIDR, each Node's IPv6 podCIDR gets an entry to its instance
// next to the IPv4 one, in every table; the Node is RouteCreated only with
// both; a deleted Node's IPv6 entries go too.
func TestIPv6RoutesInDualStackVPC(t *testing.T) {
	t.Parallel()
	h := newHarnessVPC(t, "dual", 2, 1, func(v *api.SeedVPC) { v.EnableIPv6 = true })
	h.start(func(o *routes.Options) { o.ClusterCIDR = dualStackCIDR })
	start := time.Now()
	w := want{}
	for i, inst := range h.instances {
		h.addNodeWith(h.nodeName(i), inst, podCIDR(i+1), dualStackNode(i+1))
		w[podCIDR(i+1)] = inst
	}
	h.expectRoutes(15*time.Second, h.tables, w)
	wantV6 := func(n int) map[string]string {
		out := map[string]string{}
		for i := 0; i < n; i++ {
			out[podCIDR6(i+1)] = h.instances[i] + "/ipv6/k8s/" + clusterID + "/" + h.nodeName(i)
		}
		return out
	}
	expectV6 := func(w map[string]string) {
		t.Helper()
		poll(t, 15*time.Second, fmt.Sprintf("IPv6 routes %v", w), func() error {
			for _, table := range h.tables {
				got, err := h.ipv6Entries(table)
				if err != nil {
					return err
				}
				if fmt.Sprint(got) != fmt.Sprint(w) {
					return fmt.Errorf("table %s: %v", table, got)
				}
			}
			return nil
		})
	}
	expectV6(wantV6(2))
	for i := range h.instances {
		h.expectCondition(10*time.Second, h.nodeName(i), corev1.ConditionFalse, routes.ReasonRouteCreated)
	}
	t.Logf("2 dual-stack Nodes routed (IPv4 and IPv6) in 2 tables in %s", time.Since(start).Round(time.Millisecond))
	h.expectEvent(5*time.Second, h.nodeName(0), routes.EventCreatedRoute, podCIDR6(1))
	if msgs, err := h.events(h.nodeName(0), routes.EventIPv6RouteSkipped); err != nil || len(msgs) != 0 {
		t.Fatalf("IPv6RouteSkipped in an IPv6 VPC: %v %v", msgs, err)
	}

	h.deleteNode(h.nodeName(1))
	delete(w, podCIDR(2))
	h.expectRoutes(10*time.Second, h.tables, w)
	expectV6(wantV6(1))
}

// TestIPv6RoutesSkippedInIPv4VPC: in a VPC without IPv6, a dual-stack
// Node gets its IPv4 route and RouteCreated; its IPv6 podCIDR gets one
// IPv6RouteSkipped Warning and no create attempt, however many passes run,
// at the cost of one DescribeVpcs.
func TestIPv6RoutesSkippedInIPv4VPC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "v4vpc", 1, 0)
	seq := h.lastSeq()
	h.start(func(o *routes.Options) { o.ClusterCIDR = dualStackCIDR })
	name := h.nodeName(0)
	h.addNodeWith(name, h.instances[0], podCIDR(1), dualStackNode(1))
	h.expectRoutes(15*time.Second, h.tables, want{podCIDR(1): h.instances[0]})
	h.expectCondition(10*time.Second, name, corev1.ConditionFalse, routes.ReasonRouteCreated)
	h.expectEvent(5*time.Second, name, routes.EventIPv6RouteSkipped, podCIDR6(1))
	// Several resyncs (1s here) later: still one event, no IPv6 create.
	time.Sleep(3500 * time.Millisecond)
	msgs, err := h.events(name, routes.EventIPv6RouteSkipped)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Errorf("IPv6RouteSkipped events %v, want exactly one", msgs)
	}
	if got, err := h.ipv6Entries(h.tables[0]); err != nil || len(got) != 0 {
		t.Errorf("IPv6 entries in an IPv4 VPC: %v %v", got, err)
	}
	describes, creates := 0, 0
	for _, r := range h.env.Emulator.Requests(gateway.RequestFilter{Product: "vpc", AfterSeq: seq}) {
		switch r.Action {
		case "DescribeVpcs":
			describes++
		case "CreateRouteEntries":
			creates++
			for k, v := range r.Params {
				if strings.HasSuffix(k, "DstCidrBlock") && strings.Contains(v, ":") {
					t.Errorf("IPv6 create attempted: %s=%s", k, v)
				}
			}
		}
	}
	if describes != 1 || creates != 1 {
		t.Errorf("DescribeVpcs calls %d, CreateRouteEntries calls %d; want 1 and 1", describes, creates)
	}
	t.Logf("IPv4 VPC: 1 event, %d DescribeVpcs, %d CreateRouteEntries over ≥4 passes", describes, creates)
}
