package ecs

import "time"

// Lookups other products use. Every method expects the caller to hold the
// store's lock (the gateway takes it around each request).

// InstanceInfo is what other products need to know about an instance.
type InstanceInfo struct {
	// ID is the instance id (i-...).
	ID string
	// RegionID is the instance's region.
	RegionID string
	// ZoneID is the instance's zone, e.g. cn-hangzhou-h.
	ZoneID string
	// VpcID is the instance's VPC (vpc-...).
	VpcID string
	// VSwitchID is the primary ENI's vSwitch (vsw-...).
	VSwitchID string
	// PrivateIP is the primary ENI's primary private address.
	PrivateIP string
	// Status is the current status (Pending, Starting, Running, Stopping,
	// Stopped).
	Status string
	// ENIIDs are the attached network interfaces (eni-...), primary first.
	ENIIDs []string
}

// ENIInfo is what other products need to know about a network interface.
type ENIInfo struct {
	// ID is the network interface id (eni-...).
	ID string
	// InstanceID is the instance it is attached to (i-...); empty when
	// detached.
	InstanceID string
	// VpcID is the ENI's VPC (vpc-...).
	VpcID string
	// VSwitchID is the ENI's vSwitch (vsw-...).
	VSwitchID string
	// ZoneID is the zone of that vSwitch.
	ZoneID string
	// PrivateIPs are the ENI's private addresses, the primary first (a copy).
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

// AddSecurityGroupUsers registers a product's lookup of the resources in a
// security group, so that DeleteSecurityGroup refuses a group they still
// use, as the cloud does. Call it while wiring the products, before serving.
func (s *Service) AddSecurityGroupUsers(users func(sgID string) []string) {
	s.sgUsers = append(s.sgUsers, users)
}
