package clb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
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

// Kind implements service.Provider.
func (p *Provider) Kind() string { return "CLB" }

// Owner implements service.Provider.
func (p *Provider) Owner() annotations.Owner { return annotations.OwnerCLB }

// Finalizer implements service.Provider.
func (p *Provider) Finalizer() string { return naming.FinalizerCLB }

// ReuseRules implements service.Provider: a reused CLB must be in the
// cluster's VPC, where its backends are.
func (p *Provider) ReuseRules() service.ReuseRules { return service.ReuseRules{VpcID: p.opts.VpcID} }

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

	model := BuildModel(req, req.ENIs)

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

	if s.ManagesListeners() {
		if !created && !req.Binding.Shared() {
			if listeners, err = p.api.listeners(ctx, lb.LoadBalancerId); err != nil {
				return nil, fmt.Errorf("list listeners of %s: %w", lb.LoadBalancerId, err)
			}
		}
		aclCleanup, warnings, err := p.syncSourceRanges(ctx, req, lb, model, listeners)
		res.Warnings = append(res.Warnings, warnings...)
		if err != nil {
			return nil, err
		}
		lplan := PlanListeners(model.Listeners, listeners, model.Ref, s.LoadBalancer.ForceOverrideListeners, gplan.IDs)
		for _, c := range lplan.Conflicts {
			res.Warnings = append(res.Warnings, service.Warning{Reason: EventListenerConflict, Message: c})
		}
		if err := p.applyListeners(ctx, lb.LoadBalancerId, lplan, gplan.IDs); err != nil {
			return nil, err
		}
		ports := httpsPorts(model.Listeners, listeners, model.Ref, s.LoadBalancer.ForceOverrideListeners)
		if err := p.syncDomains(ctx, lb.LoadBalancerId, s.Listener.DomainExtensions, ports); err != nil {
			return nil, err
		}
		if err := aclCleanup(ctx); err != nil {
			return nil, err
		}
	} else if !service.ParseSourceRanges(req.Service).Empty() {
		res.Warnings = append(res.Warnings, service.Warning{Reason: service.EventSourceRangesIgnored, Message: fmt.Sprintf(
			"loadBalancerSourceRanges are not applied: the listeners of reused load balancer %s are not managed without %s", lb.LoadBalancerId, s.Key("force-override-listeners"))})
	}
	for _, g := range gplan.Delete {
		if err := p.api.deleteGroup(ctx, g.ID); err != nil {
			if cloud.CodeOf(err) == "RspoolVipExist" {
				// Still used by a listener we do not manage: leave it.
				log.Info("Keeping a vServer group still in use", "group", g.ID, "name", g.Name)
				continue
			}
			return nil, fmt.Errorf("delete vServer group %s (%s): %w", g.ID, g.Name, err)
		}
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
	model := BuildModel(req, req.ENIs)
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

func attributes(lb *slb.LoadBalancer) annotations.CloudLBAttributes {
	return annotations.CloudLBAttributes{
		AddressType: lb.AddressType, NetworkType: lb.NetworkType, VSwitchID: lb.VSwitchId,
		MasterZoneID: lb.MasterZoneId, SlaveZoneID: lb.SlaveZoneId, IPVersion: lb.AddressIPVersion,
		ResourceGroupID: lb.ResourceGroupId, Address: lb.Address,
	}
}

// create makes the Service's load balancer with our tags and, unless the
// annotations say otherwise, delete and modification protection on, then
// runs the rest of the sync on it.
func (p *Provider) create(ctx context.Context, req *service.Request) (*service.Result, error) {
	s := req.Settings
	lbs := s.LoadBalancer
	r := slb.CreateCreateLoadBalancerRequest()
	r.LoadBalancerName = annotations.Or(lbs.Name, req.Identity().Name)
	r.AddressType = annotations.Or(lbs.AddressType, annotations.DefaultAddressType)
	if r.AddressType == "internet" && p.opts.DisablePublic {
		return nil, fmt.Errorf("internet-facing load balancers are disabled in this cluster (cloud-config disablePublicSLB); set %s: intranet", s.Key("address-type"))
	}
	r.AddressIPVersion = annotations.Or(lbs.IPVersion, annotations.DefaultIPVersion)
	r.InstanceChargeType = annotations.Or(lbs.InstanceChargeType, "")
	if r.InstanceChargeType != "PayByCLCU" {
		r.LoadBalancerSpec = annotations.Or(lbs.Spec, annotations.DefaultSpec)
	}
	r.InternetChargeType = annotations.Or(lbs.ChargeType, annotations.DefaultChargeType)
	if r.InternetChargeType == "paybybandwidth" {
		r.Bandwidth = requests.NewInteger(annotations.Or(lbs.Bandwidth, annotations.DefaultBandwidth))
	}
	r.MasterZoneId = annotations.Or(lbs.MasterZoneID, "")
	r.SlaveZoneId = annotations.Or(lbs.SlaveZoneID, "")
	r.Address = annotations.Or(lbs.IP, "")
	r.ResourceGroupId = s.ResourceGroupID()
	r.DeleteProtection = onOff(annotations.Or(lbs.DeleteProtection, annotations.DefaultDeleteProtection))
	r.ModificationProtectionStatus = annotations.Or(lbs.ModificationProtection, annotations.DefaultModificationProtection)
	if r.ModificationProtectionStatus == "ConsoleProtection" {
		r.ModificationProtectionReason = modificationReason
	}
	classic := strings.EqualFold(annotations.Or(lbs.NetworkType, ""), "classic")
	if r.AddressType == "intranet" && classic {
		// The API has no network type parameter: an intranet load balancer
		// created without a vSwitch is in the classic network.
		if lbs.VSwitchID != nil {
			return nil, fmt.Errorf("%s: classic puts the load balancer in no VPC, so it takes no %s", s.Key("network-type"), s.Key("vswitch-id"))
		}
	} else if r.AddressType == "intranet" {
		r.VpcId = p.opts.VpcID
		r.VSwitchId = annotations.Or(lbs.VSwitchID, p.defaultVSwitch(r.MasterZoneId))
		if r.VSwitchId == "" {
			return nil, fmt.Errorf("an intranet load balancer needs a vSwitch: set %s or cloud-config vswitchid", s.Key("vswitch-id"))
		}
	}
	tags := append(slices.Clone(req.Identity().Tags), lbs.AdditionalTags...)
	if rec, ok := naming.ManagedRecord(lbs.AdditionalTags); ok {
		tags = append(tags, rec)
	}
	ts := make([]slb.CreateLoadBalancerTag, 0, len(tags))
	for _, t := range tags {
		ts = append(ts, slb.CreateLoadBalancerTag{Key: t.Key, Value: t.Value})
	}
	r.Tag = &ts
	// The token covers every parameter sent, so a retry after a lost
	// response replays the first create and changed annotations make a new
	// token instead of IdempotentParameterMismatch.
	params := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%v|%s|%s|%s|%s|%s|%s|%s|%s|%v",
		r.LoadBalancerName, r.AddressType, r.AddressIPVersion, r.InstanceChargeType, r.LoadBalancerSpec, r.InternetChargeType,
		r.Bandwidth, r.MasterZoneId, r.SlaveZoneId, r.Address, r.ResourceGroupId, r.DeleteProtection,
		r.ModificationProtectionStatus, r.VpcId, r.VSwitchId, tags)
	return service.CreateIdempotent(ctx, req.Service, req.Binding.Previous(), params, func(token string) (*slb.LoadBalancer, string, error) {
		r.ClientToken = token
		resp, err := cloud.Do(ctx, p.opts.Cloud, cloud.SLB, "CreateLoadBalancer", func(c *cloud.Clients) (*slb.CreateLoadBalancerResponse, error) {
			return c.SLB.CreateLoadBalancer(r)
		}, cloud.ClientTokenOf(r))
		if err != nil {
			return nil, "", fmt.Errorf("create load balancer %s: %w", r.LoadBalancerName, err)
		}
		return describeCreated(r, resp, tags), resp.LoadBalancerId, nil
	}, func(lb *slb.LoadBalancer) (*service.Result, error) {
		return p.ensure(ctx, req, lb, true)
	}, lbGone)
}

