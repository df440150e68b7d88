package nlb

import (
	"context"
	"fmt"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// The attributes of an NLB the annotations govern (name, cross-zone,
// zones, address types, bandwidth package, security groups, protections,
// tags), left alone on a shared one.

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
	if err := p.updateSecurityGroups(ctx, req, lb, sr, frozen); err != nil {
		return err
	}
	return p.updateProtectionsAndTags(ctx, req, lb, frozen)
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

// updateSecurityGroups makes lb join and leave the user's security groups
// as security-group-ids says (a borrowed load balancer only joins).
func (p *Provider) updateSecurityGroups(ctx context.Context, req *service.Request, lb *lbInfo, sr *sourceRanges, frozen func(suffix, have, want string) bool) error {
	s := req.Settings
	lbs := s.LoadBalancer
	id := lb.ID
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
	return nil
}

// updateProtectionsAndTags turns on the protections of a load balancer of
// our own and puts its tags where the annotations want them.
func (p *Provider) updateProtectionsAndTags(ctx context.Context, req *service.Request, lb *lbInfo, frozen func(suffix, have, want string) bool) error {
	s := req.Settings
	id := lb.ID
	if !s.Reused() && (!lb.DeletionProtection || lb.ModificationProtection != "ConsoleProtection") {
		if err := p.api.protection(ctx, id, true); err != nil {
			return fmt.Errorf("turn on the protections of %s: %w", id, err)
		}
	}
	set, remove := service.PlanLBTags(lb.Tags, s, req.Binding.Shared(), frozen)
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
