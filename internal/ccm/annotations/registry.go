package annotations

import (
	"fmt"
	"strings"
)

// Scope says which load balancer kinds an annotation applies to.
type Scope int

// Scopes (a bit set).
const (
	// ScopeCLB: Classic Load Balancer only.
	ScopeCLB Scope = 1 << iota
	// ScopeNLB: Network Load Balancer only.
	ScopeNLB
	// ScopeShared: both kinds.
	ScopeShared = ScopeCLB | ScopeNLB
	// ScopeRouting: keys that decide which controller owns the Service.
	ScopeRouting Scope = 1 << 3
)

// has reports whether s covers the rule set of owner o.
func (s Scope) has(o Owner) bool {
	switch o {
	case OwnerCLB:
		return s&ScopeCLB != 0
	case OwnerNLB:
		return s&ScopeNLB != 0
	}
	return false
}

// Kind is the value syntax of an annotation.
type Kind int

// Kinds.
const (
	// KindString is free text (Format may describe constraints).
	KindString Kind = iota
	// KindOnOff is "on" or "off" (case-insensitive).
	KindOnOff
	// KindTrueFalse is "true" or "false" (case-insensitive).
	KindTrueFalse
	// KindInt is a decimal integer within [Min, Max].
	KindInt
	// KindEnum is one of Values (case-insensitive; the listed spelling is used).
	KindEnum
	// KindFormat is a structured value described by Format.
	KindFormat
	// KindPresence means only the key's presence matters; any value, even empty.
	KindPresence
)

// String implements fmt.Stringer (used in the generated docs).
func (k Kind) String() string {
	switch k {
	case KindOnOff:
		return "on/off"
	case KindTrueFalse:
		return "true/false"
	case KindInt:
		return "integer"
	case KindEnum:
		return "enum"
	case KindFormat:
		return "format"
	case KindPresence:
		return "presence"
	default:
		return "string"
	}
}

// Annotation describes one Service annotation: the single source of truth
// for parsing, validation messages and the generated documentation.
type Annotation struct {
	// Key is the full current key.
	Key string
	// Legacy is the full legacy key, or "" for keys outside the prefix.
	Legacy string
	// Scope is CLB, NLB, shared, or routing.
	Scope Scope
	// Kind is the value syntax.
	Kind Kind
	// Values are the accepted values of an enum.
	Values []string
	// Min and Max bound an integer.
	Min, Max int
	// Format describes a structured or constrained value for humans.
	Format string
	// Default is the value used when the annotation is absent ("" = none:
	// the cloud's current value is left alone).
	Default string
	// Immutable marks attributes fixed at creation within Scope.
	Immutable bool
	// EmptyIsValue keeps an empty value meaningful (e.g. clears a list)
	// instead of treating it as absent.
	EmptyIsValue bool
	// Backends marks annotations the backend pass reads (ComputeBackends,
	// node eligibility, the providers' SyncBackends): an invalid one also
	// stops backend updates, any other only freezes the LB and listeners.
	Backends bool
	// Doc is a one-line description.
	Doc string
	// NotApplied, when set, says why values other than Default are read
	// but not applied; a Service setting one gets a Warning event
	// (Settings.NotApplied) instead of a silent no-op.
	NotApplied string
}

// Suffix returns the part after the prefix, or the full key for keys
// outside the prefix scheme.
func (a *Annotation) Suffix() string {
	if a.Legacy == "" {
		return a.Key
	}
	return strings.TrimPrefix(a.Key, Prefix)
}

// Accepted describes the accepted values, as quoted in validation errors.
func (a *Annotation) Accepted() string {
	switch a.Kind {
	case KindOnOff:
		return "on, off"
	case KindTrueFalse:
		return "true, false"
	case KindInt:
		s := fmt.Sprintf("an integer from %d to %d", a.Min, a.Max)
		if a.Format != "" {
			s += " (" + a.Format + ")"
		}
		return s
	case KindEnum:
		return "one of " + strings.Join(a.Values, ", ")
	case KindPresence:
		return "any value"
	default:
		if a.Format != "" {
			return a.Format
		}
		return "any string"
	}
}

