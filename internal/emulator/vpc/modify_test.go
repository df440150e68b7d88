package vpc_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// entryByID returns one entry of a table as DescribeRouteEntryList shows it.
func entryByID(t *testing.T, c *vpc.Client, table, id string) vpc.RouteEntry {
	t.Helper()
	req := vpc.CreateDescribeRouteEntryListRequest()
	req.RouteTableId, req.RouteEntryId = table, id
	r, err := c.DescribeRouteEntryList(req)
	noErr(t, err)
	if len(r.RouteEntrys.RouteEntry) != 1 {
		t.Fatalf("entry %s: %+v", id, r.RouteEntrys.RouteEntry)
	}
	return r.RouteEntrys.RouteEntry[0]
}

func TestModifyRouteEntryValidation(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	noErr(t, env.Emulator.Store.Settings().SetDelay(store.DelayRouteEntry, 0))
	c := env.VPC(t)
	r, err := createRoute(c, "vtb-a", "192.168.0.0/24", "i-a")
	noErr(t, err)
	var system string
	for _, e := range entries(t, c, "vtb-a", "System") {
		system = e.RouteEntryId
	}
	cases := []struct {
		name   string
		set    func(req *vpc.ModifyRouteEntryRequest)
		code   string
		status int
	}{
		{"no entry addressed", func(req *vpc.ModifyRouteEntryRequest) { req.Description = "d" }, "MissingParam.RouteEntryId", http.StatusBadRequest},
		{"table without destination", func(req *vpc.ModifyRouteEntryRequest) { req.RouteTableId, req.Description = "vtb-a", "d" }, "MissingParam.RouteEntryId", http.StatusBadRequest},
		{"unknown id", func(req *vpc.ModifyRouteEntryRequest) { req.RouteEntryId, req.Description = "rte-nope", "d" }, "InvalidRouteEntryId.NotFound", http.StatusBadRequest},
		{"unknown destination", func(req *vpc.ModifyRouteEntryRequest) {
			req.RouteTableId, req.DestinationCidrBlock, req.Description = "vtb-a", "192.168.9.0/24", "d"
		}, "InvalidRouteEntryId.NotFound", http.StatusBadRequest},
		{"entry of another table", func(req *vpc.ModifyRouteEntryRequest) {
			req.RouteEntryId, req.RouteTableId, req.Description = r.RouteEntryId, "vtb-b", "d"
		}, "InvalidRouteEntryId.NotFound", http.StatusBadRequest},
		{"unknown table", func(req *vpc.ModifyRouteEntryRequest) {
			req.RouteTableId, req.DestinationCidrBlock, req.Description = "vtb-nope", "192.168.0.0/24", "d"
		}, "InvalidRouteTableId.NotFound", http.StatusNotFound},
		{"description too long", func(req *vpc.ModifyRouteEntryRequest) {
			req.RouteEntryId, req.Description = r.RouteEntryId, strings.Repeat("d", 257)
		}, "InvalidDescription.Malformed", http.StatusBadRequest},
		{"description is a URL", func(req *vpc.ModifyRouteEntryRequest) {
			req.RouteEntryId, req.Description = r.RouteEntryId, "http://example.com"
		}, "InvalidDescription.Malformed", http.StatusBadRequest},
		{"name too long", func(req *vpc.ModifyRouteEntryRequest) {
			req.RouteEntryId, req.RouteEntryName = r.RouteEntryId, strings.Repeat("n", 129)
		}, "InvalidRouteEntryName.Malformed", http.StatusBadRequest},
		{"name is a URL", func(req *vpc.ModifyRouteEntryRequest) {
			req.RouteEntryId, req.RouteEntryName = r.RouteEntryId, "https://example.com"
		}, "InvalidRouteEntryName.Malformed", http.StatusBadRequest},
		{"system entry", func(req *vpc.ModifyRouteEntryRequest) { req.RouteEntryId, req.Description = system, "d" }, "OperationDenied.SystemRouteEntry", http.StatusBadRequest},
		{"next hop change", func(req *vpc.ModifyRouteEntryRequest) {
			req.RouteEntryId, req.NewNextHopId, req.NewNextHopType = r.RouteEntryId, "i-a", "Instance"
		}, "InvalidParameter", http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := vpc.CreateModifyRouteEntryRequest()
			tc.set(req)
			_, err := c.ModifyRouteEntry(req)
			wantErr(t, err, tc.code, tc.status)
		})
	}
	if e := entryByID(t, c, "vtb-a", r.RouteEntryId); e.Description != "" || e.RouteEntryName != "" {
		t.Fatalf("a refused call changed the entry: %+v", e)
	}

	// By table and destination, at the length limits; the fields not sent
	// are kept.
	byDst := vpc.CreateModifyRouteEntryRequest()
	byDst.RouteTableId, byDst.DestinationCidrBlock = "vtb-a", "192.168.0.0/24"
	byDst.Description, byDst.RouteEntryName = strings.Repeat("d", 256), strings.Repeat("é", 128)
	_, err = c.ModifyRouteEntry(byDst)
	noErr(t, err)
	byID := vpc.CreateModifyRouteEntryRequest()
	byID.RouteEntryId, byID.Description = r.RouteEntryId, "k8s/c1/node-1"
	_, err = c.ModifyRouteEntry(byID)
	noErr(t, err)
	e := entryByID(t, c, "vtb-a", r.RouteEntryId)
	if e.Description != "k8s/c1/node-1" || e.RouteEntryName != strings.Repeat("é", 128) || e.Status != "Available" ||
		e.DestinationCidrBlock != "192.168.0.0/24" || e.NextHops.NextHop[0].NextHopId != "i-a" {
		t.Fatalf("modified entry: %+v", e)
	}
}

