package cloud

import (
	"context"
	"encoding/json"
	"fmt"

	sdkrequests "github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
)

// RouteEntry is a custom entry of a VPC route table as the route
// controller reads it. HopType is "ECMP" (and HopID empty) for an entry
// with several next hops.
type RouteEntry struct {
	ID          string
	Table       string
	Dst         string
	HopType     string
	HopID       string
	Description string
	Status      string
}

// NewRouteEntry is an entry to create: Dst via the instance NextHop.
type NewRouteEntry struct {
	Table       string
	Dst         string
	NextHop     string
	NextHopType string
	Description string
	// IPv6 marks an IPv6 destination (IpVersion IPv6).
	IPv6 bool
}

// EntryFailure is one entry of a batch the cloud refused.
type EntryFailure struct {
	Code    string
	Message string
}

// VPCRoutes are the VPC and ECS calls the route controller makes, over a
// Client: pagination and the SDK's request shapes stay here.
type VPCRoutes struct {
	// Client carries every call.
	Client *Client
}

// routeEntryPageSize is the MaxResult of DescribeRouteEntryList: documented
// as at most 100, yet the existing CCM asks for 500 and the cloud serves
// it, so a table at its default quota of 200 custom entries is one call.
const routeEntryPageSize = 500

// routeTablePageSize is the PageSize of DescribeRouteTableList.
const routeTablePageSize = 50

// maxRoutePages bounds pagination in case the cloud keeps returning a token.
const maxRoutePages = 1000

// describeInstancesPage is the most ids DescribeInstances takes in one call.
const describeInstancesPage = 100

// Region returns the region every call goes to.
func (r VPCRoutes) Region() string { return r.Client.Region() }

// RouteTables returns the ids of the route tables of a VPC, all pages.
func (r VPCRoutes) RouteTables(ctx context.Context, vpcID string) ([]string, error) {
	var ids []string
	for page := 1; page <= maxRoutePages; page++ {
		resp, err := Do(ctx, r.Client, VPC, "DescribeRouteTableList", func(cl *Clients) (*vpc.DescribeRouteTableListResponse, error) {
			req := vpc.CreateDescribeRouteTableListRequest()
			req.RegionId = r.Client.Region()
			req.VpcId = vpcID
			req.PageSize = sdkrequests.NewInteger(routeTablePageSize)
			req.PageNumber = sdkrequests.NewInteger(page)
			return cl.VPC.DescribeRouteTableList(req)
		})
		if err != nil {
			return nil, fmt.Errorf("list the route tables of VPC %s: %w", vpcID, err)
		}
		items := resp.RouterTableList.RouterTableListType
		for _, t := range items {
			ids = append(ids, t.RouteTableId)
		}
		if len(items) == 0 || len(ids) >= resp.TotalCount {
			break
		}
	}
	return ids, nil
}

// RouteEntries returns a table's custom entries, all pages.
func (r VPCRoutes) RouteEntries(ctx context.Context, table string) ([]RouteEntry, error) {
	var out []RouteEntry
	token := ""
	for page := 0; page < maxRoutePages; page++ {
		resp, err := Do(ctx, r.Client, VPC, "DescribeRouteEntryList", func(cl *Clients) (*vpc.DescribeRouteEntryListResponse, error) {
			req := vpc.CreateDescribeRouteEntryListRequest()
			req.RegionId = r.Client.Region()
			req.RouteTableId = table
			req.RouteEntryType = "Custom"
			req.MaxResult = sdkrequests.NewInteger(routeEntryPageSize)
			req.NextToken = token
			return cl.VPC.DescribeRouteEntryList(req)
		})
		if err != nil {
			return nil, fmt.Errorf("list the custom entries of route table %s: %w", table, err)
		}
		for _, e := range resp.RouteEntrys.RouteEntry {
			out = append(out, routeEntry(table, e))
		}
		if resp.NextToken == "" || resp.NextToken == token {
			return out, nil
		}
		token = resp.NextToken
	}
	return nil, fmt.Errorf("list the custom entries of route table %s: more than %d pages", table, maxRoutePages)
}

// routeEntry converts a listed entry; one next hop in NextHops wins over
// the legacy fields, several make it ECMP.
func routeEntry(table string, r vpc.RouteEntry) RouteEntry {
	e := RouteEntry{
		ID: r.RouteEntryId, Table: table, Dst: r.DestinationCidrBlock, Description: r.Description,
		Status: r.Status, HopType: r.NextHopType, HopID: r.InstanceId,
	}
	switch hops := r.NextHops.NextHop; len(hops) {
	case 0:
	case 1:
		e.HopType, e.HopID = hops[0].NextHopType, hops[0].NextHopId
	default:
		// ECMP: never a route the CCM made.
		e.HopType, e.HopID = "ECMP", ""
	}
	return e
}

