package slb

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/facts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

type fieldKind int

const (
	fStr fieldKind = iota
	fInt
	fBool
)

// lfield describes one listener setting: its API name (requests match it
// case-insensitively, which also covers healthCheckInterval & co), type,
// default, validation, and the protocols that have it.
type lfield struct {
	name     string
	kind     fieldKind
	def      string
	enum     []string
	min, max int
	protos   string
	// top settings sit at the top level of DescribeLoadBalancerListeners
	// items instead of in the protocol's *ListenerConfig.
	top bool
	// maxLen bounds free-text settings.
	maxLen int
	// listString renders a boolean as the string "true"/"false" in the
	// *ListenerConfig objects of DescribeLoadBalancerListeners, where the
	// SDK model has a string; everywhere else booleans are JSON booleans.
	listString bool
	// notListed settings are in the *ListenerAttribute responses only;
	// the *ListenerConfig models lack them.
	notListed bool
	// notAttr settings are absent from the protocol's
	// DescribeLoadBalancer*ListenerAttribute model.
	notAttr bool
}

var (
	onOffEnum = []string{"on", "off"}
	xffFields = []string{"XForwardedFor_SLBIP", "XForwardedFor_SLBID", "XForwardedFor_SLBPORT", "XForwardedFor_ClientSrcPort", "XForwardedFor_proto"}
)

