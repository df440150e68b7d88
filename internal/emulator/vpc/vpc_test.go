package vpc_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// Assertions shared by all product tests live in emulatortest.
var (
	wantErr = emulatortest.WantServerError
	noErr   = emulatortest.NoError
)

// network seeds two VPCs, each with a vSwitch and an instance.
func network(t *testing.T, env *emulatortest.Env) {
	t.Helper()
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{
			{ID: "vpc-a", CIDRBlock: "172.16.0.0/12", RouteTableID: "vtb-a", VSwitches: []api.SeedVSwitch{{ID: "vsw-a", ZoneID: "cn-hangzhou-h", CIDRBlock: "172.16.1.0/24"}}},
			{ID: "vpc-b", CIDRBlock: "10.0.0.0/8", RouteTableID: "vtb-b", VSwitches: []api.SeedVSwitch{{ID: "vsw-b", ZoneID: "cn-hangzhou-i", CIDRBlock: "10.1.0.0/16"}}},
		},
		Instances: []api.SeedInstance{{ID: "i-a", VSwitchID: "vsw-a"}, {ID: "i-b", VSwitchID: "vsw-b"}},
	})
}

func TestCreateVpcIdempotentAndDescribe(t *testing.T) {
	env := emulatortest.Start(t)
	c := env.VPC(t)
	req := vpc.CreateCreateVpcRequest()
	req.CidrBlock, req.VpcName, req.ClientToken = "192.168.0.0/16", "prod", "tok-1"
	req.Tag = &[]vpc.CreateVpcTag{{Key: "env", Value: "prod"}}
	resp, err := c.CreateVpc(req)
	noErr(t, err)
	if !strings.HasPrefix(resp.VpcId, "vpc-") || !strings.HasPrefix(resp.VRouterId, "vrt-") || !strings.HasPrefix(resp.RouteTableId, "vtb-") {
		t.Fatalf("ids: %+v", resp)
	}
	again, err := c.CreateVpc(req)
	noErr(t, err)
	if again.VpcId != resp.VpcId || again.RouteTableId != resp.RouteTableId {
		t.Fatalf("ClientToken not idempotent: %s vs %s", again.VpcId, resp.VpcId)
	}
	req.VpcName = "other"
	_, err = c.CreateVpc(req)
	wantErr(t, err, "IdempotentParameterMismatch", http.StatusBadRequest)

	d := vpc.CreateDescribeVpcsRequest()
	d.VpcId = resp.VpcId
	list, err := c.DescribeVpcs(d)
	noErr(t, err)
	if list.TotalCount != 1 || len(list.Vpcs.Vpc) != 1 {
		t.Fatalf("DescribeVpcs: %+v", list)
	}
	v := list.Vpcs.Vpc[0]
	if v.CidrBlock != "192.168.0.0/16" || v.VpcName != "prod" || v.VRouterId != resp.VRouterId || v.Status != "Available" ||
		v.RegionId != env.Region || len(v.Tags.Tag) != 1 || v.Tags.Tag[0].Value != "prod" || v.RouterTableIds.RouterTableIds[0] != resp.RouteTableId {
		t.Fatalf("vpc: %+v", v)
	}
	d = vpc.CreateDescribeVpcsRequest()
	d.Tag = &[]vpc.DescribeVpcsTag{{Key: "env", Value: "dev"}}
	list, err = c.DescribeVpcs(d)
	noErr(t, err)
	if list.TotalCount != 0 {
		t.Fatalf("tag filter: %d", list.TotalCount)
	}

	a := vpc.CreateDescribeVpcAttributeRequest()
	a.VpcId = resp.VpcId
	attr, err := c.DescribeVpcAttribute(a)
	noErr(t, err)
	if attr.VRouterId != resp.VRouterId || attr.CidrBlock != "192.168.0.0/16" || len(attr.VSwitchIds.VSwitchId) != 0 {
		t.Fatalf("attribute: %+v", attr)
	}
	a.VpcId = "vpc-nope"
	_, err = c.DescribeVpcAttribute(a)
	wantErr(t, err, "InvalidVpcId.NotFound", http.StatusNotFound)
}

