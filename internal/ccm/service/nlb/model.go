// Package nlb is the Network Load Balancer provider of the service
// controller: the desired cloud model built from a Service (model.go), the
// current state read from the NLB API (cloud.go), the pure diff between the
// two (diff.go), job waiting (jobs.go) and the applier that makes the
// smallest set of changes in dependency order (nlb.go).
package nlb

import (
	"slices"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// Server types as the NLB API spells them.
const (
	// ServerEcs is an ECS instance on its primary address.
	ServerEcs = "Ecs"
	// ServerEni is an elastic network interface address (pod IP).
	ServerEni = "Eni"
	// ServerIP is a bare IP address (Ip server groups).
	ServerIP = "Ip"
)

// Server group types as the NLB API spells them.
const (
	// GroupInstance holds Ecs, Eni and Eci servers.
	GroupInstance = "Instance"
	// GroupIP holds Ip servers.
	GroupIP = "Ip"
)

// Server is one member of a server group; its Type is Ecs, Eni or Ip.
type Server service.MemberFields

// key identifies a member within a group. An Ecs server is its instance
// and port: the cloud fills in its address.
func (s Server) key() string {
	ip := s.IP
	if s.Type == ServerEcs {
		ip = ""
	}
	return s.Type + "|" + s.ServerID + "|" + ip + "|" + strconv.Itoa(int(s.Port))
}

// Group is the desired server group of one Service port.
type Group struct {
	// ServicePort is the PortKey of the Service port the group serves.
	ServicePort PortKey
	// Name is our naming-scheme name, the ownership mark.
	Name string
	// BoundID is a user's group bound by vgroup-port ("" = ours, by Name).
	BoundID string
	// Protocol is the group protocol: TCP or UDP (TCPSSL listeners use TCP groups).
	Protocol string
	// Type is Instance or Ip.
	Type string
	// AnyPort serves a listener port range.
	AnyPort bool
	// AddressIPVersion is ipv4 or DualStack (backend-ip-version ipv6 or
	// dualstack); fixed at creation.
	AddressIPVersion string
	// Set are the tunables the annotations ask for, under their API
	// parameter names (HealthCheckConfig.* dotted; lists comma-joined).
	Set map[string]string
	// Servers are the members we want (for a bound group: ours only).
	Servers []Server
	// ResetKubeProxy: no annotation chooses the check and kube-proxy's
	// does not apply, so one left by an earlier pass is reset (groupWants).
	ResetKubeProxy bool
}

// PortKey identifies a Service port by number and protocol (service.PortKey).
type PortKey = service.PortKey

// KeyOf returns the PortKey of a Service port (service.KeyOf).
func KeyOf(port int32, udp bool) PortKey { return service.KeyOf(port, udp) }

// Listener is the desired listener of one Service port.
type Listener struct {
	// ServicePort is the PortKey of the Service port, which selects the Group.
	ServicePort PortKey
	// Port is the listener port (0 for a port range).
	Port int32
	// StartPort and EndPort bound a port-range listener.
	StartPort, EndPort int32
	// Protocol is TCP, UDP or TCPSSL.
	Protocol string
	// Description is our naming-scheme ListenerDescription, the ownership mark.
	Description string
	// Set are the settings the annotations ask for, under their API
	// parameter names (lists comma-joined).
	Set map[string]string
	// ManageCerts reports that the annotations name the listener's
	// additional certificates (TCPSSL): AdditionalCerts is then its whole set.
	ManageCerts bool
	// AdditionalCerts are the server certificates besides the default one.
	AdditionalCerts []string
}

// span returns the inclusive port span a listener occupies.
func (l Listener) span() (int32, int32) {
	if l.Port != 0 {
		return l.Port, l.Port
	}
	return l.StartPort, l.EndPort
}

// Model is the desired state of one Service's listeners and server groups.
type Model struct {
	// Ref names the Service's listeners and groups.
	Ref naming.Ref
	// Groups has one entry per Service port (number and protocol).
	Groups []Group
	// Listeners has one entry per Service port (number and protocol).
	Listeners []Listener
}

// Addresses resolves backend identities the model needs but the Request
// does not carry: the primary IPs of instances (ecs backends in Ip
// groups). The ENIs of pod IPs come with the targets.
type Addresses struct {
	// InstanceIPs maps instance ids to their primary private IPs.
	InstanceIPs map[string]string
	// InstanceIPv6s maps instance ids to their primary ENI's first IPv6
	// address (instances without one are absent).
	InstanceIPv6s map[string]string
}

// groupType is the server group type the Service asks for.
func groupType(s *annotations.Settings) string {
	if strings.EqualFold(annotations.Or(s.Backend.ServerGroupType, annotations.DefaultServerGroupType), "ip") {
		return GroupIP
	}
	return GroupInstance
}

// listenerProtocol is the upper-case NLB listener protocol of a port.
func listenerProtocol(p annotations.Port) string {
	return strings.ToUpper(string(p.Protocol))
}

// groupProtocol maps a listener protocol to the group protocol: TLS is
// terminated at the listener, so TCPSSL listeners forward to TCP groups.
func groupProtocol(listenerProto string) string {
	if listenerProto == "UDP" {
		return "UDP"
	}
	return "TCP"
}

// BuildModel derives the desired groups and listeners from the Service,
// its settings and targets.
func BuildModel(req *service.Request, addr Addresses) *Model {
	s := req.Settings
	ref := req.Identity.Ref
	m := &Model{Ref: ref}
	eni := s.Backend.Type == annotations.BackendENI
	typ := groupType(s)
	gset := groupSettings(s)
	version := backendIPVersion(s)
	for _, p := range s.Ports {
		proto := listenerProtocol(p)
		portName := strconv.Itoa(int(p.NodePort))
		if eni {
			portName = p.TargetPort.String()
		}
		key := KeyOf(p.Port, proto == "UDP")
		l := Listener{ServicePort: key, Port: p.Port, Protocol: proto, Description: ref.NLBListener(p.Port, proto), Set: listenerSettings(s, proto)}
		l.AdditionalCerts, l.ManageCerts = additionalCerts(s, proto)
		g := Group{ServicePort: key, Name: ref.NLBServerGroup(portName, proto), BoundID: p.VGroupID, Protocol: groupProtocol(proto), Type: typ,
			Set:              kubeProxyCheck(gset, groupProtocol(proto), s.Listener.HealthCheck.KubeProxyPort, req.Backends[p.Port]),
			AddressIPVersion: groupIPVersion(version)}
		_, kp := g.Set["HealthCheckConfig.HealthCheckConnectPort"]
		g.ResetKubeProxy = !s.Listener.HealthCheck.Chosen && !kp
		if p.PortRange != nil {
			l.Port, l.StartPort, l.EndPort = 0, p.PortRange.Start, p.PortRange.End
			l.Description = ref.NLBListenerRange(p.PortRange.Start, p.PortRange.End, proto)
			g.Name = ref.NLBServerGroupRange(p.PortRange.Start, p.PortRange.End, proto)
			g.AnyPort = true
		}
		for _, t := range req.Backends[p.Port] {
			if !eni && t.IP == "" {
				// Backends are keyed by port number alone: for 53/TCP and
				// 53/UDP on two nodePorts they hold one of the two ports.
				// The Nodes and weights are the same for both; the port is
				// this one's.
				t.Port = p.NodePort
			}
			// A pod address is an eni member in either backend mode (with
			// ecs backends: a pod on a virtual Node).
			for _, srv := range servers(t, eni || t.IP != "", typ, version, addr, g.Name) {
				if g.AnyPort {
					srv.Port = 0
				}
				g.Servers = append(g.Servers, srv)
			}
		}
		slices.SortFunc(g.Servers, func(a, b Server) int { return strings.Compare(a.key(), b.key()) })
		m.Groups = append(m.Groups, g)
		m.Listeners = append(m.Listeners, l)
	}
	return m
}

// server turns a target into a group member; false when its identity
// could not be resolved (the ENI or instance address is unknown yet).
func server(t service.Target, eni bool, typ string, addr Addresses, desc string) (Server, bool) {
	srv := Server{Port: t.Port, Weight: t.Weight, Description: desc}
	switch {
	case typ == GroupIP && eni:
		srv.ServerID, srv.IP, srv.Type = t.IP, t.IP, ServerIP
	case typ == GroupIP:
		ip := addr.InstanceIPs[t.InstanceID]
		if ip == "" {
			return Server{}, false
		}
		srv.ServerID, srv.IP, srv.Type = ip, ip, ServerIP
	case eni:
		if t.ENI == "" {
			return Server{}, false // not proven (the resolver hands none such)
		}
		srv.ServerID, srv.IP, srv.Type = t.ENI, t.IP, ServerEni
	default:
		if t.InstanceID == "" {
			return Server{}, false
		}
		srv.ServerID, srv.Type = t.InstanceID, ServerEcs
	}
	return srv, true
}

func boolStr(b bool) string { return strconv.FormatBool(b) }

// groupSettings maps the annotations to server group parameters. Only what
// the user set is compared and written; the cloud's defaults stand for the
// rest, so an adopted group sees no write.
func groupSettings(s *annotations.Settings) map[string]string {
	set := map[string]string{}
	l := s.Listener
	h := l.HealthCheck
	str := func(k string, v *string, conv func(string) string) {
		if v != nil {
			set[k] = conv(*v)
		}
	}
	num := func(k string, v *int) {
		if v != nil {
			set[k] = strconv.Itoa(*v)
		}
	}
	flag := func(k string, v *bool) {
		if v != nil {
			set[k] = boolStr(*v)
		}
	}
	same := func(v string) string { return v }
	str("Scheduler", l.Scheduler, same)
	flag("ConnectionDrainEnabled", l.ConnectionDrain)
	num("ConnectionDrainTimeout", l.ConnectionDrainTimeout)
	flag("PreserveClientIpEnabled", s.Backend.PreserveClientIP)
	const hc = "HealthCheckConfig."
	flag(hc+"HealthCheckEnabled", h.Flag)
	str(hc+"HealthCheckType", h.Type, strings.ToUpper)
	if h.ConnectPort != nil {
		port := *h.ConnectPort
		if port == annotations.UseBackendPort {
			port = 0
		}
		set[hc+"HealthCheckConnectPort"] = strconv.Itoa(port)
	}
	num(hc+"HealthyThreshold", h.HealthyThreshold)
	num(hc+"UnhealthyThreshold", h.UnhealthyThreshold)
	num(hc+"HealthCheckInterval", h.Interval)
	num(hc+"HealthCheckConnectTimeout", h.ConnectTimeout)
	str(hc+"HealthCheckUrl", h.URI, same)
	str(hc+"HealthCheckDomain", h.Domain, same)
	str(hc+"HttpCheckMethod", h.Method, strings.ToUpper)
	if len(h.HTTPCodes) > 0 {
		set[hc+"HealthCheckHttpCode"] = strings.Join(h.HTTPCodes, ",")
	}
	return set
}

// listenerSettings maps the annotations to listener parameters for one
// protocol; TLS settings go to TCPSSL listeners only (the API refuses them
// elsewhere).
func listenerSettings(s *annotations.Settings, proto string) map[string]string {
	set := map[string]string{}
	l := s.Listener
	if l.IdleTimeout != nil {
		set["IdleTimeout"] = strconv.Itoa(*l.IdleTimeout)
	}
	if l.ProxyProtocol != nil {
		set["ProxyProtocolEnabled"] = boolStr(*l.ProxyProtocol)
	}
	if l.CPS != nil {
		set["Cps"] = strconv.Itoa(*l.CPS)
	}
	ppv2Settings(&l, set)
	if proto != "TCPSSL" {
		return set
	}
	if len(l.CertIDs) > 0 {
		// A listener has exactly one default certificate.
		set["CertificateIds"] = l.CertIDs[0]
	}
	if l.TLSCipherPolicy != nil {
		set["SecurityPolicyId"] = *l.TLSCipherPolicy
	}
	if l.CACert != nil {
		set["CaEnabled"] = boolStr(*l.CACert)
	}
	if len(l.CACertIDs) > 0 {
		set["CaCertificateIds"] = strings.Join(l.CACertIDs, ",")
	}
	if l.ALPN != nil {
		set["AlpnEnabled"] = boolStr(*l.ALPN)
	}
	if l.ALPNPolicy != nil {
		set["AlpnPolicy"] = *l.ALPNPolicy
	}
	return set
}

// listParams are the parameters whose values are lists, sent as Name.N.
var listParams = map[string]bool{
	"CertificateIds": true, "CaCertificateIds": true, "HealthCheckConfig.HealthCheckHttpCode": true,
}

// formParams expands settings into wire parameters (lists as Name.N).
func formParams(set map[string]string) map[string]string {
	out := make(map[string]string, len(set))
	ppv2Form(set, out)
	for k, v := range set {
		if strings.HasPrefix(k, ppv2Prefix) {
			continue
		}
		if !listParams[k] {
			out[k] = v
			continue
		}
		for i, item := range strings.Split(v, ",") {
			out[k+"."+strconv.Itoa(i+1)] = item
		}
	}
	return out
}

// MemberKey implements service.Member.
func (s Server) MemberKey() string { return s.key() }

// MemberWeight implements service.Member.
func (s Server) MemberWeight() int { return s.Weight }

// MemberDescription implements service.Member.
func (s Server) MemberDescription() string { return s.Description }
