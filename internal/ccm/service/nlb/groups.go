package nlb

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// The Service's NLB server groups and their servers: plan, create,
// update and delete.

// unrelated reports whether one of our groups is not used by lbID.
func (g *GroupPlan) unrelated(m *Model, lbID string) bool {
	for _, d := range m.Groups {
		if d.BoundID != "" {
			continue
		}
		if c, ok := g.current[g.IDs[d.ServicePort]]; !ok || !slices.Contains(c.RelatedLBs, lbID) {
			return true
		}
	}
	return false
}

// ensureGroups brings the server groups and their servers to the model:
// on a shared load balancer only the ports that get a listener get a
// group, so its listeners are read here first and returned. The groups the
// plan deletes go after the listeners that use them.
func (p *Provider) ensureGroups(ctx context.Context, req *service.Request, lb *lbInfo, created bool, res *service.Result) (*Model, GroupPlan, []CurrentListener, error) {
	addr, err := p.resolve(ctx, req)
	if err != nil {
		return nil, GroupPlan{}, nil, err
	}
	model := BuildModel(req, addr)
	gplan, err := p.planGroups(ctx, req, model, lb.ID)
	if err != nil {
		return nil, GroupPlan{}, nil, err
	}
	var listeners []CurrentListener
	if req.Binding.Shared() {
		// Which ports get a listener decides which get a group (shared.go).
		if listeners, err = p.sharedListeners(ctx, req, lb.ID); err != nil {
			return nil, GroupPlan{}, nil, err
		}
		var w *service.Warning
		if gplan, w = limitShared(req, model, gplan, lb.ID, listeners, false); w != nil {
			res.Warnings = append(res.Warnings, *w)
		}
	}
	if err := p.syncGroups(ctx, req, p.vpcOf(lb), model, gplan); err != nil {
		return nil, GroupPlan{}, nil, err
	}
	if req.Binding.Reused && !created {
		// A binding that went (vgroup-port removed, or moved to another
		// group) takes the Service's servers with it at once: found in
		// the cloud by their description, not remembered.
		if err := p.releaseMembers(ctx, req, lb.ID, boundIDs(model)); err != nil {
			return nil, GroupPlan{}, nil, err
		}
	}
	return model, gplan, listeners, nil
}

// planGroups reads our groups (by the Service's default-name tag) and the
// vgroup-port ones (by id) and plans them.
//
// A vgroup-port group must be used by a listener of lbID, the load balancer
// the Service is bound to: server groups are regional, so without this
// any Service could name another team's group and add its Nodes, on its
// own nodePort, behind that team's load balancer. Any other group counts
// as missing, and the sync fails naming it before any member is written.
func (p *Provider) planGroups(ctx context.Context, req *service.Request, m *Model, lbID string) (GroupPlan, error) {
	owned, err := p.api.groupsByTag(ctx, naming.TagKeyDefaultName, req.Identity.Name)
	if err != nil {
		return GroupPlan{}, fmt.Errorf("list server groups: %w", err)
	}
	var boundIDs []string
	for _, g := range m.Groups {
		if g.BoundID != "" && !slices.Contains(boundIDs, g.BoundID) {
			boundIDs = append(boundIDs, g.BoundID)
		}
	}
	bound := map[string]CurrentGroup{}
	if len(boundIDs) > 0 {
		gs, err := p.api.groupsByID(ctx, boundIDs)
		if err != nil {
			return GroupPlan{}, fmt.Errorf("list server groups %s: %w", strings.Join(boundIDs, ", "), err)
		}
		for _, g := range gs {
			if lbID != "" && slices.Contains(g.RelatedLBs, lbID) {
				bound[g.ID] = g
			}
		}
	}
	plan := PlanGroups(m.Groups, owned, bound, m.Ref)
	if len(plan.MissingBound) > 0 {
		return plan, fmt.Errorf("%s names server groups %s that do not exist or are not used by a listener of load balancer %s, the one this Service is bound to",
			req.Settings.Key("vgroup-port"), strings.Join(plan.MissingBound, ", "), lbID)
	}
	plan.current = map[string]CurrentGroup{}
	for _, g := range owned {
		plan.current[g.ID] = g
	}
	for id, g := range bound {
		plan.current[id] = g
	}
	return plan, nil
}