// TestModifyRouteEntryStatusAndConflicts: a Pending entry cannot be
// modified; one entry's changes are serialized; a change does not make the
// VPC busy, but a route task in flight refuses it.
func TestModifyRouteEntryStatusAndConflicts(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	noErr(t, env.Emulator.Store.Settings().SetDelay(store.DelayRouteEntry, 300*time.Millisecond))
	c := env.VPC(t)
	available := func(table, id string) {
		t.Helper()
		emulatortest.Eventually(t, "entry "+id+" Available", func() bool { return entryByID(t, c, table, id).Status == "Available" })
	}
	modify := func(id, desc string) error {
		req := vpc.CreateModifyRouteEntryRequest()
		req.RouteEntryId, req.Description = id, desc
		_, err := c.ModifyRouteEntry(req)
		return err
	}

	r, err := createRoute(c, "vtb-a", "192.168.0.0/24", "i-a")
	noErr(t, err)
	wantErr(t, modify(r.RouteEntryId, "k8s/c1/a"), "IncorrectRouteEntryStatus", http.StatusBadRequest)
	available("vtb-a", r.RouteEntryId)
	noErr(t, modify(r.RouteEntryId, "k8s/c1/a"))
	wantErr(t, modify(r.RouteEntryId, "k8s/c1/b"), "TaskConflict", http.StatusBadRequest)
	// The change left the VPC free for route tasks.
	_, err = createRoute(c, "vtb-a", "192.168.1.0/24", "i-a")
	noErr(t, err)
	if e := entryByID(t, c, "vtb-a", r.RouteEntryId); e.Description != "k8s/c1/a" || e.Status != "Available" {
		t.Fatalf("entry after the refused change: %+v", e)
	}

	// In another VPC, an entry never modified is refused while a route
	// task runs there.
	b, err := createRoute(c, "vtb-b", "192.168.0.0/24", "i-b")
	noErr(t, err)
	available("vtb-b", b.RouteEntryId)
	emulatortest.Eventually(t, "VPC b idle", func() bool {
		_, err := createRoute(c, "vtb-b", "192.168.1.0/24", "i-b")
		return err == nil
	})
	wantErr(t, modify(b.RouteEntryId, "k8s/c1/b"), "TaskConflict", http.StatusBadRequest)
	emulatortest.Eventually(t, "entry b modified once the VPC is idle", func() bool { return modify(b.RouteEntryId, "k8s/c1/b") == nil })
	if e := entryByID(t, c, "vtb-b", b.RouteEntryId); e.Description != "k8s/c1/b" {
		t.Fatalf("entry b: %+v", e)
	}
}