func TestCreateVpcRejectsBadCIDR(t *testing.T) {
	env := emulatortest.Start(t)
	c := env.VPC(t)
	for _, cidr := range []string{"8.8.8.0/24", "10.0.0.1/16", "bogus", "10.0.0.0/30"} {
		req := vpc.CreateCreateVpcRequest()
		req.CidrBlock = cidr
		_, err := c.CreateVpc(req)
		wantErr(t, err, "InvalidCidrBlock.Malformed", http.StatusBadRequest)
	}
}

func TestVSwitchLifecycle(t *testing.T) {
	env := emulatortest.Start(t)
	c := env.VPC(t)
	cv := vpc.CreateCreateVpcRequest()
	cv.CidrBlock = "10.0.0.0/16"
	v, err := c.CreateVpc(cv)
	noErr(t, err)

	bad := []struct {
		vpc, zone, cidr, code string
		status                int
	}{
		{v.VpcId, "cn-hangzhou-1", "10.0.1.0/24", "InvalidZoneId.NotFound", http.StatusNotFound},
		{v.VpcId, "cn-beijing-a", "10.0.1.0/24", "InvalidZoneId.NotFound", http.StatusNotFound},
		{v.VpcId, "cn-hangzhou-h", "10.1.0.0/24", "InvalidCidrBlock.Mismatch", http.StatusBadRequest},
		{v.VpcId, "cn-hangzhou-h", "10.0.0.0/30", "InvalidCidrBlock.Malformed", http.StatusBadRequest},
		{"vpc-missing", "cn-hangzhou-h", "10.0.1.0/24", "InvalidVpcId.NotFound", http.StatusNotFound},
	}
	for _, b := range bad {
		req := vpc.CreateCreateVSwitchRequest()
		req.VpcId, req.ZoneId, req.CidrBlock = b.vpc, b.zone, b.cidr
		_, err := c.CreateVSwitch(req)
		wantErr(t, err, b.code, b.status)
	}
	var ids []string
	for i, z := range []string{"cn-hangzhou-h", "cn-hangzhou-h", "cn-hangzhou-i"} {
		req := vpc.CreateCreateVSwitchRequest()
		req.VpcId, req.ZoneId, req.CidrBlock = v.VpcId, z, []string{"10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"}[i]
		req.VSwitchName = "sw"
		r, err := c.CreateVSwitch(req)
		noErr(t, err)
		ids = append(ids, r.VSwitchId)
	}
	req := vpc.CreateCreateVSwitchRequest()
	req.VpcId, req.ZoneId, req.CidrBlock = v.VpcId, "cn-hangzhou-h", "10.0.1.128/25"
	_, err = c.CreateVSwitch(req)
	wantErr(t, err, "InvalidCidrBlock.Overlapped", http.StatusBadRequest)

	d := vpc.CreateDescribeVSwitchesRequest()
	d.VpcId, d.PageSize = v.VpcId, requests.NewInteger(2)
	p1, err := c.DescribeVSwitches(d)
	noErr(t, err)
	d.PageNumber = requests.NewInteger(2)
	p2, err := c.DescribeVSwitches(d)
	noErr(t, err)
	if p1.TotalCount != 3 || len(p1.VSwitches.VSwitch) != 2 || len(p2.VSwitches.VSwitch) != 1 || p2.PageNumber != 2 {
		t.Fatalf("paging: %d/%d/%d", p1.TotalCount, len(p1.VSwitches.VSwitch), len(p2.VSwitches.VSwitch))
	}
	sw := p1.VSwitches.VSwitch[0]
	if sw.VSwitchId != ids[0] || sw.AvailableIpAddressCount != 252 || sw.ZoneId != "cn-hangzhou-h" || sw.RouteTable.RouteTableId != v.RouteTableId {
		t.Fatalf("vswitch: %+v", sw)
	}
	filters := []struct {
		zone, id string
		want     int
	}{{"cn-hangzhou-i", "", 1}, {"cn-hangzhou-h", "", 2}, {"", ids[1], 1}, {"cn-hangzhou-i", ids[0], 0}}
	for _, f := range filters {
		d := vpc.CreateDescribeVSwitchesRequest()
		d.ZoneId, d.VSwitchId = f.zone, f.id
		r, err := c.DescribeVSwitches(d)
		noErr(t, err)
		if r.TotalCount != f.want {
			t.Fatalf("filter %+v: got %d", f, r.TotalCount)
		}
	}
	d.PageSize = requests.NewInteger(51)
	_, err = c.DescribeVSwitches(d)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)

	a := vpc.CreateDescribeVSwitchAttributesRequest()
	a.VSwitchId = ids[2]
	attr, err := c.DescribeVSwitchAttributes(a)
	noErr(t, err)
	if attr.CidrBlock != "10.0.3.0/24" || attr.VpcId != v.VpcId || attr.AvailableIpAddressCount != 252 || attr.RouteTable.RouteTableType != "System" {
		t.Fatalf("attributes: %+v", attr)
	}

	dv := vpc.CreateDeleteVpcRequest()
	dv.VpcId = v.VpcId
	_, err = c.DeleteVpc(dv)
	wantErr(t, err, "DependencyViolation.VSwitch", http.StatusBadRequest)
	for _, id := range ids {
		ds := vpc.CreateDeleteVSwitchRequest()
		ds.VSwitchId = id
		_, err = c.DeleteVSwitch(ds)
		noErr(t, err)
	}
	ds := vpc.CreateDeleteVSwitchRequest()
	ds.VSwitchId = ids[0]
	_, err = c.DeleteVSwitch(ds)
	wantErr(t, err, "InvalidVSwitchId.NotFound", http.StatusNotFound)
	_, err = c.DeleteVpc(dv)
	noErr(t, err)
	_, err = c.DeleteVpc(dv)
	wantErr(t, err, "InvalidVpcId.NotFound", http.StatusNotFound)
}