// p builds a prefixed (current + legacy key) annotation.
func p(suffix string, scope Scope, kind Kind, doc string, opts ...func(*Annotation)) Annotation {
	a := Annotation{Key: Key(suffix), Legacy: LegacyKey(suffix), Scope: scope, Kind: kind, Doc: doc}
	for _, o := range opts {
		o(&a)
	}
	return a
}

func values(v ...string) func(*Annotation) { return func(a *Annotation) { a.Values = v } }
func rng(min, max int) func(*Annotation) {
	return func(a *Annotation) { a.Min, a.Max = min, max }
}
func format(f string) func(*Annotation)    { return func(a *Annotation) { a.Format = f } }
func def(d string) func(*Annotation)       { return func(a *Annotation) { a.Default = d } }
func immutable() func(*Annotation)         { return func(a *Annotation) { a.Immutable = true } }
func emptyIsValue() func(*Annotation)      { return func(a *Annotation) { a.EmptyIsValue = true } }
func backends() func(*Annotation)          { return func(a *Annotation) { a.Backends = true } }
func fullKey(key string) func(*Annotation) { return func(a *Annotation) { a.Key, a.Legacy = key, "" } }
func notApplied(why string) func(*Annotation) {
	return func(a *Annotation) { a.NotApplied = why }
}

// Defaults used when an annotation is absent; the registry quotes them so
// code and docs cannot disagree.
const (
	// DefaultAddressType is the CLB/NLB address type.
	DefaultAddressType = "internet"
	// DefaultIPVersion is the LB IP version.
	DefaultIPVersion = "ipv4"
	// DefaultCLBScheduler is the CLB listener scheduler.
	DefaultCLBScheduler = "rr"
	// DefaultNLBScheduler is the NLB server group scheduler.
	DefaultNLBScheduler = "Wrr"
	// DefaultSpec is the CLB instance spec.
	DefaultSpec = "slb.s1.small"
	// DefaultChargeType is the CLB internet charge type.
	DefaultChargeType = "paybytraffic"
	// DefaultBandwidth is the CLB bandwidth in Mbps for pay-by-bandwidth.
	DefaultBandwidth = 50
	// DefaultDeleteProtection is on for LBs we create.
	DefaultDeleteProtection = true
	// DefaultModificationProtection is ConsoleProtection for CLBs we create.
	DefaultModificationProtection = "ConsoleProtection"
	// DefaultWeight is the per-server backend weight.
	DefaultWeight = 100
	// DefaultThreshold is the healthy/unhealthy threshold.
	DefaultThreshold = 3
	// DefaultHealthCheckInterval is in seconds.
	DefaultHealthCheckInterval = 2
	// DefaultHealthCheckTimeout is the connect/HTTP check timeout in seconds.
	DefaultHealthCheckTimeout = 5
	// DefaultServerGroupType is the NLB server group type.
	DefaultServerGroupType = "instance"
	// DefaultBackendIPVersion is the backend address family.
	DefaultBackendIPVersion = "ipv4"
	// UseBackendPort is the health-check-connect-port value meaning "check
	// the backend's own port".
	UseBackendPort = -520
)

// CLBSpecs are the pay-by-spec CLB instance specs.
var CLBSpecs = cloudFact("slb:LoadBalancerSpec").Values

