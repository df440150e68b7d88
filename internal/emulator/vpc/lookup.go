package vpc

// Lookups other products use. Every method expects the caller to hold the
// store's lock (the gateway takes it around each request).

// VSwitchInfo is what other products need to know about a vSwitch.
type VSwitchInfo struct {
	// ID is the vSwitch id (vsw-...).
	ID string
	// VpcID is the vSwitch's VPC (vpc-...).
	VpcID string
	// ZoneID is the vSwitch's zone, e.g. cn-hangzhou-h.
	ZoneID string
	// CIDRBlock is the vSwitch's CIDR.
	CIDRBlock string
	// RegionID is the vSwitch's region.
	RegionID string
}

// VPCInfo is what other products need to know about a VPC.
type VPCInfo struct {
	// ID is the VPC id (vpc-...).
	ID string
	// CIDRBlock is the VPC's IPv4 CIDR.
	CIDRBlock string
	// RegionID is the VPC's region.
	RegionID string
	// VRouterID is the VPC's vRouter (vrt-...).
	VRouterID string
}

// EIPInfo is an elastic IP as other products report it.
type EIPInfo struct {
	// AllocationID is the EIP's AllocationId (eip-...).
	AllocationID string
	// IPAddress is the public IPv4 address.
	IPAddress string
	// Bandwidth is the peak bandwidth in Mbit/s, as a string.
	Bandwidth string
	// InternetChargeType is PayByTraffic or PayByBandwidth.
	InternetChargeType string
}

// VSwitch returns a vSwitch by id.
func (s *Service) VSwitch(id string) (VSwitchInfo, bool) {
	v, ok := s.state.VSwitches[id]
	if !ok {
		return VSwitchInfo{}, false
	}
	return VSwitchInfo{ID: v.ID, VpcID: v.VpcID, ZoneID: v.ZoneID, CIDRBlock: v.CIDRBlock, RegionID: v.RegionID}, true
}

// VPC returns a VPC by id.
func (s *Service) VPC(id string) (VPCInfo, bool) {
	v, ok := s.state.VPCs[id]
	if !ok {
		return VPCInfo{}, false
	}
	return VPCInfo{ID: v.ID, CIDRBlock: v.CIDRBlock, RegionID: v.RegionID, VRouterID: v.VRouterID}, true
}

// AllocatePrivateIP reserves an address in a vSwitch: want when non-empty
// (an *api.Error when it is taken or outside the CIDR), else the next free
// one (an *api.Error with code VSwitchAvailableIpNotExist-like semantics
// when the vSwitch is full).
func (s *Service) AllocatePrivateIP(vswitchID, want string) (string, error) {
	v, ok := s.state.VSwitches[vswitchID]
	if !ok {
		return "", errVSwitchNotFound(vswitchID)
	}
	return v.allocate(want)
}

// ReleasePrivateIP frees an address reserved with AllocatePrivateIP.
func (s *Service) ReleasePrivateIP(vswitchID, ip string) {
	if v, ok := s.state.VSwitches[vswitchID]; ok {
		if isIPv6(ip) {
			v.releaseIPv6(ip)
			return
		}
		delete(v.UsedIPs, ip)
	}
}

// EIPsBoundTo returns the EIPs associated with an instance (ECS or SLB) id.
func (s *Service) EIPsBoundTo(instanceID string) []EIPInfo {
	if instanceID == "" {
		return nil
	}
	var out []EIPInfo
	for _, e := range s.sortedEIPs() {
		if e.InstanceID == instanceID {
			out = append(out, EIPInfo{AllocationID: e.ID, IPAddress: e.IPAddress, Bandwidth: e.Bandwidth, InternetChargeType: e.InternetChargeType})
		}
	}
	return out
}