var listenerFields = func() []lfield {
	fs := []lfield{
		{name: "Bandwidth", kind: fInt, def: "-1", protos: "tcp udp http https", top: true},
		{name: "Scheduler", kind: fStr, def: "wrr", protos: "tcp", top: true},
		{name: "Scheduler", kind: fStr, def: "wrr", protos: "udp", top: true},
		{name: "Scheduler", kind: fStr, def: "wrr", protos: "http", top: true},
		{name: "Scheduler", kind: fStr, def: "wrr", protos: "https", top: true},
		{name: "Description", kind: fStr, protos: "tcp udp http https", top: true, maxLen: 256},
		{name: "AclId", kind: fStr, protos: "tcp udp http https", top: true},
		{name: "AclStatus", kind: fStr, def: "off", enum: onOffEnum, protos: "tcp udp http https", top: true},
		{name: "AclType", kind: fStr, protos: "tcp udp http https", top: true},
		{name: "HealthyThreshold", kind: fInt, def: "3", protos: "tcp udp http https"},
		{name: "UnhealthyThreshold", kind: fInt, def: "3", protos: "tcp udp http https"},
		{name: "HealthCheckInterval", kind: fInt, def: "2", protos: "tcp udp http https"},
		{name: "HealthCheckDomain", kind: fStr, protos: "tcp udp http https", maxLen: 80},
		{name: "HealthCheckURI", kind: fStr, protos: "tcp udp http https", maxLen: 80},
		{name: "HealthCheckHttpCode", kind: fStr, def: "http_2xx", protos: "tcp udp http https"},
		{name: "HealthCheckConnectPort", kind: fInt, def: "0", min: 1, max: 65535, protos: "tcp udp http https"},
		{name: "HealthCheckMethod", kind: fStr, protos: "tcp"},
		{name: "HealthCheckMethod", kind: fStr, def: "head", protos: "http https"},
		{name: "HealthCheckSwitch", kind: fStr, def: "on", enum: onOffEnum, protos: "tcp", notAttr: true},
		{name: "HealthCheckSwitch", kind: fStr, def: "on", enum: onOffEnum, protos: "udp"},
		{name: "HealthCheckConnectTimeout", kind: fInt, def: "5", protos: "tcp udp"},
		{name: "PersistenceTimeout", kind: fInt, def: "0", protos: "tcp udp"},
		{name: "ConnectionDrain", kind: fStr, def: "off", enum: onOffEnum, protos: "tcp udp"},
		{name: "ConnectionDrainTimeout", kind: fInt, def: "0", protos: "tcp udp"},
		{name: "ProxyProtocolV2Enabled", kind: fBool, def: "false", protos: "tcp udp", listString: true},
		{name: "FullNatEnabled", kind: fBool, def: "false", protos: "tcp udp", listString: true},
		{name: "EstablishedTimeout", kind: fInt, def: "900", protos: "tcp"},
		{name: "HealthCheckType", kind: fStr, def: "tcp", protos: "tcp"},
		{name: "SynProxy", kind: fStr, def: "disable", enum: []string{"enable", "disable"}, protos: "tcp", notListed: true},
		{name: "HealthCheckTcpFastCloseEnabled", kind: fBool, def: "false", protos: "tcp"},
		{name: "HealthCheckReq", kind: fStr, protos: "udp", maxLen: 500},
		{name: "HealthCheckExp", kind: fStr, protos: "udp", maxLen: 500},
		{name: "HealthCheck", kind: fStr, def: "on", enum: onOffEnum, protos: "http https"},
		{name: "HealthCheckTimeout", kind: fInt, def: "5", protos: "http https"},
		{name: "HealthCheckHttpVersion", kind: fStr, def: "HTTP1.0", enum: []string{"HTTP1.0", "HTTP1.1"}, protos: "http https"},
		{name: "StickySession", kind: fStr, def: "off", enum: onOffEnum, protos: "http https"},
		{name: "StickySessionType", kind: fStr, protos: "http https"},
		{name: "CookieTimeout", kind: fInt, def: "0", protos: "http https"},
		{name: "Cookie", kind: fStr, protos: "http https", maxLen: 200},
		{name: "Gzip", kind: fStr, def: "on", enum: onOffEnum, protos: "http https"},
		{name: "IdleTimeout", kind: fInt, def: "15", protos: "http https"},
		{name: "RequestTimeout", kind: fInt, def: "60", protos: "http https"},
		{name: "XForwardedFor", kind: fStr, def: "on", enum: onOffEnum, protos: "http https"},
		{name: "ListenerForward", kind: fStr, def: "off", enum: onOffEnum, protos: "http"},
		{name: "ForwardPort", kind: fInt, def: "0", min: 1, max: 65535, protos: "http"},
		{name: "ServerCertificateId", kind: fStr, protos: "https"},
		{name: "CACertificateId", kind: fStr, protos: "https"},
		{name: "EnableHttp2", kind: fStr, def: "on", enum: onOffEnum, protos: "https"},
		{name: "TLSCipherPolicy", kind: fStr, def: "tls_cipher_policy_1_0", protos: "https"},
		{name: "BackendProtocol", kind: fStr, def: "http", enum: []string{"http", "https"}, protos: "https", top: true},
	}
	for _, x := range xffFields {
		fs = append(fs, lfield{name: x, kind: fStr, def: "off", enum: onOffEnum, protos: "http https"})
	}
	for i := range fs {
		k, ok := listenerFacts[fs[i].name]
		if !ok {
			continue
		}
		r := facts.Get(strings.ReplaceAll(k, "{proto}", fs[i].protos))
		if r.Values != nil {
			fs[i].enum = slices.Clone(r.Values)
		} else {
			fs[i].min, fs[i].max = r.Min, r.Max
		}
	}
	return fs
}()

// listenerFacts names the rule in the emulator's facts behind each
// listener setting with a range or an enumeration ({proto}: the one
// protocol of that table entry).
var listenerFacts = map[string]string{
	"Bandwidth":                 "slb:ListenerBandwidth",
	"HealthyThreshold":          "slb:HealthyThreshold",
	"UnhealthyThreshold":        "slb:UnhealthyThreshold",
	"HealthCheckInterval":       "slb:HealthCheckInterval",
	"HealthCheckConnectTimeout": "slb:HealthCheckConnectTimeout",
	"PersistenceTimeout":        "slb:PersistenceTimeout",
	"ConnectionDrainTimeout":    "slb:ConnectionDrainTimeout",
	"EstablishedTimeout":        "slb:EstablishedTimeout",
	"HealthCheckTimeout":        "slb:HealthCheckTimeout",
	"CookieTimeout":             "slb:CookieTimeout",
	"IdleTimeout":               "slb:IdleTimeout",
	"RequestTimeout":            "slb:RequestTimeout",
	"HealthCheckType":           "slb:HealthCheckType",
	"HealthCheckMethod":         "slb:HealthCheckMethod",
	"StickySessionType":         "slb:StickySessionType",
	"TLSCipherPolicy":           "slb:TLSCipherPolicy",
	"AclType":                   "slb:AclType",
	"Scheduler":                 "slb:Scheduler/{proto}",
}

