package clb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// DefaultBatchSize is the documented number of backend servers one
// vServer group call accepts.
const DefaultBatchSize = 20

// modificationReason is recorded with the ConsoleProtection we set.
const modificationReason = "managed.by.ack"

// Event reasons specific to CLB.
const (
	// EventImmutable reports an annotation that asks for an attribute the
	// existing load balancer cannot change.
	EventImmutable = "ImmutableAttributeChanged"
	// EventListenerConflict reports a port held by a listener we must not touch.
	EventListenerConflict = "ListenerPortConflict"
)

// Options configure the CLB provider.
type Options struct {
	// Cloud is the client every call goes through.
	Cloud *cloud.Client
	// VpcID is the cluster's VPC (intranet load balancers, ENI lookup).
	VpcID string
	// VSwitchIDs are cloud-config's zone → vSwitch, used for intranet load
	// balancers without a vswitch-id annotation.
	VSwitchIDs map[string]string
	// DisablePublic refuses internet-facing load balancers (cloud-config
	// disablePublicSLB).
	DisablePublic bool
	// BatchSize bounds backend servers per call (default 20).
	BatchSize int
}

// Provider implements service.Provider for Classic Load Balancers.
type Provider struct {
	// Finder reads load balancers for the ownership rules.
	service.Finder
	opts Options
	api  api
	// owedACLs are the Services whose detached source-range list still
	// waits for its delete.
	owedACLs service.Owed
}

var (
	_ service.Provider  = (*Provider)(nil)
	_ service.AllTagged = (*Provider)(nil)
)

