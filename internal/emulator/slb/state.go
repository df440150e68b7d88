package slb

import (
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// State is the SLB part of the emulated cloud. It round-trips through
// encoding/json for persistence.
type State struct {
	// LoadBalancers by id.
	LoadBalancers map[string]*LoadBalancer
	// Order holds load balancer ids in creation order, so listings page
	// without sorting a map on every call.
	Order []string
	// OrderRegions holds the region of each id in Order, so an unfiltered
	// listing scans strings instead of load balancers.
	OrderRegions []string
	// ClientTokens maps a CreateLoadBalancer ClientToken to its result.
	ClientTokens map[string]*ClientTokenEntry
	// PublicIPs are the emulator-owned addresses outside any VPC in use:
	// public ones and classic-network intranet ones.
	PublicIPs map[string]string
	// NextPublicIP is the allocation cursor in the public range.
	NextPublicIP uint32
	// VServerGroups by id.
	VServerGroups map[string]*VServerGroup
	// ACLs by id.
	ACLs map[string]*ACL
	// Certificates (server and CA) by id.
	Certificates map[string]*Certificate
	// DomainExtensions by id.
	DomainExtensions map[string]*DomainExtension
}

// Reset empties the state, as on a fresh account.
func (st *State) Reset() {
	*st = State{
		LoadBalancers:    map[string]*LoadBalancer{},
		ClientTokens:     map[string]*ClientTokenEntry{},
		PublicIPs:        map[string]string{},
		VServerGroups:    map[string]*VServerGroup{},
		ACLs:             map[string]*ACL{},
		Certificates:     map[string]*Certificate{},
		DomainExtensions: map[string]*DomainExtension{},
	}
}

// ClientTokenEntry remembers an idempotent create.
type ClientTokenEntry struct {
	// LoadBalancerID is the load balancer (lb-...) the first call created.
	LoadBalancerID string
	// Fingerprint is the canonical form of the request's parameters: a
	// retry with other parameters is refused.
	Fingerprint string
}

// LoadBalancer is a CLB instance.
type LoadBalancer struct {
	// ID is the LoadBalancerId (lb-...).
	ID string
	// RegionID is the load balancer's region.
	RegionID string
	// Name is the LoadBalancerName, 1-80 characters (default auto_named_slb).
	Name string
	// Status is the LoadBalancerStatus: active or inactive
	// (SetLoadBalancerStatus).
	Status string
	// AddressType is internet or intranet.
	AddressType string
	// AddressIPVersion is ipv4 (default) or ipv6 (internet-facing only).
	AddressIPVersion string
	// Address is the service address: a vSwitch IP for intranet in a VPC,
	// an emulator-owned address for classic intranet and internet.
	Address string
	// NetworkType is vpc for intranet load balancers created with a
	// vSwitch, classic for the others.
	NetworkType string
	// VpcID is the VPC of an intranet load balancer's vSwitch (vpc-...);
	// empty in the classic network.
	VpcID string
	// VSwitchID is an intranet load balancer's vSwitch (vsw-...); empty in
	// the classic network.
	VSwitchID string
	// MasterZoneID is the primary zone (the vSwitch's zone for intranet;
	// default <region>-a).
	MasterZoneID string
	// SlaveZoneID is the standby zone, as given on create.
	SlaveZoneID string
	// Spec is the LoadBalancerSpec (slb.s1.small ... slb.s3.xxlarge); empty
	// when PayByCLCU.
	Spec string
	// InstanceChargeType is PayBySpec (with a Spec) or PayByCLCU.
	InstanceChargeType string
	// InternetChargeType is paybytraffic (default, always for intranet) or
	// paybybandwidth.
	InternetChargeType string
	// Bandwidth is the peak bandwidth in Mbit/s, 1-5120 (default 5120).
	Bandwidth int
	// PayType is PayOnDemand (default) or PrePay.
	PayType string
	// DeleteProtection is on or off (default); on refuses DeleteLoadBalancer.
	DeleteProtection string
	// ModificationProtectionStatus is NonProtection (default) or
	// ConsoleProtection.
	ModificationProtectionStatus string
	// ModificationProtectionReason is the reason given with
	// ConsoleProtection; empty otherwise.
	ModificationProtectionReason string
	// ResourceGroupID is the resource group (rg-...; default
	// api.DefaultResourceGroupID).
	ResourceGroupID string
	// CreatedAt is the CreateTime.
	CreatedAt time.Time
	// Tags are set by Tag.N on create and TagResources (ResourceType
	// instance).
	Tags []api.Tag
	// Listeners keyed by listenerKey (protocol_port).
	Listeners map[string]*Listener
	// BackendServers are the default server group (AddBackendServers).
	BackendServers []Backend
}

// Listener is a frontend port of a load balancer.
type Listener struct {
	// Port is the ListenerPort, 1-65535.
	Port int
	// Protocol is tcp, udp, http or https (lower case, as in listenerKey).
	Protocol string
	// Status is the settled status, running or stopped (created stopped).
	Status string
	// BackendServerPort is the default backend port, 1-65535; 0 when the
	// listener uses a vServer group.
	BackendServerPort int
	// VServerGroupID is the vServer group (rsp-...) of the same load balancer
	// the listener forwards to.
	VServerGroupID string
	// Config holds the protocol's settings by their API names, rendered
	// with the types of listenerFields.
	Config map[string]string
	// Tags are set by Tag.N on create and TagResources (ResourceType
	// listener, id lb-xxx_http_80).
	Tags []api.Tag
	// CreatedAt is when the listener was created.
	CreatedAt time.Time
	// BusyUntil keeps the listener configuring after a change.
	BusyUntil time.Time
	// Transition is the status reported while busy (starting, stopping, configuring).
	Transition string
}

// Backend is a member of a vServer group or of the default server group.
type Backend struct {
	// ServerID is the instance (i-...) or ENI (eni-...).
	ServerID string
	// ServerIP is the backend address: the instance's primary IP, or the ENI
	// IP given.
	ServerIP string
	// Type is ecs (default) or eni.
	Type string
	// Port is the backend port, 1-65535 (0 in the default server group).
	Port int
	// Weight is 0-100 (default 100); 0 sends no new connections.
	Weight int
	// Description is the backend's free-text Description.
	Description string
	// VpcID is the VPC of the instance or ENI (vpc-...).
	VpcID string
}

// key identifies a backend within a group.
func (b Backend) key() string {
	return b.Type + "|" + b.ServerID + "|" + b.ServerIP + "|" + itoa(b.Port)
}

// VServerGroup is a set of backend servers with ports.
type VServerGroup struct {
	// ID is the VServerGroupId (rsp-...).
	ID string
	// Name is the VServerGroupName.
	Name string
	// LoadBalancerID is the load balancer the group belongs to (lb-...).
	LoadBalancerID string
	// RegionID is the group's region.
	RegionID string
	// CreatedAt is when the group was created.
	CreatedAt time.Time
	// Backends are the members, in the order added (at most
	// store.QuotaSLBBackendsPerLB per load balancer).
	Backends []Backend
	// Tags are set by Tag.N on create and TagResources (ResourceType
	// vservergroup).
	Tags []api.Tag
	// BusyUntil keeps the group configuring after a membership change.
	BusyUntil time.Time
}

// ACL is an access control list of CIDR entries.
type ACL struct {
	// ID is the AclId (acl-...).
	ID string
	// Name is the AclName.
	Name string
	// RegionID is the ACL's region.
	RegionID string
	// AddressIPVersion is ipv4 or ipv6: the family of its entries.
	AddressIPVersion string
	// ResourceGroupID is the ACL's resource group (rg-...).
	ResourceGroupID string
	// CreatedAt is when the ACL was created.
	CreatedAt time.Time
	// Entries are the CIDR entries, in the order added (at most 300).
	Entries []ACLEntry
	// Tags are set by Tag.N on create and TagResources (ResourceType acl).
	Tags []api.Tag
}

// ACLEntry is one CIDR block of an ACL.
type ACLEntry struct {
	// Entry is the CIDR block (AclEntryIP), e.g. 10.0.0.0/8.
	Entry string
	// Comment is the AclEntryComment.
	Comment string
}

// Certificate is a server or CA certificate.
type Certificate struct {
	// ID is the ServerCertificateId or CACertificateId.
	ID   string
	Kind string // server or ca
	// Name is the ServerCertificateName or CACertificateName.
	Name string
	// RegionID is the certificate's region.
	RegionID string
	// ResourceGroupID is the certificate's resource group (rg-...).
	ResourceGroupID string
	// CommonName is the leaf certificate's subject CN.
	CommonName string
	// SubjectAltNames are the leaf's DNS names.
	SubjectAltNames []string
	// Fingerprint is the SHA-1 of the leaf's DER, colon-separated hex.
	Fingerprint string
	// EncryptionAlgorithm is RSA, ECC or UNKNOWN, from the key.
	EncryptionAlgorithm string
	// KeyLength is the key size in bits (RSA modulus or ECC curve size).
	KeyLength int
	// StandardType is the StandardType parameter of the upload, stored and
	// echoed as given.
	StandardType string
	// CreatedAt is the upload time.
	CreatedAt time.Time
	// ExpiresAt is the leaf's NotAfter.
	ExpiresAt time.Time
	// Tags are set by Tag.N on upload and TagResources (ResourceType
	// certificate).
	Tags []api.Tag
}

// DomainExtension binds an extra certificate to a domain on an HTTPS listener.
type DomainExtension struct {
	// ID is the DomainExtensionId (de-...).
	ID string
	// LoadBalancerID is the HTTPS listener's load balancer (lb-...).
	LoadBalancerID string
	// ListenerPort is the HTTPS listener's port.
	ListenerPort int
	// Domain is the SNI domain name the certificate serves.
	Domain string
	// ServerCertificateID is the server certificate used for Domain.
	ServerCertificateID string
}