// fieldsByProto indexes listenerFields per protocol, in table order.
var fieldsByProto = func() map[string][]lfield {
	out := map[string][]lfield{}
	for _, f := range listenerFields {
		for _, p := range strings.Fields(f.protos) {
			out[p] = append(out[p], f)
		}
	}
	return out
}()

var httpCodes = map[string]bool{"http_2xx": true, "http_3xx": true, "http_4xx": true, "http_5xx": true}

// parseField reads one setting; ok is false when the request omits it.
func parseField(p api.Params, f lfield) (string, bool, error) {
	v, ok := p.Get(f.name)
	if !ok || v == "" {
		return "", false, nil
	}
	switch f.kind {
	case fInt:
		n, err := p.Int(f.name, 0)
		if err != nil {
			return "", false, err
		}
		if n < f.min || n > f.max {
			return "", false, api.InvalidParameter(f.name, "The parameter %s must be between %d and %d, got %d.", f.name, f.min, f.max, n)
		}
		return strconv.Itoa(n), true, nil
	case fBool:
		b, err := p.Bool(f.name, false)
		if err != nil {
			return "", false, err
		}
		return strconv.FormatBool(b), true, nil
	}
	if len(f.enum) > 0 {
		if _, err := p.Enum(f.name, "", f.enum...); err != nil {
			return "", false, err
		}
	}
	if f.maxLen > 0 && len([]rune(v)) > f.maxLen {
		return "", false, api.InvalidParameter(f.name, "The parameter %s must be at most %d characters.", f.name, f.maxLen)
	}
	if f.name == "HealthCheckHttpCode" {
		for _, c := range strings.Split(v, ",") {
			if !httpCodes[c] {
				return "", false, api.InvalidParameter(f.name, "The parameter HealthCheckHttpCode must be a comma list of http_2xx, http_3xx, http_4xx and http_5xx, got %q.", v)
			}
		}
	}
	return v, true, nil
}

// renderField gives a setting its JSON type; inList is true for the
// *ListenerConfig objects of DescribeLoadBalancerListeners.
func renderField(f lfield, v string, inList bool) any {
	switch f.kind {
	case fInt:
		n, _ := strconv.Atoi(v)
		return n
	case fBool:
		if inList && f.listString {
			return v
		}
		return v == "true"
	}
	return v
}

func listenerKey(proto string, port int) string { return proto + "_" + strconv.Itoa(port) }

// ListenerResourceID is the id a listener has in the tag APIs: lb-xxx_http_80.
func ListenerResourceID(lbID, proto string, port int) string {
	return lbID + "_" + listenerKey(proto, port)
}

func (lb *LoadBalancer) sortedListeners() []*Listener {
	out := make([]*Listener, 0, len(lb.Listeners))
	for _, l := range lb.Listeners {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Port != out[j].Port {
			return out[i].Port < out[j].Port
		}
		return out[i].Protocol < out[j].Protocol
	})
	return out
}

func (l *Listener) status(req *api.Request) string {
	if l.Transition != "" && req.Now.Before(l.BusyUntil) {
		return l.Transition
	}
	return l.Status
}

func (s *Service) touchListener(req *api.Request, l *Listener, transition string) {
	l.BusyUntil = req.Now.Add(s.st.Settings().Delay(store.DelaySLBConfiguring))
	l.Transition = transition
}

func errListenerBusy() error {
	return api.Errorf(http.StatusBadRequest, "ServiceIsConfiguring", "A previous configuration of the load balancer is pending, please try again later.")
}

func requiredPort(p api.Params, key string) (int, error) {
	if _, err := p.Required(key); err != nil {
		return 0, err
	}
	return p.IntRange(key, 0, 1, 65535)
}

// tcpFamily protocols share the TCP port space.
func tcpFamily(proto string) bool { return proto != "udp" }

