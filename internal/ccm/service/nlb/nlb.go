package nlb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Defaults of Options.
const (
	// DefaultBatchSize is the documented number of servers one
	// AddServersToServerGroup call accepts.
	DefaultBatchSize = 200
	// DefaultJobPollInterval is the pause between two job status reads.
	DefaultJobPollInterval = time.Second
	// DefaultJobTimeout bounds how long one sync waits for a job before
	// requeueing the Service.
	DefaultJobTimeout = 20 * time.Second
)

// protectionReason is recorded with the protections we set.
const protectionReason = "managed.by.ack"

// Load balancer statuses that matter here.
const (
	statusProvisioning = "Provisioning"
	statusCreateFailed = "CreateFailed"
)

// Tag resource types of TagResources.
const (
	resourceLB = "loadbalancer"
)

// Event reasons specific to NLB.
const (
	// EventImmutable reports an annotation that asks for an attribute the
	// existing load balancer cannot change.
	EventImmutable = "ImmutableAttributeChanged"
	// EventListenerConflict reports a port held by a listener we must not touch.
	EventListenerConflict = "ListenerPortConflict"
)

// Options configure the NLB provider.
type Options struct {
	// Cloud is the client every call goes through.
	Cloud *cloud.Client
	// VpcID is the cluster's VPC: load balancers and server groups are
	// created in it, and pod ENIs are looked up in it.
	VpcID string
	// BatchSize bounds servers per membership call (default 200).
	BatchSize int
	// JobPollInterval is the pause between job status reads (default 1s).
	JobPollInterval time.Duration
	// JobTimeout bounds the wait for one set of jobs (default 20s); past
	// it the sync ends with a RetryError.
	JobTimeout time.Duration
}

// Provider implements service.Provider for Network Load Balancers.
type Provider struct {
	// Finder reads load balancers for the ownership rules.
	service.Finder
	opts Options
	api  api
	// pending maps a load balancer id to the job of the last listener
	// change a pass left unwaited (applyListeners): the next pass that may
	// write to that load balancer waits for it first (settle).
	pending sync.Map
	// owedGroups are the Services whose source-range group, left by the
	// load balancer, still waits for its delete.
	owedGroups service.Owed
}

var (
	_ service.Provider  = (*Provider)(nil)
	_ service.AllTagged = (*Provider)(nil)
)

