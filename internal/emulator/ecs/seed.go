package ecs

import (
	"fmt"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Seed creates the seed's security groups and instances (each with a primary
// ENI and optional secondary ENIs, addresses allocated in the vSwitch); it
// implements api.Seeder.
func (s *Service) Seed(region string, sd *api.Seed) (map[string][]string, error) {
	now := time.Now()
	out := map[string][]string{}
	for k, sg := range sd.SecurityGroups {
		g, err := s.addSG(region, sg.ID, sg.Name, "", sg.VpcID, "normal", nil, now)
		if err != nil {
			return nil, fmt.Errorf("seed security group %d: %w", k, err)
		}
		out["securityGroup"] = append(out["securityGroup"], g.ID)
	}
	for k, si := range sd.Instances {
		i, enis, err := s.seedInstance(region, si, now)
		if err != nil {
			return nil, fmt.Errorf("seed instance %d (%s): %w", k, si.ID, err)
		}
		out["instance"] = append(out["instance"], i.ID)
		out["eni"] = append(out["eni"], enis...)
	}
	return out, nil
}

func (s *Service) seedInstance(region string, si api.SeedInstance, now time.Time) (*Instance, []string, error) {
	if si.ID != "" {
		if _, dup := s.state.Instances[si.ID]; dup {
			return nil, nil, fmt.Errorf("instance %s already exists", si.ID)
		}
	}
	vsw, ok := s.vpc.VSwitch(si.VSwitchID)
	if !ok {
		return nil, nil, fmt.Errorf("vswitch %q does not exist", si.VSwitchID)
	}
	for _, id := range si.SecurityGroupIDs {
		g, ok := s.state.SecurityGroups[id]
		if !ok {
			return nil, nil, fmt.Errorf("security group %q does not exist", id)
		}
		if g.VpcID != vsw.VpcID {
			return nil, nil, fmt.Errorf("security group %s is not in VPC %s", id, vsw.VpcID)
		}
	}
	itype := si.InstanceType
	if itype == "" {
		itype = "ecs.g6.large"
	}
	var status, via string
	switch si.Status {
	case "", StatusRunning:
		status = StatusRunning
	case StatusStopped:
		status = StatusStopped
	case StatusPending, StatusStarting:
		status, via = StatusRunning, si.Status
	case StatusStopping:
		status, via = StatusStopped, StatusStopping
	default:
		return nil, nil, fmt.Errorf("unknown status %q", si.Status)
	}
	var allocated [][2]string
	undo := func() {
		for _, a := range allocated {
			s.vpc.ReleasePrivateIP(a[0], a[1])
		}
	}
	ip, err := s.vpc.AllocatePrivateIP(vsw.ID, si.PrivateIP)
	if err != nil {
		return nil, nil, err
	}
	allocated = append(allocated, [2]string{vsw.ID, ip})
	var secondary [][]string
	for _, e := range si.SecondaryENIs {
		var ips []string
		if len(e.PrivateIPs) == 0 {
			e.PrivateIPs = []string{""}
		}
		for _, want := range e.PrivateIPs {
			a, err := s.vpc.AllocatePrivateIP(vsw.ID, want)
			if err != nil {
				undo()
				return nil, nil, err
			}
			allocated = append(allocated, [2]string{vsw.ID, a})
			ips = append(ips, a)
		}
		secondary = append(secondary, ips)
	}
	ip6s, err := s.allocateIPv6s(vsw.ID, si.IPv6Addresses, si.IPv6AddressCount)
	if err != nil {
		undo()
		return nil, nil, err
	}
	for _, a := range ip6s {
		allocated = append(allocated, [2]string{vsw.ID, a})
	}
	if len(api.TagsFromMap(si.Tags)) > s.st.Settings().Quota(store.QuotaTagsPerResource) {
		undo()
		return nil, nil, fmt.Errorf("more than %d tags", s.st.Settings().Quota(store.QuotaTagsPerResource))
	}
	i := &Instance{
		ID: si.ID, Name: si.Name, HostName: si.HostName, InstanceType: itype, ImageID: "aliyun_3_x64_20G_alibase_20240819.vhd",
		PublicIP: si.PublicIP, ChargeType: si.InstanceChargeType, SpotStrategy: si.SpotStrategy, Tags: api.TagsFromMap(si.Tags),
	}
	if i.PublicIP != "" {
		i.InternetMaxBandwidthOut = 5
	}
	pl := placement{vsw: vsw, sgs: si.SecurityGroupIDs}
	s.createInstance(region, pl, ip, i, si.PrimaryENIID, now)
	s.state.ENIs[i.PrimaryENIID].IPv6s = ip6s
	i.Status = status
	if via != "" {
		s.transition(i, status, via, now)
	}
	enis := []string{i.PrimaryENIID}
	for k, ips := range secondary {
		id := si.SecondaryENIs[k].ID
		if id == "" {
			id = store.NewID("eni")
		}
		s.state.ENIs[id] = &ENI{
			ID: id, InstanceID: i.ID, VpcID: vsw.VpcID, VSwitchID: vsw.ID, ZoneID: vsw.ZoneID, RegionID: region, MAC: randomMAC(),
			Type: "Secondary", PrivateIPs: ips, SecurityGroupIDs: append([]string(nil), si.SecurityGroupIDs...), CreatedAt: now, Seq: s.state.Next(),
		}
		enis = append(enis, id)
	}
	return i, enis, nil
}
