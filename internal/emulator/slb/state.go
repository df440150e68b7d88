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
	// PublicIPs are the emulator-owned public addresses in use.
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
	LoadBalancerID string
	// Fingerprint is the canonical form of the request's parameters: a
	// retry with other parameters is refused.
	Fingerprint string
}

// LoadBalancer is a CLB instance.
type LoadBalancer struct {
	ID                           string
	RegionID                     string
	Name                         string
	Status                       string
	AddressType                  string
	AddressIPVersion             string
	Address                      string
	NetworkType                  string
	VpcID                        string
	VSwitchID                    string
	MasterZoneID                 string
	SlaveZoneID                  string
	Spec                         string
	InstanceChargeType           string
	InternetChargeType           string
	Bandwidth                    int
	PayType                      string
	DeleteProtection             string
	ModificationProtectionStatus string
	ModificationProtectionReason string
	ResourceGroupID              string
	CreatedAt                    time.Time
	Tags                         []api.Tag
	// Listeners keyed by listenerKey (protocol_port).
	Listeners map[string]*Listener
	// BackendServers are the default server group (AddBackendServers).
	BackendServers []Backend
}

// Listener is a frontend port of a load balancer.
type Listener struct {
	Port              int
	Protocol          string
	Status            string
	BackendServerPort int
	VServerGroupID    string
	// Config holds the protocol's settings by their API names, rendered
	// with the types of listenerFields.
	Config    map[string]string
	Tags      []api.Tag
	CreatedAt time.Time
	// BusyUntil keeps the listener configuring after a change.
	BusyUntil time.Time
	// Transition is the status reported while busy (starting, stopping, configuring).
	Transition string
}

// Backend is a member of a vServer group or of the default server group.
type Backend struct {
	ServerID    string
	ServerIP    string
	Type        string
	Port        int
	Weight      int
	Description string
	VpcID       string
}

// key identifies a backend within a group.
func (b Backend) key() string {
	return b.Type + "|" + b.ServerID + "|" + b.ServerIP + "|" + itoa(b.Port)
}

// VServerGroup is a set of backend servers with ports.
type VServerGroup struct {
	ID             string
	Name           string
	LoadBalancerID string
	RegionID       string
	CreatedAt      time.Time
	Backends       []Backend
	Tags           []api.Tag
	// BusyUntil keeps the group configuring after a membership change.
	BusyUntil time.Time
}

// ACL is an access control list of CIDR entries.
type ACL struct {
	ID               string
	Name             string
	RegionID         string
	AddressIPVersion string
	ResourceGroupID  string
	CreatedAt        time.Time
	Entries          []ACLEntry
	Tags             []api.Tag
}

// ACLEntry is one CIDR block of an ACL.
type ACLEntry struct {
	Entry   string
	Comment string
}

// Certificate is a server or CA certificate.
type Certificate struct {
	ID                  string
	Kind                string // server or ca
	Name                string
	RegionID            string
	ResourceGroupID     string
	CommonName          string
	SubjectAltNames     []string
	Fingerprint         string
	EncryptionAlgorithm string
	KeyLength           int
	StandardType        string
	CreatedAt           time.Time
	ExpiresAt           time.Time
	Tags                []api.Tag
}

// DomainExtension binds an extra certificate to a domain on an HTTPS listener.
type DomainExtension struct {
	ID                  string
	LoadBalancerID      string
	ListenerPort        int
	Domain              string
	ServerCertificateID string
}