// New returns the NLB provider.
func New(opts Options) (*Provider, error) {
	if opts.Cloud == nil {
		return nil, errors.New("nlb: a cloud client is required")
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.JobPollInterval <= 0 {
		opts.JobPollInterval = DefaultJobPollInterval
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = DefaultJobTimeout
	}
	a := api{c: opts.Cloud}
	return &Provider{Finder: service.Lookups(a.getLB, a.lbByTag, facts), opts: opts, api: a}, nil
}

// Kind implements service.Provider.
func (p *Provider) Kind() string { return "NLB" }

// Owner implements service.Provider.
func (p *Provider) Owner() annotations.Owner { return annotations.OwnerNLB }

// Finalizer implements service.Provider.
func (p *Provider) Finalizer() string { return naming.FinalizerNLB }

// ReuseRules implements service.Provider. NLB server groups may live in
// another VPC than the cluster's (the existing CCM allows reusing such a
// load balancer), so the VPC is not checked.
func (p *Provider) ReuseRules() service.ReuseRules { return service.ReuseRules{} }

// facts describes an NLB for the ownership rules.
func facts(lb *lbInfo) *service.LoadBalancer {
	return &service.LoadBalancer{
		ID: lb.ID, Tags: lb.Tags, VpcID: lb.VpcID, AddressType: strings.ToLower(lb.AddressType),
		ResourceGroupID: lb.ResourceGroup, Addresses: []string{lb.DNSName}, Native: lb,
		Created: lb.Created,
	}
}

// native is the NLB description behind a bound load balancer.
func native(b *service.Binding) *lbInfo {
	if b == nil || b.LB == nil {
		return nil
	}
	lb, _ := b.LB.Native.(*lbInfo)
	return lb
}

// Ensure implements service.Provider, in dependency order: the load
// balancer; server groups and their members (which need no load balancer,
// so they are built while it is still provisioning); load balancer
// attributes; listeners (ours deleted first to free ports, then created,
// updated, started); finally the groups no listener needs any more.
func (p *Provider) Ensure(ctx context.Context, req *service.Request) (*service.Result, error) {
	s := req.Settings
	if s == nil {
		return nil, errors.New("nlb: no settings")
	}
	lb := native(req.Binding)
	if lb != nil {
		return p.ensure(ctx, req, lb, false)
	}
	if req.Binding != nil && req.Binding.LB != nil {
		return nil, fmt.Errorf("nlb: binding of %s carries no NLB description", req.Binding.ID())
	}
	return p.create(ctx, req)
}

// ensure brings the load balancer lb and what hangs off it to the model;
// created says lb was made in this pass, so it has no listeners to read
// (its server groups are read all the same: they are found by tag and can
// outlive a load balancer deleted out of band).
func (p *Provider) ensure(ctx context.Context, req *service.Request, lb *lbInfo, created bool) (*service.Result, error) {
	s := req.Settings
	res := &service.Result{}
	if created {
		klog.FromContext(ctx).Info("Created load balancer", "loadBalancer", lb.ID)
	} else {
		for _, ch := range annotations.ImmutableChanges(annotations.CloudLBAttributes{IPVersion: lb.AddressIPVersion, ResourceGroupID: lb.ResourceGroup}, s) {
			res.Warnings = append(res.Warnings, service.Warning{Reason: EventImmutable, Message: ch.String()})
		}
		if err := reuseVPCProblem(lb.ID, lb.VpcID, p.opts.VpcID, s); err != nil {
			return nil, err
		}
	}
	res.LoadBalancerID = lb.ID
	if lb.Status == statusCreateFailed {
		return nil, fmt.Errorf("load balancer %s failed to create (status %s); delete it or set another name", lb.ID, lb.Status)
	}
	if err := p.settle(ctx, lb.ID); err != nil {
		return nil, err
	}

	addr, err := p.resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	model := BuildModel(req, addr)
	gplan, err := p.planGroups(ctx, req, model, lb.ID)
	if err != nil {
		return nil, err
	}
	vpcID := lb.VpcID
	if vpcID == "" {
		vpcID = p.opts.VpcID
	}
	if err := p.syncGroups(ctx, req, vpcID, model, gplan); err != nil {
		return nil, err
	}
	if req.Binding.Reused && !created {
		// A binding that went (vgroup-port removed, or moved to another
		// group) takes the Service's servers with it at once: found in
		// the cloud by their description, not remembered.
		if err := p.releaseMembers(ctx, req, lb.ID, boundIDs(model)); err != nil {
			return nil, err
		}
	}
	if lb.Status == statusProvisioning {
		// The groups above took the provisioning time, or most of it.
		var err error
		if lb, err = p.waitActive(ctx, lb.ID); err != nil {
			return nil, err
		}
	}
	sr, err := p.findSourceRangeGroups(ctx, req, lb)
	if err != nil {
		return nil, err
	}
	if !created {
		warnings, err := p.updateLB(ctx, req, lb, sr)
		res.Warnings = append(res.Warnings, warnings...)
		if err != nil {
			return nil, err
		}
	}
	warnings, err := p.syncSourceRanges(ctx, req, lb, sr)
	res.Warnings = append(res.Warnings, warnings...)
	if err != nil {
		return nil, err
	}
	res.Labels = sr.labels()

	var listeners []CurrentListener
	if !created && s.ManagesListeners() {
		if listeners, err = p.api.listeners(ctx, lb.ID); err != nil {
			return nil, fmt.Errorf("list listeners of %s: %w", lb.ID, err)
		}
	}
	// The listeners of a borrowed load balancer are its owner's unless
	// force-override-listeners says otherwise (as for CLB): none is
	// created, changed or deleted, and the plan is empty.
	var desired []Listener
	if s.ManagesListeners() {
		desired = model.Listeners
	}
	lplan := PlanListeners(desired, listeners, model.Ref, s.LoadBalancer.ForceOverrideListeners, gplan.IDs)
	for _, c := range lplan.Conflicts {
		res.Warnings = append(res.Warnings, service.Warning{Reason: EventListenerConflict, Message: c})
	}
	newListeners, pending, err := p.applyListeners(ctx, lb.ID, lplan, gplan.IDs)
	if err != nil {
		return nil, err
	}
	// The last listener job is waited for here only when more of this
	// pass needs the load balancer or a group it released; otherwise the
	// next pass that may write to the load balancer waits for it (settle),
	// so a new Service is addressed without that wait and its call.
	if model.managesCerts() || len(gplan.Delete) > 0 {
		if err := p.wait(ctx, "listener changes on "+lb.ID, pending); err != nil {
			return nil, err
		}
	} else if pending != "" {
		p.pending.Store(lb.ID, pending)
	}
	ids := map[PortKey]string{}
	for k, id := range lplan.Kept {
		ids[k] = id
	}
	isNew := map[PortKey]bool{}
	for k, id := range newListeners {
		ids[k], isNew[k] = id, true
	}
	if err := p.syncCerts(ctx, model, ids, isNew); err != nil {
		return nil, err
	}
	if err := p.deleteGroups(ctx, gplan.Delete); err != nil {
		return nil, err
	}
	if lb.DNSName != "" {
		res.Ingress = []corev1.LoadBalancerIngress{{Hostname: lb.DNSName}}
	}
	return res, nil
}

// SyncBackends implements service.Provider: one ListServerGroups (two with
// vgroup-port) and one ListServerGroupServers per group, then the member
// changes. A group of ours that is missing, unwanted, drifted, or no longer
// used by the load balancer (its listener or the load balancer itself
// vanished) asks for a full sync.
func (p *Provider) SyncBackends(ctx context.Context, req *service.Request) (*service.Result, error) {
	lbID := req.Binding.ID()
	if lbID == "" {
		return nil, service.ErrFullSyncNeeded
	}
	addr, err := p.resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	model := BuildModel(req, addr)
	gplan, err := p.planGroups(ctx, req, model, lbID)
	if err != nil {
		return nil, err
	}
	if len(gplan.Create)+len(gplan.Update)+len(gplan.Delete)+len(gplan.MissingBound) > 0 || gplan.unrelated(model, lbID) {
		return nil, service.ErrFullSyncNeeded
	}
	if err := p.syncGroups(ctx, req, "", model, gplan); err != nil {
		return nil, err
	}
	return &service.Result{LoadBalancerID: lbID}, nil
}

// managesCerts reports whether a listener of the model has its additional
// certificates synced, which needs the listener jobs done.
func (m *Model) managesCerts() bool {
	for _, l := range m.Listeners {
		if l.ManageCerts {
			return true
		}
	}
	return false
}

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

// planGroups reads our groups (by the Service's default-name tag) and the
// vgroup-port ones (by id) and plans them.
//
// A vgroup-port group must be used by a listener of lbID, the load balancer
// the Service is bound to: server groups are regional, so without this
// any Service could name another team's group and add its Nodes, on its
// own nodePort, behind that team's load balancer. Any other group counts
// as missing, and the sync fails naming it before any member is written.
func (p *Provider) planGroups(ctx context.Context, req *service.Request, m *Model, lbID string) (GroupPlan, error) {
	owned, err := p.api.groupsByTag(ctx, naming.TagKeyDefaultName, req.Identity().Name)
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
		tags := req.Identity().Tags
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
	for _, part := range service.Chunks(sp.Remove, p.opts.BatchSize) {
		ops = append(ops, func(ctx context.Context) (string, error) {
			job, err := p.api.removeServers(ctx, id, part)
			if err != nil {
				return "", fmt.Errorf("remove servers from server group %s: %w", id, err)
			}
			return job, nil
		})
	}
	for _, part := range service.Chunks(sp.Update, p.opts.BatchSize) {
		ops = append(ops, func(ctx context.Context) (string, error) {
			job, err := p.api.updateServers(ctx, id, part)
			if err != nil {
				return "", fmt.Errorf("update servers of server group %s: %w", id, err)
			}
			return job, nil
		})
	}
	for _, part := range service.Chunks(sp.Add, p.opts.BatchSize) {
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

// applyListeners runs a listener plan. Every listener job locks the load
// balancer, so each call waits for the job before it; the last job is
// returned unwaited (pending) for the caller to wait on when it needs to.
// It returns the ids of the listeners it created, by Service port.
func (p *Provider) applyListeners(ctx context.Context, lbID string, plan ListenerPlan, groupIDs map[int32]string) (created map[PortKey]string, pending string, err error) {
	created = map[PortKey]string{}
	step := func(what string, call func() (string, error)) error {
		if err := p.wait(ctx, "listener changes on "+lbID, pending); err != nil {
			return err
		}
		job, err := call()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		pending = job
		return nil
	}
	for _, c := range plan.Delete {
		if err := step(fmt.Sprintf("delete listener %s (%s:%d)", c.ID, c.Protocol, c.Port), func() (string, error) {
			return p.api.deleteListener(ctx, c.ID)
		}); err != nil {
			return nil, "", err
		}
	}
	for _, l := range plan.Create {
		if err := step(fmt.Sprintf("create listener %s:%d on %s", l.Protocol, l.Port, lbID), func() (string, error) {
			id, job, err := p.api.createListener(ctx, lbID, l, groupIDs[l.ServicePort])
			if id != "" {
				created[l.ServicePort] = id
			}
			return job, err
		}); err != nil {
			return nil, "", err
		}
	}
	for _, u := range plan.Update {
		group := ""
		if u.ServerGroup {
			group = groupIDs[u.Listener.ServicePort]
		}
		if err := step(fmt.Sprintf("update listener %s", u.ID), func() (string, error) {
			return p.api.updateListener(ctx, u.ID, u.Params, group)
		}); err != nil {
			return nil, "", err
		}
	}
	for _, c := range plan.Start {
		if err := step(fmt.Sprintf("start listener %s", c.ID), func() (string, error) {
			return p.api.startListener(ctx, c.ID)
		}); err != nil {
			return nil, "", err
		}
	}
	return created, pending, nil
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

// resolve finds the identities the model needs beyond the Request: ENI
// ids of pod IPs for eni backends in Instance groups, primary IPs of
// instances for ecs backends in Ip groups.
func (p *Provider) resolve(ctx context.Context, req *service.Request) (Addresses, error) {
	// The controller's backends resolver found and proved the ENIs of pod
	// addresses (with ecs backends, those of pods on virtual Nodes).
	addr := Addresses{ENIs: req.ENIs}
	if req.Settings.Backend.Type == annotations.BackendENI || groupType(req.Settings) != GroupIP {
		return addr, nil
	}
	seen := map[string]bool{}
	var keys []string
	for _, ts := range req.Backends {
		for _, t := range ts {
			if k := t.InstanceID; k != "" && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return addr, nil
	}
	sort.Strings(keys)
	var err error
	if addr.InstanceIPs, addr.InstanceIPv6s, err = p.api.instanceIPs(ctx, keys); err != nil {
		return addr, fmt.Errorf("find the addresses of backend instances: %w", err)
	}
	return addr, nil
}

// addressType spells an annotation address type the way NLB does.
func addressType(v string) string {
	if strings.EqualFold(v, "intranet") {
		return "Intranet"
	}
	return "Internet"
}

// create makes the Service's load balancer: our tags, both protections on
// (always, as the existing CCM does for NLB), and the zones, address type,
// security groups and bandwidth package the annotations ask for; then it
// runs the rest of the sync on it.
func (p *Provider) create(ctx context.Context, req *service.Request) (*service.Result, error) {
	s := req.Settings
	lbs := s.LoadBalancer
	if p.opts.VpcID == "" {
		return nil, errors.New("creating a network load balancer needs the cluster's VPC (cloud-config vpcid)")
	}
	if len(lbs.ZoneMaps) == 0 {
		return nil, fmt.Errorf("%s is required to create a network load balancer", s.Key("zone-maps"))
	}
	r := nlb.CreateCreateLoadBalancerRequest()
	r.LoadBalancerType = "Network"
	r.AddressType = addressType(annotations.Or(lbs.AddressType, annotations.DefaultAddressType))
	r.AddressIpVersion = annotations.Or(lbs.IPVersion, annotations.DefaultIPVersion)
	r.VpcId = p.opts.VpcID
	r.LoadBalancerName = annotations.Or(lbs.Name, req.Identity().Name)
	r.LoadBalancerBillingConfig.PayType = "PostPay"
	r.DeletionProtectionConfig.Enabled, r.DeletionProtectionConfig.Reason = "true", protectionReason
	r.ModificationProtectionConfig.Status, r.ModificationProtectionConfig.Reason = "ConsoleProtection", protectionReason
	r.ResourceGroupId = s.ResourceGroupID()
	r.BandwidthPackageId = annotations.Or(lbs.BandwidthPackageID, "")
	zones := make([]nlb.CreateLoadBalancerZoneMappings, 0, len(lbs.ZoneMaps))
	for _, z := range lbs.ZoneMaps {
		zones = append(zones, nlb.CreateLoadBalancerZoneMappings{ZoneId: z.ZoneID, VSwitchId: z.VSwitchID, PrivateIPv4Address: z.IPv4Address, AllocationId: z.AllocationID})
	}
	r.ZoneMappings = &zones
	if lbs.SecurityGroupIDsSet && len(lbs.SecurityGroupIDs) > 0 {
		ids := append([]string(nil), lbs.SecurityGroupIDs...)
		r.SecurityGroupIds = &ids
	}
	tags := append(slices.Clone(req.Identity().Tags), lbs.AdditionalTags...)
	if rec, ok := naming.ManagedRecord(lbs.AdditionalTags); ok {
		tags = append(tags, rec)
	}
	ts := make([]nlb.CreateLoadBalancerTag, 0, len(tags))
	for _, t := range tags {
		ts = append(ts, nlb.CreateLoadBalancerTag{Key: t.Key, Value: t.Value})
	}
	r.Tag = &ts
	// The token covers every parameter sent: a retry after a lost response
	// replays the first create, changed annotations make a new token.
	params := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%v|%v|%v", r.AddressType, r.AddressIpVersion, r.VpcId, r.LoadBalancerName,
		r.ResourceGroupId, r.BandwidthPackageId, zones, lbs.SecurityGroupIDs, tags)
	return service.CreateIdempotent(ctx, req.Service, req.Binding.Previous(), params, func(token string) (*lbInfo, string, error) {
		r.ClientToken = token
		id, err := p.api.createLB(ctx, r)
		if err != nil {
			return nil, "", fmt.Errorf("create load balancer %s: %w", r.LoadBalancerName, err)
		}
		return describeCreated(id, r, tags), id, nil
	}, func(lb *lbInfo) (*service.Result, error) {
		return p.ensure(ctx, req, lb, true)
	}, func(err error) bool { return errors.Is(err, errGone) })
}

// describeCreated describes a load balancer from its create's request: it
// is Provisioning, and its DNS name is read once it is Active (waitActive),
// which also proves it exists.
func describeCreated(id string, r *nlb.CreateLoadBalancerRequest, tags []naming.Tag) *lbInfo {
	lb := &lbInfo{
		ID: id, Name: r.LoadBalancerName, Status: statusProvisioning, AddressType: r.AddressType,
		AddressIPVersion: r.AddressIpVersion, VpcID: r.VpcId, ResourceGroup: r.ResourceGroupId,
		BandwidthPackageID: r.BandwidthPackageId, DeletionProtection: true, ModificationProtection: r.ModificationProtectionConfig.Status,
		Tags: map[string]string{},
	}
	if r.SecurityGroupIds != nil {
		lb.SecurityGroupIDs = append(lb.SecurityGroupIDs, *r.SecurityGroupIds...)
	}
	if r.ZoneMappings != nil {
		for _, z := range *r.ZoneMappings {
			lb.Zones = append(lb.Zones, zone{ZoneID: z.ZoneId, VSwitchID: z.VSwitchId})
		}
	}
	for _, t := range tags {
		lb.Tags[t.Key] = t.Value
	}
	return lb
}

// errGone is a load balancer that does not exist when waited for: after a
// create, a token that replayed a load balancer deleted since.
var errGone = errors.New("load balancer does not exist")

// waitActive reads the load balancer until it is no longer Provisioning,
// one GetLoadBalancerAttribute per JobPollInterval; past JobTimeout the
// sync ends with a RetryError (the next one finds it by tag and carries on).
func (p *Provider) waitActive(ctx context.Context, id string) (*lbInfo, error) {
	deadline := time.Now().Add(p.opts.JobTimeout)
	for {
		lb, err := p.api.getLB(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("read load balancer %s: %w", id, err)
		}
		if lb == nil {
			return nil, fmt.Errorf("load balancer %s: %w", id, errGone)
		}
		if lb.Status != statusProvisioning {
			return lb, nil
		}
		if time.Now().After(deadline) {
			return nil, &service.RetryError{Err: fmt.Errorf("load balancer %s is still %s after %s", id, lb.Status, p.opts.JobTimeout)}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for load balancer %s: %w", id, ctx.Err())
		case <-time.After(p.opts.JobPollInterval):
		}
	}
}

// updateLB changes only what the annotations explicitly ask for and the
// cloud does not already have; absent annotations leave the cloud alone,
// so an adopted load balancer sees no write. Our own load balancers get
// their protections back if something turned them off. On a borrowed load
// balancer other Services share, no setting is written: each difference is
// a Warning (service.SharedSettingIgnored).
func (p *Provider) updateLB(ctx context.Context, req *service.Request, lb *lbInfo, sr *sourceRanges) ([]service.Warning, error) {
	var warnings []service.Warning
	err := p.updateLBSettings(ctx, req, lb, sr, func(suffix, have, want string) bool {
		if !req.Binding.Shared() {
			return false
		}
		warnings = append(warnings, service.SharedSettingIgnored(req.Binding, req.Settings.Key(suffix), have, want))
		return true
	})
	return warnings, err
}

// updateLBSettings is updateLB; frozen reports a setting the annotation
// asks for (want, where the cloud has have) and says whether to leave it.
func (p *Provider) updateLBSettings(ctx context.Context, req *service.Request, lb *lbInfo, sr *sourceRanges, frozen func(suffix, have, want string) bool) error {
	s := req.Settings
	lbs := s.LoadBalancer
	id := lb.ID
	name := ""
	if lbs.Name != nil && *lbs.Name != lb.Name && !frozen("name", lb.Name, *lbs.Name) {
		name = *lbs.Name
	}
	var cross *bool
	if lbs.CrossZoneEnabled != nil && *lbs.CrossZoneEnabled != lb.CrossZone && !frozen("cross-zone-enabled", onOff(lb.CrossZone), onOff(*lbs.CrossZoneEnabled)) {
		cross = lbs.CrossZoneEnabled
	}
	if name != "" || cross != nil {
		job, err := p.api.updateLBAttribute(ctx, id, name, cross)
		if err != nil {
			return fmt.Errorf("update attributes of %s: %w", id, err)
		}
		if err := p.wait(ctx, "load balancer attribute update", job); err != nil {
			return err
		}
	}
	if len(lbs.ZoneMaps) > 0 && !sameZones(lbs.ZoneMaps, lb.Zones) && !frozen("zone-maps", zoneString(lb.Zones), zoneMapString(lbs.ZoneMaps)) {
		zones := make([]nlb.UpdateLoadBalancerZonesZoneMappings, 0, len(lbs.ZoneMaps))
		for _, z := range lbs.ZoneMaps {
			zones = append(zones, nlb.UpdateLoadBalancerZonesZoneMappings{ZoneId: z.ZoneID, VSwitchId: z.VSwitchID, PrivateIPv4Address: z.IPv4Address, AllocationId: z.AllocationID})
		}
		job, err := p.api.updateZones(ctx, id, zones)
		if err != nil {
			return fmt.Errorf("update zones of %s: %w", id, err)
		}
		if err := p.wait(ctx, "zone update", job); err != nil {
			return err
		}
	}
	if lbs.AddressType != nil && !strings.EqualFold(addressType(*lbs.AddressType), lb.AddressType) && !frozen("address-type", lb.AddressType, *lbs.AddressType) {
		job, err := p.api.updateAddressType(ctx, id, addressType(*lbs.AddressType))
		if err != nil {
			return fmt.Errorf("change the address type of %s: %w", id, err)
		}
		if err := p.wait(ctx, "address type change", job); err != nil {
			return err
		}
	}
	if v := lbs.IPv6AddressType; v != nil && strings.EqualFold(lb.AddressIPVersion, "DualStack") && !strings.EqualFold(*v, lb.Ipv6AddressType) &&
		!frozen("ipv6-address-type", lb.Ipv6AddressType, *v) {
		if err := p.api.ipv6Internet(ctx, id, strings.EqualFold(*v, "internet")); err != nil {
			return fmt.Errorf("change the IPv6 address type of %s: %w", id, err)
		}
	}
	if pkg := lbs.BandwidthPackageID; pkg != nil && *pkg != lb.BandwidthPackageID && !frozen("bandwidth-package-id", lb.BandwidthPackageID, *pkg) {
		if lb.BandwidthPackageID != "" {
			job, err := p.api.bandwidthPackage(ctx, id, lb.BandwidthPackageID, false)
			if err != nil {
				return fmt.Errorf("detach bandwidth package %s from %s: %w", lb.BandwidthPackageID, id, err)
			}
			if err := p.wait(ctx, "bandwidth package detach", job); err != nil {
				return err
			}
		}
		job, err := p.api.bandwidthPackage(ctx, id, *pkg, true)
		if err != nil {
			return fmt.Errorf("attach bandwidth package %s to %s: %w", *pkg, id, err)
		}
		if err := p.wait(ctx, "bandwidth package attach", job); err != nil {
			return err
		}
	}
	if lbs.SecurityGroupIDsSet {
		// The annotation governs the user's groups; the source-ranges
		// group of ours is never left because it is not listed.
		sg := PlanSecurityGroups(lbs.SecurityGroupIDs, sr.userGroups(lb.SecurityGroupIDs))
		if s.Reused() {
			// A borrowed load balancer's groups are its owner's firewall:
			// the annotation may add groups to it, never take one away.
			sg.Leave = nil
		}
		if len(sg.Join) > 0 && frozen("security-group-ids", strings.Join(lb.SecurityGroupIDs, ","), strings.Join(lbs.SecurityGroupIDs, ",")) {
			sg.Join = nil
		}
		// Leave first: the load balancer is in at most 4 groups.
		for _, step := range []struct {
			ids  []string
			join bool
		}{{sg.Leave, false}, {sg.Join, true}} {
			if len(step.ids) == 0 {
				continue
			}
			job, err := p.api.securityGroups(ctx, id, step.ids, step.join)
			if err != nil {
				return fmt.Errorf("security groups %s of %s (join %t): %w", strings.Join(step.ids, ", "), id, step.join, err)
			}
			if err := p.wait(ctx, "security group change", job); err != nil {
				return err
			}
		}
	}
	if !s.Reused() && (!lb.DeletionProtection || lb.ModificationProtection != "ConsoleProtection") {
		if err := p.api.protection(ctx, id, true); err != nil {
			return fmt.Errorf("turn on the protections of %s: %w", id, err)
		}
	}
	want := append([]naming.Tag(nil), lbs.AdditionalTags...)
	if s.Reused() {
		want = append(want, naming.ReusedTag())
	}
	set, remove := naming.PlanTags(lb.Tags, want, !s.Reused())
	if req.Binding.Shared() {
		var ignored []naming.Tag
		set, ignored = service.SplitSharedTags(set)
		if len(ignored) > 0 {
			frozen("additional-resource-tags", service.TagsHave(lb.Tags, ignored), service.TagsWant(ignored))
		}
	}
	if err := p.api.tag(ctx, resourceLB, id, set); err != nil {
		return fmt.Errorf("tag load balancer %s: %w", id, err)
	}
	if len(remove) > 0 {
		if err := p.api.untag(ctx, resourceLB, id, remove); err != nil {
			return fmt.Errorf("remove tags %s dropped from %s from load balancer %s: %w", strings.Join(remove, ", "), s.Key("additional-resource-tags"), id, err)
		}
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// zoneString spells a load balancer's zones as zone-maps does (no addresses).
func zoneString(zs []zone) string {
	parts := make([]string, 0, len(zs))
	for _, z := range zs {
		parts = append(parts, z.ZoneID+":"+z.VSwitchID)
	}
	return strings.Join(parts, ",")
}

// zoneMapString spells the zone-maps annotation's zones and vSwitches.
func zoneMapString(zs []annotations.ZoneMapping) string {
	parts := make([]string, 0, len(zs))
	for _, z := range zs {
		parts = append(parts, z.ZoneID+":"+z.VSwitchID)
	}
	return strings.Join(parts, ",")
}

// sameZones compares zone:vSwitch pairs; addresses are fixed at creation.
func sameZones(want []annotations.ZoneMapping, have []zone) bool {
	if len(want) != len(have) {
		return false
	}
	m := map[string]string{}
	for _, z := range have {
		m[z.ZoneID] = z.VSwitchID
	}
	for _, z := range want {
		if m[z.ZoneID] != z.VSwitchID {
			return false
		}
	}
	return true
}

// Delete implements service.Provider.
//
//   - preserve-lb-on-delete: the Service's own load balancer stays with its
//     listeners, server groups and servers (the fix of the existing CCM's
//     defect: traffic keeps flowing to a load balancer the user chose to
//     keep); only its protections are turned off and our default tags
//     removed, so no Service adopts it by tag again. A reused one is left
//     as it is.
//   - reused (id): only what this Service added goes: its listeners
//     (proven ours by description), its server groups (proven by tag), and
//     its servers in vgroup-port groups; user listeners are never touched.
//   - the Service's own load balancer (req.Binding, proven by its tags) is
//     deleted (protection off first; its listeners go with it), then our
//     server groups.
func (p *Provider) Delete(ctx context.Context, req *service.Request) (string, error) {
	s := req.Settings
	if s == nil {
		return "", errors.New("no settings to clean up with")
	}
	// Every load balancer tagged for the Service goes (or is preserved):
	// a lost create answer and a crash can leave more than one.
	var own []*lbInfo
	for _, o := range req.Binding.OwnAll(req) {
		if lb := native(&service.Binding{LB: o}); lb != nil {
			own = append(own, lb)
		}
	}
	if s.LoadBalancer.PreserveOnDelete {
		if len(own) == 0 {
			return "Nothing deleted (preserve-lb-on-delete)", nil
		}
		var kept []string
		for _, lb := range own {
			if lb.DeletionProtection || lb.ModificationProtection == "ConsoleProtection" {
				if err := p.api.protection(ctx, lb.ID, false); err != nil && !cloud.IsNotFound(err) {
					return "", fmt.Errorf("turn off the protections of preserved %s: %w", lb.ID, err)
				}
			}
			var keys []string
			for _, k := range []string{naming.TagKeyDefaultName, naming.TagKeyCluster} {
				if _, ok := lb.Tags[k]; ok {
					keys = append(keys, k)
				}
			}
			if err := p.api.untag(ctx, resourceLB, lb.ID, keys); err != nil && !cloud.IsNotFound(err) {
				return "", fmt.Errorf("remove our tags from preserved %s: %w", lb.ID, err)
			}
			kept = append(kept, lb.ID)
		}
		return fmt.Sprintf("Kept load balancer %s (preserve-lb-on-delete) with its listeners and server groups; protections off, default tags removed", strings.Join(kept, ", ")), nil
	}
	var done []string
	for _, id := range req.Binding.Release {
		found, err := p.releaseListeners(ctx, req, id)
		if err != nil {
			return "", err
		}
		if found {
			done = append(done, fmt.Sprintf("Released reused load balancer %s: removed this Service's listeners, server groups and servers", id))
		}
	}
	for _, lb := range own {
		if err := p.settle(ctx, lb.ID); err != nil && !cloud.IsNotFound(err) {
			return "", err
		}
		if lb.DeletionProtection {
			if err := p.api.protection(ctx, lb.ID, false); err != nil && !cloud.IsNotFound(err) {
				return "", fmt.Errorf("turn off the protections of %s: %w", lb.ID, err)
			}
		}
		job, err := p.api.deleteLB(ctx, lb.ID)
		if err != nil && !cloud.IsNotFound(err) {
			return "", fmt.Errorf("delete load balancer %s: %w", lb.ID, err)
		}
		if err == nil {
			if err := p.wait(ctx, "load balancer deletion", job); err != nil {
				return "", err
			}
		}
		done = append(done, fmt.Sprintf("Deleted load balancer %s", lb.ID))
	}
	n, err := p.deleteOwnedGroups(ctx, req)
	if err != nil {
		return "", err
	}
	if sgs, err := p.deleteSourceRangeGroups(ctx, req, req.Binding.Release); err != nil {
		return "", err
	} else if sgs > 0 {
		done = append(done, fmt.Sprintf("deleted %d security group(s) of loadBalancerSourceRanges", sgs))
	}
	if err := p.removeBoundMembers(ctx, req); err != nil {
		return "", err
	}
	for _, id := range req.Binding.Release {
		if err := p.releaseMembers(ctx, req, id, nil); err != nil && !cloud.IsNotFound(err) {
			return "", err
		}
	}
	if len(done) == 0 {
		done = append(done, "The Service has no load balancer of its own to delete")
	}
	return fmt.Sprintf("%s; deleted %d server groups", strings.Join(done, "; "), n), nil
}

// deleteOwnedGroups deletes every server group of the Service.
func (p *Provider) deleteOwnedGroups(ctx context.Context, req *service.Request) (int, error) {
	ref := req.Identity().Ref
	groups, err := p.api.groupsByTag(ctx, naming.TagKeyDefaultName, req.Identity().Name)
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
// forward to, but those in keep: the groups it is no longer bound to. A
// group named for a Service is skipped (the CCM's groups of another
// Service are never bindable); the others cost one read each.
func (p *Provider) releaseMembers(ctx context.Context, req *service.Request, lbID string, keep map[string]bool) error {
	ref := req.Identity().Ref
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
	for _, g := range groups {
		if _, named := naming.ParseNLB(g.Name); named {
			continue
		}
		cur, err := p.api.servers(ctx, g.ID)
		if cloud.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read servers of server group %s: %w", g.ID, err)
		}
		var mine []Server
		for _, srv := range cur {
			if _, ok := ref.OwnsNLB(srv.Description); ok {
				mine = append(mine, srv)
			}
		}
		if len(mine) == 0 {
			continue
		}
		klog.FromContext(ctx).Info("Removing the Service's servers from a server group it is no longer bound to", "serverGroup", g.ID, "servers", len(mine))
		if ops := p.memberOps(g.ID, ServerPlan{Remove: mine}); len(ops) > 0 {
			queues = append(queues, ops)
		}
	}
	return p.runQueues(ctx, "server removal", queues)
}

// FindAllTagged implements service.AllTagged: every load balancer tagged
// for a Service, in the one call FindTagged makes.
func (p *Provider) FindAllTagged(ctx context.Context, defaultName string) ([]*service.LoadBalancer, error) {
	return p.ListTagged(ctx, naming.TagKeyDefaultName, defaultName)
}

// ListTagged implements service.Lister: one ListLoadBalancers page per 100
// load balancers.
func (p *Provider) ListTagged(ctx context.Context, key, value string) ([]*service.LoadBalancer, error) {
	lbs, err := p.api.lbsByTag(ctx, key, value)
	if err != nil {
		return nil, err
	}
	out := make([]*service.LoadBalancer, 0, len(lbs))
	for _, lb := range lbs {
		out = append(out, facts(lb))
	}
	return out, nil
}
