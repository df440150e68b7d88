package ecs

import (
	"net/http"
	"slices"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func errENINotFound(id string) error {
	return api.NotFound("InvalidEniId.NotFound", "The specified network interface %s does not exist.", id)
}

func eniStatus(e *ENI) string {
	if e.InstanceID != "" {
		return "InUse"
	}
	return "Available"
}

func (s *Service) sortedENIs() []*ENI {
	return store.ByCreation(s.state.ENIs, func(e *ENI) int64 { return e.Seq })
}

func (s *Service) eniView(e *ENI) map[string]any {
	sets := []map[string]any{}
	for k, ip := range e.PrivateIPs {
		sets = append(sets, map[string]any{"PrivateIpAddress": ip, "Primary": k == 0, "AssociatedPublicIp": map[string]any{}})
	}
	primary := ""
	if len(e.PrivateIPs) > 0 {
		primary = e.PrivateIPs[0]
	}
	sgs := e.SecurityGroupIDs
	if sgs == nil {
		sgs = []string{}
	}
	return map[string]any{
		"NetworkInterfaceId": e.ID, "NetworkInterfaceName": e.Name, "Description": e.Description, "InstanceId": e.InstanceID,
		"Status": eniStatus(e), "Type": e.Type, "VpcId": e.VpcID, "VSwitchId": e.VSwitchID, "ZoneId": e.ZoneID,
		"PrivateIpAddress": primary, "MacAddress": e.MAC, "CreationTime": ecsTime(e.CreatedAt),
		"SourceDestCheck": e.SourceDestCheck, "DeleteOnRelease": e.DeleteOnRelease, "ServiceManaged": false,
		"OwnerId": "1234567890123456", "NetworkInterfaceTrafficMode": "Standard",
		"SecurityGroupIds": map[string]any{"SecurityGroupId": sgs},
		"PrivateIpSets":    map[string]any{"PrivateIpSet": sets},
		"Ipv6Sets":         ipv6Sets(e),
		"Ipv4PrefixSets":   map[string]any{"Ipv4PrefixSet": []any{}},
		"Ipv6PrefixSets":   map[string]any{"Ipv6PrefixSet": []any{}},
		"Tags":             map[string]any{"Tag": api.TagMaps(e.Tags, "TagKey", "TagValue")},
	}
}

func (s *Service) describeNetworkInterfaces(req *api.Request) (map[string]any, error) {
	p := req.Params
	vpcID, vswID, instID, name := p.String("VpcId"), p.String("VSwitchId"), p.String("InstanceId"), p.String("NetworkInterfaceName")
	sg, primaryIP := p.String("SecurityGroupId"), p.String("PrimaryIpAddress")
	ids, ips, ip6s := p.List("NetworkInterfaceId"), p.List("PrivateIpAddress"), p.List("Ipv6Address")
	if len(ids) > 100 || len(ips) > 100 {
		return nil, api.InvalidParameter("NetworkInterfaceId", "At most 100 network interface ids or private IP addresses may be queried at once.")
	}
	typ, err := p.Enum("Type", "", "Primary", "Secondary", "Trunk", "Member")
	if err != nil {
		return nil, err
	}
	status, err := p.Enum("Status", "", "Available", "Attaching", "InUse", "Detaching", "Deleting")
	if err != nil {
		return nil, err
	}
	tags := p.Tags()
	var list []*ENI
	for _, e := range s.sortedENIs() {
		if e.RegionID != req.RegionID || (vpcID != "" && e.VpcID != vpcID) || (vswID != "" && e.VSwitchID != vswID) ||
			(instID != "" && e.InstanceID != instID) || (name != "" && e.Name != name) || (len(ids) > 0 && !slices.Contains(ids, e.ID)) ||
			(typ != "" && e.Type != typ) || (status != "" && eniStatus(e) != status) || (sg != "" && !slices.Contains(e.SecurityGroupIDs, sg)) ||
			!api.MatchTags(e.Tags, tags) {
			continue
		}
		if len(ip6s) > 0 && !hasIPv6(e, ip6s) {
			continue
		}
		if primaryIP != "" && (len(e.PrivateIPs) == 0 || e.PrivateIPs[0] != primaryIP) {
			continue
		}
		if len(ips) > 0 {
			hit := false
			for _, ip := range e.PrivateIPs {
				if slices.Contains(ips, ip) {
					hit = true
				}
			}
			if !hit {
				continue
			}
		}
		list = append(list, e)
	}
	return pagedList(p, list, func(e *ENI) int64 { return e.Seq }, 100, 500, "NetworkInterfaceSets", "NetworkInterfaceSet", s.eniView)
}

func (s *Service) modifyNetworkInterfaceAttribute(req *api.Request) (map[string]any, error) {
	p := req.Params
	e, err := s.requestedENI(req)
	if err != nil {
		return nil, err
	}
	sgs := p.List("SecurityGroupId")
	if len(sgs) > 5 {
		return nil, api.InvalidParameter("SecurityGroupId", "A network interface can join at most 5 security groups.")
	}
	for _, g := range sgs {
		sg, ok := s.state.SecurityGroups[g]
		if !ok || sg.RegionID != req.RegionID {
			return nil, errSGNotFound(g)
		}
		if sg.VpcID != e.VpcID {
			return nil, errSGVpcMismatch(g, e.VpcID)
		}
	}
	check, err := p.Bool("SourceDestCheck", e.SourceDestCheck)
	if err != nil {
		return nil, err
	}
	del, err := p.Bool("DeleteOnRelease", e.DeleteOnRelease)
	if err != nil {
		return nil, err
	}
	if name := p.String("NetworkInterfaceName"); len(name) > 128 {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidNetworkInterfaceName.Malformed", "The network interface name must be at most 128 characters.")
	}
	if p.Has("NetworkInterfaceName") {
		e.Name = p.String("NetworkInterfaceName")
	}
	if p.Has("Description") {
		e.Description = p.String("Description")
	}
	if len(sgs) > 0 {
		e.SecurityGroupIDs = dedupe(sgs)
	}
	e.SourceDestCheck, e.DeleteOnRelease = check, del
	return map[string]any{}, nil
}

func dedupe(list []string) []string {
	out := []string{}
	for _, v := range list {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// requestedENI is the request's NetworkInterfaceId, which must name an ENI
// of the request's region.
func (s *Service) requestedENI(req *api.Request) (*ENI, error) {
	return api.Lookup(req, "NetworkInterfaceId", s.regionENI)
}

// regionENI returns the ENI id of the request's region.
func (s *Service) regionENI(req *api.Request, id string) (*ENI, error) {
	return api.InRegion(req, s.state.ENIs, id, func(e *ENI) string { return e.RegionID }, errENINotFound)
}
