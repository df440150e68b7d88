package vpc

import (
	"slices"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func (s *Service) sortedEIPs() []*EIP {
	return store.ByCreation(s.state.EIPs, func(e *EIP) int64 { return e.Seq })
}

func (s *Service) describeEipAddresses(req *api.Request) (map[string]any, error) {
	p := req.Params
	ids := splitIDs(p.String("AllocationId"))
	if len(ids) > 50 {
		return nil, api.InvalidParameter("AllocationId", "At most 50 AllocationIds may be queried at once.")
	}
	addrs := splitIDs(p.String("EipAddress"))
	instType, err := p.Enum("AssociatedInstanceType", "", "EcsInstance", "SlbInstance", "Nat", "HaVip", "NetworkInterface", "IpAddress")
	if err != nil {
		return nil, err
	}
	status, err := p.Enum("Status", "", "Associating", "Unassociating", "InUse", "Available", "Releasing")
	if err != nil {
		return nil, err
	}
	instID, name := p.String("AssociatedInstanceId"), p.String("EipName")
	var list []*EIP
	for _, e := range s.sortedEIPs() {
		st := eipStatus(e)
		if e.RegionID != req.RegionID || (len(ids) > 0 && !slices.Contains(ids, e.ID)) || (len(addrs) > 0 && !slices.Contains(addrs, e.IPAddress)) ||
			(instType != "" && e.InstanceType != instType) || (instID != "" && e.InstanceID != instID) ||
			(status != "" && st != status) || (name != "" && e.Name != name) {
			continue
		}
		list = append(list, e)
	}
	return pageAnswer(p, list, 100, "EipAddresses", "EipAddress", func(e *EIP) map[string]any {
		return map[string]any{
			"AllocationId": e.ID, "IpAddress": e.IPAddress, "Name": e.Name, "Status": eipStatus(e), "RegionId": e.RegionID,
			"Bandwidth": e.Bandwidth, "EipBandwidth": e.Bandwidth, "InternetChargeType": e.InternetChargeType,
			"ChargeType": "PostPaid", "InstanceId": e.InstanceID, "InstanceType": e.InstanceType, "InstanceRegionId": e.RegionID,
			"AllocationTime": vpcTime(e.AllocatedAt), "ISP": "BGP", "Netmode": "public", "Mode": "NAT", "BusinessStatus": "Normal",
			"OperationLocks": map[string]any{"LockReason": []any{}},
			"Tags":           map[string]any{"Tag": []any{}},
		}
	})
}

func eipStatus(e *EIP) string {
	if e.InstanceID != "" {
		return "InUse"
	}
	return "Available"
}