// lbGone reports whether err says the load balancer does not exist: after a
// create, a token that replayed a load balancer deleted since.
func lbGone(err error) bool { return cloud.CodeOf(err) == "InvalidLoadBalancerId.NotFound" }

// describeCreated describes a load balancer from its create's request and answer,
// which carry everything the rest of the sync reads of it: a read back
// would cost a call per Service and tell nothing more.
func describeCreated(r *slb.CreateLoadBalancerRequest, resp *slb.CreateLoadBalancerResponse, tags []naming.Tag) *slb.LoadBalancer {
	lb := &slb.LoadBalancer{
		LoadBalancerId: resp.LoadBalancerId, LoadBalancerName: either(resp.LoadBalancerName, r.LoadBalancerName),
		Address: resp.Address, AddressType: r.AddressType, AddressIPVersion: either(resp.AddressIPVersion, r.AddressIPVersion),
		NetworkType: resp.NetworkType, VpcId: either(resp.VpcId, r.VpcId), VSwitchId: either(resp.VSwitchId, r.VSwitchId),
		ResourceGroupId: either(resp.ResourceGroupId, r.ResourceGroupId), LoadBalancerSpec: r.LoadBalancerSpec,
		InstanceChargeType: r.InstanceChargeType, InternetChargeType: r.InternetChargeType, MasterZoneId: r.MasterZoneId,
		SlaveZoneId: r.SlaveZoneId, DeleteProtection: r.DeleteProtection, ModificationProtectionStatus: r.ModificationProtectionStatus,
		LoadBalancerStatus: "active",
	}
	for _, t := range tags {
		lb.Tags.Tag = append(lb.Tags.Tag, slb.Tag{TagKey: t.Key, TagValue: t.Value})
	}
	return lb
}

