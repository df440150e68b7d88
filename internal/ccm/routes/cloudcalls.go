package routes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// listPageSize is the MaxResult of DescribeRouteEntryList: documented as at
// most 100, yet the existing CCM asks for 500 and the cloud serves it, so a
// table at its default quota of 200 custom entries is one call.
const listPageSize = 500

// maxPages bounds pagination in case the cloud keeps returning a token.
const maxPages = 1000

// Error codes with a meaning of their own for route writes.
const (
	codeDuplicate = "InvalidCIDRBlock.Duplicate"
	codeNotFound  = "InvalidRouteEntry.NotFound"
)

// conflictPatience bounds how long a route write keeps waiting for the
// VPC's previous route task (TaskConflict) beyond the cloud client's own
// retries: the VPC runs one route task at a time and a task on the real
// cloud can take several seconds.
const conflictPatience = 30 * time.Second

// patiently runs a route write, retrying it while the VPC is busy with an
// earlier route task.
func patiently[T any](ctx context.Context, write func() (T, error)) (T, error) {
	deadline := time.Now().Add(conflictPatience)
	wait := 500 * time.Millisecond
	for {
		resp, err := write()
		if err == nil || cloud.ClassOf(err) != cloud.ClassConflict || time.Now().Add(wait).After(deadline) {
			return resp, err
		}
		klog.FromContext(ctx).V(2).Info("VPC busy with another route task; waiting", "code", cloud.CodeOf(err), "wait", wait)
		select {
		case <-ctx.Done():
			return resp, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// discoverTables returns the VPC's only route table.
func (c *Controller) discoverTables(ctx context.Context) ([]string, error) {
	var ids []string
	for page := 1; page <= maxPages; page++ {
		resp, err := cloud.Do(ctx, c.cloud, cloud.VPC, "DescribeRouteTableList", func(cl *cloud.Clients) (*vpc.DescribeRouteTableListResponse, error) {
			req := vpc.CreateDescribeRouteTableListRequest()
			req.RegionId = c.cloud.Region()
			req.VpcId = c.opts.VpcID
			req.PageSize = requests.NewInteger(50)
			req.PageNumber = requests.NewInteger(page)
			return cl.VPC.DescribeRouteTableList(req)
		})
		if err != nil {
			return nil, fmt.Errorf("list the route tables of VPC %s: %w", c.opts.VpcID, err)
		}
		items := resp.RouterTableList.RouterTableListType
		for _, t := range items {
			ids = append(ids, t.RouteTableId)
		}
		if len(items) == 0 || len(ids) >= resp.TotalCount {
			break
		}
	}
	switch len(ids) {
	case 1:
		return ids, nil
	case 0:
		return nil, fmt.Errorf("VPC %s has no route table", c.opts.VpcID)
	default:
		return nil, fmt.Errorf("VPC %s has %d route tables (%s): set routeTableIDs in the cloud config to the tables that must carry pod routes",
			c.opts.VpcID, len(ids), strings.Join(ids, ", "))
	}
}

// listEntries returns a table's custom entries, all pages.
func (c *Controller) listEntries(ctx context.Context, table string) ([]entry, error) {
	var out []entry
	token := ""
	for page := 0; page < maxPages; page++ {
		resp, err := cloud.Do(ctx, c.cloud, cloud.VPC, "DescribeRouteEntryList", func(cl *cloud.Clients) (*vpc.DescribeRouteEntryListResponse, error) {
			req := vpc.CreateDescribeRouteEntryListRequest()
			req.RegionId = c.cloud.Region()
			req.RouteTableId = table
			req.RouteEntryType = "Custom"
			req.MaxResult = requests.NewInteger(listPageSize)
			req.NextToken = token
			return cl.VPC.DescribeRouteEntryList(req)
		})
		if err != nil {
			return nil, fmt.Errorf("list the custom entries of route table %s: %w", table, err)
		}
		for _, r := range resp.RouteEntrys.RouteEntry {
			e := entry{
				ID: r.RouteEntryId, Table: table, Dst: r.DestinationCidrBlock, Description: r.Description,
				Status: r.Status, HopType: r.NextHopType, HopID: r.InstanceId,
			}
			switch hops := r.NextHops.NextHop; len(hops) {
			case 0:
			case 1:
				e.HopType, e.HopID = hops[0].NextHopType, hops[0].NextHopId
			default:
				// ECMP: never a route this controller made.
				e.HopType, e.HopID = "ECMP", ""
			}
			out = append(out, e)
		}
		if resp.NextToken == "" || resp.NextToken == token {
			return out, nil
		}
		token = resp.NextToken
	}
	return nil, fmt.Errorf("list the custom entries of route table %s: more than %d pages", table, maxPages)
}

// entryFailure is one entry of a batch the cloud refused.
type entryFailure struct {
	Code    string
	Message string
}

// createBatch adds entries in one call and returns the failures keyed by
// destination; a failed call fails every entry with the call's error.
func (c *Controller) createBatch(ctx context.Context, table string, batch []creation) (map[string]entryFailure, error) {
	resp, err := patiently(ctx, func() (*vpc.CreateRouteEntriesResponse, error) {
		return cloud.Do(ctx, c.cloud, cloud.VPC, "CreateRouteEntries", func(cl *cloud.Clients) (*vpc.CreateRouteEntriesResponse, error) {
			req := vpc.CreateCreateRouteEntriesRequest()
			req.RegionId = c.cloud.Region()
			items := make([]vpc.CreateRouteEntriesRouteEntries, 0, len(batch))
			for _, cr := range batch {
				d := description(c.opts.ClusterID, cr.Target.Node)
				it := vpc.CreateRouteEntriesRouteEntries{
					RouteTableId: table, DstCidrBlock: cr.Target.CIDR.String(),
					NextHop: cr.Target.Instance, NextHopType: nextHopInstance,
					// The API documents the misspelt key; send both spellings.
					Description: d, Describption: d,
				}
				if cr.Target.CIDR.Addr().Is6() {
					it.IpVersion = "IPv6"
				}
				items = append(items, it)
			}
			req.RouteEntries = &items
			return cl.VPC.CreateRouteEntries(req)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("create %d entries in route table %s: %w", len(batch), table, err)
	}
	failed := map[string]entryFailure{}
	for _, f := range resp.FailedRouteEntries {
		failed[normalize(f.DstCidrBlock)] = entryFailure{f.FailedCode, f.FailedMessage}
	}
	return failed, nil
}

// deleteBatch removes entries in one call and returns the failures keyed by
// entry id (destination when the cloud did not echo the id).
func (c *Controller) deleteBatch(ctx context.Context, table string, batch []deletion) (map[string]entryFailure, error) {
	resp, err := patiently(ctx, func() (*vpc.DeleteRouteEntriesResponse, error) {
		return cloud.Do(ctx, c.cloud, cloud.VPC, "DeleteRouteEntries", func(cl *cloud.Clients) (*vpc.DeleteRouteEntriesResponse, error) {
			req := vpc.CreateDeleteRouteEntriesRequest()
			req.RegionId = c.cloud.Region()
			items := make([]vpc.DeleteRouteEntriesRouteEntries, 0, len(batch))
			for _, d := range batch {
				items = append(items, vpc.DeleteRouteEntriesRouteEntries{
					RouteTableId: table, RouteEntryId: d.Entry.ID, DstCidrBlock: d.Entry.Dst, NextHop: d.Entry.HopID,
				})
			}
			req.RouteEntries = &items
			return cl.VPC.DeleteRouteEntries(req)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("delete %d entries from route table %s: %w", len(batch), table, err)
	}
	failed := map[string]entryFailure{}
	for _, f := range resp.FailedRouteEntries {
		key := f.RouteEntryId
		if key == "" {
			key = normalize(f.DstCidrBlock)
		}
		failed[key] = entryFailure{f.FailedCode, f.FailedMessage}
	}
	return failed, nil
}

// markEntry writes a marking's Description onto its entry. The API
// takes one entry a call; the VPC may answer TaskConflict while a route
// task of this pass is still running, which is waited out.
func (c *Controller) markEntry(ctx context.Context, m marking) error {
	_, err := patiently(ctx, func() (*vpc.ModifyRouteEntryResponse, error) {
		return cloud.Do(ctx, c.cloud, cloud.VPC, "ModifyRouteEntry", func(cl *cloud.Clients) (*vpc.ModifyRouteEntryResponse, error) {
			req := vpc.CreateModifyRouteEntryRequest()
			req.RegionId = c.cloud.Region()
			req.RouteEntryId = m.Entry.ID
			req.Description = m.Description
			return cl.VPC.ModifyRouteEntry(req)
		})
	})
	if err != nil {
		return fmt.Errorf("set Description %q on entry %s (%s) of route table %s: %w", m.Description, m.Entry.ID, m.Entry.Dst, m.Entry.Table, err)
	}
	return nil
}

// describeInstancesPage is the most ids DescribeInstances takes in one call.
const describeInstancesPage = 100

// existingInstances returns which of ids exist in the region, asking
// DescribeInstances for up to 100 ids a call.
func (c *Controller) existingInstances(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, batch := range chunk(ids, describeInstancesPage) {
		list, err := json.Marshal(batch)
		if err != nil {
			return nil, fmt.Errorf("encode instance ids: %w", err)
		}
		resp, err := cloud.Do(ctx, c.cloud, cloud.ECS, "DescribeInstances", func(cl *cloud.Clients) (*ecs.DescribeInstancesResponse, error) {
			req := ecs.CreateDescribeInstancesRequest()
			req.RegionId = c.cloud.Region()
			req.InstanceIds = string(list)
			req.PageSize = requests.NewInteger(describeInstancesPage)
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