// Registry is every annotation the controllers read. A suffix may appear
// twice with disjoint scopes when CLB and NLB accept different values.
var Registry = []Annotation{
	// Shared, load balancer level.
	p("id", ScopeShared, KindFormat, "Reuse an existing load balancer; it is never deleted, and its listeners are left alone unless force-override-listeners is true.", format("a load balancer id: lb-… (CLB) or nlb-… (NLB)"), backends()),
	p("force-override-listeners", ScopeShared, KindTrueFalse, "With id: manage the reused load balancer's listeners.", def("false")),
	p("name", ScopeShared, KindFormat, "Load balancer name.", format("CLB: "+nameRule("slb:LoadBalancerName")+"; NLB: "+nameRule("nlb:LoadBalancerName")), def(`"a" + Service UID without dashes, 32 characters`)),
	p("address-type", ScopeCLB, KindEnum, "Public or private address.", factValues("slb:AddressType"), def(DefaultAddressType), immutable()),
	p("address-type", ScopeNLB, KindEnum, "Public or private IPv4 address.", values("internet", "intranet"), def(DefaultAddressType)),
	p("resource-group-id", ScopeShared, KindFormat, "Resource group of a created load balancer; a reused one must already be in it.", format("rg-…"), def("cloud-config resourceGroupID"), immutable()),
	p("additional-resource-tags", ScopeShared, KindFormat, "Extra tags on the load balancer.", format("k1=v1,k2=v2,k3 (keys 1–64 characters, unique, not starting with aliyun or acs:, not kubernetes.do.not.delete or ack.aliyun.com; values up to 128; at most 20)")),
	p("ip-version", ScopeCLB, KindEnum, "Address family.", factValues("slb:AddressIPVersion"), def(DefaultIPVersion), immutable()),
	p("ip-version", ScopeNLB, KindEnum, "Address family.", factValues("nlb:AddressIpVersion"), def(DefaultIPVersion), immutable()),
	p("preserve-lb-on-delete", ScopeShared, KindPresence, "Keep the load balancer when the Service is deleted; protections are turned off and our tags removed.", emptyIsValue()),

	// Shared, listener level.
	// The CLB form is not marked backends(): vServer group names carry no
	// protocol, and its one effect on groups (an http port in forward-port has
	// none) is caught by the forward-port check, which is marked.
	p("protocol-port", ScopeCLB, KindFormat, "Listener protocol per Service port.", format("proto:port,... with proto tcp, udp, http or https and port a Service port"), def("the Service port's protocol")),
	p("protocol-port", ScopeNLB, KindFormat, "Listener protocol per Service port.", format("proto:port,... with proto tcp, udp or tcpssl and port a Service port"), def("the Service port's protocol"), backends()),
	p("cert-id", ScopeCLB, KindString, "Server certificate of HTTPS listeners."),
	p("cert-id", ScopeNLB, KindFormat, "Server certificates of TCPSSL listeners: the first is the default one, the others are associated as additional certificates.", format("certificate ids separated by commas")),
	p("tls-cipher-policy", ScopeCLB, KindEnum, "TLS policy of HTTPS listeners.", factValues("slb:TLSCipherPolicy")),
	p("tls-cipher-policy", ScopeNLB, KindString, "Security policy of TCPSSL listeners (system tls_cipher_policy_* or a custom policy id)."),
	p("idle-timeout", ScopeCLB, KindInt, "HTTP/HTTPS connection idle timeout in seconds.", factRange("slb:IdleTimeout")),
	p("idle-timeout", ScopeNLB, KindInt, "Listener connection idle timeout in seconds (UDP listeners: 10 to 20).", factRange("nlb:IdleTimeout/TCP")),
	p("proxy-protocol", ScopeShared, KindOnOff, "Pass client addresses with Proxy Protocol v2 (TCP/UDP)."),
	p("scheduler", ScopeCLB, KindEnum, "Listener scheduling algorithm (tcp/udp: wrr, rr, sch, tch; http/https: wrr, rr).", values(allCLBSchedulers()...), def(DefaultCLBScheduler)),
	p("scheduler", ScopeNLB, KindEnum, "Server group scheduling algorithm.", factValues("nlb:Scheduler"), def(DefaultNLBScheduler)),
	p("connection-drain", ScopeShared, KindOnOff, "Drain connections of removed backends (TCP/UDP)."),
	p("connection-drain-timeout", ScopeCLB, KindInt, "Connection drain timeout in seconds.", factRange("slb:ConnectionDrainTimeout")),
	p("connection-drain-timeout", ScopeNLB, KindInt, "Connection drain timeout in seconds.", factRange("nlb:ConnectionDrainTimeout")),

	// Shared, health checks.
	p("health-check-flag", ScopeShared, KindOnOff, "Health check of HTTP/HTTPS listeners (CLB) or of the server group (NLB).", def("off")),
	p("health-check-type", ScopeCLB, KindEnum, "Health check protocol of TCP listeners.", factValues("slb:HealthCheckType"), def("tcp")),
	p("health-check-type", ScopeNLB, KindEnum, "Health check protocol.", values("tcp", "http", "udp"), def("tcp")),
	p("health-check-uri", ScopeShared, KindFormat, "HTTP health check path.", format("a path starting with /, 1–80 characters")),
	p("health-check-domain", ScopeShared, KindFormat, "HTTP health check Host header.", format("1–80 characters of letters, digits, '-' and '.'")),
	p("health-check-method", ScopeShared, KindEnum, "HTTP health check method.", factValues("slb:HealthCheckMethod")),
	p("health-check-httpcode", ScopeShared, KindFormat, "HTTP status classes that count as healthy.", format("comma list of http_2xx, http_3xx, http_4xx, http_5xx")),
	p("health-check-connect-port", ScopeShared, KindFormat, "Port the health check connects to.", format("a port 1–65535, or -520 for the backend port")),
	p("healthy-threshold", ScopeShared, KindInt, "Successes before a backend is healthy.", factRange("slb:HealthyThreshold"), def(fmt.Sprint(DefaultThreshold))),
	p("unhealthy-threshold", ScopeShared, KindInt, "Failures before a backend is unhealthy.", factRange("slb:UnhealthyThreshold"), def(fmt.Sprint(DefaultThreshold))),
	p("health-check-interval", ScopeShared, KindInt, "Seconds between health checks.", factRange("slb:HealthCheckInterval"), def(fmt.Sprint(DefaultHealthCheckInterval))),
	p("health-check-connect-timeout", ScopeShared, KindInt, "Health check connect timeout in seconds.", factRange("slb:HealthCheckConnectTimeout"), def(fmt.Sprint(DefaultHealthCheckTimeout))),
	p("kube-proxy-health-check", ScopeShared, KindOnOff, "With externalTrafficPolicy Local and Node (ecs) backends: check each Node through kube-proxy (HTTP GET /healthz on the Service's healthCheckNodePort, healthy only while the Node has a ready local endpoint) unless a health-check flag, switch, type, uri, domain, method, httpcode or connect-port annotation chooses the check; off keeps the listeners' own check. CLB UDP listeners and NLB UDP server groups keep their own check.", def("on")),

	// Shared, backends.
	p("vgroup-port", ScopeCLB, KindFormat, "Bind existing vServer groups to Service ports.", format("rsp-…:port,... with port a Service port"), backends()),
	p("vgroup-port", ScopeNLB, KindFormat, "Bind existing server groups to Service ports.", format("sgp-…:port,... with port a Service port"), backends()),
	p("weight", ScopeShared, KindInt, "Total weight of this Service's backends in a shared group.", factRange("slb:Weight"), backends()),
	p("default-weight", ScopeShared, KindInt, "Weight of each backend server.", factRange("slb:Weight"), def(fmt.Sprint(DefaultWeight)), backends()),
	p("ignore-weight-update", ScopeShared, KindOnOff, "on: keep backend weights already set in the cloud.", def("off"), backends()),
	p("backend-label", ScopeShared, KindFormat, "Only nodes with these labels are backends.", format("k=v,... of valid label keys and values"), backends()),
	p("remove-unscheduled-backend", ScopeShared, KindOnOff, "on: cordoned nodes are not backends.", def("off"), backends()),
	// CLB: not marked backends(): ipv6 and dualstack are not applied (CLB
	// backend servers have no IPv6 address in the API), so a bad value
	// cannot change which backends a Service gets.
	p("backend-ip-version", ScopeCLB, KindEnum, "Backend address family.", values("ipv4", "ipv6", "dualstack"), def(DefaultBackendIPVersion),
		notApplied("CLB registers backends by their IPv4 address only (its backend servers take no IPv6 address)")),
	p("backend-ip-version", ScopeNLB, KindEnum, "Backend address family: ipv6 and dualstack make the server groups DualStack; Ip groups of ECS backends then register each instance's primary ENI IPv6 address (ipv6) or both addresses (dualstack).",
		values("ipv4", "ipv6", "dualstack"), def(DefaultBackendIPVersion), backends()),

	// CLB only.
	p("spec", ScopeCLB, KindEnum, "Instance spec (pay by spec).", values(CLBSpecs...), def(DefaultSpec)),
	p("instance-charge-type", ScopeCLB, KindEnum, "Instance billing method.", factValues("slb:InstanceChargeType")),
	p("charge-type", ScopeCLB, KindEnum, "Internet billing method.", factValues("slb:InternetChargeType"), def(DefaultChargeType)),
	p("bandwidth", ScopeCLB, KindInt, "Peak bandwidth in Mbps.", factRange("slb:Bandwidth"), def(fmt.Sprint(DefaultBandwidth))),
	p("network-type", ScopeCLB, KindEnum, "Network type of a private load balancer: classic creates it without a vSwitch, in no VPC (it then takes no `vswitch-id`).", values("classic", "vpc"), def("vpc"), immutable()),
	p("vswitch-id", ScopeCLB, KindFormat, "vSwitch of a private load balancer.", format("vsw-…"), def("chosen automatically"), immutable()),
	p("master-zoneid", ScopeCLB, KindString, "Primary zone.", immutable()),
	p("slave-zoneid", ScopeCLB, KindString, "Secondary zone.", immutable()),
	p("ip", ScopeCLB, KindFormat, "Fixed private address.", format("an IPv4 or IPv6 address"), immutable()),
	p("delete-protection", ScopeCLB, KindOnOff, "Deletion protection.", def("on")),
	p("modification-protection", ScopeCLB, KindEnum, "Configuration read-only mode.", factValues("slb:ModificationProtectionStatus"), def(DefaultModificationProtection)),
	p("external-ip-type", ScopeCLB, KindEnum, "eip: report the load balancer's EIPs in the Service status.", values("eip")),
	p("hostname", ScopeCLB, KindFormat, "Hostname reported in the Service status instead of the address.", format("a DNS-1123 subdomain")),
	p("acl-status", ScopeCLB, KindOnOff, "Access control on the listeners.", def("off")),
	p("acl-id", ScopeCLB, KindFormat, "Access control list.", format("acl-…")),
	p("acl-type", ScopeCLB, KindEnum, "Access control list type.", factValues("slb:AclType")),
	p("forward-port", ScopeCLB, KindFormat, "Redirect an HTTP listener to an HTTPS listener.", format("httpPort:httpsPort,... with both Service ports"), backends()),
	p("http2-enabled", ScopeCLB, KindOnOff, "HTTP/2 on HTTPS listeners."),
	p("sticky-session", ScopeCLB, KindOnOff, "Session persistence on HTTP/HTTPS listeners.", def("off")),
	p("sticky-session-type", ScopeCLB, KindEnum, "How the session cookie is handled.", factValues("slb:StickySessionType")),
	p("cookie", ScopeCLB, KindFormat, "Cookie name for sticky-session-type server.", format("1–200 printable ASCII characters without ',', ';', spaces, not starting with $")),
	p("cookie-timeout", ScopeCLB, KindInt, "Cookie lifetime in seconds for sticky-session-type insert.", factRange("slb:CookieTimeout")),
	p("persistence-timeout", ScopeCLB, KindInt, "TCP/UDP session persistence in seconds (0 = off).", factRange("slb:PersistenceTimeout"), def("0")),
	p("health-check-switch", ScopeCLB, KindOnOff, "Health check of TCP/UDP listeners.", def("on")),
	p("health-check-timeout", ScopeCLB, KindInt, "HTTP health check response timeout in seconds.", factRange("slb:HealthCheckTimeout"), def(fmt.Sprint(DefaultHealthCheckTimeout))),
	p("request-timeout", ScopeCLB, KindInt, "HTTP/HTTPS request timeout in seconds.", factRange("slb:RequestTimeout")),
	p("established-timeout", ScopeCLB, KindInt, "TCP connection timeout in seconds.", factRange("slb:EstablishedTimeout")),
	p("xforwardedfor-proto", ScopeCLB, KindOnOff, "Add X-Forwarded-Proto on HTTP/HTTPS listeners."),
	p("xforwardedfor-slbport", ScopeCLB, KindOnOff, "Add X-Forwarded-Port on HTTP/HTTPS listeners."),
	p("xforwardedfor-clientsrcport", ScopeCLB, KindOnOff, "Add X-Forwarded-Client-srcport on HTTP/HTTPS listeners."),
	p("domain-extensions", ScopeCLB, KindFormat, "Extra certificates per domain (SNI) on HTTPS listeners.", format("domain:certId,...")),

	// NLB only.
	p("zone-maps", ScopeNLB, KindFormat, "Zones and vSwitches; required unless id is set.", format("zone:vsw[:ipv4[:eipAllocId]],... with 2–10 distinct zones")),
	p("security-group-ids", ScopeNLB, KindFormat, "Security groups the load balancer is in; an empty value removes it from all of them.", format("sg-… ids separated by commas, or empty"), emptyIsValue()),
	p("bandwidth-package-id", ScopeNLB, KindFormat, "Common bandwidth package to attach.", format("cbwp-…")),
	p("ipv6-address-type", ScopeNLB, KindEnum, "Public or private IPv6 address of a dual-stack load balancer.", values("internet", "intranet")),
	p("cross-zone-enabled", ScopeNLB, KindOnOff, "Cross-zone load balancing."),
	p("server-group-type", ScopeNLB, KindEnum, "Server group type.", values("instance", "ip"), def(DefaultServerGroupType), backends()),
	p("preserve-client-ip", ScopeNLB, KindOnOff, "Preserve the client address towards backends."),
	p("cacert", ScopeNLB, KindOnOff, "Mutual TLS on TCPSSL listeners."),
	p("cacert-id", ScopeNLB, KindFormat, "CA certificates for mutual TLS.", format("certificate ids separated by commas")),
	p("cps", ScopeNLB, KindInt, "New connections per second limit (0 = unlimited).", factRange("nlb:Cps")),
	p("ppv2-pvl-ep-id-enabled", ScopeNLB, KindOnOff, "Proxy Protocol v2: carry the PrivateLink endpoint id."),
	p("ppv2-pvl-eps-id-enabled", ScopeNLB, KindOnOff, "Proxy Protocol v2: carry the PrivateLink endpoint service id."),
	p("ppv2-pvl-vpc-id-enabled", ScopeNLB, KindOnOff, "Proxy Protocol v2: carry the VPC id."),
	p("alpn", ScopeNLB, KindOnOff, "ALPN on TCPSSL listeners."),
	p("alpn-policy", ScopeNLB, KindEnum, "ALPN policy.", factValues("nlb:AlpnPolicy")),
	p("additional-cert-ids", ScopeNLB, KindFormat, "Additional certificates of TCPSSL listeners (with the cert-id entries after the first). Set (even empty), or with several cert-id entries, it is the listener's whole additional set: others are disassociated; absent, certificates added outside the Service stay.", format("certificate ids separated by commas, or empty"), emptyIsValue()),
	p("listener-port-range", ScopeNLB, KindFormat, "Serve a port range with one listener (eni backends only).", format("start-end:port,... with 1 ≤ start ≤ end ≤ 65535 and port a Service port"), backends()),

	// Keys outside the prefix.
	p("", ScopeShared, KindEnum, "Backends are nodes on their nodePort (ecs) or pod ENIs on their targetPort (eni).", fullKey(BackendTypeKey), values(string(BackendECS), string(BackendENI)), def("env SERVICE_FORCE_BACKEND_ENI, else cloud-config serviceBackendType, else ecs"), backends()),
	p("", ScopeRouting, KindString, "Non-empty: another controller owns the Service (not CLB).", fullKey(ClassKey)),
	p("", ScopeRouting, KindString, "nlb: the Service gets an NLB (feature gate LoadBalancerTypeAnnotation); any other non-empty value: not ours.", fullKey(LoadBalancerTypeKey)),
	p("", ScopeRouting, KindPresence, "Present (any value, even empty): not a CLB Service.", fullKey(TunnelTypeKey), emptyIsValue()),
}

// Find returns the registry entry for a suffix (or full key) under the
// rule set of owner.
func Find(suffixOrKey string, owner Owner) (*Annotation, bool) {
	for i := range Registry {
		a := &Registry[i]
		if (a.Suffix() == suffixOrKey || a.Key == suffixOrKey) && (a.Scope.has(owner) || a.Scope == ScopeRouting) {
			return a, true
		}
	}
	return nil, false
}