func TestDeleteRefusedWhileInstancesExist(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	c := env.VPC(t)
	ds := vpc.CreateDeleteVSwitchRequest()
	ds.VSwitchId = "vsw-a"
	_, err := c.DeleteVSwitch(ds)
	wantErr(t, err, "DependencyViolation.Instance", http.StatusBadRequest)
	dv := vpc.CreateDeleteVpcRequest()
	dv.VpcId = "vpc-a"
	_, err = c.DeleteVpc(dv)
	wantErr(t, err, "DependencyViolation.Instance", http.StatusBadRequest)
}

func TestDescribeRouteTableList(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	c := env.VPC(t)
	req := vpc.CreateDescribeRouteTableListRequest()
	req.VpcId = "vpc-a"
	r, err := c.DescribeRouteTableList(req)
	noErr(t, err)
	if r.TotalCount != 1 || len(r.RouterTableList.RouterTableListType) != 1 || r.PageSize != 10 {
		t.Fatalf("tables: %+v", r)
	}
	tb := r.RouterTableList.RouterTableListType[0]
	if tb.RouteTableId != "vtb-a" || tb.RouteTableType != "System" || tb.RouterType != "VRouter" || tb.VpcId != "vpc-a" ||
		len(tb.VSwitchIds.VSwitchId) != 1 || tb.VSwitchIds.VSwitchId[0] != "vsw-a" || tb.Status != "Available" {
		t.Fatalf("table: %+v", tb)
	}
	all := vpc.CreateDescribeRouteTableListRequest()
	all.PageSize = requests.NewInteger(1)
	r, err = c.DescribeRouteTableList(all)
	noErr(t, err)
	if r.TotalCount != 2 || len(r.RouterTableList.RouterTableListType) != 1 {
		t.Fatalf("paging: %+v", r)
	}
	all.PageSize = requests.NewInteger(51)
	_, err = c.DescribeRouteTableList(all)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
}

