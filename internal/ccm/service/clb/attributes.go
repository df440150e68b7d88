package clb

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// The attributes of a CLB the annotations govern (name, charge, spec,
// bandwidth, protections, tags), left alone on a shared one.

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
	if lbs.DeleteProtection != nil && onOff(*lbs.DeleteProtection) != lb.DeleteProtection && !frozen("delete-protection", lb.DeleteProtection, onOff(*lbs.DeleteProtection)) {
		if err := a.setDeleteProtection(ctx, id, onOff(*lbs.DeleteProtection)); err != nil {
			return fmt.Errorf("set delete protection of %s: %w", id, err)
		}
	}
	if lbs.ModificationProtection != nil && *lbs.ModificationProtection != lb.ModificationProtectionStatus &&
		!frozen("modification-protection", lb.ModificationProtectionStatus, *lbs.ModificationProtection) {
		if err := a.setModificationProtection(ctx, id, *lbs.ModificationProtection); err != nil {
			return fmt.Errorf("set modification protection of %s: %w", id, err)
		}
	}
	set, remove := service.PlanLBTags(facts(lb).Tags, s, shared, frozen)
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