// checkListenerConfig validates the settings that depend on each other
// and on other resources.
func (s *Service) checkListenerConfig(req *api.Request, lb *LoadBalancer, l *Listener) error {
	c := l.Config
	if c["AclStatus"] == "on" {
		if c["AclId"] == "" {
			return api.MissingParameter("AclId")
		}
		if c["AclType"] == "" {
			return api.MissingParameter("AclType")
		}
	}
	if id := c["AclId"]; id != "" {
		if a := s.state.ACLs[id]; a == nil || a.RegionID != lb.RegionID {
			return errACLNotFound(id)
		}
	}
	if c["ConnectionDrain"] == "on" && c["ConnectionDrainTimeout"] == "0" {
		return api.MissingParameter("ConnectionDrainTimeout")
	}
	if l.Protocol == "http" || l.Protocol == "https" {
		if c["StickySession"] == "on" {
			switch c["StickySessionType"] {
			case "":
				return api.MissingParameter("StickySessionType")
			case "insert":
				if c["CookieTimeout"] == "0" {
					return api.MissingParameter("CookieTimeout")
				}
			case "server":
				if c["Cookie"] == "" {
					return api.MissingParameter("Cookie")
				}
			}
		}
	}
	if l.Protocol == "http" && c["ListenerForward"] == "on" {
		fp := c["ForwardPort"]
		if fp == "0" {
			return api.MissingParameter("ForwardPort")
		}
		n, _ := strconv.Atoi(fp)
		if lb.Listeners[listenerKey("https", n)] == nil {
			return api.InvalidParameter("ForwardPort", "There is no HTTPS listener on ForwardPort %d of load balancer %s.", n, lb.ID)
		}
	}
	if l.Protocol == "https" {
		id := c["ServerCertificateId"]
		if id == "" {
			return api.MissingParameter("ServerCertificateId")
		}
		if cert := s.state.Certificates[id]; cert == nil || cert.Kind != "server" || cert.RegionID != lb.RegionID {
			return errCertNotFound("ServerCertificate", id)
		}
		if ca := c["CACertificateId"]; ca != "" {
			if cert := s.state.Certificates[ca]; cert == nil || cert.Kind != "ca" || cert.RegionID != lb.RegionID {
				return errCertNotFound("CACertificate", ca)
			}
		}
	}
	if l.VServerGroupID != "" {
		g := s.state.VServerGroups[l.VServerGroupID]
		if g == nil {
			return errVServerGroupNotFound()
		}
		if g.LoadBalancerID != lb.ID {
			return api.InvalidParameter("VServerGroupId", "The vServer group %s does not belong to load balancer %s.", g.ID, lb.ID)
		}
	}
	if l.VServerGroupID == "" && l.BackendServerPort == 0 && !(l.Protocol == "http" && c["ListenerForward"] == "on") {
		return api.MissingParameter("BackendServerPort")
	}
	return nil
}

func (s *Service) createListener(proto string) api.Handler {
	return func(req *api.Request) (map[string]any, error) {
		lb, err := s.lb(req)
		if err != nil {
			return nil, err
		}
		p := req.Params
		port, err := requiredPort(p, "ListenerPort")
		if err != nil {
			return nil, err
		}
		if lb.Listeners[listenerKey(proto, port)] != nil {
			return nil, api.Errorf(http.StatusBadRequest, "ListenerAlreadyExists", "The listener %s:%d already exists.", strings.ToUpper(proto), port)
		}
		for _, other := range lb.Listeners {
			if other.Port == port && tcpFamily(other.Protocol) == tcpFamily(proto) {
				return nil, api.Errorf(http.StatusBadRequest, "ListenerPortConflict", "The port %d is already used by the %s listener of load balancer %s.", port, strings.ToUpper(other.Protocol), lb.ID)
			}
		}
		if q := s.st.Settings().Quota(store.QuotaSLBListenersPerLB); len(lb.Listeners) >= q {
			return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.ListenersPerLoadBalancer", "The number of listeners of load balancer %s has reached the quota %d.", lb.ID, q)
		}
		if proto == "http" || proto == "https" {
			for _, k := range []string{"StickySession", "HealthCheck"} {
				if _, err := p.Required(k); err != nil {
					return nil, err
				}
			}
		}
		backendPort := 0
		if p.String("BackendServerPort") != "" {
			if backendPort, err = p.IntRange("BackendServerPort", 0, 1, 65535); err != nil {
				return nil, err
			}
		}
		l := &Listener{Port: port, Protocol: proto, Status: "stopped", BackendServerPort: backendPort,
			VServerGroupID: p.String("VServerGroupId"), Config: map[string]string{}, CreatedAt: req.Now}
		for _, f := range fieldsByProto[proto] {
			v, ok, err := parseField(p, f)
			if err != nil {
				return nil, err
			}
			if !ok {
				v = f.def
			}
			l.Config[f.name] = v
		}
		if err := s.checkListenerConfig(req, lb, l); err != nil {
			return nil, err
		}
		if l.Tags, err = s.validateNewTags(p.Tags(), nil); err != nil {
			return nil, err
		}
		lb.Listeners[listenerKey(proto, port)] = l
		return map[string]any{}, nil
	}
}

