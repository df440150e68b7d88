package api

// Seed describes resources to create in the emulated cloud, from the
// --seed YAML file or POST /_emulator/seed. Ids left empty are generated.
// Each product takes the sections it owns: VPC the VPCs (with vSwitches and
// route tables) and EIPs, ECS the instances and security groups, SLB the
// certificates.
type Seed struct {
	// VPCs to create, each with its vRouter and system route table.
	VPCs []SeedVPC `json:"vpcs,omitempty"`
	// Instances are ECS instances, each with a primary ENI.
	Instances []SeedInstance `json:"instances,omitempty"`
	// EIPs are elastic IPs, optionally bound to an instance.
	EIPs []SeedEIP `json:"eips,omitempty"`
	// Certificates are SLB server or CA certificates.
	Certificates []SeedCertificate `json:"certificates,omitempty"`
	// SecurityGroups are ECS security groups.
	SecurityGroups []SeedSecurityGroup `json:"securityGroups,omitempty"`
}

// SeedVPC is a VPC with its vSwitches and extra route tables.
type SeedVPC struct {
	// ID is the VPC id to use (vpc-...; generated when empty).
	ID string `json:"id,omitempty"`
	// Name is the VpcName.
	Name string `json:"name,omitempty"`
	// CIDRBlock is the VPC's IPv4 CIDR, e.g. 192.168.0.0/16; required.
	CIDRBlock string `json:"cidrBlock"`
	// RegionID places the VPC in another region than the emulator's.
	RegionID string `json:"regionId,omitempty"`
	// RouteTableID is the id to give the system route table.
	RouteTableID string `json:"routeTableId,omitempty"`
	// EnableIPv6 gives the VPC an IPv6 /56 from the emulator's pool.
	EnableIPv6 bool `json:"enableIpv6,omitempty"`
	// IPv6CIDRBlock is the VPC's IPv6 /56 (implies EnableIPv6).
	IPv6CIDRBlock string `json:"ipv6CidrBlock,omitempty"`
	// VSwitches in this VPC.
	VSwitches []SeedVSwitch `json:"vswitches,omitempty"`
	// RouteTables are extra custom route tables of the VPC's vRouter.
	RouteTables []SeedRouteTable `json:"routeTables,omitempty"`
	// Tags are the VPC's tags, key to value.
	Tags map[string]string `json:"tags,omitempty"`
}

// SeedVSwitch is a vSwitch in one zone.
type SeedVSwitch struct {
	// ID is the vSwitch id to use (vsw-...; generated when empty).
	ID string `json:"id,omitempty"`
	// Name is the VSwitchName.
	Name string `json:"name,omitempty"`
	// ZoneID is the vSwitch's zone: the region plus a letter, e.g.
	// cn-hangzhou-h; required.
	ZoneID string `json:"zoneId"`
	// CIDRBlock is the vSwitch's CIDR, inside the VPC's and not overlapping
	// another vSwitch; required.
	CIDRBlock string `json:"cidrBlock"`
	// RouteTableID binds the vSwitch to a custom route table (default: the system table).
	RouteTableID string `json:"routeTableId,omitempty"`
	// IPv6CIDRBlock is the number (0-255) of the vSwitch's /64 within its
	// VPC's IPv6 /56, as CreateVSwitch's Ipv6CidrBlock; nil: no IPv6.
	IPv6CIDRBlock *int `json:"ipv6CidrBlock,omitempty"`
}

// SeedRouteTable is a custom route table.
type SeedRouteTable struct {
	// ID is the route table id to use (vtb-...; generated when empty).
	ID string `json:"id,omitempty"`
	// Name is the RouteTableName.
	Name string `json:"name,omitempty"`
}

