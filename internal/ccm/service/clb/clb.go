// Package clb is the Classic Load Balancer provider of the service
// controller. clb.go is the provider and the order of an Ensure; each other
// file is one part of the load balancer from end to end, its pure diff
// beside the calls that read and change it:
//
//   - model.go: the listeners and vServer groups the Service asks for;
//   - lb.go: the load balancer itself (lookup, create, attributes,
//     protections, tags, status);
//   - groups.go: vServer groups and their backends (diff, the limit on a
//     shared load balancer, apply, release);
//   - listeners.go: listeners and their HTTPS domain extensions;
//   - acl.go: the access control list of loadBalancerSourceRanges;
//   - delete.go: what a Service's deletion releases;
//   - grants.go: the grants of bound groups and certificates.
package clb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// DefaultBatchSize is the documented number of backend servers one
// vServer group call accepts.
const DefaultBatchSize = 20

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
	// TaggedFinder reads load balancers for the ownership rules and lists
	// them by tag (one DescribeLoadBalancers page per 100).
	service.TaggedFinder
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
	return &Provider{TaggedFinder: service.Lookups(a.lbByID, a.lbByTag, facts), opts: opts, api: a}, nil
}

// Descriptor implements service.Provider. A reused CLB must be in the
// cluster's VPC, where its backends are.
func (p *Provider) Descriptor() service.Descriptor {
	return service.Descriptor{Kind: "CLB", Owner: annotations.OwnerCLB, Finalizer: naming.FinalizerCLB,
		Reuse: service.ReuseRules{VpcID: p.opts.VpcID}}
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
		for _, ch := range req.Immutable {
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

// api holds the SLB calls the provider makes, each file's beside the code
// that uses them; every call goes through cloud.Call or cloud.Do (rate
// limit, retries, classification, metrics).
type api struct {
	c *cloud.Client
}

// native is the CLB description behind a bound load balancer.
func native(b *service.Binding) *slb.LoadBalancer {
	if b == nil || b.LB == nil {
		return nil
	}
	lb, _ := b.LB.Native.(*slb.LoadBalancer)
	return lb
}
