package nlb

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Releasing what a Service put on NLBs it does not own: its listeners,
// its server groups and its servers in bound groups.

// deleteOwnedGroups deletes every server group of the Service.
func (p *Provider) deleteOwnedGroups(ctx context.Context, req *service.Request) (int, error) {
	ref := req.Identity.Ref
	groups, err := p.api.groupsByTag(ctx, naming.TagKeyDefaultName, req.Identity.Name)
	if err != nil {
		return 0, fmt.Errorf("list server groups: %w", err)
	}
	var ours []CurrentGroup
	for _, g := range groups {
		if _, ok := ref.OwnsNLB(g.Name); ok {
			ours = append(ours, g)
		}
	}
	return len(ours), p.deleteGroups(ctx, ours)
}

// releaseListeners deletes this Service's listeners (proven by their
// description) from a reused load balancer; found is false when it no
// longer exists.
func (p *Provider) releaseListeners(ctx context.Context, req *service.Request, id string) (found bool, err error) {
	model := BuildModel(req, Addresses{})
	if err := p.settle(ctx, id); cloud.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	listeners, err := p.api.listeners(ctx, id)
	if cloud.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("list listeners of reused %s: %w", id, err)
	}
	_, pending, err := p.applyListeners(ctx, id, PlanListeners(nil, listeners, model.Ref, false, nil), nil)
	if cloud.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	// The groups deleted next must be free of the listeners.
	if err := p.wait(ctx, "listener deletion on "+id, pending); err != nil && !cloud.IsNotFound(err) {
		return true, err
	}
	return true, nil
}

// removeBoundMembers takes this Service's servers (those carrying its
// description) out of the vgroup-port groups, which are not ours to delete.
func (p *Provider) removeBoundMembers(ctx context.Context, req *service.Request) error {
	model := BuildModel(req, Addresses{})
	var queues [][]op
	for _, g := range model.Groups {
		if g.BoundID == "" {
			continue
		}
		cur, err := p.api.servers(ctx, g.BoundID)
		if cloud.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read servers of server group %s: %w", g.BoundID, err)
		}
		var mine []Server
		for _, srv := range cur {
			if srv.Description == g.Name {
				mine = append(mine, srv)
			}
		}
		if ops := p.memberOps(g.BoundID, ServerPlan{Remove: mine}); len(ops) > 0 {
			queues = append(queues, ops)
		}
	}
	return p.runQueues(ctx, "server removal", queues)
}

// boundIDs are the ids of the groups the model binds with vgroup-port.
func boundIDs(m *Model) map[string]bool {
	out := map[string]bool{}
	for _, g := range m.Groups {
		if g.BoundID != "" {
			out[g.BoundID] = true
		}
	}
	return out
}

// releaseMembers removes the Service's servers (those whose description
// names it) from the user-made groups the listeners of load balancer lbID
// forward to, but those in keep: the groups it is no longer bound to (see
// service.ReleaseMembers). The groups in keep are not even listed; the
// removals are queued while the groups are read, then run together, one
// job wait per round.
func (p *Provider) releaseMembers(ctx context.Context, req *service.Request, lbID string, keep map[string]bool) error {
	listeners, err := p.api.listeners(ctx, lbID)
	if err != nil {
		return fmt.Errorf("list listeners of %s: %w", lbID, err)
	}
	var ids []string
	for _, l := range listeners {
		if l.ServerGroupID != "" && !keep[l.ServerGroupID] && !slices.Contains(ids, l.ServerGroupID) {
			ids = append(ids, l.ServerGroupID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	groups, err := p.api.groupsByID(ctx, ids)
	if err != nil {
		return fmt.Errorf("list server groups %s: %w", strings.Join(ids, ", "), err)
	}
	var queues [][]op
	err = service.ReleaseMembers(ctx, req.Identity, groups, keep, service.MemberRelease[CurrentGroup, Server]{
		Kind: "server group", Noun: "servers", Parse: naming.ParseNLB,
		Group:   func(g CurrentGroup) (string, string) { return g.ID, g.Name },
		Members: p.api.servers,
		Remove: func(ctx context.Context, id string, mine []Server) error {
			klog.FromContext(ctx).Info("Removing the Service's servers from a server group it is no longer bound to", "serverGroup", id, "servers", len(mine))
			if ops := p.memberOps(id, ServerPlan{Remove: mine}); len(ops) > 0 {
				queues = append(queues, ops)
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	return p.runQueues(ctx, "server removal", queues)
}

// deleteOwnLB deletes one of the Service's own load balancers, its
// protections turned off first; its listeners go with it.
func (p *Provider) deleteOwnLB(ctx context.Context, lb *lbInfo) error {
	if err := p.settle(ctx, lb.ID); err != nil && !cloud.IsNotFound(err) {
		return err
	}
	if lb.Status == statusDeleting {
		// An earlier pass (a replaced leader) deleted it and did not see
		// its job end: another DeleteLoadBalancer would meet the job's
		// lock. Its server groups stay in use until it is gone.
		return p.waitDeleted(ctx, lb.ID)
	}
	if lb.DeletionProtection {
		if err := p.api.protection(ctx, lb.ID, false); err != nil && !cloud.IsNotFound(err) {
			return fmt.Errorf("turn off the protections of %s: %w", lb.ID, err)
		}
	}
	job, err := p.api.deleteLB(ctx, lb.ID)
	if cloud.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete load balancer %s: %w", lb.ID, err)
	}
	return p.wait(ctx, "load balancer deletion", job)
}
