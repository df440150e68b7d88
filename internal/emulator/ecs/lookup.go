package ecs

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
	return InstanceInfo{}, false
}

// ENI returns a network interface by id.
func (s *Service) ENI(id string) (ENIInfo, bool) {
	return ENIInfo{}, false
}

// ENIByIP returns the network interface holding ip in a VPC.
func (s *Service) ENIByIP(vpcID, ip string) (ENIInfo, bool) {
	return ENIInfo{}, false
}

// SecurityGroupVPC returns the VPC of a security group.
func (s *Service) SecurityGroupVPC(id string) (string, bool) {
	return "", false
}
