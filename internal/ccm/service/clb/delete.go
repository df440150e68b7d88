package clb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// What a Service's deletion releases on CLB: its parts on borrowed load
// balancers, its own load balancers (deleted or kept), its ACLs.

// Delete implements service.Provider. On the load balancer of the id
// annotation only this Service's listeners, groups and backends go (all of
// it stays with preserve-lb-on-delete). The Service's own load balancer
// (req.Binding, proven by its tags) is deleted with delete protection
// turned off first, or with preserve-lb-on-delete kept, losing only its
// protections and our tags.
func (p *Provider) Delete(ctx context.Context, req *service.Request) (string, error) {
	s := req.Settings
	if s == nil {
		return "", errors.New("no settings to clean up with")
	}
	var done []string
	for _, id := range req.Binding.Release {
		found, err := p.releaseReused(ctx, req, id)
		if err != nil {
			return "", err
		}
		if found {
			done = append(done, fmt.Sprintf("Released reused load balancer %s: removed this Service's listeners, vServer groups and backends", id))
		}
	}
	var own []*slb.LoadBalancer
	for _, o := range req.Binding.OwnAll(req) {
		if lb := native(&service.Binding{LB: o}); lb != nil {
			own = append(own, lb)
		}
	}
	if len(own) == 0 {
		if err := p.cleanSourceRanges(ctx, req, &done); err != nil {
			return "", err
		}
		if len(done) == 0 {
			return "The Service has no load balancer of its own to delete", nil
		}
		return strings.Join(done, "; "), nil
	}
	// Every load balancer tagged for the Service goes (or is preserved):
	// a lost create answer and a crash can leave more than one.
	for _, lb := range own {
		what, err := p.deleteOwn(ctx, lb, req.Binding.Keep)
		if err != nil {
			return "", err
		}
		done = append(done, what)
	}
	if req.Binding.Keep {
		return strings.Join(done, "; "), nil
	}
	if err := p.cleanSourceRanges(ctx, req, &done); err != nil {
		return "", err
	}
	return strings.Join(done, "; "), nil
}

// deleteOwn deletes one load balancer of the Service, delete protection
// turned off first, or with preserve keeps it, losing only its protections
// and our tags. It says what it did.
func (p *Provider) deleteOwn(ctx context.Context, lb *slb.LoadBalancer, preserve bool) (string, error) {
	id := lb.LoadBalancerId
	if preserve {
		if lb.DeleteProtection == "on" {
			if err := p.api.setDeleteProtection(ctx, id, "off"); err != nil && !cloud.IsNotFound(err) {
				return "", fmt.Errorf("turn off delete protection of preserved %s: %w", id, err)
			}
		}
		if lb.ModificationProtectionStatus == "ConsoleProtection" {
			if err := p.api.setModificationProtection(ctx, id, "NonProtection"); err != nil && !cloud.IsNotFound(err) {
				return "", fmt.Errorf("turn off modification protection of preserved %s: %w", id, err)
			}
		}
		var keys []string
		for _, k := range []string{naming.TagKeyDefaultName, naming.TagKeyCluster} {
			if _, ok := tagValue(lb, k); ok {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 {
			if err := p.api.untag(ctx, id, keys); err != nil && !cloud.IsNotFound(err) {
				return "", fmt.Errorf("remove our tags from preserved %s: %w", id, err)
			}
		}
		return fmt.Sprintf("Kept load balancer %s (preserve-lb-on-delete); protections off, default tags removed", id), nil
	}
	if lb.DeleteProtection == "on" {
		if err := p.api.setDeleteProtection(ctx, id, "off"); err != nil && !cloud.IsNotFound(err) {
			return "", fmt.Errorf("turn off delete protection of %s: %w", id, err)
		}
	}
	if err := p.api.deleteLB(ctx, id); err != nil && !cloud.IsNotFound(err) {
		return "", fmt.Errorf("delete load balancer %s: %w", id, err)
	}
	return fmt.Sprintf("Deleted load balancer %s", id), nil
}

// releaseReused removes what this Service put on a reused load balancer:
// its listeners (only those proven ours), its groups, and its members of
// bound groups. found is false when the load balancer no longer exists.
// Whatever is already gone counts as released: a load balancer or group
// deleted in the console must never keep the Service's finalizer.
func (p *Provider) releaseReused(ctx context.Context, req *service.Request, id string) (found bool, err error) {
	ref := req.Identity.Ref
	listeners, err := p.api.listeners(ctx, id)
	if cloud.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("list listeners of reused %s: %w", id, err)
	}
	plan := PlanListeners(nil, listeners, ref, false, nil)
	if err := p.deleteListeners(ctx, id, plan.Delete); err != nil && !cloud.IsNotFound(err) {
		return true, err
	}
	groups, err := p.api.groups(ctx, id)
	if cloud.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("list vServer groups of reused %s: %w", id, err)
	}
	for _, g := range groups {
		if parsed, ours := ref.OwnsCLB(g.Name); ours {
			if err := p.api.deleteGroup(ctx, g.ID); err != nil && cloud.CodeOf(err) != "RspoolVipExist" {
				return true, fmt.Errorf("delete vServer group %s (%s): %w", g.ID, parsed.Port, err)
			}
		}
	}
	// The Service's members leave every group it was bound to, whatever
	// its annotations say now.
	if err := p.releaseMembers(ctx, req, groups, nil); err != nil && !cloud.IsNotFound(err) {
		return true, err
	}
	return true, nil
}