func (s *Service) listenerOf(req *api.Request, proto string) (*LoadBalancer, *Listener, error) {
	lb, port, err := s.lbAndListenerPort(req)
	if err != nil {
		return nil, nil, err
	}
	return listenerAt(lb, proto, port)
}

// lbAndListenerPort returns the load balancer a listener request names and
// its required ListenerPort.
func (s *Service) lbAndListenerPort(req *api.Request) (*LoadBalancer, int, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, 0, err
	}
	port, err := requiredPort(req.Params, "ListenerPort")
	if err != nil {
		return nil, 0, err
	}
	return lb, port, nil
}

// listenerAt returns lb's listener of proto on port, or ListenerNotFound.
func listenerAt(lb *LoadBalancer, proto string, port int) (*LoadBalancer, *Listener, error) {
	l := lb.Listeners[listenerKey(proto, port)]
	if l == nil {
		return nil, nil, errListenerNotFound()
	}
	return lb, l, nil
}

func (s *Service) setListener(proto string) api.Handler {
	return func(req *api.Request) (map[string]any, error) {
		lb, l, err := s.listenerOf(req, proto)
		if err != nil {
			return nil, err
		}
		if req.Now.Before(l.BusyUntil) {
			return nil, errListenerBusy()
		}
		p := req.Params
		next := *l
		next.Config = make(map[string]string, len(l.Config))
		for k, v := range l.Config {
			next.Config[k] = v
		}
		for _, f := range fieldsByProto[proto] {
			v, ok, err := parseField(p, f)
			if err != nil {
				return nil, err
			}
			if ok {
				next.Config[f.name] = v
			}
		}
		if v, _ := p.Get("AclStatus"); strings.EqualFold(v, "off") {
			// Turning access control off releases the list: the listener
			// reports no AclId and the list can be deleted.
			delete(next.Config, "AclId")
			delete(next.Config, "AclType")
		}
		vsg, err := onOff(p, "VServerGroup", "")
		if err != nil {
			return nil, err
		}
		switch {
		case vsg == "off":
			next.VServerGroupID = ""
		case p.String("VServerGroupId") != "":
			next.VServerGroupID = p.String("VServerGroupId")
		case vsg == "on":
			return nil, api.MissingParameter("VServerGroupId")
		}
		if err := s.checkListenerConfig(req, lb, &next); err != nil {
			return nil, err
		}
		*l = next
		s.touchListener(req, l, "configuring")
		return map[string]any{}, nil
	}
}

func (s *Service) aclIDs(l *Listener) []string {
	if id := l.Config["AclId"]; id != "" {
		return []string{id}
	}
	return []string{}
}