func (p *Provider) defaultVSwitch(zone string) string {
	if v := p.opts.VSwitchIDs[zone]; zone != "" && v != "" {
		return v
	}
	keys := make([]string, 0, len(p.opts.VSwitchIDs))
	for k := range p.opts.VSwitchIDs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := p.opts.VSwitchIDs[k]; v != "" {
			return v
		}
	}
	return ""
}

// updateAttributes changes only what the annotations explicitly ask for
// and the cloud does not already have; absent annotations leave the cloud
// alone, so an adopted load balancer sees no write. On a borrowed load
// balancer other Services share, no setting is written: each difference is
// a Warning (service.SharedSettingIgnored).
func (p *Provider) updateAttributes(ctx context.Context, req *service.Request, lb *slb.LoadBalancer) ([]service.Warning, error) {
	s := req.Settings
	lbs := s.LoadBalancer
	id := lb.LoadBalancerId
	a := p.api
	shared := req.Binding.Shared()
	var warnings []service.Warning
	// frozen reports, on a shared load balancer, the annotation that asks
	// for want where the cloud has have; the caller then writes nothing.
	frozen := func(suffix, have, want string) bool {
		if !shared {
			return false
		}
		warnings = append(warnings, service.SharedSettingIgnored(req.Binding, s.Key(suffix), have, want))
		return true
	}
	if lbs.Name != nil && *lbs.Name != lb.LoadBalancerName && !frozen("name", lb.LoadBalancerName, *lbs.Name) {
		r := slb.CreateSetLoadBalancerNameRequest()
		r.LoadBalancerId, r.LoadBalancerName = id, *lbs.Name
		if _, err := cloud.Do(ctx, a.c, cloud.SLB, "SetLoadBalancerName", func(c *cloud.Clients) (*slb.SetLoadBalancerNameResponse, error) {
			return c.SLB.SetLoadBalancerName(r)
		}); err != nil {
			return warnings, fmt.Errorf("rename load balancer %s: %w", id, err)
		}
	}
	if lbs.InstanceChargeType != nil && !strings.EqualFold(*lbs.InstanceChargeType, lb.InstanceChargeType) && lb.InstanceChargeType != "" &&
		!frozen("instance-charge-type", lb.InstanceChargeType, *lbs.InstanceChargeType) {
		r := slb.CreateModifyLoadBalancerInstanceChargeTypeRequest()
		r.LoadBalancerId, r.InstanceChargeType = id, *lbs.InstanceChargeType
		if *lbs.InstanceChargeType == "PayBySpec" {
			r.LoadBalancerSpec = annotations.Or(lbs.Spec, annotations.DefaultSpec)
		}
		if _, err := cloud.Do(ctx, a.c, cloud.SLB, "ModifyLoadBalancerInstanceChargeType", func(c *cloud.Clients) (*slb.ModifyLoadBalancerInstanceChargeTypeResponse, error) {
			return c.SLB.ModifyLoadBalancerInstanceChargeType(r)
		}); err != nil {
			return warnings, fmt.Errorf("change the instance charge type of %s: %w", id, err)
		}
		lb.LoadBalancerSpec = r.LoadBalancerSpec
	}
	if lbs.Spec != nil && *lbs.Spec != lb.LoadBalancerSpec && !strings.EqualFold(annotations.Or(lbs.InstanceChargeType, lb.InstanceChargeType), "PayByCLCU") &&
		!frozen("spec", lb.LoadBalancerSpec, *lbs.Spec) {
		r := slb.CreateModifyLoadBalancerInstanceSpecRequest()
		r.LoadBalancerId, r.LoadBalancerSpec = id, *lbs.Spec
		if _, err := cloud.Do(ctx, a.c, cloud.SLB, "ModifyLoadBalancerInstanceSpec", func(c *cloud.Clients) (*slb.ModifyLoadBalancerInstanceSpecResponse, error) {
			return c.SLB.ModifyLoadBalancerInstanceSpec(r)
		}); err != nil {
			return warnings, fmt.Errorf("change the spec of %s: %w", id, err)
		}
	}
	chargeDiffers := lbs.ChargeType != nil && !strings.EqualFold(*lbs.ChargeType, lb.InternetChargeType)
	bandwidthDiffers := lbs.Bandwidth != nil && *lbs.Bandwidth != lb.Bandwidth && strings.EqualFold(annotations.Or(lbs.ChargeType, lb.InternetChargeType), "paybybandwidth")
	switch {
	case lb.AddressType != "internet" || !chargeDiffers && !bandwidthDiffers:
	case shared:
		if chargeDiffers {
			frozen("charge-type", lb.InternetChargeType, *lbs.ChargeType)
		}
		if bandwidthDiffers {
			frozen("bandwidth", strconv.Itoa(lb.Bandwidth), strconv.Itoa(*lbs.Bandwidth))
		}
	default:
		r := slb.CreateModifyLoadBalancerInternetSpecRequest()
		r.LoadBalancerId = id
		r.InternetChargeType = annotations.Or(lbs.ChargeType, lb.InternetChargeType)
		if strings.EqualFold(r.InternetChargeType, "paybybandwidth") {
			r.Bandwidth = requests.NewInteger(annotations.Or(lbs.Bandwidth, annotations.DefaultBandwidth))
		}
		if _, err := cloud.Do(ctx, a.c, cloud.SLB, "ModifyLoadBalancerInternetSpec", func(c *cloud.Clients) (*slb.ModifyLoadBalancerInternetSpecResponse, error) {
			return c.SLB.ModifyLoadBalancerInternetSpec(r)
		}); err != nil {
			return warnings, fmt.Errorf("change the internet charge of %s: %w", id, err)
		}
	}
	if lbs.DeleteProtection != nil && onOff(*lbs.DeleteProtection) != lb.DeleteProtection && !frozen("delete-protection", lb.DeleteProtection, onOff(*lbs.DeleteProtection)) {
		if err := a.setDeleteProtection(ctx, id, onOff(*lbs.DeleteProtection)); err != nil {
			return warnings, fmt.Errorf("set delete protection of %s: %w", id, err)
		}
	}
	if lbs.ModificationProtection != nil && *lbs.ModificationProtection != lb.ModificationProtectionStatus &&
		!frozen("modification-protection", lb.ModificationProtectionStatus, *lbs.ModificationProtection) {
		if err := a.setModificationProtection(ctx, id, *lbs.ModificationProtection); err != nil {
			return warnings, fmt.Errorf("set modification protection of %s: %w", id, err)
		}
	}
	want := append([]naming.Tag(nil), lbs.AdditionalTags...)
	if s.Reused() {
		want = append(want, naming.ReusedTag())
	}
	current := facts(lb).Tags
	set, remove := naming.PlanTags(current, want, !s.Reused())
	if shared {
		var ignored []naming.Tag
		set, ignored = service.SplitSharedTags(set)
		if len(ignored) > 0 {
			frozen("additional-resource-tags", service.TagsHave(current, ignored), service.TagsWant(ignored))
		}
	}
	if err := a.tag(ctx, id, set); err != nil {
		return warnings, fmt.Errorf("tag load balancer %s: %w", id, err)
	}
	if len(remove) > 0 {
		if err := a.untag(ctx, id, remove); err != nil {
			return warnings, fmt.Errorf("remove tags %s dropped from %s from load balancer %s: %w", strings.Join(remove, ", "), s.Key("additional-resource-tags"), id, err)
		}
	}
	return warnings, nil
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
		what, err := p.deleteOwn(ctx, lb, s.LoadBalancer.PreserveOnDelete)
		if err != nil {
			return "", err
		}
		done = append(done, what)
	}
	if s.LoadBalancer.PreserveOnDelete || soakBugSkipACLCleanup {
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
	ref := req.Identity().Ref
	listeners, err := p.api.listeners(ctx, id)
	if cloud.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("list listeners of reused %s: %w", id, err)
	}
	plan := PlanListeners(nil, listeners, ref, false, nil)
	if err := p.applyListeners(ctx, id, plan, nil); err != nil && !cloud.IsNotFound(err) {
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

// boundGroups are the ids of the groups the model binds with vgroup-port.
func boundGroups(m *Model) map[string]bool {
	out := map[string]bool{}
	for _, g := range m.Groups {
		if g.BoundID != "" {
			out[g.BoundID] = true
		}
	}
	return out
}

// releaseMembers removes the Service's members (those whose description
// names it) from the load balancer's user-made groups it is no longer
// bound to (all but keep). Only groups whose name follows no Service's
// naming are read, one call each: a group the CCM made for another Service
// is never bindable, so the Service cannot have members there.
func (p *Provider) releaseMembers(ctx context.Context, req *service.Request, groups []CurrentGroup, keep map[string]bool) error {
	ref := req.Identity().Ref
	for _, g := range groups {
		if _, named := naming.ParseCLB(g.Name); named || keep[g.ID] {
			continue
		}
		cur, err := p.api.members(ctx, g.ID)
		if cloud.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read backends of vServer group %s: %w", g.ID, err)
		}
		var mine []Backend
		for _, b := range cur {
			if _, ok := ref.OwnsCLB(b.Description); ok {
				mine = append(mine, b)
			}
		}
		if len(mine) == 0 {
			continue
		}
		klog.FromContext(ctx).Info("Removing the Service's backends from a vServer group it is no longer bound to", "group", g.ID, "backends", len(mine))
		if err := p.api.applyMembers(ctx, g.ID, BackendPlan{Remove: mine}, p.opts.BatchSize); err != nil && !cloud.IsNotFound(err) {
			return fmt.Errorf("remove backends from vServer group %s: %w", g.ID, err)
		}
	}
	return nil
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