func createRoute(c *vpc.Client, table, cidr, hop string) (*vpc.CreateRouteEntryResponse, error) {
	req := vpc.CreateCreateRouteEntryRequest()
	req.RouteTableId, req.DestinationCidrBlock, req.NextHopId, req.NextHopType = table, cidr, hop, "Instance"
	return c.CreateRouteEntry(req)
}

func entries(t *testing.T, c *vpc.Client, table, typ string) []vpc.RouteEntry {
	t.Helper()
	req := vpc.CreateDescribeRouteEntryListRequest()
	req.RouteTableId, req.RouteEntryType, req.MaxResult = table, typ, requests.NewInteger(500)
	r, err := c.DescribeRouteEntryList(req)
	noErr(t, err)
	return r.RouteEntrys.RouteEntry
}

func TestRouteEntryPendingAndTaskConflict(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	noErr(t, env.Emulator.Store.Settings().SetDelay(store.DelayRouteEntry, 300*time.Millisecond))
	c := env.VPC(t)
	r, err := createRoute(c, "vtb-a", "192.168.0.0/24", "i-a")
	noErr(t, err)
	if !strings.HasPrefix(r.RouteEntryId, "rte-") {
		t.Fatalf("id %q", r.RouteEntryId)
	}
	got := entries(t, c, "vtb-a", "Custom")
	if len(got) != 1 || got[0].Status != "Pending" || got[0].DestinationCidrBlock != "192.168.0.0/24" || got[0].NextHops.NextHop[0].NextHopId != "i-a" {
		t.Fatalf("entry: %+v", got)
	}
	_, err = createRoute(c, "vtb-a", "192.168.1.0/24", "i-a")
	wantErr(t, err, "TaskConflict", http.StatusBadRequest)
	batch := vpc.CreateCreateRouteEntriesRequest()
	batch.RouteEntries = &[]vpc.CreateRouteEntriesRouteEntries{{RouteTableId: "vtb-a", DstCidrBlock: "192.168.2.0/24", NextHop: "i-a", NextHopType: "Instance"}}
	_, err = c.CreateRouteEntries(batch)
	wantErr(t, err, "TaskConflict", http.StatusBadRequest)
	del := vpc.CreateDeleteRouteEntryRequest()
	del.RouteEntryId = r.RouteEntryId
	_, err = c.DeleteRouteEntry(del)
	wantErr(t, err, "TaskConflict", http.StatusBadRequest)
	// Another VPC is not blocked.
	_, err = createRoute(c, "vtb-b", "192.168.0.0/24", "i-b")
	noErr(t, err)

	deadline := time.Now().Add(5 * time.Second)
	for entries(t, c, "vtb-a", "Custom")[0].Status != "Available" {
		if time.Now().After(deadline) {
			t.Fatal("route never became Available")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err = createRoute(c, "vtb-a", "192.168.1.0/24", "i-a")
	noErr(t, err)
}

func TestCreateRouteEntryValidation(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	noErr(t, env.Emulator.Store.Settings().SetDelay(store.DelayRouteEntry, 0))
	c := env.VPC(t)
	_, err := createRoute(c, "vtb-a", "192.168.0.0/24", "i-a")
	noErr(t, err)
	cases := []struct {
		name, table, cidr, hop, code string
		status                       int
	}{
		{"duplicate", "vtb-a", "192.168.0.0/24", "i-a", "InvalidCIDRBlock.Duplicate", http.StatusBadRequest},
		{"equals vSwitch", "vtb-a", "172.16.1.0/24", "i-a", "InvalidCIDRBlock.Overlapped", http.StatusBadRequest},
		{"inside vSwitch", "vtb-a", "172.16.1.64/26", "i-a", "InvalidCIDRBlock.Overlapped", http.StatusBadRequest},
		{"cloud services", "vtb-a", "100.64.1.0/24", "i-a", "InvalidCIDRBlock.Overlapped", http.StatusBadRequest},
		{"malformed", "vtb-a", "300.1.1.0/24", "i-a", "InvalidCIDRBlock.Malformed", http.StatusBadRequest},
		{"unknown hop", "vtb-a", "192.168.5.0/24", "i-nope", "InvalidNextHop.NotFound", http.StatusNotFound},
		{"hop in other VPC", "vtb-a", "192.168.5.0/24", "i-b", "InvalidNextHop.NotFound", http.StatusNotFound},
		{"unknown table", "vtb-nope", "192.168.5.0/24", "i-a", "InvalidRouteTableId.NotFound", http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createRoute(c, tc.table, tc.cidr, tc.hop)
			wantErr(t, err, tc.code, tc.status)
		})
	}
	// A bare address is a /32; a route containing a vSwitch CIDR is allowed.
	host, err := createRoute(c, "vtb-a", "192.168.9.9", "i-a")
	noErr(t, err)
	_, err = createRoute(c, "vtb-a", "172.16.0.0/16", "i-a")
	noErr(t, err)
	req := vpc.CreateDescribeRouteEntryListRequest()
	req.RouteTableId, req.RouteEntryId = "vtb-a", host.RouteEntryId
	r, err := c.DescribeRouteEntryList(req)
	noErr(t, err)
	if len(r.RouteEntrys.RouteEntry) != 1 || r.RouteEntrys.RouteEntry[0].DestinationCidrBlock != "192.168.9.9/32" || r.RouteEntrys.RouteEntry[0].Status != "Available" {
		t.Fatalf("host route: %+v", r.RouteEntrys.RouteEntry)
	}
}

func TestSystemRoutesAndDelete(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	noErr(t, env.Emulator.Store.Settings().SetDelay(store.DelayRouteEntry, 0))
	c := env.VPC(t)
	sys := entries(t, c, "vtb-a", "System")
	var vswRoute string
	for _, e := range sys {
		if e.DestinationCidrBlock == "172.16.1.0/24" {
			vswRoute = e.RouteEntryId
		}
		if e.Type != "System" {
			t.Fatalf("type %s", e.Type)
		}
	}
	if len(sys) != 2 || vswRoute == "" {
		t.Fatalf("system routes: %+v", sys)
	}
	del := vpc.CreateDeleteRouteEntryRequest()
	del.RouteEntryId = vswRoute
	_, err := c.DeleteRouteEntry(del)
	wantErr(t, err, "OperationDenied.SystemRouteEntry", http.StatusBadRequest)

	r1, err := createRoute(c, "vtb-a", "192.168.0.0/24", "i-a")
	noErr(t, err)
	_, err = createRoute(c, "vtb-a", "192.168.1.0/24", "i-a")
	noErr(t, err)
	del.RouteEntryId = r1.RouteEntryId
	_, err = c.DeleteRouteEntry(del)
	noErr(t, err)
	_, err = c.DeleteRouteEntry(del)
	wantErr(t, err, "InvalidRouteEntry.NotFound", http.StatusNotFound)
	byCIDR := vpc.CreateDeleteRouteEntryRequest()
	byCIDR.RouteTableId, byCIDR.DestinationCidrBlock, byCIDR.NextHopId = "vtb-a", "192.168.1.0/24", "i-a"
	_, err = c.DeleteRouteEntry(byCIDR)
	noErr(t, err)
	_, err = c.DeleteRouteEntry(byCIDR)
	wantErr(t, err, "InvalidRouteEntry.NotFound", http.StatusNotFound)
	if got := entries(t, c, "vtb-a", "Custom"); len(got) != 0 {
		t.Fatalf("left: %+v", got)
	}
}

func TestRouteQuotasAndBatches(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	settings := env.Emulator.Store.Settings()
	noErr(t, settings.SetDelay(store.DelayRouteEntry, 0))
	noErr(t, settings.SetQuota(store.QuotaVPCCustomRoutesPerTable, 3))
	noErr(t, settings.SetQuota(store.QuotaVPCRouteEntriesPerCall, 3))
	c := env.VPC(t)

	tooMany := vpc.CreateCreateRouteEntriesRequest()
	var items []vpc.CreateRouteEntriesRouteEntries
	for _, cidr := range []string{"192.168.0.0/24", "192.168.1.0/24", "192.168.2.0/24", "192.168.3.0/24"} {
		items = append(items, vpc.CreateRouteEntriesRouteEntries{RouteTableId: "vtb-a", DstCidrBlock: cidr, NextHop: "i-a", NextHopType: "Instance"})
	}
	tooMany.RouteEntries = &items
	_, err := c.CreateRouteEntries(tooMany)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)

	batch := vpc.CreateCreateRouteEntriesRequest()
	batch.RouteEntries = &[]vpc.CreateRouteEntriesRouteEntries{
		{RouteTableId: "vtb-a", DstCidrBlock: "192.168.0.0/24", NextHop: "i-a", NextHopType: "Instance"},
		{RouteTableId: "vtb-a", DstCidrBlock: "192.168.0.0/24", NextHop: "i-a", NextHopType: "Instance"},
		{RouteTableId: "vtb-a", DstCidrBlock: "192.168.1.0/24", NextHop: "i-b", NextHopType: "Instance"},
	}
	r, err := c.CreateRouteEntries(batch)
	noErr(t, err)
	if r.SuccessCount != 1 || r.FailedCount != 2 || len(r.RouteEntryIds) != 1 || len(r.FailedRouteEntries) != 2 ||
		r.FailedRouteEntries[0].FailedCode != "InvalidCIDRBlock.Duplicate" || r.FailedRouteEntries[1].FailedCode != "InvalidNextHop.NotFound" ||
		r.FailedRouteEntries[1].DstCidrBlock != "192.168.1.0/24" || r.FailedRouteEntries[1].NextHop != "i-b" {
		t.Fatalf("batch: %+v", r)
	}
	_, err = createRoute(c, "vtb-a", "192.168.1.0/24", "i-a")
	noErr(t, err)
	_, err = createRoute(c, "vtb-a", "192.168.2.0/24", "i-a")
	noErr(t, err)
	_, err = createRoute(c, "vtb-a", "192.168.3.0/24", "i-a")
	wantErr(t, err, "QuotaExceeded", http.StatusBadRequest)
	full := vpc.CreateCreateRouteEntriesRequest()
	full.RouteEntries = &[]vpc.CreateRouteEntriesRouteEntries{{RouteTableId: "vtb-a", DstCidrBlock: "192.168.3.0/24", NextHop: "i-a"}}
	r, err = c.CreateRouteEntries(full)
	noErr(t, err)
	if r.FailedCount != 1 || r.FailedRouteEntries[0].FailedCode != "QuotaExceeded" {
		t.Fatalf("quota in batch: %+v", r)
	}

	page := vpc.CreateDescribeRouteEntryListRequest()
	page.RouteTableId, page.RouteEntryType, page.MaxResult = "vtb-a", "Custom", requests.NewInteger(2)
	p1, err := c.DescribeRouteEntryList(page)
	noErr(t, err)
	page.NextToken = p1.NextToken
	p2, err := c.DescribeRouteEntryList(page)
	noErr(t, err)
	if len(p1.RouteEntrys.RouteEntry) != 2 || p1.NextToken == "" || len(p2.RouteEntrys.RouteEntry) != 1 || p2.NextToken != "" {
		t.Fatalf("paging: %d %q %d %q", len(p1.RouteEntrys.RouteEntry), p1.NextToken, len(p2.RouteEntrys.RouteEntry), p2.NextToken)
	}
	filter := vpc.CreateDescribeRouteEntryListRequest()
	filter.RouteTableId, filter.DestinationCidrBlock, filter.NextHopId = "vtb-a", "192.168.2.0/24", "i-a"
	f, err := c.DescribeRouteEntryList(filter)
	noErr(t, err)
	if len(f.RouteEntrys.RouteEntry) != 1 || f.RouteEntrys.RouteEntry[0].Type != "Custom" {
		t.Fatalf("filter: %+v", f.RouteEntrys)
	}

	del := vpc.CreateDeleteRouteEntriesRequest()
	del.RouteEntries = &[]vpc.DeleteRouteEntriesRouteEntries{
		{RouteTableId: "vtb-a", DstCidrBlock: "192.168.0.0/24", NextHop: "i-a"},
		{RouteEntryId: f.RouteEntrys.RouteEntry[0].RouteEntryId},
		{RouteTableId: "vtb-a", DstCidrBlock: "192.168.7.0/24", NextHop: "i-a"},
	}
	dr, err := c.DeleteRouteEntries(del)
	noErr(t, err)
	if dr.SuccessCount != 2 || dr.FailedCount != 1 || dr.FailedRouteEntries[0].FailedCode != "InvalidRouteEntry.NotFound" {
		t.Fatalf("delete batch: %+v", dr)
	}
	if got := entries(t, c, "vtb-a", "Custom"); len(got) != 1 || got[0].DestinationCidrBlock != "192.168.1.0/24" {
		t.Fatalf("left: %+v", got)
	}
}

