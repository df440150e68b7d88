package annotations

import (
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Defaults are the cluster-wide values Parse falls back to.
type Defaults struct {
	// ResourceGroupID is cloud-config resourceGroupID.
	ResourceGroupID string
	// BackendType is the resolved default (see DefaultBackendType); "" = ecs.
	BackendType BackendType
	// LoadBalancerTypeAnnotation is the feature gate that lets the
	// …-loadbalancer-type annotation select NLB.
	LoadBalancerTypeAnnotation bool
	// Owner forces the rule set; OwnerNone derives it (see Settings.Owner).
	Owner Owner
}

// Settings is everything the annotations ask for, typed and validated.
// A nil pointer (or unset flag) means the user did not set it: the applier
// uses the documented default on create and leaves the cloud value alone
// otherwise.
type Settings struct {
	// Owner is the rule set used: Defaults.Owner, else Class(svc), else (for
	// a Service being cleaned up) the kind its finalizer names, else CLB.
	Owner Owner
	// Keys maps each suffix (or full key) that was present to the key the
	// user wrote, so events can quote it.
	Keys map[string]string
	// LoadBalancer holds load-balancer-level settings.
	LoadBalancer LoadBalancer
	// Listener holds settings shared by every listener of the Service.
	Listener Listener
	// Ports has one entry per Service port, in spec order.
	Ports []Port
	// Backend holds backend and server group settings.
	Backend Backend

	defaults   Defaults
	notApplied []string
}

// EventNotApplied is the reason of the Warning event for annotations that
// are read but whose value is not applied (registry NotApplied).
const EventNotApplied = "AnnotationNotApplied"

// NotApplied describes each annotation the Service sets to a value the
// controllers read but do not apply, naming the key as written, the value
// and why; empty when everything set is applied.
func (s *Settings) NotApplied() []string {
	return s.notApplied
}

// LoadBalancer is the load-balancer-level part of Settings.
type LoadBalancer struct {
	// ID is the reused load balancer ("" = create our own).
	ID string
	// ForceOverrideListeners lets us manage a reused LB's listeners.
	ForceOverrideListeners bool
	// Name overrides the default name.
	Name *string
	// AddressType is internet or intranet.
	AddressType *string
	// ResourceGroupID is the user's resource group (see Settings.ResourceGroupID).
	ResourceGroupID *string
	// AdditionalTags are extra tags, in annotation order.
	AdditionalTags []Tag
	// IPVersion is ipv4/ipv6 (CLB) or ipv4/DualStack (NLB).
	IPVersion *string
	// PreserveOnDelete keeps the LB when the Service goes away.
	PreserveOnDelete bool

	// Spec is the CLB instance spec.
	Spec *string
	// InstanceChargeType is PayBySpec or PayByCLCU.
	InstanceChargeType *string
	// ChargeType is paybytraffic or paybybandwidth.
	ChargeType *string
	// Bandwidth is in Mbps.
	Bandwidth *int
	// NetworkType is classic or vpc.
	NetworkType *string
	// VSwitchID is the CLB's vSwitch.
	VSwitchID *string
	// MasterZoneID is the CLB's primary zone.
	MasterZoneID *string
	// SlaveZoneID is the CLB's secondary zone.
	SlaveZoneID *string
	// IP is the fixed CLB address.
	IP *string
	// DeleteProtection; nil means the default (on) for LBs we create.
	DeleteProtection *bool
	// ModificationProtection is ConsoleProtection or NonProtection.
	ModificationProtection *string
	// ExternalIPType is "eip" to report EIPs in status.
	ExternalIPType *string
	// Hostname is reported in status instead of the address.
	Hostname *string

	// ZoneMaps are the NLB zones.
	ZoneMaps []ZoneMapping
	// SecurityGroupIDs are the NLB's security groups; only meaningful when
	// SecurityGroupIDsSet (an empty set value means leave them all).
	SecurityGroupIDs []string
	// SecurityGroupIDsSet reports that the annotation was present.
	SecurityGroupIDsSet bool
	// BandwidthPackageID is the common bandwidth package.
	BandwidthPackageID *string
	// IPv6AddressType is internet or intranet.
	IPv6AddressType *string
	// CrossZoneEnabled toggles cross-zone balancing.
	CrossZoneEnabled *bool
}

// Tag is a cloud resource tag (shared with package naming's default tags).
type Tag = naming.Tag

// ZoneMapping is one NLB zone.
type ZoneMapping struct {
	// ZoneID is the zone.
	ZoneID string
	// VSwitchID is the vSwitch in that zone.
	VSwitchID string
	// IPv4Address is the optional fixed private address.
	IPv4Address string
	// AllocationID is the optional EIP to bind.
	AllocationID string
}

// Listener is the listener-level part of Settings, shared by all ports.
type Listener struct {
	// CertID is the CLB HTTPS server certificate.
	CertID *string
	// CertIDs are the NLB TCPSSL server certificates.
	CertIDs []string
	// TLSCipherPolicy is the TLS policy.
	TLSCipherPolicy *string
	// IdleTimeout is in seconds.
	IdleTimeout *int
	// ProxyProtocol toggles Proxy Protocol.
	ProxyProtocol *bool
	// Scheduler is the scheduling algorithm (canonical spelling per kind).
	Scheduler *string
	// ConnectionDrain toggles connection draining.
	ConnectionDrain *bool
	// ConnectionDrainTimeout is in seconds.
	ConnectionDrainTimeout *int
	// HealthCheck holds the health check settings.
	HealthCheck HealthCheck

	// HTTP2 toggles HTTP/2 on HTTPS listeners.
	HTTP2 *bool
	// StickySession toggles session persistence.
	StickySession *bool
	// StickySessionType is insert or server.
	StickySessionType *string
	// Cookie is the server cookie name.
	Cookie *string
	// CookieTimeout is in seconds.
	CookieTimeout *int
	// PersistenceTimeout is in seconds.
	PersistenceTimeout *int
	// RequestTimeout is in seconds.
	RequestTimeout *int
	// EstablishedTimeout is in seconds.
	EstablishedTimeout *int
	// XForwardedForProto adds X-Forwarded-Proto.
	XForwardedForProto *bool
	// XForwardedForSLBPort adds X-Forwarded-Port.
	XForwardedForSLBPort *bool
	// XForwardedForClientSrcPort adds X-Forwarded-Client-srcport.
	XForwardedForClientSrcPort *bool
	// ACLStatus toggles access control.
	ACLStatus *bool
	// ACLID is the access control list.
	ACLID *string
	// ACLType is white or black.
	ACLType *string
	// DomainExtensions are SNI certificates.
	DomainExtensions []DomainExtension

	// ALPN toggles ALPN.
	ALPN *bool
	// ALPNPolicy is the ALPN policy.
	ALPNPolicy *string
	// AdditionalCertIDs are extra TCPSSL certificates.
	AdditionalCertIDs []string
	// CACert toggles mutual TLS.
	CACert *bool
	// CACertIDs are the CA certificates.
	CACertIDs []string
	// CPS is the connections-per-second limit.
	CPS *int
	// PPv2EndpointID carries the PrivateLink endpoint id.
	PPv2EndpointID *bool
	// PPv2EndpointServiceID carries the PrivateLink endpoint service id.
	PPv2EndpointServiceID *bool
	// PPv2VPCID carries the VPC id.
	PPv2VPCID *bool
}

// HealthCheck is the health check part of Listener.
type HealthCheck struct {
	// Flag toggles HTTP/HTTPS (CLB) or server group (NLB) health checks.
	Flag *bool
	// Switch toggles CLB TCP/UDP health checks.
	Switch *bool
	// Type is tcp, http (or udp on NLB).
	Type *string
	// URI is the HTTP path.
	URI *string
	// Domain is the HTTP Host.
	Domain *string
	// Method is head or get.
	Method *string
	// HTTPCodes are http_2xx… classes.
	HTTPCodes []string
	// ConnectPort is a port or UseBackendPort.
	ConnectPort *int
	// HealthyThreshold is 2–10.
	HealthyThreshold *int
	// UnhealthyThreshold is 2–10.
	UnhealthyThreshold *int
	// Interval is in seconds.
	Interval *int
	// ConnectTimeout is in seconds.
	ConnectTimeout *int
	// Timeout is the CLB HTTP check timeout in seconds.
	Timeout *int
	// KubeProxyPort is the Service's healthCheckNodePort when the check
	// goes to kube-proxy's KubeProxyHealthPath there (externalTrafficPolicy
	// Local, Node backends, no health-check annotation that chooses the
	// check, kube-proxy-health-check not off); 0 otherwise.
	KubeProxyPort int32
	// Chosen reports that a health-check annotation chooses the check
	// (flag, switch, type, uri, domain, method, httpcode, connect-port):
	// then a kube-proxy check left from an earlier pass is not reset.
	Chosen bool
}

// DomainExtension is one SNI certificate.
type DomainExtension struct {
	// Domain is the server name.
	Domain string
	// CertID is its certificate.
	CertID string
}

// Protocol is a listener protocol, lower case as annotations spell it.
type Protocol string

// Listener protocols.
const (
	// ProtocolTCP is TCP.
	ProtocolTCP Protocol = "tcp"
	// ProtocolUDP is UDP.
	ProtocolUDP Protocol = "udp"
	// ProtocolHTTP is HTTP (CLB).
	ProtocolHTTP Protocol = "http"
	// ProtocolHTTPS is HTTPS (CLB).
	ProtocolHTTPS Protocol = "https"
	// ProtocolTCPSSL is TCP with TLS termination (NLB).
	ProtocolTCPSSL Protocol = "tcpssl"
)

// PortRange is an inclusive listener port range.
type PortRange struct {
	// Start is the first port.
	Start int32
	// End is the last port.
	End int32
}

// Port is the per-Service-port part of Settings.
type Port struct {
	// Name is the Service port name.
	Name string
	// Port is the Service (listener) port.
	Port int32
	// NodePort is the Service node port (ecs backends).
	NodePort int32
	// TargetPort is the pod port (eni backends).
	TargetPort intstr.IntOrString
	// Protocol is the listener protocol.
	Protocol Protocol
	// ProtocolFromAnnotation reports that protocol-port set it.
	ProtocolFromAnnotation bool
	// ForwardTo, for an HTTP port, is the HTTPS port it redirects to.
	ForwardTo int32
	// VGroupID is an existing (v)server group bound to the port.
	VGroupID string
	// PortRange is the NLB listener port range serving this port.
	PortRange *PortRange
}

// Backend is the backend-level part of Settings.
type Backend struct {
	// Type is ecs or eni (defaults applied).
	Type BackendType
	// TypeFromAnnotation reports that backend-type set it.
	TypeFromAnnotation bool
	// Weight is the total weight in a shared group.
	Weight *int
	// DefaultWeight is the per-server weight.
	DefaultWeight *int
	// IgnoreWeightUpdate keeps cloud weights.
	IgnoreWeightUpdate bool
	// Labels select the backend nodes (nil = all).
	Labels map[string]string
	// RemoveUnscheduled drops cordoned nodes.
	RemoveUnscheduled bool
	// IPVersion is ipv4, ipv6 or dualstack.
	IPVersion *string
	// ServerGroupType is instance or ip (NLB).
	ServerGroupType *string
	// PreserveClientIP toggles client address preservation (NLB).
	PreserveClientIP *bool
}

// Or returns *p, or def when p is nil.
func Or[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Key returns the key the user wrote for a suffix (or full key), or the
// current-prefix key when the annotation is absent. A full key (one with a
// '/', such as the routing keys) names itself; every prefixed entry of the
// Registry is the prefix and its suffix, so no lookup is needed.
func (s *Settings) Key(suffixOrKey string) string {
	if k, ok := s.Keys[suffixOrKey]; ok {
		return k
	}
	if strings.Contains(suffixOrKey, "/") {
		return suffixOrKey
	}
	return Key(suffixOrKey)
}

// IsSet reports whether the annotation with this suffix (or full key) was present.
func (s *Settings) IsSet(suffixOrKey string) bool {
	_, ok := s.Keys[suffixOrKey]
	return ok
}

// ResourceGroupID is the resource group to create in: the annotation, else
// the cloud-config default ("" = the account default).
func (s *Settings) ResourceGroupID() string {
	return Or(s.LoadBalancer.ResourceGroupID, s.defaults.ResourceGroupID)
}

// Reused reports whether the Service binds an existing load balancer.
func (s *Settings) Reused() bool { return s.LoadBalancer.ID != "" }

// ManagesListeners reports whether we may create, change or delete this
// Service's listeners: always on our own LB, on a reused one only with
// force-override-listeners.
func (s *Settings) ManagesListeners() bool {
	return !s.Reused() || s.LoadBalancer.ForceOverrideListeners
}

// BackendSelector is the node selector of backend-label (everything when unset).
func (s *Settings) BackendSelector() labels.Selector {
	return labels.SelectorFromSet(s.Backend.Labels)
}

// PortByNumber returns the settings of a Service port.
func (s *Settings) PortByNumber(port int32) (*Port, bool) {
	for i := range s.Ports {
		if s.Ports[i].Port == port {
			return &s.Ports[i], true
		}
	}
	return nil, false
}

// portProtocol maps a Service port protocol to the default listener protocol.
func portProtocol(p corev1.Protocol) (Protocol, bool) {
	switch p {
	case corev1.ProtocolTCP, "":
		return ProtocolTCP, true
	case corev1.ProtocolUDP:
		return ProtocolUDP, true
	}
	return "", false
}
