package vpc

import (
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func errVpcNotFound(id string) error {
	return api.NotFound("InvalidVpcId.NotFound", "Specified VPC %s does not exist.", id)
}

func errVSwitchNotFound(id string) error {
	return api.NotFound("InvalidVSwitchId.NotFound", "Specified virtual switch %s does not exist.", id)
}

// addVPC creates a VPC with its vRouter, system route table and the cloud
// service system route, as CreateVpc does in the real cloud.
func (s *Service) addVPC(region, id, name, desc, cidr, tableID string, tags []api.Tag, now time.Time) (*VPC, error) {
	p, ok := parseCIDR(cidr, false)
	if !ok || p.Bits() < 8 || p.Bits() > 28 {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidCidrBlock.Malformed", "Specified CIDR block %q is not valid: it must be an IPv4 network with a mask of 8 to 28 bits.", cidr)
	}
	inPrivate := false
	for _, r := range privateRanges {
		if within(p, r) {
			inPrivate = true
		}
	}
	if !inPrivate {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidCidrBlock.Malformed", "Specified CIDR block %s must lie in 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16.", cidr)
	}
	if id == "" {
		id = store.NewID("vpc")
	}
	if tableID == "" {
		tableID = store.NewID("vtb")
	}
	if _, dup := s.state.VPCs[id]; dup {
		return nil, api.InvalidParameter("VpcId", "The VPC %s already exists.", id)
	}
	if _, dup := s.state.RouteTables[tableID]; dup {
		return nil, api.InvalidParameter("RouteTableId", "The route table %s already exists.", tableID)
	}
	v := &VPC{
		ID: id, Name: name, Description: desc, CIDRBlock: p.String(), RegionID: region,
		VRouterID: store.NewID("vrt"), SystemRouteTableID: tableID, Tags: tags, CreatedAt: now, Seq: s.state.Next(),
	}
	s.state.VPCs[id] = v
	s.state.RouteTables[tableID] = &RouteTable{ID: tableID, VpcID: id, VRouterID: v.VRouterID, Type: TypeSystem, RegionID: region, CreatedAt: now, Seq: s.state.Next()}
	s.addSystemRoute(tableID, cgnat.String(), "service", now)
	return v, nil
}

func (s *Service) addSystemRoute(tableID, cidr, hopType string, now time.Time) {
	id := store.NewID("rte")
	s.state.RouteEntries[id] = &RouteEntry{ID: id, TableID: tableID, DestCIDR: cidr, Type: TypeSystem, NextHopType: hopType, ReadyAt: now, ModifiedAt: now, Seq: s.state.Next()}
}

var zoneSuffix = regexp.MustCompile(`^-[a-z]$`)

// addVSwitch validates and creates a vSwitch with its system route entry.
func (s *Service) addVSwitch(v *VPC, id, name, desc, zone, cidr, tableID string, tags []api.Tag, now time.Time) (*VSwitch, error) {
	if len(zone) <= len(v.RegionID) || zone[:len(v.RegionID)] != v.RegionID || !zoneSuffix.MatchString(zone[len(v.RegionID):]) {
		return nil, api.NotFound("InvalidZoneId.NotFound", "The specified zone %q does not exist in region %s.", zone, v.RegionID)
	}
	p, ok := parseCIDR(cidr, false)
	if !ok || p.Bits() < 16 || p.Bits() > 29 {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidCidrBlock.Malformed", "Specified CIDR block %q is not valid: it must be an IPv4 network with a mask of 16 to 29 bits.", cidr)
	}
	vp, _ := parseCIDR(v.CIDRBlock, false)
	if !within(p, vp) {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidCidrBlock.Mismatch", "Specified CIDR block %s is not inside the VPC CIDR block %s.", cidr, v.CIDRBlock)
	}
	for _, o := range s.state.VSwitches {
		if o.VpcID != v.ID {
			continue
		}
		if op, ok := parseCIDR(o.CIDRBlock, false); ok && op.Overlaps(p) {
			return nil, api.Errorf(http.StatusBadRequest, "InvalidCidrBlock.Overlapped", "Specified CIDR block %s overlaps with the CIDR block %s of vSwitch %s.", cidr, o.CIDRBlock, o.ID)
		}
	}
	if tableID == "" {
		tableID = v.SystemRouteTableID
	}
	if t, ok := s.state.RouteTables[tableID]; !ok || t.VpcID != v.ID {
		return nil, api.NotFound("InvalidRouteTableId.NotFound", "The specified route table %s does not exist in VPC %s.", tableID, v.ID)
	}
	if id == "" {
		id = store.NewID("vsw")
	}
	if _, dup := s.state.VSwitches[id]; dup {
		return nil, api.InvalidParameter("VSwitchId", "The vSwitch %s already exists.", id)
	}
	sw := &VSwitch{
		ID: id, Name: name, Description: desc, VpcID: v.ID, ZoneID: zone, CIDRBlock: p.String(), RegionID: v.RegionID,
		RouteTableID: tableID, Tags: tags, UsedIPs: map[string]bool{}, CreatedAt: now, Seq: s.state.Next(),
	}
	s.state.VSwitches[id] = sw
	s.addSystemRoute(tableID, sw.CIDRBlock, "local", now)
	return sw, nil
}

// regionVPC returns a VPC of the request's region.
func (s *Service) regionVPC(req *api.Request, id string) (*VPC, error) {
	return api.InRegion(req, s.state.VPCs, id, func(v *VPC) string { return v.RegionID }, errVpcNotFound)
}

// requestedVPC returns the VPC named by the request's required VpcId, in the request's region.
func (s *Service) requestedVPC(req *api.Request) (*VPC, error) {
	return api.Lookup(req, "VpcId", s.regionVPC)
}

// requestedVSwitch returns the vSwitch named by the request's required VSwitchId, in the request's region.
func (s *Service) requestedVSwitch(req *api.Request) (*VSwitch, error) {
	return api.Lookup(req, "VSwitchId", s.regionVSwitch)
}

func (s *Service) regionVSwitch(req *api.Request, id string) (*VSwitch, error) {
	return api.InRegion(req, s.state.VSwitches, id, func(v *VSwitch) string { return v.RegionID }, errVSwitchNotFound)
}

func (s *Service) createVpc(req *api.Request) (map[string]any, error) {
	if ids, ok, err := s.state.Tokens.Replay(req, s.exists); err != nil {
		return nil, err
	} else if ok {
		v := s.state.VPCs[ids[0]]
		return map[string]any{"VpcId": v.ID, "VRouterId": v.VRouterID, "RouteTableId": v.SystemRouteTableID, "ResourceGroupId": api.ResourceGroupOr(v.ResourceGroupID)}, nil
	}
	p := req.Params
	cidr := p.String("CidrBlock")
	if cidr == "" {
		cidr = "172.16.0.0/12"
	}
	tags := p.Tags()
	if err := validTags(tags); err != nil {
		return nil, err
	}
	want6, enable6, err := ipv6Params(p)
	if err != nil {
		return nil, err
	}
	v6 := &VPC{}
	if enable6 {
		if err := s.enableIPv6(v6, want6); err != nil {
			return nil, err
		}
	}
	if dry, err := p.Bool("DryRun", false); err != nil {
		return nil, err
	} else if dry {
		return nil, api.Errorf(http.StatusBadRequest, "DryRunOperation", "Request validation has been passed with DryRun flag set.")
	}
	v, err := s.addVPC(req.RegionID, "", p.String("VpcName"), p.String("Description"), cidr, "", tags, req.Now)
	if err != nil {
		return nil, err
	}
	v.IPv6CIDRBlock = v6.IPv6CIDRBlock
	v.ResourceGroupID = api.ResourceGroupOr(p.String("ResourceGroupId"))
	s.state.Tokens.Remember(req, v.ID)
	return map[string]any{"VpcId": v.ID, "VRouterId": v.VRouterID, "RouteTableId": v.SystemRouteTableID, "ResourceGroupId": api.ResourceGroupOr(v.ResourceGroupID)}, nil
}

func (s *Service) deleteVpc(req *api.Request) (map[string]any, error) {
	v, err := s.requestedVPC(req)
	if err != nil {
		return nil, err
	}
	id := v.ID
	if n := s.countIn(s.compute.InstancesInVPC, id); n > 0 {
		return nil, api.Errorf(http.StatusBadRequest, "DependencyViolation.Instance", "Specified object has dependent resources: %d instance(s) still in VPC %s.", n, id)
	}
	for _, sw := range s.state.VSwitches {
		if sw.VpcID == id {
			return nil, api.Errorf(http.StatusBadRequest, "DependencyViolation.VSwitch", "Specified object has dependent resources: vSwitch %s still in VPC %s.", sw.ID, id)
		}
	}
	if n := s.countIn(s.compute.SecurityGroupsInVPC, id); n > 0 {
		return nil, api.Errorf(http.StatusBadRequest, "DependencyViolation.SecurityGroup", "Specified object has dependent resources: %d security group(s) still in VPC %s.", n, id)
	}
	for _, t := range s.state.RouteTables {
		if t.VpcID == id && t.Type == TypeCustom {
			return nil, api.Errorf(http.StatusBadRequest, "DependencyViolation.RouteTable", "VPC cannot be deleted when custom route table %s exists.", t.ID)
		}
	}
	for _, e := range s.state.RouteEntries {
		if e.TableID == v.SystemRouteTableID && e.Type == TypeCustom {
			return nil, api.Errorf(http.StatusBadRequest, "DependencyViolation.RouteEntry", "Specified object has dependent resources: custom route entry %s.", e.ID)
		}
	}
	if req.Now.Before(v.RouteBusyUntil) {
		return nil, errTaskConflict()
	}
	for eid, e := range s.state.RouteEntries {
		if e.TableID == v.SystemRouteTableID {
			delete(s.state.RouteEntries, eid)
		}
	}
	delete(s.state.RouteTables, v.SystemRouteTableID)
	delete(s.state.VPCs, id)
	return map[string]any{}, nil
}

func (s *Service) sortedVPCs() []*VPC {
	return store.ByCreation(s.state.VPCs, func(v *VPC) int64 { return v.Seq })
}

func (s *Service) sortedVSwitches() []*VSwitch {
	return store.ByCreation(s.state.VSwitches, func(v *VSwitch) int64 { return v.Seq })
}

func (s *Service) vswitchIDsOf(vpcID string) []string {
	return idsIn(s.sortedVSwitches(), func(sw *VSwitch) (string, bool) { return sw.ID, sw.VpcID == vpcID })
}

func (s *Service) routeTableIDsOf(vpcID string) []string {
	return idsIn(s.sortedTables(), func(t *RouteTable) (string, bool) { return t.ID, t.VpcID == vpcID })
}

// idsIn returns the ids of the resources of list that in accepts, in
// order; never nil, so an answer shows [] rather than null.
func idsIn[T any](list []T, in func(T) (id string, ok bool)) []string {
	ids := []string{}
	for _, v := range list {
		if id, ok := in(v); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

func (s *Service) vpcView(v *VPC) map[string]any {
	out := map[string]any{
		"VpcId": v.ID, "RegionId": v.RegionID, "Status": "Available", "VpcName": v.Name, "Description": v.Description,
		"CreationTime": vpcTime(v.CreatedAt), "CidrBlock": v.CIDRBlock, "VRouterId": v.VRouterID, "IsDefault": v.IsDefault,
		"ResourceGroupId":     api.ResourceGroupOr(v.ResourceGroupID),
		"OwnerId":             1234567890123456,
		"VSwitchIds":          map[string]any{"VSwitchId": s.vswitchIDsOf(v.ID)},
		"RouterTableIds":      map[string]any{"RouterTableIds": s.routeTableIDsOf(v.ID)},
		"SecondaryCidrBlocks": map[string]any{"SecondaryCidrBlock": []string{}},
		"UserCidrs":           map[string]any{"UserCidr": []string{}},
		"NatGatewayIds":       map[string]any{"NatGatewayIds": []string{}},
		"Tags":                map[string]any{"Tag": api.TagMaps(v.Tags, "Key", "Value")},
		"DnsHostnameStatus":   "DISABLED",
		"CenStatus":           "Detached",
	}
	vpcIPv6View(v, out)
	return out
}

func (s *Service) describeVpcs(req *api.Request) (map[string]any, error) {
	p := req.Params
	ids := splitIDs(p.String("VpcId"))
	if len(ids) > 20 {
		return nil, api.InvalidParameter("VpcId", "At most 20 VPC ids may be queried at once.")
	}
	isDefault, err := p.Bool("IsDefault", false)
	if err != nil {
		return nil, err
	}
	name, tags := p.String("VpcName"), p.Tags()
	var list []*VPC
	for _, v := range s.sortedVPCs() {
		if v.RegionID != req.RegionID || (len(ids) > 0 && !slices.Contains(ids, v.ID)) || (name != "" && v.Name != name) ||
			(p.Has("IsDefault") && v.IsDefault != isDefault) || !api.MatchTags(v.Tags, tags) {
			continue
		}
		list = append(list, v)
	}
	return pageAnswer(p, list, 50, "Vpcs", "Vpc", s.vpcView)
}

// pageAnswer answers a Describe* listing paged by PageNumber/PageSize (10
// by default, at most maxSize): the page's views under set.item, with the
// total and the paging fields.
func pageAnswer[T any](p api.Params, list []T, maxSize int, set, item string, view func(T) map[string]any) (map[string]any, error) {
	items, num, size, err := api.PageViews(p, list, 10, maxSize, view)
	if err != nil {
		return nil, err
	}
	return map[string]any{set: map[string]any{item: items}, "TotalCount": len(list), "PageNumber": num, "PageSize": size}, nil
}

func (s *Service) describeVpcAttribute(req *api.Request) (map[string]any, error) {
	v, err := s.requestedVPC(req)
	if err != nil {
		return nil, err
	}
	id := v.ID
	// DescribeVpcs' items have these; DescribeVpcAttribute's model does not
	// (SDK v1.63.107 and vpc-20160428/v6 alike).
	out := api.WithoutKeys(s.vpcView(v), "CenStatus", "NatGatewayIds", "RouterTableIds")
	out["CloudResources"] = map[string]any{"CloudResourceSetType": []any{
		map[string]any{"ResourceType": "VSwitch", "ResourceCount": len(s.vswitchIDsOf(id))},
		map[string]any{"ResourceType": "RouteTable", "ResourceCount": len(s.routeTableIDsOf(id))},
	}}
	out["AssociatedCens"] = map[string]any{"AssociatedCen": []any{}}
	return out, nil
}

func (s *Service) createVSwitch(req *api.Request) (map[string]any, error) {
	if out, done, err := s.state.Tokens.ReplayID(req, s.exists, "VSwitchId"); done {
		return out, err
	}
	p := req.Params
	required, err := p.RequiredAll("VpcId", "ZoneId", "CidrBlock")
	if err != nil {
		return nil, err
	}
	vpcID, zone, cidr := required[0], required[1], required[2]
	tags := p.Tags()
	if err := validTags(tags); err != nil {
		return nil, err
	}
	v, err := s.regionVPC(req, vpcID)
	if err != nil {
		return nil, err
	}
	sw6 := &VSwitch{}
	if n, set, err := vswitchIPv6Param(p); err != nil {
		return nil, err
	} else if set {
		if err := s.setVSwitchIPv6(v, sw6, n); err != nil {
			return nil, err
		}
	}
	sw, err := s.addVSwitch(v, "", p.String("VSwitchName"), p.String("Description"), zone, cidr, "", tags, req.Now)
	if err != nil {
		return nil, err
	}
	sw.IPv6CIDRBlock = sw6.IPv6CIDRBlock
	s.state.Tokens.Remember(req, sw.ID)
	return map[string]any{"VSwitchId": sw.ID}, nil
}

func (s *Service) deleteVSwitch(req *api.Request) (map[string]any, error) {
	sw, err := s.requestedVSwitch(req)
	if err != nil {
		return nil, err
	}
	if n := s.countIn(s.compute.InstancesInVSwitch, sw.ID); n > 0 {
		return nil, api.Errorf(http.StatusBadRequest, "DependencyViolation.Instance", "Specified object has dependent resources: %d instance(s) or network interface(s) still in vSwitch %s.", n, sw.ID)
	}
	if len(sw.UsedIPs) > 0 {
		return nil, api.Errorf(http.StatusBadRequest, "DependencyViolation", "Specified object has dependent resources: %d address(es) of vSwitch %s are still used by cloud resources.", len(sw.UsedIPs), sw.ID)
	}
	for eid, e := range s.state.RouteEntries {
		if e.TableID == sw.RouteTableID && e.Type == TypeSystem && e.DestCIDR == sw.CIDRBlock {
			delete(s.state.RouteEntries, eid)
		}
	}
	delete(s.state.VSwitches, sw.ID)
	return map[string]any{}, nil
}

func (s *Service) vswitchView(sw *VSwitch) map[string]any {
	rtType := TypeSystem
	if t, ok := s.state.RouteTables[sw.RouteTableID]; ok {
		rtType = t.Type
	}
	out := map[string]any{
		"VSwitchId": sw.ID, "VpcId": sw.VpcID, "Status": "Available", "CidrBlock": sw.CIDRBlock, "ZoneId": sw.ZoneID,
		"AvailableIpAddressCount": sw.available(), "Description": sw.Description, "VSwitchName": sw.Name,
		"CreationTime": vpcTime(sw.CreatedAt), "IsDefault": false, "OwnerId": 1234567890123456, "ShareType": "Sharing",
		"RouteTable": map[string]any{"RouteTableId": sw.RouteTableID, "RouteTableType": rtType},
		"Tags":       map[string]any{"Tag": api.TagMaps(sw.Tags, "Key", "Value")},
	}
	vswitchIPv6View(sw, out)
	return out
}

func (s *Service) describeVSwitches(req *api.Request) (map[string]any, error) {
	p := req.Params
	vpcID, zone, name, rt := p.String("VpcId"), p.String("ZoneId"), p.String("VSwitchName"), p.String("RouteTableId")
	ids := splitIDs(p.String("VSwitchId"))
	tags := p.Tags()
	var list []*VSwitch
	for _, sw := range s.sortedVSwitches() {
		if sw.RegionID != req.RegionID || (vpcID != "" && sw.VpcID != vpcID) || (zone != "" && sw.ZoneID != zone) ||
			(len(ids) > 0 && !slices.Contains(ids, sw.ID)) || (name != "" && sw.Name != name) || (rt != "" && sw.RouteTableID != rt) ||
			!api.MatchTags(sw.Tags, tags) {
			continue
		}
		list = append(list, sw)
	}
	return pageAnswer(p, list, 50, "VSwitches", "VSwitch", s.vswitchView)
}

func (s *Service) describeVSwitchAttributes(req *api.Request) (map[string]any, error) {
	sw, err := s.requestedVSwitch(req)
	if err != nil {
		return nil, err
	}
	out := s.vswitchView(sw)
	out["CloudResources"] = map[string]any{"CloudResourceSetType": []any{}}
	return out, nil
}
