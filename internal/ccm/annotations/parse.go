package annotations

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Parse reads every annotation of svc once into typed settings. On invalid
// values it returns the settings it could build together with an
// *InvalidError listing every problem; callers must not change the cloud
// for such a Service, but may use the settings to clean up.
func Parse(svc *corev1.Service, defaults Defaults) (*Settings, error) {
	if svc == nil {
		return nil, fmt.Errorf("parse annotations: nil Service")
	}
	owner := defaults.Owner
	if owner == OwnerNone {
		owner = Class(svc, defaults.LoadBalancerTypeAnnotation)
	}
	if owner == OwnerNone {
		owner = OwnerCLB
		for _, f := range svc.Finalizers {
			if f == naming.FinalizerNLB {
				owner = OwnerNLB
			}
		}
	}
	r := &reader{ann: svc.Annotations, owner: owner, keys: map[string]string{}}
	s := &Settings{Owner: owner, Keys: r.keys, defaults: defaults}
	r.loadBalancer(s)
	r.listener(s)
	r.backend(s, defaults)
	r.ports(s, svc)
	r.crossField(s)
	if len(r.problems) > 0 {
		return s, &InvalidError{Problems: r.problems}
	}
	return s, nil
}

// reader looks annotations up through the registry and collects problems
// instead of stopping at the first one.
type reader struct {
	ann      map[string]string
	owner    Owner
	keys     map[string]string
	problems []Problem
}

func (r *reader) entry(suffix string) *Annotation {
	a, ok := Find(suffix, r.owner)
	if !ok {
		// A parser asking for an annotation the registry lacks is a bug in
		// this package, caught by the tests, never by user input.
		panic(fmt.Sprintf("annotations: %q is not registered for %s", suffix, r.owner))
	}
	return a
}

// raw returns the trimmed value of a present annotation. Empty values count
// as absent unless the registry says emptiness is meaningful.
func (r *reader) raw(suffix string) (a *Annotation, key, val string, ok bool) {
	a = r.entry(suffix)
	key, val, ok = lookup(r.ann, a)
	if !ok {
		return a, "", "", false
	}
	val = strings.TrimSpace(val)
	if val == "" && !a.EmptyIsValue {
		return a, "", "", false
	}
	r.keys[suffix] = key
	return a, key, val, true
}

func (r *reader) fail(key, value, accepted string) {
	r.problems = append(r.problems, Problem{Key: key, Value: value, Accepted: accepted})
}

func (r *reader) failA(a *Annotation, key, value string) { r.fail(key, value, a.Accepted()) }

// keyOf is the key to quote for a suffix: as written, else the current one.
func (r *reader) keyOf(suffix string) string {
	if k, ok := r.keys[suffix]; ok {
		return k
	}
	return r.entry(suffix).Key
}

func (r *reader) str(suffix string) *string {
	_, _, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	return &v
}

func (r *reader) present(suffix string) bool {
	_, _, _, ok := r.raw(suffix)
	return ok
}

func (r *reader) onOff(suffix string) *bool {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	switch strings.ToLower(v) {
	case "on":
		b := true
		return &b
	case "off":
		b := false
		return &b
	}
	r.failA(a, key, v)
	return nil
}

func (r *reader) trueFalse(suffix string) bool {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil || (!strings.EqualFold(v, "true") && !strings.EqualFold(v, "false")) {
		r.failA(a, key, v)
		return false
	}
	return b
}

func (r *reader) intv(suffix string) *int {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < a.Min || n > a.Max {
		r.failA(a, key, v)
		return nil
	}
	return &n
}

func (r *reader) enum(suffix string) *string {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	for _, allowed := range a.Values {
		if strings.EqualFold(v, allowed) {
			return &allowed
		}
	}
	r.failA(a, key, v)
	return nil
}

// idWithPrefix validates a cloud resource id such as vsw-xxx.
func (r *reader) idWithPrefix(suffix, prefix string) *string {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	if !validID(v, prefix) {
		r.failA(a, key, v)
		return nil
	}
	return &v
}

