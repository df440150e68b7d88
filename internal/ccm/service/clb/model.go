package clb

import (
	"sort"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// Backend is one member of a vServer group.
type Backend struct {
	// ServerID is the ECS instance or ENI id.
	ServerID string
	// IP is the ENI's private IP (eni backends only).
	IP string
	// Type is ecs or eni.
	Type string
	// Port is the backend port.
	Port int32
	// Weight is 0–100.
	Weight int
	// Description marks the members a Service added to a shared group.
	Description string
}

// key identifies a member within a group.
func (b Backend) key() string {
	return b.ServerID + "|" + b.IP + "|" + strconv.Itoa(int(b.Port))
}

// PortKey identifies a Service port by number and protocol (service.PortKey).
type PortKey = service.PortKey

// KeyOf returns the PortKey of a Service port (service.KeyOf).
func KeyOf(port int32, udp bool) PortKey { return service.KeyOf(port, udp) }

// Group is the desired vServer group of one or more Service ports.
type Group struct {
	// ServicePort is the PortKey of the first Service port the group
	// serves; listeners of other ports it serves point at it too.
	ServicePort PortKey
	// Name is our naming-scheme name (k8s/<port>/<svc>/<ns>/<cluster>).
	Name string
	// BoundID is a user's group bound by vgroup-port ("" = ours, by Name).
	BoundID string
	// Backends are the members we want (for a bound group: ours only).
	Backends []Backend
}

// Listener is the desired listener of one Service port.
type Listener struct {
	// Port is the listener (Service) port.
	Port int32
	// Protocol is tcp, udp, http or https.
	Protocol string
	// Description is our naming-scheme description, the ownership mark.
	Description string
	// ServicePort is the PortKey of the Group that serves it (0 for a
	// forwarding HTTP listener, which has no backends).
	ServicePort PortKey
	// Set are the settings the annotations ask for: compared with the
	// cloud and written when they differ. Keys are API parameter names.
	Set map[string]string
	// CreateDefaults are sent only on creation, for settings the user did
	// not set (the cloud keeps them afterwards).
	CreateDefaults map[string]string
	// ResetKubeProxy undoes a kube-proxy check that no longer applies; sent
	// only while the listener still has it (kubeProxyReset).
	ResetKubeProxy map[string]string
}

// Model is the desired state of one Service's CLB.
type Model struct {
	// Ref names the Service's listeners and groups.
	Ref naming.Ref
	// Groups has one entry per distinct vServer group: Service ports whose
	// groups have one name (53/TCP and 53/UDP on one nodePort) share it.
	Groups []Group
	// Listeners has one entry per Service port, HTTPS before HTTP so that
	// a forwarding HTTP listener finds its target.
	Listeners []Listener
}

// BuildModel derives the desired groups and listeners from the Service,
// its settings and targets (as the backends resolver proved them: a pod
// address comes with its ENI).
func BuildModel(req *service.Request) *Model {
	s := req.Settings
	ref := req.Identity.Ref
	m := &Model{Ref: ref}
	eni := s.Backend.Type == annotations.BackendENI
	// Group names carry no protocol, so 53/TCP and 53/UDP on one nodePort
	// name one group; the existing CCM shares it between both listeners,
	// and creating it twice would leave a duplicate no listener uses.
	shared := map[string]PortKey{}
	for _, p := range s.Ports {
		l := Listener{Port: p.Port, Protocol: string(p.Protocol), Description: ref.CLBListener(p.Port)}
		l.Set, l.CreateDefaults = listenerSettings(s, p)
		kubeProxyCheck(l.Set, p, s.Listener.HealthCheck.KubeProxyPort, req.Backends[p.Port])
		l.ResetKubeProxy = kubeProxyReset(s, p, l.Set)
		if p.Protocol == annotations.ProtocolHTTP && p.ForwardTo != 0 {
			l.Set["ListenerForward"] = "on"
			l.Set["ForwardPort"] = strconv.Itoa(int(p.ForwardTo))
			m.Listeners = append(m.Listeners, l)
			continue
		}
		portName := strconv.Itoa(int(p.NodePort))
		if eni {
			portName = p.TargetPort.String()
		}
		g := Group{ServicePort: KeyOf(p.Port, p.Protocol == annotations.ProtocolUDP), Name: ref.CLBVGroup(portName), BoundID: p.VGroupID}
		if key, ok := shared[g.BoundID+"|"+g.Name]; ok {
			l.ServicePort = key
			m.Listeners = append(m.Listeners, l)
			continue
		}
		shared[g.BoundID+"|"+g.Name] = g.ServicePort
		l.ServicePort = g.ServicePort
		m.Listeners = append(m.Listeners, l)

		if n := len(req.Backends[p.Port]); n > 0 {
			// One allocation for a 2,000-Node group, not twelve doublings.
			g.Backends = make([]Backend, 0, n)
		}
		for _, t := range req.Backends[p.Port] {
			// Backends are keyed by port number alone: for 53/TCP and
			// 53/UDP on two nodePorts they hold one of the two ports. The
			// Nodes and weights are the same for both; the port is this one's.
			b := Backend{ServerID: t.InstanceID, Type: "ecs", Port: p.NodePort, Weight: t.Weight, Description: g.Name}
			// A pod address is an eni member in either backend mode (with
			// ecs backends: a pod on a virtual Node).
			if eni || t.IP != "" {
				if t.ENI == "" {
					continue // not proven (the resolver hands none such)
				}
				b = Backend{ServerID: t.ENI, IP: t.IP, Type: "eni", Port: t.Port, Weight: t.Weight, Description: g.Name}
			}
			g.Backends = append(g.Backends, b)
		}
		m.Groups = append(m.Groups, g)
	}
	sort.SliceStable(m.Listeners, func(i, j int) bool {
		return m.Listeners[i].Protocol == "https" && m.Listeners[j].Protocol != "https"
	})
	return m
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// listenerSettings maps the annotations to listener API parameters. Only
// what the user set is compared and updated; CLB-side defaults for the
// rest are sent on creation only, so an adopted listener is left as is.
func listenerSettings(s *annotations.Settings, p annotations.Port) (set, create map[string]string) {
	set, create = map[string]string{}, map[string]string{"Bandwidth": "-1"}
	ps, cs := params(set), params(create)
	l := s.Listener
	h := l.HealthCheck
	proto := p.Protocol
	l4 := proto == annotations.ProtocolTCP || proto == annotations.ProtocolUDP
	l7 := !l4
	if l.Scheduler != nil {
		set["Scheduler"] = *l.Scheduler
	} else {
		create["Scheduler"] = annotations.DefaultCLBScheduler
	}
	ps.flag("AclStatus", l.ACLStatus)
	// Access control off detaches the list (the listener then reports no
	// AclId), so the id and type only matter while it is on.
	if l.ACLStatus == nil || *l.ACLStatus {
		ps.str("AclId", l.ACLID)
		ps.str("AclType", l.ACLType)
	}
	ps.num("HealthyThreshold", h.HealthyThreshold)
	ps.num("UnhealthyThreshold", h.UnhealthyThreshold)
	ps.num("HealthCheckInterval", h.Interval)
	ps.str("HealthCheckURI", h.URI)
	ps.str("HealthCheckDomain", h.Domain)
	if len(h.HTTPCodes) > 0 {
		set["HealthCheckHttpCode"] = strings.Join(h.HTTPCodes, ",")
	}
	// -520 means "the backend port", which is also what an unset port does.
	if h.ConnectPort != nil && *h.ConnectPort != annotations.UseBackendPort {
		set["HealthCheckConnectPort"] = strconv.Itoa(*h.ConnectPort)
	}
	if l4 {
		ps.flag("HealthCheckSwitch", h.Switch)
		ps.num("HealthCheckConnectTimeout", h.ConnectTimeout)
		ps.num("PersistenceTimeout", l.PersistenceTimeout)
		ps.flag("ConnectionDrain", l.ConnectionDrain)
		ps.num("ConnectionDrainTimeout", l.ConnectionDrainTimeout)
		if l.ProxyProtocol != nil {
			set["ProxyProtocolV2Enabled"] = strconv.FormatBool(*l.ProxyProtocol)
		}
	}
	if proto == annotations.ProtocolTCP {
		ps.str("HealthCheckType", h.Type)
		ps.num("EstablishedTimeout", l.EstablishedTimeout)
		if h.Type != nil && *h.Type == "http" {
			ps.str("HealthCheckMethod", h.Method)
		}
	}
	if l7 {
		l7Settings(ps, cs, l)
	}
	if proto == annotations.ProtocolHTTPS {
		ps.str("ServerCertificateId", l.CertID)
		ps.flag("EnableHttp2", l.HTTP2)
		ps.str("TLSCipherPolicy", l.TLSCipherPolicy)
	}
	return set, create
}

// MemberKey implements service.Member.
func (b Backend) MemberKey() string { return b.key() }

// MemberWeight implements service.Member.
func (b Backend) MemberWeight() int { return b.Weight }

// MemberDescription implements service.Member.
func (b Backend) MemberDescription() string { return b.Description }

// params are API parameters being built: an annotation left unset adds
// nothing, so only what the user set is compared and written.
type params map[string]string

func (p params) str(k string, v *string) {
	if v != nil {
		p[k] = *v
	}
}

func (p params) num(k string, v *int) {
	if v != nil {
		p[k] = strconv.Itoa(*v)
	}
}

func (p params) flag(k string, v *bool) {
	if v != nil {
		p[k] = onOff(*v)
	}
}

// l7Settings adds the settings of HTTP and HTTPS listeners to ps, and
// their creation defaults to cs.
func l7Settings(ps, cs params, l annotations.Listener) {
	h := l.HealthCheck
	if h.Flag != nil {
		ps["HealthCheck"] = onOff(*h.Flag)
	} else {
		cs["HealthCheck"] = "off"
	}
	ps.str("HealthCheckMethod", h.Method)
	ps.num("HealthCheckTimeout", h.Timeout)
	if l.StickySession != nil {
		ps["StickySession"] = onOff(*l.StickySession)
	} else {
		cs["StickySession"] = "off"
	}
	ps.str("StickySessionType", l.StickySessionType)
	ps.str("Cookie", l.Cookie)
	ps.num("CookieTimeout", l.CookieTimeout)
	ps.num("IdleTimeout", l.IdleTimeout)
	ps.num("RequestTimeout", l.RequestTimeout)
	ps.flag("XForwardedFor_proto", l.XForwardedForProto)
	ps.flag("XForwardedFor_SLBPORT", l.XForwardedForSLBPort)
	ps.flag("XForwardedFor_ClientSrcPort", l.XForwardedForClientSrcPort)
}

// kubeProxyCheck points a listener's health check at kube-proxy's
// /healthz on the Service's healthCheckNodePort (annotations decide when,
// HealthCheck.KubeProxyPort). TCP listeners take an HTTP check
// (HealthCheckType http) and HTTP/HTTPS listeners are HTTP-checked anyway
// (SetLoadBalancerTCPListenerAttribute / SetLoadBalancerHTTPListenerAttribute:
// HealthCheckConnectPort, HealthCheckURI, HealthCheckHttpCode,
// https://help.aliyun.com/zh/slb/classic-load-balancer/developer-reference/api-slb-2014-05-15-setloadbalancertcplistenerattribute).
// CLB UDP listeners cannot run an HTTP check, and a forwarding HTTP
// listener has no backends: both keep their check. So does a listener
// with pod members (pods on virtual Nodes), which have no kube-proxy: the
// check is listener-wide and would fail on them.
func kubeProxyCheck(set map[string]string, p annotations.Port, port int32, targets []service.Target) {
	if port <= 0 {
		return
	}
	for _, t := range targets {
		if t.IP != "" {
			return // a pod address: no kube-proxy answers for it
		}
	}
	switch p.Protocol {
	case annotations.ProtocolTCP:
		set["HealthCheckType"] = "http"
	case annotations.ProtocolHTTP, annotations.ProtocolHTTPS:
		if p.ForwardTo != 0 {
			return
		}
		set["HealthCheck"] = "on"
	default:
		return
	}
	set["HealthCheckConnectPort"] = strconv.Itoa(int(port))
	set["HealthCheckURI"] = annotations.KubeProxyHealthPath
	set["HealthCheckHttpCode"] = "http_2xx"
}

// kubeProxyReset returns the settings that undo a kube-proxy check left by
// an earlier pass on a listener where it no longer applies (the Service
// left Local, or turned it off), when no annotation chooses the check:
// kube-proxy stops answering on a released healthCheckNodePort, and a check
// left there would fail every backend. TCP listeners go back to a TCP check
// of the backend port (CLB takes no "unset" connect port), HTTP/HTTPS
// listeners to our creation default, no check. nil when nothing to undo.
func kubeProxyReset(s *annotations.Settings, p annotations.Port, set map[string]string) map[string]string {
	if _, kp := set["HealthCheckConnectPort"]; kp || s.Listener.HealthCheck.Chosen {
		return nil
	}
	backendPort := strconv.Itoa(int(p.NodePort))
	if s.Backend.Type == annotations.BackendENI {
		backendPort = p.TargetPort.String()
	}
	switch {
	case p.Protocol == annotations.ProtocolTCP:
		return map[string]string{"HealthCheckType": "tcp", "HealthCheckConnectPort": backendPort}
	case (p.Protocol == annotations.ProtocolHTTP || p.Protocol == annotations.ProtocolHTTPS) && p.ForwardTo == 0:
		return map[string]string{"HealthCheck": "off"}
	}
	return nil
}
