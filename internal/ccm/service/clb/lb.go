package clb

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// The load balancer itself: found by id, tag or name, created idempotently
// by its ClientToken and described from the create's own answer, its
// attributes (name, charge, spec, bandwidth, protections, tags) brought to
// the annotations and left alone on a shared one, and its status.

// modificationReason is recorded with the ConsoleProtection we set.
const modificationReason = "managed.by.ack"

// facts describes a CLB for the ownership rules.
func facts(lb *slb.LoadBalancer) *service.LoadBalancer {
	tags := make(map[string]string, len(lb.Tags.Tag))
	for _, t := range lb.Tags.Tag {
		tags[t.TagKey] = t.TagValue
	}
	return &service.LoadBalancer{
		ID: lb.LoadBalancerId, Tags: tags, VpcID: lb.VpcId, AddressType: strings.ToLower(lb.AddressType),
		ResourceGroupID: lb.ResourceGroupId, Addresses: []string{lb.Address}, Native: lb,
		Created: createdAt(lb), Attributes: attributes(lb),
	}
}

// createdAt is when lb was created; zero when the answer does not say.
func createdAt(lb *slb.LoadBalancer) time.Time {
	if lb.CreateTimeStamp > 0 {
		return time.UnixMilli(lb.CreateTimeStamp)
	}
	return time.Time{}
}