func validID(v, prefix string) bool {
	if !strings.HasPrefix(v, prefix) || len(v) == len(prefix) || len(v) > 128 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// list splits a comma list, dropping empty items so a trailing comma is harmless.
func list(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// idList validates a comma list of ids that all carry prefix ("" = any
// non-blank token).
func (r *reader) idList(suffix, prefix string) ([]string, bool) {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return nil, false
	}
	items := list(v)
	seen := map[string]bool{}
	for _, it := range items {
		if (prefix != "" && !validID(it, prefix)) || strings.ContainsAny(it, " \t:=") || seen[it] {
			r.failA(a, key, v)
			return nil, true
		}
		seen[it] = true
	}
	return items, true
}

func (r *reader) loadBalancer(s *Settings) {
	lb := &s.LoadBalancer
	idPrefix := "lb-"
	if r.owner == OwnerNLB {
		idPrefix = "nlb-"
	}
	if id := r.idWithPrefix("id", idPrefix); id != nil {
		lb.ID = *id
	}
	lb.ForceOverrideListeners = r.trueFalse("force-override-listeners")
	if a, key, v, ok := r.raw("name"); ok {
		n := len([]rune(v))
		if (r.owner == OwnerCLB && n > 80) || (r.owner == OwnerNLB && (n < 2 || n > 128)) {
			r.failA(a, key, v)
		} else {
			lb.Name = &v
		}
	}
	lb.AddressType = r.enum("address-type")
	lb.ResourceGroupID = r.idWithPrefix("resource-group-id", "rg-")
	lb.AdditionalTags = r.tags()
	lb.IPVersion = r.enum("ip-version")
	lb.PreserveOnDelete = r.present("preserve-lb-on-delete")

	if r.owner == OwnerCLB {
		lb.Spec = r.enum("spec")
		lb.InstanceChargeType = r.enum("instance-charge-type")
		lb.ChargeType = r.enum("charge-type")
		lb.Bandwidth = r.intv("bandwidth")
		lb.NetworkType = r.enum("network-type")
		lb.VSwitchID = r.idWithPrefix("vswitch-id", "vsw-")
		lb.MasterZoneID = r.str("master-zoneid")
		lb.SlaveZoneID = r.str("slave-zoneid")
		if a, key, v, ok := r.raw("ip"); ok {
			if net.ParseIP(v) == nil {
				r.failA(a, key, v)
			} else {
				lb.IP = &v
			}
		}
		lb.DeleteProtection = r.onOff("delete-protection")
		lb.ModificationProtection = r.enum("modification-protection")
		lb.ExternalIPType = r.enum("external-ip-type")
		if a, key, v, ok := r.raw("hostname"); ok {
			if len(validation.IsDNS1123Subdomain(v)) > 0 {
				r.failA(a, key, v)
			} else {
				lb.Hostname = &v
			}
		}
		return
	}
	lb.ZoneMaps = r.zoneMaps()
	if ids, ok := r.idList("security-group-ids", "sg-"); ok {
		lb.SecurityGroupIDs, lb.SecurityGroupIDsSet = ids, true
	}
	lb.BandwidthPackageID = r.idWithPrefix("bandwidth-package-id", "cbwp-")
	lb.IPv6AddressType = r.enum("ipv6-address-type")
	lb.CrossZoneEnabled = r.onOff("cross-zone-enabled")
}

// tags parses k1=v1,k2=v2,k3 with the cloud's tag rules.
func (r *reader) tags() []Tag {
	a, key, v, ok := r.raw("additional-resource-tags")
	if !ok {
		return nil
	}
	var out []Tag
	seen := map[string]bool{}
	for _, item := range list(v) {
		k, val, _ := strings.Cut(item, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		lk := strings.ToLower(k)
		if k == "" || len(k) > 128 || len(val) > 128 || seen[k] ||
			strings.HasPrefix(lk, "aliyun") || strings.HasPrefix(lk, "acs:") ||
			k == naming.TagKeyDefaultName || k == naming.TagKeyCluster ||
			strings.Contains(lk, "http://") || strings.Contains(lk, "https://") {
			r.failA(a, key, v)
			return nil
		}
		seen[k] = true
		out = append(out, Tag{Key: k, Value: val})
	}
	if len(out) > 20 {
		r.failA(a, key, v)
		return nil
	}
	return out
}

// zoneMaps parses zone:vsw[:ipv4[:eipAllocId]],... (2–10 distinct zones).
func (r *reader) zoneMaps() []ZoneMapping {
	a, key, v, ok := r.raw("zone-maps")
	if !ok {
		return nil
	}
	var out []ZoneMapping
	seen := map[string]bool{}
	for _, item := range list(v) {
		f := strings.Split(item, ":")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if len(f) < 2 || len(f) > 4 || f[0] == "" || seen[f[0]] || !validID(f[1], "vsw-") {
			r.failA(a, key, v)
			return nil
		}
		m := ZoneMapping{ZoneID: f[0], VSwitchID: f[1]}
		if len(f) > 2 && f[2] != "" {
			if ip := net.ParseIP(f[2]); ip == nil || ip.To4() == nil {
				r.failA(a, key, v)
				return nil
			}
			m.IPv4Address = f[2]
		}
		if len(f) > 3 && f[3] != "" {
			if !validID(f[3], "eip-") {
				r.failA(a, key, v)
				return nil
			}
			m.AllocationID = f[3]
		}
		seen[f[0]] = true
		out = append(out, m)
	}
	if len(out) < 2 || len(out) > 10 {
		r.failA(a, key, v)
		return nil
	}
	return out
}

func (r *reader) listener(s *Settings) {
	l := &s.Listener
	if r.owner == OwnerCLB {
		l.CertID = r.str("cert-id")
	} else if ids, ok := r.idList("cert-id", ""); ok {
		l.CertIDs = ids
	}
	if r.owner == OwnerCLB {
		l.TLSCipherPolicy = r.enum("tls-cipher-policy")
	} else {
		l.TLSCipherPolicy = r.str("tls-cipher-policy")
	}
	l.IdleTimeout = r.intv("idle-timeout")
	l.ProxyProtocol = r.onOff("proxy-protocol")
	l.Scheduler = r.enum("scheduler")
	l.ConnectionDrain = r.onOff("connection-drain")
	l.ConnectionDrainTimeout = r.intv("connection-drain-timeout")
	r.healthCheck(&l.HealthCheck)

	if r.owner == OwnerCLB {
		l.HTTP2 = r.onOff("http2-enabled")
		l.StickySession = r.onOff("sticky-session")
		l.StickySessionType = r.enum("sticky-session-type")
		if a, key, v, ok := r.raw("cookie"); ok {
			if !validCookie(v) {
				r.failA(a, key, v)
			} else {
				l.Cookie = &v
			}
		}
		l.CookieTimeout = r.intv("cookie-timeout")
		l.PersistenceTimeout = r.intv("persistence-timeout")
		l.RequestTimeout = r.intv("request-timeout")
		l.EstablishedTimeout = r.intv("established-timeout")
		l.XForwardedForProto = r.onOff("xforwardedfor-proto")
		l.XForwardedForSLBPort = r.onOff("xforwardedfor-slbport")
		l.XForwardedForClientSrcPort = r.onOff("xforwardedfor-clientsrcport")
		l.ACLStatus = r.onOff("acl-status")
		l.ACLID = r.idWithPrefix("acl-id", "acl-")
		l.ACLType = r.enum("acl-type")
		l.DomainExtensions = r.domainExtensions()
		return
	}
	l.ALPN = r.onOff("alpn")
	l.ALPNPolicy = r.enum("alpn-policy")
	l.AdditionalCertIDs, _ = r.idList("additional-cert-ids", "")
	l.CACert = r.onOff("cacert")
	l.CACertIDs, _ = r.idList("cacert-id", "")
	l.CPS = r.intv("cps")
	l.PPv2EndpointID = r.onOff("ppv2-pvl-ep-id-enabled")
	l.PPv2EndpointServiceID = r.onOff("ppv2-pvl-eps-id-enabled")
	l.PPv2VPCID = r.onOff("ppv2-pvl-vpc-id-enabled")
}

func validCookie(v string) bool {
	if len(v) > 200 || strings.HasPrefix(v, "$") {
		return false
	}
	for _, c := range v {
		if c <= ' ' || c > '~' || c == ',' || c == ';' {
			return false
		}
	}
	return true
}

func (r *reader) domainExtensions() []DomainExtension {
	a, key, v, ok := r.raw("domain-extensions")
	if !ok {
		return nil
	}
	var out []DomainExtension
	seen := map[string]bool{}
	for _, item := range list(v) {
		d, cert, found := strings.Cut(item, ":")
		d, cert = strings.TrimSpace(d), strings.TrimSpace(cert)
		domain := strings.TrimPrefix(d, "*.")
		if !found || cert == "" || strings.ContainsAny(cert, " :") || seen[d] || len(validation.IsDNS1123Subdomain(strings.ToLower(domain))) > 0 {
			r.failA(a, key, v)
			return nil
		}
		seen[d] = true
		out = append(out, DomainExtension{Domain: d, CertID: cert})
	}
	return out
}

func (r *reader) healthCheck(h *HealthCheck) {
	h.Flag = r.onOff("health-check-flag")
	h.Type = r.enum("health-check-type")
	if a, key, v, ok := r.raw("health-check-uri"); ok {
		if !strings.HasPrefix(v, "/") || len(v) > 80 || strings.ContainsAny(v, " \t") {
			r.failA(a, key, v)
		} else {
			h.URI = &v
		}
	}
	if a, key, v, ok := r.raw("health-check-domain"); ok {
		if !validHealthDomain(v) {
			r.failA(a, key, v)
		} else {
			h.Domain = &v
		}
	}
	h.Method = r.enum("health-check-method")
	if a, key, v, ok := r.raw("health-check-httpcode"); ok {
		codes := list(v)
		valid := len(codes) > 0
		seen := map[string]bool{}
		for i, c := range codes {
			c = strings.ToLower(c)
			codes[i] = c
			if (c != "http_2xx" && c != "http_3xx" && c != "http_4xx" && c != "http_5xx") || seen[c] {
				valid = false
			}
			seen[c] = true
		}
		if valid {
			h.HTTPCodes = codes
		} else {
			r.failA(a, key, v)
		}
	}
	if a, key, v, ok := r.raw("health-check-connect-port"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || (n != UseBackendPort && (n < 1 || n > 65535)) {
			r.failA(a, key, v)
		} else {
			h.ConnectPort = &n
		}
	}
	h.HealthyThreshold = r.intv("healthy-threshold")
	h.UnhealthyThreshold = r.intv("unhealthy-threshold")
	h.Interval = r.intv("health-check-interval")
	h.ConnectTimeout = r.intv("health-check-connect-timeout")
	if r.owner == OwnerCLB {
		h.Switch = r.onOff("health-check-switch")
		h.Timeout = r.intv("health-check-timeout")
	}
}

func validHealthDomain(v string) bool {
	if v == "$_ip" {
		return true
	}
	if len(v) > 80 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func (r *reader) backend(s *Settings, d Defaults) {
	b := &s.Backend
	b.Type = d.BackendType
	if b.Type == "" {
		b.Type = BackendECS
	}
	if t := r.enum(BackendTypeKey); t != nil {
		b.Type, b.TypeFromAnnotation = BackendType(*t), true
	}
	b.Weight = r.intv("weight")
	b.DefaultWeight = r.intv("default-weight")
	if v := r.onOff("ignore-weight-update"); v != nil {
		b.IgnoreWeightUpdate = *v
	}
	if a, key, v, ok := r.raw("backend-label"); ok {
		set := map[string]string{}
		for _, item := range list(v) {
			k, val, found := strings.Cut(item, "=")
			k, val = strings.TrimSpace(k), strings.TrimSpace(val)
			if _, dup := set[k]; !found || dup {
				set = nil
				break
			}
			if _, err := labels.NewRequirement(k, selection.Equals, []string{val}); err != nil {
				set = nil
				break
			}
			set[k] = val
		}
		if len(set) == 0 {
			r.failA(a, key, v)
		} else {
			b.Labels = set
		}
	}
	if v := r.onOff("remove-unscheduled-backend"); v != nil {
		b.RemoveUnscheduled = *v
	}
	b.IPVersion = r.enum("backend-ip-version")
	if r.owner == OwnerNLB {
		b.ServerGroupType = r.enum("server-group-type")
		b.PreserveClientIP = r.onOff("preserve-client-ip")
	}
}

// ports builds one Port per Service port and applies protocol-port,
// vgroup-port, forward-port and listener-port-range, whose port fields must
// name existing Service ports.
func (r *reader) ports(s *Settings, svc *corev1.Service) {
	index := map[int32]int{}
	for i, sp := range svc.Spec.Ports {
		proto, ok := portProtocol(sp.Protocol)
		if !ok {
			r.fail(fmt.Sprintf("spec.ports[%d].protocol", i), string(sp.Protocol), "TCP, UDP")
		}
		index[sp.Port] = i
		s.Ports = append(s.Ports, Port{Name: sp.Name, Port: sp.Port, NodePort: sp.NodePort, TargetPort: sp.TargetPort, Protocol: proto})
	}
	portOf := func(text string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil {
			return 0, false
		}
		i, ok := index[int32(n)]
		return i, ok
	}

	if a, key, v, ok := r.raw("protocol-port"); ok {
		allowed := map[string]bool{"tcp": true, "udp": true, "http": true, "https": true}
		if r.owner == OwnerNLB {
			allowed = map[string]bool{"tcp": true, "udp": true, "tcpssl": true}
		}
		set := map[int]bool{}
		for _, item := range list(v) {
			proto, port, found := strings.Cut(item, ":")
			proto = strings.ToLower(strings.TrimSpace(proto))
			i, exists := portOf(port)
			if !found || !allowed[proto] || !exists || set[i] {
				r.failA(a, key, v)
				break
			}
			set[i] = true
			// http, https and tcpssl listeners carry TCP; udp must stay udp.
			if svcProto := svc.Spec.Ports[i].Protocol; (proto == "udp") != (svcProto == corev1.ProtocolUDP) {
				r.fail(key, v, fmt.Sprintf("port %d is %s in the Service, so its listener protocol must match (udp only for UDP ports)", s.Ports[i].Port, svcProto))
				break
			}
			s.Ports[i].Protocol, s.Ports[i].ProtocolFromAnnotation = Protocol(proto), true
		}
	}

	if a, key, v, ok := r.raw("vgroup-port"); ok {
		prefix := "rsp-"
		if r.owner == OwnerNLB {
			prefix = "sgp-"
		}
		set := map[int]bool{}
		for _, item := range list(v) {
			id, port, found := strings.Cut(item, ":")
			id = strings.TrimSpace(id)
			i, exists := portOf(port)
			if !found || !validID(id, prefix) || !exists || set[i] {
				r.failA(a, key, v)
				break
			}
			set[i] = true
			s.Ports[i].VGroupID = id
		}
	}

	if r.owner == OwnerCLB {
		if a, key, v, ok := r.raw("forward-port"); ok {
			for _, item := range list(v) {
				from, to, found := strings.Cut(item, ":")
				fi, fok := portOf(from)
				ti, tok := portOf(to)
				if !found || !fok || !tok || fi == ti {
					r.failA(a, key, v)
					break
				}
				s.Ports[fi].ForwardTo = s.Ports[ti].Port
			}
		}
	}

	if r.owner == OwnerNLB {
		if a, key, v, ok := r.raw("listener-port-range"); ok {
			set := map[int]bool{}
			for _, item := range list(v) {
				rg, port, found := strings.Cut(item, ":")
				start, end, dash := strings.Cut(rg, "-")
				lo, err1 := strconv.Atoi(strings.TrimSpace(start))
				hi, err2 := strconv.Atoi(strings.TrimSpace(end))
				i, exists := portOf(port)
				if !found || !dash || err1 != nil || err2 != nil || lo < 1 || hi > 65535 || lo > hi || !exists || set[i] {
					r.failA(a, key, v)
					break
				}
				set[i] = true
				s.Ports[i].PortRange = &PortRange{Start: int32(lo), End: int32(hi)}
			}
		}
	}
}

// crossField checks combinations that are each valid alone but that the
// cloud would reject (or silently ignore) together.
func (r *reader) crossField(s *Settings) {
	has := func(p Protocol) bool {
		for _, port := range s.Ports {
			if port.Protocol == p {
				return true
			}
		}
		return false
	}
	val := func(suffix string) string {
		if k, ok := r.keys[suffix]; ok {
			return strings.TrimSpace(r.ann[k])
		}
		return ""
	}
	l := &s.Listener
	if r.owner == OwnerCLB {
		if has(ProtocolHTTPS) && l.CertID == nil {
			r.fail(r.keyOf("protocol-port"), val("protocol-port"), "an https port requires "+r.keyOf("cert-id"))
		}
		if r.keys["forward-port"] != "" {
			for _, port := range s.Ports {
				if port.ForwardTo == 0 {
					continue
				}
				to, _ := s.PortByNumber(port.ForwardTo)
				if port.Protocol != ProtocolHTTP || to.Protocol != ProtocolHTTPS {
					r.fail(r.keyOf("forward-port"), val("forward-port"), fmt.Sprintf("httpPort:httpsPort where %s maps the first port to http and the second to https", r.keyOf("protocol-port")))
					break
				}
			}
		}
		if Or(l.ACLStatus, false) && l.ACLID == nil {
			r.fail(r.keyOf("acl-status"), val("acl-status"), "on requires "+r.keyOf("acl-id"))
		}
		if Or(l.StickySession, false) {
			switch {
			case l.StickySessionType == nil:
				r.fail(r.keyOf("sticky-session"), val("sticky-session"), "on requires "+r.keyOf("sticky-session-type"))
			case *l.StickySessionType == "insert" && l.CookieTimeout == nil:
				r.fail(r.keyOf("sticky-session-type"), val("sticky-session-type"), "insert requires "+r.keyOf("cookie-timeout"))
			case *l.StickySessionType == "server" && l.Cookie == nil:
				r.fail(r.keyOf("sticky-session-type"), val("sticky-session-type"), "server requires "+r.keyOf("cookie"))
			}
		}
		if Or(l.ConnectionDrain, false) && l.ConnectionDrainTimeout == nil {
			r.fail(r.keyOf("connection-drain"), val("connection-drain"), "on requires "+r.keyOf("connection-drain-timeout"))
		}
		if len(l.DomainExtensions) > 0 && !has(ProtocolHTTPS) {
			r.fail(r.keyOf("domain-extensions"), val("domain-extensions"), "requires an https port in "+r.keyOf("protocol-port"))
		}
		return
	}
	if has(ProtocolTCPSSL) && len(l.CertIDs) == 0 {
		r.fail(r.keyOf("protocol-port"), val("protocol-port"), "a tcpssl port requires "+r.keyOf("cert-id"))
	}
	if s.LoadBalancer.ID == "" && len(s.LoadBalancer.ZoneMaps) == 0 && !r.failed("zone-maps") {
		r.fail(r.keyOf("zone-maps"), val("zone-maps"), "required unless "+r.keyOf("id")+" is set: "+r.entry("zone-maps").Format)
	}
	if Or(l.CACert, false) && len(l.CACertIDs) == 0 {
		r.fail(r.keyOf("cacert"), val("cacert"), "on requires "+r.keyOf("cacert-id"))
	}
	if Or(l.ALPN, false) && l.ALPNPolicy == nil {
		r.fail(r.keyOf("alpn"), val("alpn"), "on requires "+r.keyOf("alpn-policy"))
	}
	for _, port := range s.Ports {
		if port.PortRange != nil && s.Backend.Type != BackendENI {
			r.fail(r.keyOf("listener-port-range"), val("listener-port-range"), "requires "+BackendTypeKey+": eni")
			break
		}
	}
}

// failed reports whether a problem was already recorded for a suffix, so a
// bad value is not reported twice (once as invalid, once as missing).
func (r *reader) failed(suffix string) bool {
	k, ok := r.keys[suffix]
	if !ok {
		return false
	}
	for _, p := range r.problems {
		if p.Key == k {
			return true
		}
	}
	return false
}