// syncGroups creates missing groups, then brings the tunables and members
// of every group to the model. Groups are independent (each is locked by
// its own jobs), so their calls run in rounds with one wait per round.
func (p *Provider) syncGroups(ctx context.Context, req *service.Request, vpcID string, m *Model, plan GroupPlan) error {
	s := req.Settings
	fresh := map[int32]bool{}
	if len(plan.Create) > 0 {
		tags := req.Identity.Tags
		var jobs []string
		for _, g := range plan.Create {
			id, job, err := p.api.createGroup(ctx, vpcID, g, tags)
			if err != nil {
				return fmt.Errorf("create server group %s: %w", g.Name, err)
			}
			plan.IDs[g.ServicePort], fresh[g.ServicePort] = id, true
			jobs = append(jobs, job)
		}
		if err := p.wait(ctx, "server group creation", jobs...); err != nil {
			return err
		}
	}
	updates := map[string]map[string]string{}
	for _, u := range plan.Update {
		updates[u.ID] = u.Params
	}
	var queues [][]op
	for _, g := range m.Groups {
		id := plan.IDs[g.ServicePort]
		var q []op
		if params := updates[id]; len(params) > 0 {
			q = append(q, func(ctx context.Context) (string, error) {
				job, err := p.api.updateGroup(ctx, id, params)
				if err != nil {
					return "", fmt.Errorf("update server group %s: %w", id, err)
				}
				return job, nil
			})
		}
		var cur []Server
		if !fresh[g.ServicePort] {
			var err error
			if cur, err = p.api.servers(ctx, id); err != nil {
				return fmt.Errorf("read servers of server group %s: %w", id, err)
			}
		}
		sp := PlanServers(g.Servers, cur, g.BoundID != "", g.Name, s.Backend.IgnoreWeightUpdate)
		if !sp.Empty() {
			klog.FromContext(ctx).V(2).Info("Updating servers", "serverGroup", id, "add", len(sp.Add), "remove", len(sp.Remove), "reweigh", len(sp.Update))
		}
		q = append(q, p.memberOps(id, sp)...)
		if len(q) > 0 {
			queues = append(queues, q)
		}
	}
	return p.runQueues(ctx, "server group changes", queues)
}

// memberOps turns a server plan into calls of at most BatchSize servers:
// removals, weight updates, additions.
func (p *Provider) memberOps(id string, sp ServerPlan) []op {
	var ops []op
	for _, part := range cloud.Chunks(sp.Remove, p.opts.BatchSize) {
		ops = append(ops, func(ctx context.Context) (string, error) {
			job, err := p.api.removeServers(ctx, id, part)
			if err != nil {
				return "", fmt.Errorf("remove servers from server group %s: %w", id, err)
			}
			return job, nil
		})
	}
	for _, part := range cloud.Chunks(sp.Update, p.opts.BatchSize) {
		ops = append(ops, func(ctx context.Context) (string, error) {
			job, err := p.api.updateServers(ctx, id, part)
			if err != nil {
				return "", fmt.Errorf("update servers of server group %s: %w", id, err)
			}
			return job, nil
		})
	}
	for _, part := range cloud.Chunks(sp.Add, p.opts.BatchSize) {
		ops = append(ops, func(ctx context.Context) (string, error) {
			job, err := p.api.addServers(ctx, id, part)
			if err != nil {
				return "", fmt.Errorf("add servers to server group %s: %w", id, err)
			}
			return job, nil
		})
	}
	return ops
}

// deleteGroups deletes groups no listener of ours uses any more; one still
// used elsewhere (a listener we do not manage) is kept.
func (p *Provider) deleteGroups(ctx context.Context, groups []CurrentGroup) error {
	var jobs []string
	for _, g := range groups {
		job, err := p.api.deleteGroup(ctx, g.ID)
		if cloud.CodeOf(err) == "ResourceInUse.ServerGroup" {
			klog.FromContext(ctx).Info("Keeping a server group still in use", "serverGroup", g.ID, "name", g.Name)
			continue
		}
		if cloud.IsNotFound(err) {
			continue // deleted already (a lost answer, or the console)
		}
		if err != nil {
			return fmt.Errorf("delete server group %s (%s): %w", g.ID, g.Name, err)
		}
		jobs = append(jobs, job)
	}
	return p.wait(ctx, "server group deletion", jobs...)
}
