package nlb

import (
	"context"
	"errors"
	"fmt"
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
	statusDeleting     = "Deleting"
)

// Tag resource types of TagResources.
const (
	resourceLB = "loadbalancer"
)

// Event reasons of the NLB provider: the ones CLB reports too.
const (
	// EventImmutable is service.EventImmutable.
	EventImmutable = service.EventImmutable
	// EventListenerConflict is service.EventListenerConflict.
	EventListenerConflict = service.EventListenerConflict
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
	// TaggedFinder reads load balancers for the ownership rules and lists
	// them by tag (service.Lister, service.AllTagged).
	service.TaggedFinder
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
	opts.BatchSize = service.OrDefault(opts.BatchSize, DefaultBatchSize)
	opts.JobPollInterval = service.OrDefault(opts.JobPollInterval, DefaultJobPollInterval)
	opts.JobTimeout = service.OrDefault(opts.JobTimeout, DefaultJobTimeout)
	a := api{c: opts.Cloud}
	return &Provider{TaggedFinder: service.Lookups(a.getLB, a.lbByTag, facts), opts: opts, api: a}, nil
}

// Descriptor implements service.Provider. NLB server groups may live in
// another VPC than the cluster's (the existing CCM allows reusing such a
// load balancer), so the reuse rules check no VPC.
func (p *Provider) Descriptor() service.Descriptor {
	return service.Descriptor{Kind: "NLB", Owner: annotations.OwnerNLB, Finalizer: naming.FinalizerNLB}
}

// facts describes an NLB for the ownership rules.
func facts(lb *lbInfo) *service.LoadBalancer {
	return &service.LoadBalancer{
		ID: lb.ID, Tags: lb.Tags, VpcID: lb.VpcID, AddressType: strings.ToLower(lb.AddressType),
		ResourceGroupID: lb.ResourceGroup, Addresses: []string{lb.DNSName}, Native: lb,
		Created:    lb.Created,
		Attributes: annotations.CloudLBAttributes{IPVersion: lb.AddressIPVersion, ResourceGroupID: lb.ResourceGroup},
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
// outlive a load balancer deleted out of band). Each step adds its
// Warnings to the result.
func (p *Provider) ensure(ctx context.Context, req *service.Request, lb *lbInfo, created bool) (*service.Result, error) {
	res := &service.Result{LoadBalancerID: lb.ID}
	if created {
		klog.FromContext(ctx).Info("Created load balancer", "loadBalancer", lb.ID)
	} else {
		for _, ch := range req.Immutable {
			res.Warnings = append(res.Warnings, service.Warning{Reason: EventImmutable, Message: ch.String()})
		}
	}
	if err := p.writable(ctx, req, lb, created); err != nil {
		return nil, err
	}
	model, gplan, listeners, err := p.ensureGroups(ctx, req, lb, created, res)
	if err != nil {
		return nil, err
	}
	if lb, err = p.ensureLB(ctx, req, lb, created, res); err != nil {
		return nil, err
	}
	if err := p.ensureListeners(ctx, req, lb, model, gplan, listeners, created, res); err != nil {
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

// writable refuses a bound load balancer the sync must not write to (a
// reused one of another VPC, one whose create failed) and waits for the
// jobs a previous pass left running on it.
func (p *Provider) writable(ctx context.Context, req *service.Request, lb *lbInfo, created bool) error {
	if !created {
		if err := reuseVPCProblem(lb.ID, lb.VpcID, p.opts.VpcID, req.Settings); err != nil {
			return err
		}
	}
	if lb.Status == statusCreateFailed {
		return fmt.Errorf("load balancer %s failed to create (status %s); delete it or set another name", lb.ID, lb.Status)
	}
	return p.settle(ctx, lb.ID)
}

// ensureLB waits for lb to be Active, then brings its own settings and
// its source-ranges security group to the Service; it returns lb as last
// read.
func (p *Provider) ensureLB(ctx context.Context, req *service.Request, lb *lbInfo, created bool, res *service.Result) (*lbInfo, error) {
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
	return lb, nil
}

// ensureListeners brings the listeners and their certificates to the
// model (none of a borrowed load balancer's unless the Service manages
// them); listeners are the current ones when read already (nil: not).
// The conflicts it finds go to res as Warnings.
func (p *Provider) ensureListeners(ctx context.Context, req *service.Request, lb *lbInfo, model *Model, gplan GroupPlan, listeners []CurrentListener, created bool, res *service.Result) error {
	s := req.Settings
	var err error
	if listeners == nil && !created && s.ManagesListeners() {
		if listeners, err = p.api.listeners(ctx, lb.ID); err != nil {
			return fmt.Errorf("list listeners of %s: %w", lb.ID, err)
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
		return err
	}
	// The last listener job is waited for here only when more of this
	// pass needs the load balancer or a group it released; otherwise the
	// next pass that may write to the load balancer waits for it (settle),
	// so a new Service is addressed without that wait and its call.
	if model.managesCerts() || len(gplan.Delete) > 0 {
		if err := p.wait(ctx, "listener changes on "+lb.ID, pending); err != nil {
			return err
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
		return err
	}
	return nil
}

// vpcOf is the VPC of lb, the cluster's when the cloud does not say.
func (p *Provider) vpcOf(lb *lbInfo) string {
	if lb.VpcID == "" {
		return p.opts.VpcID
	}
	return lb.VpcID
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
	gplan, _ = limitShared(req, model, gplan, lbID, nil, true)
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

// resolve finds the identities the model needs beyond the Request: ENI
// ids of pod IPs for eni backends in Instance groups, primary IPs of
// instances for ecs backends in Ip groups.
func (p *Provider) resolve(ctx context.Context, req *service.Request) (Addresses, error) {
	// The controller's backends resolver found and proved the ENIs of pod
	// addresses (with ecs backends, those of pods on virtual Nodes): they
	// come with the targets.
	var addr Addresses
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
	r.LoadBalancerName = annotations.Or(lbs.Name, req.Identity.Name)
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
	tags := req.Identity.CreationTags(lbs.AdditionalTags)
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
// sync ends with a RetryError (the next one finds it by tag and carries on);
// a create job that failed is an error.
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
		if lb.Status == statusCreateFailed {
			// A create job that failed ends the wait as well as one that
			// succeeded; the LB then refuses every change.
			return nil, fmt.Errorf("load balancer %s failed to create (status %s); delete it or set another name", id, lb.Status)
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
	if req.Binding.Keep {
		return p.keepOwn(ctx, own)
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
		if err := p.deleteOwnLB(ctx, lb); err != nil {
			return "", err
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

// keepOwn keeps the Service's own load balancers (preserve-lb-on-delete)
// with their listeners and server groups, losing only their protections
// and our tags.
func (p *Provider) keepOwn(ctx context.Context, own []*lbInfo) (string, error) {
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