func (s *Service) describeListener(proto string) api.Handler {
	return func(req *api.Request) (map[string]any, error) {
		lb, l, err := s.listenerOf(req, proto)
		if err != nil {
			return nil, err
		}
		out := map[string]any{
			"LoadBalancerId":    lb.ID,
			"ListenerPort":      l.Port,
			"BackendServerPort": l.BackendServerPort,
			"Status":            l.status(req),
			"VServerGroupId":    l.VServerGroupID,
			"AclIds":            map[string]any{"AclId": s.aclIDs(l)},
			"Tags":              tagList{Tag: tagKVs(l.Tags)},
		}
		for _, f := range fieldsByProto[proto] {
			if !f.notAttr {
				out[f.name] = renderField(f, l.Config[f.name], false)
			}
		}
		switch proto {
		case "tcp", "udp":
			out["HealthCheck"] = l.Config["HealthCheckSwitch"]
		case "http":
			out["Rules"] = map[string]any{"Rule": []any{}}
		case "https":
			out["Rules"] = map[string]any{"Rule": []any{}}
			certs := []map[string]any{}
			if c := s.state.Certificates[l.Config["ServerCertificateId"]]; c != nil {
				certs = append(certs, serverCertView(c))
			}
			out["ServerCertificates"] = map[string]any{"ServerCertificate": certs}
			out["DomainExtensions"] = map[string]any{"DomainExtension": s.domainExtensionViews(lb.ID, l.Port, "")}
		}
		return out, nil
	}
}

func listenerListItem(req *api.Request, s *Service, lb *LoadBalancer, l *Listener) map[string]any {
	it := map[string]any{
		"LoadBalancerId":    lb.ID,
		"ListenerPort":      l.Port,
		"ListenerProtocol":  l.Protocol,
		"BackendServerPort": l.BackendServerPort,
		"Status":            l.status(req),
		"VServerGroupId":    l.VServerGroupID,
		"AclIds":            s.aclIDs(l),
		"Tags":              tagKVs(l.Tags),
	}
	cfg := map[string]any{}
	for _, f := range fieldsByProto[l.Protocol] {
		switch {
		case f.top:
			it[f.name] = renderField(f, l.Config[f.name], false)
		case !f.notListed:
			cfg[f.name] = renderField(f, l.Config[f.name], true)
		}
	}
	switch l.Protocol {
	case "tcp":
		cfg["HealthCheck"] = l.Config["HealthCheckSwitch"]
		it["TCPListenerConfig"] = cfg
	case "udp":
		cfg["HealthCheck"] = l.Config["HealthCheckSwitch"]
		it["UDPListenerConfig"] = cfg
	case "http":
		it["HTTPListenerConfig"] = cfg
	case "https":
		certs := []map[string]any{}
		if c := s.state.Certificates[l.Config["ServerCertificateId"]]; c != nil {
			certs = append(certs, serverCertView(c))
		}
		cfg["ServerCertificates"] = certs
		it["HTTPSListenerConfig"] = cfg
	}
	return it
}

func (s *Service) describeLoadBalancerListeners(req *api.Request) (map[string]any, error) {
	p := req.Params
	ids := p.List("LoadBalancerId")
	if len(ids) == 0 {
		ids = s.state.Order
	}
	port := 0
	if p.String("ListenerPort") != "" {
		var err error
		if port, err = p.IntRange("ListenerPort", 0, 1, 65535); err != nil {
			return nil, err
		}
	}
	proto := strings.ToLower(p.String("ListenerProtocol"))
	if proto != "" && fieldsByProto[proto] == nil {
		return nil, api.InvalidParameter("ListenerProtocol", "The parameter ListenerProtocol must be one of tcp, udp, http, https, got %q.", p.String("ListenerProtocol"))
	}
	desc := p.String("Description")
	want := p.Tags()
	type pair struct {
		lb *LoadBalancer
		l  *Listener
	}
	var matched []pair
	for _, id := range ids {
		lb := s.state.LoadBalancers[id]
		if lb == nil || lb.RegionID != req.RegionID {
			continue
		}
		for _, l := range lb.sortedListeners() {
			if (port == 0 || l.Port == port) && (proto == "" || l.Protocol == proto) &&
				(desc == "" || l.Config["Description"] == desc) && api.MatchTags(l.Tags, want) {
				matched = append(matched, pair{lb, l})
			}
		}
	}
	// Cursor keys: the load balancer's place (its position in the request's
	// LoadBalancerId.N, else its creation time and id), then the port and
	// protocol, so that a page boundary survives listeners and load
	// balancers added or removed between pages.
	byRequest := len(p.List("LoadBalancerId")) > 0
	pos := map[string]int{}
	for i, id := range ids {
		if _, ok := pos[id]; !ok {
			pos[id] = i
		}
	}
	matched, keys := api.SortByKey(matched, func(m pair) string {
		lbKey := m.lb.CreatedAt.UTC().Format("20060102T150405.000000000") + "/" + m.lb.ID
		if byRequest {
			lbKey = fmt.Sprintf("%05d", pos[m.lb.ID])
		}
		return fmt.Sprintf("%s/%05d/%s", lbKey, m.l.Port, m.l.Protocol)
	})
	maxResults, start, end, next, err := p.Cursor(keys, 20, 100, "MaxResults")
	if err != nil {
		return nil, err
	}
	items := make([]map[string]any, 0, end-start)
	for _, m := range matched[start:end] {
		items = append(items, listenerListItem(req, s, m.lb, m.l))
	}
	return map[string]any{"Listeners": items, "NextToken": next, "MaxResults": maxResults, "TotalCount": len(matched)}, nil
}

