package vpc

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Seed creates the seed's VPCs (with vSwitches and route tables) and EIPs;
// it implements api.Seeder.
func (s *Service) Seed(region string, sd *api.Seed) (map[string][]string, error) {
	now := time.Now()
	out := map[string][]string{}
	for i, sv := range sd.VPCs {
		r := sv.RegionID
		if r == "" {
			r = region
		}
		v, err := s.addVPC(r, sv.ID, sv.Name, "", sv.CIDRBlock, sv.RouteTableID, api.TagsFromMap(sv.Tags), now)
		if err != nil {
			return nil, fmt.Errorf("seed vpc %d (%s): %w", i, sv.CIDRBlock, err)
		}
		if sv.EnableIPv6 || sv.IPv6CIDRBlock != "" {
			if err := s.enableIPv6(v, sv.IPv6CIDRBlock); err != nil {
				return nil, fmt.Errorf("seed vpc %s: %w", v.ID, err)
			}
		}
		out["vpc"] = append(out["vpc"], v.ID)
		out["routeTable"] = append(out["routeTable"], v.SystemRouteTableID)
		for _, rt := range sv.RouteTables {
			id := rt.ID
			if id == "" {
				id = store.NewID("vtb")
			}
			if _, dup := s.state.RouteTables[id]; dup {
				return nil, fmt.Errorf("seed vpc %s: route table %s already exists", v.ID, id)
			}
			s.state.RouteTables[id] = &RouteTable{ID: id, Name: rt.Name, VpcID: v.ID, VRouterID: v.VRouterID, Type: TypeCustom, RegionID: r, CreatedAt: now, Seq: s.state.Next()}
			out["routeTable"] = append(out["routeTable"], id)
		}
		for _, ss := range sv.VSwitches {
			sw, err := s.addVSwitch(v, ss.ID, ss.Name, "", ss.ZoneID, ss.CIDRBlock, ss.RouteTableID, nil, now)
			if err != nil {
				return nil, fmt.Errorf("seed vswitch %s in %s: %w", ss.CIDRBlock, v.ID, err)
			}
			if ss.IPv6CIDRBlock != nil {
				if err := s.setVSwitchIPv6(v, sw, *ss.IPv6CIDRBlock); err != nil {
					return nil, fmt.Errorf("seed vswitch %s in %s: %w", sw.ID, v.ID, err)
				}
			}
			out["vswitch"] = append(out["vswitch"], sw.ID)
		}
	}
	for i, se := range sd.EIPs {
		a, err := netip.ParseAddr(se.IPAddress)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("seed eip %d: invalid ipAddress %q", i, se.IPAddress)
		}
		id := se.ID
		if id == "" {
			id = store.NewID("eip")
		}
		if _, dup := s.state.EIPs[id]; dup {
			return nil, fmt.Errorf("seed eip %d: %s already exists", i, id)
		}
		for _, o := range s.state.EIPs {
			if o.IPAddress == a.String() {
				return nil, fmt.Errorf("seed eip %d: address %s already allocated to %s", i, a, o.ID)
			}
		}
		bw := se.Bandwidth
		if bw == "" {
			bw = "5"
		}
		typ := se.InstanceType
		if typ == "" && se.InstanceID != "" {
			typ = "EcsInstance"
		}
		s.state.EIPs[id] = &EIP{
			ID: id, IPAddress: a.String(), Bandwidth: bw, InternetChargeType: "PayByTraffic", RegionID: region,
			InstanceID: se.InstanceID, InstanceType: typ, AllocatedAt: now, Seq: s.state.Next(),
		}
		out["eip"] = append(out["eip"], id)
	}
	return out, nil
}
