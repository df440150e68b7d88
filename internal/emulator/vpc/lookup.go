package vpc

// Lookups other products use. Every method expects the caller to hold the
// store's lock (the gateway takes it around each request).

// VSwitchInfo is what other products need to know about a vSwitch.
type VSwitchInfo struct {
	ID        string
	VpcID     string
	ZoneID    string
	CIDRBlock string
	RegionID  string
}

// VPCInfo is what other products need to know about a VPC.
type VPCInfo struct {
	ID        string
	CIDRBlock string
	RegionID  string
	VRouterID string
}

// EIPInfo is an elastic IP as other products report it.
type EIPInfo struct {
	AllocationID       string
	IPAddress          string
	Bandwidth          string
	InternetChargeType string
}

// VSwitch returns a vSwitch by id.
func (s *Service) VSwitch(id string) (VSwitchInfo, bool) {
	return VSwitchInfo{}, false
}

// VPC returns a VPC by id.
func (s *Service) VPC(id string) (VPCInfo, bool) {
	return VPCInfo{}, false
}

// AllocatePrivateIP reserves an address in a vSwitch: want when non-empty
// (an *api.Error when it is taken or outside the CIDR), else the next free
// one (an *api.Error with code VSwitchAvailableIpNotExist-like semantics
// when the vSwitch is full).
func (s *Service) AllocatePrivateIP(vswitchID, want string) (string, error) {
	return "", nil
}

// ReleasePrivateIP frees an address reserved with AllocatePrivateIP.
func (s *Service) ReleasePrivateIP(vswitchID, ip string) {}

// EIPsBoundTo returns the EIPs associated with an instance (ECS or SLB) id.
func (s *Service) EIPsBoundTo(instanceID string) []EIPInfo {
	return nil
}
