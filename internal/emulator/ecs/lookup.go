package ecs

import "time"

// Lookups other products use. Every method expects the caller to hold the
// store's lock (the gateway takes it around each request).

// InstanceInfo is what other products need to know about an instance.
type InstanceInfo struct {
	ID        string
	RegionID  string
	ZoneID    string
	VpcID     string
	VSwitchID string
	PrivateIP string
	Status    string
	ENIIDs    []string
}

// ENIInfo is what other products need to know about a network interface.
type ENIInfo struct {
	ID         string
	InstanceID string
	VpcID      string
	VSwitchID  string
	ZoneID     string
	PrivateIPs []string
}

// Instance returns an instance by id.
func (s *Service) Instance(id string) (InstanceInfo, bool) {
	i, ok := s.state.Instances[id]
	if !ok {
		return InstanceInfo{}, false
	}
	info := InstanceInfo{
		ID: i.ID, RegionID: i.RegionID, ZoneID: i.ZoneID, VpcID: i.VpcID, VSwitchID: i.VSwitchID,
		PrivateIP: s.primaryIP(i), Status: i.status(time.Now()),
	}
	for _, e := range s.instanceENIs(i) {
		info.ENIIDs = append(info.ENIIDs, e.ID)
	}
	return info, true
}

func eniInfo(e *ENI) ENIInfo {
	return ENIInfo{ID: e.ID, InstanceID: e.InstanceID, VpcID: e.VpcID, VSwitchID: e.VSwitchID, ZoneID: e.ZoneID, PrivateIPs: append([]string(nil), e.PrivateIPs...)}
}

// ENI returns a network interface by id.
func (s *Service) ENI(id string) (ENIInfo, bool) {
	e, ok := s.state.ENIs[id]
	if !ok {
		return ENIInfo{}, false
	}
	return eniInfo(e), true
}

// ENIByIP returns the network interface holding ip in a VPC.
func (s *Service) ENIByIP(vpcID, ip string) (ENIInfo, bool) {
	for _, e := range s.state.ENIs {
		if e.VpcID != vpcID {
			continue
		}
		for _, a := range e.PrivateIPs {
			if a == ip {
				return eniInfo(e), true
			}
		}
	}
	return ENIInfo{}, false
}

// SecurityGroupVPC returns the VPC of a security group.
func (s *Service) SecurityGroupVPC(id string) (string, bool) {
	g, ok := s.state.SecurityGroups[id]
	if !ok {
		return "", false
	}
	return g.VpcID, true
}