func TestDescribeEipAddresses(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	ids := env.Seed(t, &api.Seed{EIPs: []api.SeedEIP{
		{IPAddress: "47.1.1.1", InstanceID: "i-a", Bandwidth: "10"},
		{IPAddress: "47.1.1.2", InstanceID: "lb-x", InstanceType: "SlbInstance"},
		{IPAddress: "47.1.1.3"},
	}})["eip"]
	c := env.VPC(t)
	cases := []struct {
		name  string
		setup func(r *vpc.DescribeEipAddressesRequest)
		want  []string
	}{
		{"all", func(r *vpc.DescribeEipAddressesRequest) {}, []string{"47.1.1.1", "47.1.1.2", "47.1.1.3"}},
		{"by id", func(r *vpc.DescribeEipAddressesRequest) { r.AllocationId = ids[2] }, []string{"47.1.1.3"}},
		{"by address", func(r *vpc.DescribeEipAddressesRequest) { r.EipAddress = "47.1.1.2" }, []string{"47.1.1.2"}},
		{"by ecs", func(r *vpc.DescribeEipAddressesRequest) { r.AssociatedInstanceType = "EcsInstance" }, []string{"47.1.1.1"}},
		{"by instance", func(r *vpc.DescribeEipAddressesRequest) { r.AssociatedInstanceId = "lb-x" }, []string{"47.1.1.2"}},
		{"page 2", func(r *vpc.DescribeEipAddressesRequest) {
			r.PageSize, r.PageNumber = requests.NewInteger(2), requests.NewInteger(2)
		}, []string{"47.1.1.3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := vpc.CreateDescribeEipAddressesRequest()
			tc.setup(req)
			r, err := c.DescribeEipAddresses(req)
			noErr(t, err)
			var got []string
			for _, e := range r.EipAddresses.EipAddress {
				got = append(got, e.IpAddress)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
	req := vpc.CreateDescribeEipAddressesRequest()
	req.AllocationId = ids[0]
	r, err := c.DescribeEipAddresses(req)
	noErr(t, err)
	e := r.EipAddresses.EipAddress[0]
	if e.Status != "InUse" || e.InstanceId != "i-a" || e.InstanceType != "EcsInstance" || e.Bandwidth != "10" || !strings.HasPrefix(e.AllocationId, "eip-") {
		t.Fatalf("eip: %+v", e)
	}
	req = vpc.CreateDescribeEipAddressesRequest()
	req.AssociatedInstanceType = "Bogus"
	_, err = c.DescribeEipAddresses(req)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
}

func TestLookups(t *testing.T) {
	env := emulatortest.Start(t)
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{{ID: "vpc-l", CIDRBlock: "192.168.0.0/16", VSwitches: []api.SeedVSwitch{{ID: "vsw-l", ZoneID: "cn-hangzhou-k", CIDRBlock: "192.168.0.0/29"}}}},
		EIPs: []api.SeedEIP{{ID: "eip-l", IPAddress: "47.2.2.2", InstanceID: "i-l"}},
	})
	v := env.Emulator.VPC
	st := env.Emulator.Store
	st.Lock()
	defer st.Unlock()
	if sw, ok := v.VSwitch("vsw-l"); !ok || sw.VpcID != "vpc-l" || sw.ZoneID != "cn-hangzhou-k" || sw.CIDRBlock != "192.168.0.0/29" || sw.RegionID != env.Region {
		t.Fatalf("VSwitch: %+v %v", sw, ok)
	}
	if _, ok := v.VSwitch("vsw-x"); ok {
		t.Fatal("unknown vSwitch found")
	}
	if info, ok := v.VPC("vpc-l"); !ok || info.CIDRBlock != "192.168.0.0/16" || !strings.HasPrefix(info.VRouterID, "vrt-") {
		t.Fatalf("VPC: %+v", info)
	}
	// A /29 keeps the network address and the last three: 4 usable.
	ip, err := v.AllocatePrivateIP("vsw-l", "192.168.0.3")
	if err != nil || ip != "192.168.0.3" {
		t.Fatalf("want: %s %v", ip, err)
	}
	var auto []string
	for i := 0; i < 3; i++ {
		ip, err := v.AllocatePrivateIP("vsw-l", "")
		noErr(t, err)
		auto = append(auto, ip)
	}
	if strings.Join(auto, ",") != "192.168.0.1,192.168.0.2,192.168.0.4" {
		t.Fatalf("auto: %v", auto)
	}
	errCode := func(err error) string {
		var ae *api.Error
		if !errors.As(err, &ae) {
			t.Fatalf("not an api.Error: %v", err)
		}
		return ae.Code
	}
	_, err = v.AllocatePrivateIP("vsw-l", "")
	if errCode(err) != "VSwitchAvailableIpNotExist" {
		t.Fatal(err)
	}
	_, err = v.AllocatePrivateIP("vsw-l", "192.168.0.3")
	if errCode(err) != "InvalidPrivateIpAddress.Duplicated" {
		t.Fatal(err)
	}
	_, err = v.AllocatePrivateIP("vsw-l", "192.168.0.7")
	if errCode(err) != "InvalidPrivateIpAddress.Mismatch" {
		t.Fatal(err)
	}
	_, err = v.AllocatePrivateIP("vsw-x", "")
	if errCode(err) != "InvalidVSwitchId.NotFound" {
		t.Fatal(err)
	}
	v.ReleasePrivateIP("vsw-l", "192.168.0.2")
	if ip, err := v.AllocatePrivateIP("vsw-l", ""); err != nil || ip != "192.168.0.2" {
		t.Fatalf("after release: %s %v", ip, err)
	}
	if e := v.EIPsBoundTo("i-l"); len(e) != 1 || e[0].AllocationID != "eip-l" || e[0].IPAddress != "47.2.2.2" {
		t.Fatalf("EIPsBoundTo: %+v", e)
	}
	if e := v.EIPsBoundTo("i-other"); len(e) != 0 {
		t.Fatalf("EIPsBoundTo other: %+v", e)
	}
	v.UnbindEIPs("i-l")
	if e := v.EIPsBoundTo("i-l"); len(e) != 0 {
		t.Fatalf("after unbind: %+v", e)
	}
}