// New returns the CLB provider.
func New(opts Options) (*Provider, error) {
	if opts.Cloud == nil {
		return nil, errors.New("clb: a cloud client is required")
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	a := api{c: opts.Cloud}
	return &Provider{Finder: service.Lookups(a.lbByID, a.lbByTag, facts), opts: opts, api: a}, nil
}

// Descriptor implements service.Provider. A reused CLB must be in the
// cluster's VPC, where its backends are.
func (p *Provider) Descriptor() service.Descriptor {
	return service.Descriptor{Kind: "CLB", Owner: annotations.OwnerCLB, Finalizer: naming.FinalizerCLB,
		Reuse: service.ReuseRules{VpcID: p.opts.VpcID}}
}

// facts describes a CLB for the ownership rules.
func facts(lb *slb.LoadBalancer) *service.LoadBalancer {
	tags := make(map[string]string, len(lb.Tags.Tag))
	for _, t := range lb.Tags.Tag {
		tags[t.TagKey] = t.TagValue
	}
	return &service.LoadBalancer{
		ID: lb.LoadBalancerId, Tags: tags, VpcID: lb.VpcId, AddressType: strings.ToLower(lb.AddressType),
		ResourceGroupID: lb.ResourceGroupId, Addresses: []string{lb.Address}, Native: lb,
		Created: createdAt(lb),
	}
}

// createdAt is when lb was created; zero when the answer does not say.
func createdAt(lb *slb.LoadBalancer) time.Time {
	if lb.CreateTimeStamp > 0 {
		return time.UnixMilli(lb.CreateTimeStamp)
	}
	return time.Time{}
}

// native is the CLB description behind a bound load balancer.
func native(b *service.Binding) *slb.LoadBalancer {
	if b == nil || b.LB == nil {
		return nil
	}
	lb, _ := b.LB.Native.(*slb.LoadBalancer)
	return lb
}

// either is the answer's value, else what the request asked for.
func either(answer, asked string) string {
	if answer != "" {
		return answer
	}
	return asked
}

// Ensure implements service.Provider: load balancer, then vServer groups
// and their backends, then listeners; obsolete listeners and groups are
// removed in the reverse order.
func (p *Provider) Ensure(ctx context.Context, req *service.Request) (*service.Result, error) {
	lb := native(req.Binding)
	if lb != nil {
		return p.ensure(ctx, req, lb, false)
	}
	if req.Binding != nil && req.Binding.LB != nil {
		return nil, fmt.Errorf("clb: binding of %s carries no CLB description", req.Binding.ID())
	}
	return p.create(ctx, req)
}

// ensure brings the load balancer lb and what hangs off it to the model;
// created says lb was made in this pass, so it has no groups or listeners
// to read.
func (p *Provider) ensure(ctx context.Context, req *service.Request, lb *slb.LoadBalancer, created bool) (*service.Result, error) {
	s := req.Settings
	log := klog.FromContext(ctx)
	res := &service.Result{}
	var err error
	if created {
		log.Info("Created load balancer", "loadBalancer", lb.LoadBalancerId, "address", lb.Address)
	} else {
		for _, ch := range annotations.ImmutableChanges(attributes(lb), s) {
			res.Warnings = append(res.Warnings, service.Warning{Reason: EventImmutable, Message: ch.String()})
		}
		warnings, err := p.updateAttributes(ctx, req, lb)
		res.Warnings = append(res.Warnings, warnings...)
		if err != nil {
			return nil, err
		}
	}
	res.LoadBalancerID = lb.LoadBalancerId

	model := BuildModel(req)

	var groups []CurrentGroup
	var listeners []CurrentListener
	if !created {
		if groups, err = p.api.groups(ctx, lb.LoadBalancerId); err != nil {
			return nil, fmt.Errorf("list vServer groups of %s: %w", lb.LoadBalancerId, err)
		}
	}
	if req.Binding.Shared() {
		// Which ports get a listener decides which get a group: the
		// listeners are read first (they are read below anyway).
		if s.ManagesListeners() {
			if listeners, err = p.api.listeners(ctx, lb.LoadBalancerId); err != nil {
				return nil, fmt.Errorf("list listeners of %s: %w", lb.LoadBalancerId, err)
			}
		}
		if w := limitShared(req.Binding, model, groups, listeners, s.ManagesListeners(), s.LoadBalancer.ForceOverrideListeners, false); w != nil {
			res.Warnings = append(res.Warnings, *w)
		}
	}
	gplan := PlanGroups(model.Groups, groups, model.Ref)
	if len(gplan.MissingBound) > 0 {
		return nil, fmt.Errorf("%s names vServer groups %s that do not exist on load balancer %s", s.Key("vgroup-port"), strings.Join(gplan.MissingBound, ", "), lb.LoadBalancerId)
	}
	if err := p.syncGroups(ctx, lb.LoadBalancerId, model, gplan, s); err != nil {
		return nil, err
	}
	if req.Binding.Reused {
		// A binding that went (vgroup-port removed, or moved to another
		// group) takes the Service's members with it at once: found in
		// the cloud by their description, not remembered.
		if err := p.releaseMembers(ctx, req, groups, boundGroups(model)); err != nil {
			return nil, err
		}
	}

	warnings, err := p.ensureListeners(ctx, req, lb, model, gplan, listeners, created)
	res.Warnings = append(res.Warnings, warnings...)
	if err != nil {
		return nil, err
	}
	if err := p.deleteGroups(ctx, gplan.Delete); err != nil {
		return nil, err
	}
	in, warnings := p.status(ctx, lb, s)
	res.Ingress = in
	res.Warnings = append(res.Warnings, warnings...)
	return res, nil
}

// ensureListeners brings the listeners (with their source-range ACLs and
// domain extensions) to the model, when the Service manages them;
// listeners holds the current ones when they were read already.
func (p *Provider) ensureListeners(ctx context.Context, req *service.Request, lb *slb.LoadBalancer, model *Model, gplan GroupPlan, listeners []CurrentListener, created bool) ([]service.Warning, error) {
	s := req.Settings
	var out []service.Warning
	var err error
	if s.ManagesListeners() {
		if !created && !req.Binding.Shared() {
			if listeners, err = p.api.listeners(ctx, lb.LoadBalancerId); err != nil {
				return out, fmt.Errorf("list listeners of %s: %w", lb.LoadBalancerId, err)
			}
		}
		aclCleanup, warnings, err := p.syncSourceRanges(ctx, req, lb, model, listeners)
		out = append(out, warnings...)
		if err != nil {
			return out, err
		}
		lplan := PlanListeners(model.Listeners, listeners, model.Ref, s.LoadBalancer.ForceOverrideListeners, gplan.IDs)
		for _, c := range lplan.Conflicts {
			out = append(out, service.Warning{Reason: EventListenerConflict, Message: c})
		}
		if err := p.applyListeners(ctx, lb.LoadBalancerId, lplan, gplan.IDs); err != nil {
			return out, err
		}
		ports := httpsPorts(model.Listeners, listeners, model.Ref, s.LoadBalancer.ForceOverrideListeners)
		if err := p.syncDomains(ctx, lb.LoadBalancerId, s.Listener.DomainExtensions, ports); err != nil {
			return out, err
		}
		if err := aclCleanup(ctx); err != nil {
			return out, err
		}
	} else if !service.ParseSourceRanges(req.Service).Empty() {
		out = append(out, service.Warning{Reason: service.EventSourceRangesIgnored, Message: fmt.Sprintf(
			"loadBalancerSourceRanges are not applied: the listeners of reused load balancer %s are not managed without %s", lb.LoadBalancerId, s.Key("force-override-listeners"))})
	}
	return out, nil
}

// deleteGroups deletes the vServer groups the model no longer has; one
// still used by a listener we do not manage is left.
func (p *Provider) deleteGroups(ctx context.Context, groups []CurrentGroup) error {
	for _, g := range groups {
		if err := p.api.deleteGroup(ctx, g.ID); err != nil {
			if cloud.CodeOf(err) == "RspoolVipExist" {
				// Still used by a listener we do not manage: leave it.
				klog.FromContext(ctx).Info("Keeping a vServer group still in use", "group", g.ID, "name", g.Name)
				continue
			}
			return fmt.Errorf("delete vServer group %s (%s): %w", g.ID, g.Name, err)
		}
	}
	return nil
}

// SyncBackends implements service.Provider: read the groups (one call,
// with their listeners), then each group's members; any sign that the load
// balancer or a listener disappeared asks for a full sync.
func (p *Provider) SyncBackends(ctx context.Context, req *service.Request) (*service.Result, error) {
	s := req.Settings
	lbID := req.Binding.ID()
	if lbID == "" {
		return nil, service.ErrFullSyncNeeded
	}
	groups, err := p.api.groups(ctx, lbID)
	if cloud.IsNotFound(err) {
		return nil, service.ErrFullSyncNeeded
	}
	if err != nil {
		return nil, fmt.Errorf("list vServer groups of %s: %w", lbID, err)
	}
	model := BuildModel(req)
	limitShared(req.Binding, model, groups, nil, s.ManagesListeners(), s.LoadBalancer.ForceOverrideListeners, true)
	gplan := PlanGroups(model.Groups, groups, model.Ref)
	if len(gplan.Create) > 0 || len(gplan.MissingBound) > 0 || len(gplan.Delete) > 0 {
		return nil, service.ErrFullSyncNeeded
	}
	if s.ManagesListeners() {
		for _, g := range groups {
			if _, ours := model.Ref.OwnsCLB(g.Name); ours && g.Listeners == 0 {
				return nil, service.ErrFullSyncNeeded
			}
		}
	}
	if err := p.syncGroups(ctx, lbID, model, gplan, s); err != nil {
		return nil, err
	}
	in, warnings, err := p.refreshStatus(ctx, lbID, s)
	if err != nil {
		return nil, err
	}
	return &service.Result{LoadBalancerID: lbID, Ingress: in, Warnings: warnings}, nil
}

// syncGroups creates missing groups with their first batch of members and
// reconciles the members of existing ones.
func (p *Provider) syncGroups(ctx context.Context, lbID string, m *Model, plan GroupPlan, s *annotations.Settings) error {
	creating := map[int32]bool{}
	for _, g := range plan.Create {
		creating[g.ServicePort] = true
		first, rest := g.Backends, []Backend(nil)
		if len(first) > p.opts.BatchSize {
			first, rest = first[:p.opts.BatchSize], first[p.opts.BatchSize:]
		}
		id, err := p.api.createGroup(ctx, lbID, g.Name, first)
		if err != nil {
			return fmt.Errorf("create vServer group %s: %w", g.Name, err)
		}
		plan.IDs[g.ServicePort] = id
		if err := p.api.applyMembers(ctx, id, BackendPlan{Add: rest}, p.opts.BatchSize); err != nil {
			return fmt.Errorf("add backends to vServer group %s: %w", id, err)
		}
	}
	for _, g := range m.Groups {
		if creating[g.ServicePort] {
			continue
		}
		id := plan.IDs[g.ServicePort]
		cur, err := p.api.members(ctx, id)
		if err != nil {
			return fmt.Errorf("read backends of vServer group %s: %w", id, err)
		}
		bp := PlanBackends(g.Backends, cur, g.BoundID != "", g.Name, s.Backend.IgnoreWeightUpdate)
		if bp.Empty() {
			continue
		}
		klog.FromContext(ctx).V(2).Info("Updating backends", "group", id, "add", len(bp.Add), "remove", len(bp.Remove), "reweigh", len(bp.Update))
		if err := p.api.applyMembers(ctx, id, bp, p.opts.BatchSize); err != nil {
			return fmt.Errorf("update backends of vServer group %s: %w", id, err)
		}
	}
	return nil
}

func (p *Provider) applyListeners(ctx context.Context, lbID string, plan ListenerPlan, groupIDs map[int32]string) error {
	for _, c := range plan.Delete {
		if err := p.api.deleteListener(ctx, lbID, c.Port, c.Protocol); err != nil {
			return fmt.Errorf("delete listener %s:%d: %w", c.Protocol, c.Port, err)
		}
	}
	for _, l := range plan.Create {
		params := map[string]string{"Description": l.Description}
		for k, v := range l.CreateDefaults {
			params[k] = v
		}
		for k, v := range l.Set {
			params[k] = v
		}
		if l.ServicePort != 0 {
			params["VServerGroupId"] = groupIDs[l.ServicePort]
		}
		if err := p.api.listenerCall(ctx, "create", l.Protocol, lbID, l.Port, params); err != nil {
			return fmt.Errorf("create listener %s:%d: %w", l.Protocol, l.Port, err)
		}
		if err := p.api.startListener(ctx, lbID, l.Port, l.Protocol); err != nil {
			return fmt.Errorf("start listener %s:%d: %w", l.Protocol, l.Port, err)
		}
	}
	for _, u := range plan.Update {
		if err := p.api.listenerCall(ctx, "set", u.Listener.Protocol, lbID, u.Listener.Port, u.Params); err != nil {
			return fmt.Errorf("update listener %s:%d: %w", u.Listener.Protocol, u.Listener.Port, err)
		}
	}
	for _, c := range plan.Start {
		if err := p.api.startListener(ctx, lbID, c.Port, c.Protocol); err != nil {
			return fmt.Errorf("start listener %s:%d: %w", c.Protocol, c.Port, err)
		}
	}
	return nil
}

// ingress is the Service status: the hostname annotation, else the address.
func ingress(lb *slb.LoadBalancer, s *annotations.Settings) []corev1.LoadBalancerIngress {
	if s.LoadBalancer.Hostname != nil {
		return []corev1.LoadBalancerIngress{{Hostname: *s.LoadBalancer.Hostname}}
	}
	if lb.Address == "" {
		return nil
	}
	return []corev1.LoadBalancerIngress{{IP: lb.Address}}
}

// FindAllTagged implements service.AllTagged: every load balancer tagged
// for a Service, in the one call FindTagged makes.
func (p *Provider) FindAllTagged(ctx context.Context, defaultName string) ([]*service.LoadBalancer, error) {
	return p.ListTagged(ctx, naming.TagKeyDefaultName, defaultName)
}

// ListTagged implements service.Lister: one DescribeLoadBalancers page per
// 100 load balancers.
func (p *Provider) ListTagged(ctx context.Context, key, value string) ([]*service.LoadBalancer, error) {
	lbs, err := p.api.lbsByTag(ctx, key, value)
	if err != nil {
		return nil, err
	}
	out := make([]*service.LoadBalancer, 0, len(lbs))
	for i := range lbs {
		out = append(out, facts(&lbs[i]))
	}
	return out, nil
}