// findListener resolves ListenerPort (+ ListenerProtocol when the port has
// both a TCP-family and a UDP listener).
func (s *Service) findListener(req *api.Request) (*LoadBalancer, *Listener, error) {
	lb, port, err := s.lbAndListenerPort(req)
	if err != nil {
		return nil, nil, err
	}
	if proto := strings.ToLower(req.Params.String("ListenerProtocol")); proto != "" {
		if fieldsByProto[proto] == nil {
			return nil, nil, api.InvalidParameter("ListenerProtocol", "The parameter ListenerProtocol must be one of tcp, udp, http, https, got %q.", proto)
		}
		return listenerAt(lb, proto, port)
	}
	var found []*Listener
	for _, l := range lb.Listeners {
		if l.Port == port {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil, errListenerNotFound()
	case 1:
		return lb, found[0], nil
	}
	return nil, nil, api.MissingParameter("ListenerProtocol")
}

// findIdleListener is findListener for a change: a listener still busy with
// the last one is refused.
func (s *Service) findIdleListener(req *api.Request) (*LoadBalancer, *Listener, error) {
	lb, l, err := s.findListener(req)
	if err != nil {
		return nil, nil, err
	}
	if req.Now.Before(l.BusyUntil) {
		return nil, nil, errListenerBusy()
	}
	return lb, l, nil
}

func (s *Service) startListener(req *api.Request) (map[string]any, error) {
	return s.switchListener(req, "running", "starting")
}

func (s *Service) stopListener(req *api.Request) (map[string]any, error) {
	return s.switchListener(req, "stopped", "stopping")
}

// switchListener moves a listener to status through transition; a listener
// already there is left alone, as the API answers success without a change.
func (s *Service) switchListener(req *api.Request, status, transition string) (map[string]any, error) {
	_, l, err := s.findIdleListener(req)
	if err != nil {
		return nil, err
	}
	if l.Status == status {
		return map[string]any{}, nil
	}
	l.Status = status
	s.touchListener(req, l, transition)
	return map[string]any{}, nil
}

func (s *Service) deleteListener(req *api.Request) (map[string]any, error) {
	lb, l, err := s.findIdleListener(req)
	if err != nil {
		return nil, err
	}
	if l.Protocol == "https" {
		for _, o := range lb.Listeners {
			if o.Protocol == "http" && o.Config["ListenerForward"] == "on" && o.Config["ForwardPort"] == strconv.Itoa(l.Port) {
				return nil, errNotAllowed("The HTTPS listener %d is the forward target of HTTP listener %d.", l.Port, o.Port)
			}
		}
		for id, d := range s.state.DomainExtensions {
			if d.LoadBalancerID == lb.ID && d.ListenerPort == l.Port {
				delete(s.state.DomainExtensions, id)
			}
		}
	}
	delete(lb.Listeners, listenerKey(l.Protocol, l.Port))
	return map[string]any{}, nil
}