// SeedInstance is an ECS instance.
type SeedInstance struct {
	// ID is the instance id to use (i-...; generated when empty).
	ID string `json:"id,omitempty"`
	// Name is the InstanceName.
	Name string `json:"name,omitempty"`
	// HostName is the instance's host name (default iZ<id>Z, as ECS names
	// them).
	HostName string `json:"hostName,omitempty"`
	// InstanceType is e.g. ecs.g7.large (default ecs.g6.large).
	InstanceType string `json:"instanceType,omitempty"`
	// VSwitchID places the instance; its zone and VPC follow.
	VSwitchID string `json:"vswitchId"`
	// PrivateIP defaults to the next free address of the vSwitch.
	PrivateIP string `json:"privateIp,omitempty"`
	// IPv6Addresses are IPv6 addresses of the primary ENI, in the vSwitch's
	// /64 (which must exist).
	IPv6Addresses []string `json:"ipv6Addresses,omitempty"`
	// IPv6AddressCount adds that many IPv6 addresses, the next free ones,
	// after IPv6Addresses.
	IPv6AddressCount int `json:"ipv6AddressCount,omitempty"`
	// PublicIP is an optional classic public IP.
	PublicIP string `json:"publicIp,omitempty"`
	// Status defaults to Running.
	Status string `json:"status,omitempty"`
	// InstanceChargeType is PrePaid or PostPaid (default).
	InstanceChargeType string `json:"instanceChargeType,omitempty"`
	// SpotStrategy is NoSpot (default), SpotWithPriceLimit or SpotAsPriceGo.
	SpotStrategy string `json:"spotStrategy,omitempty"`
	// SecurityGroupIDs are existing security groups (sg-...) of the
	// instance's VPC to join.
	SecurityGroupIDs []string `json:"securityGroupIds,omitempty"`
	// Tags are the instance's tags, key to value (at most the per-resource
	// tag quota).
	Tags map[string]string `json:"tags,omitempty"`
	// PrimaryENIID names the primary ENI (generated when empty).
	PrimaryENIID string `json:"primaryEniId,omitempty"`
	// SecondaryENIs are extra ENIs (e.g. for pod IPs with backend-type eni).
	SecondaryENIs []SeedENI `json:"secondaryEnis,omitempty"`
}

// SeedENI is a secondary elastic network interface.
type SeedENI struct {
	// ID is the ENI id to use (eni-...; generated when empty).
	ID string `json:"id,omitempty"`
	// PrivateIPs are the ENI's addresses; the first is primary.
	PrivateIPs []string `json:"privateIps"`
}

// SeedEIP is an elastic IP.
type SeedEIP struct {
	// ID is the allocation id to use (eip-...; generated when empty).
	ID string `json:"id,omitempty"`
	// IPAddress is the EIP's IPv4 address; required and unique.
	IPAddress string `json:"ipAddress"`
	// Bandwidth is the peak bandwidth in Mbit/s, as a string (default "5").
	Bandwidth string `json:"bandwidth,omitempty"`
	// InstanceID is the resource the EIP is bound to (i-... or lb-...); empty
	// means unbound.
	InstanceID string `json:"instanceId,omitempty"`
	// InstanceType of the bound resource: EcsInstance (default) or SlbInstance.
	InstanceType string `json:"instanceType,omitempty"`
}

// SeedCertificate is an SLB certificate.
type SeedCertificate struct {
	// ID is the certificate id to use (generated when empty, in the cloud's
	// <account>_<hex millis>_<digits>_<digits> form).
	ID string `json:"id,omitempty"`
	// Name is the ServerCertificateName or CACertificateName (default:
	// Domain).
	Name string `json:"name,omitempty"`
	// Type is server (default) or ca.
	Type string `json:"type,omitempty"`
	// Domain is the certificate's common name.
	Domain string `json:"domain,omitempty"`
}

// SeedSecurityGroup is an ECS security group.
type SeedSecurityGroup struct {
	// ID is the security group id to use (sg-...; generated when empty).
	ID string `json:"id,omitempty"`
	// Name is the SecurityGroupName.
	Name string `json:"name,omitempty"`
	// VpcID is the existing VPC (vpc-...) the group belongs to; required.
	VpcID string `json:"vpcId"`
}

// Seeder is implemented by products that take part of a Seed. Seed runs
// under the store's write lock, in product order vpc, ecs, slb, nlb, and
// returns the ids it created keyed by kind.
type Seeder interface {
	Seed(region string, s *Seed) (map[string][]string, error)
}
