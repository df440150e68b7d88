package clb

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Creating the Service's CLB: idempotent by its ClientToken, described
// from the create's own answer rather than read back.

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