// either is the answer's value, else what the request asked for.
func either(answer, asked string) string {
	if answer != "" {
		return answer
	}
	return asked
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

func (a api) describeLBs(ctx context.Context, set func(*slb.DescribeLoadBalancersRequest)) ([]slb.LoadBalancer, error) {
	req := slb.CreateDescribeLoadBalancersRequest()
	req.PageSize = requests.NewInteger(100)
	set(req)
	resp, err := cloud.Call(ctx, a.c, req, slb.CreateDescribeLoadBalancersResponse)
	if err != nil {
		return nil, err
	}
	return resp.LoadBalancers.LoadBalancer, nil
}

func (a api) lbByID(ctx context.Context, id string) (*slb.LoadBalancer, error) {
	lbs, err := a.describeLBs(ctx, func(r *slb.DescribeLoadBalancersRequest) { r.LoadBalancerId = id })
	if err != nil {
		if cloud.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	for i := range lbs {
		if lbs[i].LoadBalancerId == id {
			return &lbs[i], nil
		}
	}
	return nil, nil
}

// lbByTag returns every load balancer tagged key=value: a lost create
// answer and a crash can leave two for one Service.
func (a api) lbByTag(ctx context.Context, key, value string) ([]*slb.LoadBalancer, error) {
	lbs, err := a.lbsByTag(ctx, key, value)
	if err != nil {
		return nil, err
	}
	out := make([]*slb.LoadBalancer, 0, len(lbs))
	for i := range lbs {
		out = append(out, &lbs[i])
	}
	return out, nil
}

func (a api) lbByName(ctx context.Context, name string) (*slb.LoadBalancer, error) {
	lbs, err := a.describeLBs(ctx, func(r *slb.DescribeLoadBalancersRequest) { r.LoadBalancerName = name })
	if err != nil {
		return nil, err
	}
	for i := range lbs {
		if lbs[i].LoadBalancerName == name {
			return &lbs[i], nil
		}
	}
	return nil, nil
}

func tagValue(lb *slb.LoadBalancer, key string) (string, bool) {
	for _, t := range lb.Tags.Tag {
		if t.TagKey == key {
			return t.TagValue, true
		}
	}
	return "", false
}

func (a api) tag(ctx context.Context, lbID string, tags []naming.Tag) error {
	if len(tags) == 0 {
		return nil
	}
	req := slb.CreateTagResourcesRequest()
	req.ResourceType = "instance"
	req.ResourceId = &[]string{lbID}
	ts := make([]slb.TagResourcesTag, 0, len(tags))
	for _, t := range tags {
		ts = append(ts, slb.TagResourcesTag{Key: t.Key, Value: t.Value})
	}
	req.Tag = &ts
	_, err := cloud.Call(ctx, a.c, req, slb.CreateTagResourcesResponse)
	return err
}

func (a api) untag(ctx context.Context, lbID string, keys []string) error {
	req := slb.CreateUntagResourcesRequest()
	req.ResourceType = "instance"
	req.ResourceId = &[]string{lbID}
	req.TagKey = &keys
	_, err := cloud.Call(ctx, a.c, req, slb.CreateUntagResourcesResponse)
	return err
}

func (a api) setDeleteProtection(ctx context.Context, lbID, v string) error {
	req := slb.CreateSetLoadBalancerDeleteProtectionRequest()
	req.LoadBalancerId, req.DeleteProtection = lbID, v
	_, err := cloud.Call(ctx, a.c, req, slb.CreateSetLoadBalancerDeleteProtectionResponse)
	return err
}

func (a api) setModificationProtection(ctx context.Context, lbID, v string) error {
	req := slb.CreateSetLoadBalancerModificationProtectionRequest()
	req.LoadBalancerId, req.ModificationProtectionStatus = lbID, v
	if v == "ConsoleProtection" {
		req.ModificationProtectionReason = modificationReason
	}
	_, err := cloud.Call(ctx, a.c, req, slb.CreateSetLoadBalancerModificationProtectionResponse)
	return err
}

func (a api) deleteLB(ctx context.Context, lbID string) error {
	req := slb.CreateDeleteLoadBalancerRequest()
	req.LoadBalancerId = lbID
	_, err := cloud.Call(ctx, a.c, req, slb.CreateDeleteLoadBalancerResponse)
	if cloud.IsNotFound(err) {
		return nil
	}
	return err
}

// lbsByTag lists every load balancer tagged key=value, page by page.
func (a api) lbsByTag(ctx context.Context, key, value string) ([]slb.LoadBalancer, error) {
	tags, _ := json.Marshal([]map[string]string{{"TagKey": key, "TagValue": value}})
	var out []slb.LoadBalancer
	for page := 1; ; page++ {
		req := slb.CreateDescribeLoadBalancersRequest()
		req.PageSize = requests.NewInteger(listPageSize)
		req.PageNumber = requests.NewInteger(page)
		req.Tags = string(tags)
		resp, err := cloud.Call(ctx, a.c, req, slb.CreateDescribeLoadBalancersResponse)
		if err != nil {
			return nil, fmt.Errorf("list load balancers tagged %s=%s, page %d: %w", key, value, page, err)
		}
		got := resp.LoadBalancers.LoadBalancer
		out = append(out, got...)
		if len(got) < listPageSize || len(out) >= resp.TotalCount {
			return out, nil
		}
	}
}

// listPageSize is the API's largest DescribeLoadBalancers page.
const listPageSize = 100

// create makes the Service's load balancer with our tags and, unless the
// annotations say otherwise, delete and modification protection on, then
// runs the rest of the sync on it.
func (p *Provider) create(ctx context.Context, req *service.Request) (*service.Result, error) {
	s := req.Settings
	lbs := s.LoadBalancer
	r := slb.CreateCreateLoadBalancerRequest()
	r.LoadBalancerName = annotations.Or(lbs.Name, req.Identity.Name)
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
	deleteProtection := annotations.Or(lbs.DeleteProtection, annotations.DefaultDeleteProtection)
	r.ModificationProtectionStatus = annotations.Or(lbs.ModificationProtection, annotations.DefaultModificationProtection)
	if r.ModificationProtectionStatus == "ConsoleProtection" {
		r.ModificationProtectionReason = modificationReason
	}
	r.DeleteProtection = onOff(deleteProtection)
	tags := req.Identity.CreationTags(lbs.AdditionalTags)
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
		resp, err := cloud.Call(ctx, p.opts.Cloud, r, slb.CreateCreateLoadBalancerResponse)
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

func attributes(lb *slb.LoadBalancer) annotations.CloudLBAttributes {
	return annotations.CloudLBAttributes{
		AddressType: lb.AddressType, NetworkType: lb.NetworkType, VSwitchID: lb.VSwitchId,
		MasterZoneID: lb.MasterZoneId, SlaveZoneID: lb.SlaveZoneId, IPVersion: lb.AddressIPVersion,
		ResourceGroupID: lb.ResourceGroupId, Address: lb.Address,
	}
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
		if _, err := cloud.Call(ctx, a.c, r, slb.CreateSetLoadBalancerNameResponse); err != nil {
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
		if _, err := cloud.Call(ctx, a.c, r, slb.CreateModifyLoadBalancerInstanceChargeTypeResponse); err != nil {
			return warnings, fmt.Errorf("change the instance charge type of %s: %w", id, err)
		}
		lb.LoadBalancerSpec = r.LoadBalancerSpec
	}
	if lbs.Spec != nil && *lbs.Spec != lb.LoadBalancerSpec && !strings.EqualFold(annotations.Or(lbs.InstanceChargeType, lb.InstanceChargeType), "PayByCLCU") &&
		!frozen("spec", lb.LoadBalancerSpec, *lbs.Spec) {
		r := slb.CreateModifyLoadBalancerInstanceSpecRequest()
		r.LoadBalancerId, r.LoadBalancerSpec = id, *lbs.Spec
		if _, err := cloud.Call(ctx, a.c, r, slb.CreateModifyLoadBalancerInstanceSpecResponse); err != nil {
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
		if _, err := cloud.Call(ctx, a.c, r, slb.CreateModifyLoadBalancerInternetSpecResponse); err != nil {
			return warnings, fmt.Errorf("change the internet charge of %s: %w", id, err)
		}
	}
	err := p.updateProtectionsAndTags(ctx, req, lb, frozen)
	return warnings, err
}

// updateProtectionsAndTags puts lb's protections and tags where the
// annotations want them; frozen reports a setting a shared load balancer
// keeps (and says whether it does).
func (p *Provider) updateProtectionsAndTags(ctx context.Context, req *service.Request, lb *slb.LoadBalancer, frozen func(suffix, have, want string) bool) error {
	s := req.Settings
	lbs := s.LoadBalancer
	id := lb.LoadBalancerId
	a := p.api
	shared := req.Binding.Shared()
	if lbs.DeleteProtection != nil {
		if want := onOff(*lbs.DeleteProtection); want != lb.DeleteProtection && !frozen("delete-protection", lb.DeleteProtection, want) {
			if err := a.setDeleteProtection(ctx, id, want); err != nil {
				return fmt.Errorf("set delete protection of %s: %w", id, err)
			}
		}
	}
	if lbs.ModificationProtection != nil && *lbs.ModificationProtection != lb.ModificationProtectionStatus &&
		!frozen("modification-protection", lb.ModificationProtectionStatus, *lbs.ModificationProtection) {
		if err := a.setModificationProtection(ctx, id, *lbs.ModificationProtection); err != nil {
			return fmt.Errorf("set modification protection of %s: %w", id, err)
		}
	}
	current := facts(lb).Tags
	set, remove := service.PlanLBTags(current, s, shared, frozen)
	if err := a.tag(ctx, id, set); err != nil {
		return fmt.Errorf("tag load balancer %s: %w", id, err)
	}
	if len(remove) > 0 {
		if err := a.untag(ctx, id, remove); err != nil {
			return fmt.Errorf("remove tags %s dropped from %s from load balancer %s: %w", strings.Join(remove, ", "), s.Key("additional-resource-tags"), id, err)
		}
	}
	return nil
}

// EventEIPFailed reports that external-ip-type eip could not be honoured;
// the status then falls back to the load balancer's own address. The
// reason is the existing CCM's, so alerts written for it keep working.
const EventEIPFailed = "FailedSetEIPAddress"

// eipPageSize is the largest page DescribeEipAddresses serves.
const eipPageSize = 100

// wantsEIPs reports whether the status lists the EIPs bound to the load
// balancer: external-ip-type eip, unless hostname overrides everything.
func wantsEIPs(s *annotations.Settings) bool {
	return s.LoadBalancer.Hostname == nil && s.LoadBalancer.ExternalIPType != nil && *s.LoadBalancer.ExternalIPType == "eip"
}

// status is the Service status for lb: the hostname annotation, else with
// external-ip-type eip one entry per EIP bound to the load balancer, else
// (and whenever the EIPs cannot be had) the load balancer's address.
func (p *Provider) status(ctx context.Context, lb *slb.LoadBalancer, s *annotations.Settings) ([]corev1.LoadBalancerIngress, []service.Warning) {
	if !wantsEIPs(s) {
		return ingress(lb, s), nil
	}
	ips, err := p.api.eips(ctx, lb.LoadBalancerId)
	if err == nil && len(ips) > 0 {
		out := make([]corev1.LoadBalancerIngress, 0, len(ips))
		for _, ip := range ips {
			out = append(out, corev1.LoadBalancerIngress{IP: ip})
		}
		return out, nil
	}
	why := "no EIP is bound to it"
	if err != nil {
		why = describe(err)
	}
	w := service.Warning{Reason: EventEIPFailed, Message: fmt.Sprintf(
		"%s is eip but the EIPs of load balancer %s cannot be reported (%s); the status shows the load balancer address %s instead",
		s.Key("external-ip-type"), lb.LoadBalancerId, why, lb.Address)}
	return ingress(lb, s), []service.Warning{w}
}

// refreshStatus is the hash-gated pass's status check: only Services whose
// status lists EIPs need one, because an EIP can be bound or unbound
// without the Service changing. It reads the EIPs, and the load balancer's
// address only when it must fall back to it.
func (p *Provider) refreshStatus(ctx context.Context, lbID string, s *annotations.Settings) ([]corev1.LoadBalancerIngress, []service.Warning, error) {
	if !wantsEIPs(s) {
		return nil, nil, nil
	}
	ips, err := p.api.eips(ctx, lbID)
	if err == nil && len(ips) > 0 {
		out := make([]corev1.LoadBalancerIngress, 0, len(ips))
		for _, ip := range ips {
			out = append(out, corev1.LoadBalancerIngress{IP: ip})
		}
		return out, nil, nil
	}
	lb, lerr := p.api.lbByID(ctx, lbID)
	if lerr != nil {
		return nil, nil, fmt.Errorf("read the address of load balancer %s: %w", lbID, lerr)
	}
	if lb == nil {
		return nil, nil, service.ErrFullSyncNeeded
	}
	in, ws := p.status(ctx, lb, s)
	return in, ws, nil
}

// describe puts the cloud's code first, as the controller's events do.
func describe(err error) string {
	if code := cloud.CodeOf(err); code != "" {
		return fmt.Sprintf("[%s] %v", code, err)
	}
	return err.Error()
}

// eips lists the addresses of the EIPs bound to a load balancer, all pages.
func (a api) eips(ctx context.Context, lbID string) ([]string, error) {
	var out []string
	for page := 1; ; page++ {
		req := vpc.CreateDescribeEipAddressesRequest()
		req.AssociatedInstanceType = "SlbInstance"
		req.AssociatedInstanceId = lbID
		req.PageNumber = requests.NewInteger(page)
		req.PageSize = requests.NewInteger(eipPageSize)
		resp, err := cloud.Call(ctx, a.c, req, vpc.CreateDescribeEipAddressesResponse)
		if err != nil {
			return nil, fmt.Errorf("list the EIPs of load balancer %s: %w", lbID, err)
		}
		for _, e := range resp.EipAddresses.EipAddress {
			out = append(out, e.IpAddress)
		}
		if len(resp.EipAddresses.EipAddress) < eipPageSize || len(out) >= resp.TotalCount {
			// Sorted, so that the status is written only when the set changes.
			sort.Strings(out)
			return out, nil
		}
	}
}
