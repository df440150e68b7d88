package routes

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Cloud is what the route controller asks of the cloud; cloud.VPCRoutes
// serves it over the cloud client. Errors carry the call's context.
type Cloud interface {
	// Region is the region of the cluster's instances.
	Region() string
	// RouteTables lists the ids of a VPC's route tables.
	RouteTables(ctx context.Context, vpcID string) ([]string, error)
	// RouteEntries lists a table's custom entries.
	RouteEntries(ctx context.Context, table string) ([]cloud.RouteEntry, error)
	// CreateRouteEntries adds entries in one call; the refused ones come
	// back keyed by destination.
	CreateRouteEntries(ctx context.Context, table string, batch []cloud.NewRouteEntry) (map[string]cloud.EntryFailure, error)
	// DeleteRouteEntries removes entries in one call; the refused ones come
	// back keyed by entry id, or destination when the cloud gave no id.
	DeleteRouteEntries(ctx context.Context, table string, batch []cloud.RouteEntry) (map[string]cloud.EntryFailure, error)
	// SetRouteEntryDescription writes one entry's Description.
	SetRouteEntryDescription(ctx context.Context, entryID, description string) error
	// ExistingInstances says which of the instance ids exist.
	ExistingInstances(ctx context.Context, ids []string) (map[string]bool, error)
	// VPCHasIPv6 says whether the VPC has an IPv6 CIDR.
	VPCHasIPv6(ctx context.Context, vpcID string) (bool, error)
}

var _ Cloud = cloud.VPCRoutes{}

// entry is a custom route entry as the cloud lists it.
type entry = cloud.RouteEntry

// entryFailure is one entry of a batch the cloud refused.
type entryFailure = cloud.EntryFailure

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
	ids, err := c.cloud.RouteTables(ctx, c.opts.VpcID)
	if err != nil {
		return nil, err
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
	return c.cloud.RouteEntries(ctx, table)
}

// createBatch adds entries in one call and returns the failures keyed by
// destination; a failed call fails every entry with the call's error.
func (c *Controller) createBatch(ctx context.Context, table string, batch []creation) (map[string]entryFailure, error) {
	items := make([]cloud.NewRouteEntry, 0, len(batch))
	for _, cr := range batch {
		items = append(items, cloud.NewRouteEntry{
			Table: table, Dst: cr.Target.CIDR.String(), NextHop: cr.Target.Instance, NextHopType: nextHopInstance,
			Description: description(c.opts.ClusterID, cr.Target.Node), IPv6: cr.Target.CIDR.Addr().Is6(),
		})
	}
	failed, err := patiently(ctx, func() (map[string]entryFailure, error) {
		return c.cloud.CreateRouteEntries(ctx, table, items)
	})
	if err != nil {
		return nil, err
	}
	byDst := make(map[string]entryFailure, len(failed))
	for dst, f := range failed {
		byDst[normalize(dst)] = f
	}
	return byDst, nil
}

// deleteBatch removes entries in one call and returns the failures keyed by
// entry id (destination when the cloud did not echo the id).
func (c *Controller) deleteBatch(ctx context.Context, table string, batch []deletion) (map[string]entryFailure, error) {
	items := make([]entry, 0, len(batch))
	for _, d := range batch {
		items = append(items, d.Entry)
	}
	failed, err := patiently(ctx, func() (map[string]entryFailure, error) {
		return c.cloud.DeleteRouteEntries(ctx, table, items)
	})
	if err != nil {
		return nil, err
	}
	// normalize leaves an entry id as it is.
	keyed := make(map[string]entryFailure, len(failed))
	for key, f := range failed {
		keyed[normalize(key)] = f
	}
	return keyed, nil
}

// markEntry writes a marking's Description onto its entry. The API
// takes one entry a call; the VPC may answer TaskConflict while a route
// task of this pass is still running, which is waited out.
func (c *Controller) markEntry(ctx context.Context, m marking) error {
	_, err := patiently(ctx, func() (struct{}, error) {
		return struct{}{}, c.cloud.SetRouteEntryDescription(ctx, m.Entry.ID, m.Description)
	})
	if err != nil {
		return fmt.Errorf("set Description %q on entry %s (%s) of route table %s: %w", m.Description, m.Entry.ID, m.Entry.Dst, m.Entry.Table, err)
	}
	return nil
}