// CreateRouteEntries adds entries to a table in one call and returns the
// refused ones keyed by destination as the cloud echoes it.
func (r VPCRoutes) CreateRouteEntries(ctx context.Context, table string, batch []NewRouteEntry) (map[string]EntryFailure, error) {
	resp, err := Do(ctx, r.Client, VPC, "CreateRouteEntries", func(cl *Clients) (*vpc.CreateRouteEntriesResponse, error) {
		req := vpc.CreateCreateRouteEntriesRequest()
		req.RegionId = r.Client.Region()
		items := make([]vpc.CreateRouteEntriesRouteEntries, 0, len(batch))
		for _, e := range batch {
			it := vpc.CreateRouteEntriesRouteEntries{
				RouteTableId: table, DstCidrBlock: e.Dst, NextHop: e.NextHop, NextHopType: e.NextHopType,
				// The API documents the misspelt key; send both spellings.
				Description: e.Description, Describption: e.Description,
			}
			if e.IPv6 {
				it.IpVersion = "IPv6"
			}
			items = append(items, it)
		}
		req.RouteEntries = &items
		return cl.VPC.CreateRouteEntries(req)
	})
	if err != nil {
		return nil, fmt.Errorf("create %d entries in route table %s: %w", len(batch), table, err)
	}
	failed := map[string]EntryFailure{}
	for _, f := range resp.FailedRouteEntries {
		failed[f.DstCidrBlock] = EntryFailure{f.FailedCode, f.FailedMessage}
	}
	return failed, nil
}

// DeleteRouteEntries removes entries of a table in one call and returns
// the refused ones keyed by entry id, or by destination as the cloud
// echoes it when the answer has no id.
func (r VPCRoutes) DeleteRouteEntries(ctx context.Context, table string, batch []RouteEntry) (map[string]EntryFailure, error) {
	resp, err := Do(ctx, r.Client, VPC, "DeleteRouteEntries", func(cl *Clients) (*vpc.DeleteRouteEntriesResponse, error) {
		req := vpc.CreateDeleteRouteEntriesRequest()
		req.RegionId = r.Client.Region()
		items := make([]vpc.DeleteRouteEntriesRouteEntries, 0, len(batch))
		for _, e := range batch {
			items = append(items, vpc.DeleteRouteEntriesRouteEntries{
				RouteTableId: table, RouteEntryId: e.ID, DstCidrBlock: e.Dst, NextHop: e.HopID,
			})
		}
		req.RouteEntries = &items
		return cl.VPC.DeleteRouteEntries(req)
	})
	if err != nil {
		return nil, fmt.Errorf("delete %d entries from route table %s: %w", len(batch), table, err)
	}
	failed := map[string]EntryFailure{}
	for _, f := range resp.FailedRouteEntries {
		key := f.RouteEntryId
		if key == "" {
			key = f.DstCidrBlock
		}
		failed[key] = EntryFailure{f.FailedCode, f.FailedMessage}
	}
	return failed, nil
}

// SetRouteEntryDescription writes an entry's Description; the API takes
// one entry a call.
func (r VPCRoutes) SetRouteEntryDescription(ctx context.Context, entryID, description string) error {
	_, err := Do(ctx, r.Client, VPC, "ModifyRouteEntry", func(cl *Clients) (*vpc.ModifyRouteEntryResponse, error) {
		req := vpc.CreateModifyRouteEntryRequest()
		req.RegionId = r.Client.Region()
		req.RouteEntryId = entryID
		req.Description = description
		return cl.VPC.ModifyRouteEntry(req)
	})
	return err
}

// ExistingInstances returns which of ids exist in the region, asking
// DescribeInstances for up to 100 ids a call.
func (r VPCRoutes) ExistingInstances(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, batch := range Chunks(ids, describeInstancesPage) {
		list, err := json.Marshal(batch)
		if err != nil {
			return nil, fmt.Errorf("encode instance ids: %w", err)
		}
		resp, err := Do(ctx, r.Client, ECS, "DescribeInstances", func(cl *Clients) (*ecs.DescribeInstancesResponse, error) {
			req := ecs.CreateDescribeInstancesRequest()
			req.RegionId = r.Client.Region()
			req.InstanceIds = string(list)
			req.PageSize = sdkrequests.NewInteger(describeInstancesPage)
			return cl.ECS.DescribeInstances(req)
		})
		if err != nil {
			return nil, fmt.Errorf("describe the %d next-hop instances %v: %w", len(batch), batch, err)
		}
		for _, in := range resp.Instances.Instance {
			out[in.InstanceId] = true
		}
	}
	return out, nil
}

// VPCHasIPv6 reports whether the VPC has an IPv6 CIDR.
func (r VPCRoutes) VPCHasIPv6(ctx context.Context, vpcID string) (bool, error) {
	resp, err := Do(ctx, r.Client, VPC, "DescribeVpcs", func(cl *Clients) (*vpc.DescribeVpcsResponse, error) {
		req := vpc.CreateDescribeVpcsRequest()
		req.RegionId = r.Client.Region()
		req.VpcId = vpcID
		return cl.VPC.DescribeVpcs(req)
	})
	if err != nil {
		return false, fmt.Errorf("describe VPC %s for its IPv6 CIDR: %w", vpcID, err)
	}
	for _, v := range resp.Vpcs.Vpc {
		if v.VpcId == vpcID {
			return v.Ipv6CidrBlock != "" || len(v.Ipv6CidrBlocks.Ipv6CidrBlock) > 0, nil
		}
	}
	return false, nil
}
