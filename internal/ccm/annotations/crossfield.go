package annotations

import (
	"fmt"
	"slices"
	"strings"
)

// crossField checks combinations that are each valid alone but that the
// cloud would reject (or silently ignore) together.
func (r *reader) crossField(s *Settings) {
	// vgroup-port binds groups of a load balancer the Service reuses: one
	// it creates has no groups but its own (CLB vServer groups belong to
	// their load balancer; an NLB server group must be used by a listener
	// of the Service's load balancer), so without id every sync would fail
	// after the load balancer was created. One rule for both kinds,
	// checked before anything is created.
	if s.LoadBalancer.ID == "" && !r.failed("id") && slices.ContainsFunc(s.Ports, func(p Port) bool { return p.VGroupID != "" }) {
		r.fail(r.keyOf("vgroup-port"), r.value("vgroup-port"), VGroupPortNeedsID(r.keyOf("id")), true)
	}
	if r.owner == OwnerCLB {
		r.crossFieldCLB(s)
		return
	}
	r.crossFieldNLB(s)
}

// hasProtocol reports whether a port of s has listener protocol p.
func hasProtocol(s *Settings, p Protocol) bool {
	for _, port := range s.Ports {
		if port.Protocol == p {
			return true
		}
	}
	return false
}

// value is the trimmed value of an annotation as written, "" when absent.
func (r *reader) value(suffix string) string {
	if k, ok := r.keys[suffix]; ok {
		return strings.TrimSpace(r.ann[k])
	}
	return ""
}

// requires reports annotation suffix set on without the annotation it
// needs, unless that one was already reported invalid.
func (r *reader) requires(on bool, suffix string, missing bool, needed string) {
	if on && missing && !r.failed(needed) {
		r.fail(r.keyOf(suffix), r.value(suffix), "on requires "+r.keyOf(needed), false)
	}
}

// crossFieldCLB checks the CLB listeners' combinations.
func (r *reader) crossFieldCLB(s *Settings) {
	l := &s.Listener
	// The scheduler is one value for every listener; each listener's
	// protocol must accept it.
	if l.Scheduler != nil {
		for _, port := range s.Ports {
			if ok := CLBSchedulers(string(port.Protocol)); ok != nil && !slices.Contains(ok, *l.Scheduler) {
				r.fail(r.keyOf("scheduler"), r.value("scheduler"), fmt.Sprintf("port %d is %s, whose listeners take %s", port.Port, port.Protocol, strings.Join(ok, ", ")), false)
				break
			}
		}
	}
	if hasProtocol(s, ProtocolHTTPS) && l.CertID == nil {
		r.fail(r.keyOf("protocol-port"), r.value("protocol-port"), "an https port requires "+r.keyOf("cert-id"), false)
	}
	r.forwards(s)
	r.requires(Or(l.ACLStatus, false), "acl-status", l.ACLID == nil, "acl-id")
	if Or(l.StickySession, false) {
		switch {
		case l.StickySessionType == nil && !r.failed("sticky-session-type"):
			r.fail(r.keyOf("sticky-session"), r.value("sticky-session"), "on requires "+r.keyOf("sticky-session-type"), false)
		case l.StickySessionType == nil:
		case *l.StickySessionType == "insert" && l.CookieTimeout == nil && !r.failed("cookie-timeout"):
			r.fail(r.keyOf("sticky-session-type"), r.value("sticky-session-type"), "insert requires "+r.keyOf("cookie-timeout"), false)
		case *l.StickySessionType == "server" && l.Cookie == nil && !r.failed("cookie"):
			r.fail(r.keyOf("sticky-session-type"), r.value("sticky-session-type"), "server requires "+r.keyOf("cookie"), false)
		}
	}
	r.requires(Or(l.ConnectionDrain, false), "connection-drain", l.ConnectionDrainTimeout == nil, "connection-drain-timeout")
	if len(l.DomainExtensions) > 0 && !hasProtocol(s, ProtocolHTTPS) {
		r.fail(r.keyOf("domain-extensions"), r.value("domain-extensions"), "requires an https port in "+r.keyOf("protocol-port"), false)
	}
}

// forwards checks that each CLB forward-port goes from an http port to an
// https one. A port that forwards has no vServer group, so a forward the
// protocols do not allow leaves the groups unknown too.
func (r *reader) forwards(s *Settings) {
	for _, port := range s.Ports {
		if port.ForwardTo == 0 {
			continue
		}
		if to, _ := s.PortByNumber(port.ForwardTo); port.Protocol != ProtocolHTTP || to.Protocol != ProtocolHTTPS {
			e := r.forwardAt[port.Port]
			r.problems = append(r.problems, Problem{
				Key: r.keyOf("forward-port"), Value: r.value("forward-port"), Index: e.n, Element: e.text,
				Reason:          fmt.Sprintf("port %d is %s and port %d is %s", port.Port, port.Protocol, to.Port, to.Protocol),
				Accepted:        fmt.Sprintf("httpPort:httpsPort where %s maps the first port to http and the second to https", r.keyOf("protocol-port")),
				AffectsBackends: true,
			})
		}
	}
}

// crossFieldNLB checks the NLB listeners' combinations.
func (r *reader) crossFieldNLB(s *Settings) {
	l := &s.Listener
	// The tcpssl port itself is valid (its group is a TCP group); only the
	// listener lacks a certificate. An invalid cert-id is reported already.
	if hasProtocol(s, ProtocolTCPSSL) && len(l.CertIDs) == 0 && !r.failed("cert-id") {
		r.fail(r.keyOf("protocol-port"), r.value("protocol-port"), "a tcpssl port requires "+r.keyOf("cert-id"), false)
	}
	// One idle timeout serves every listener, and UDP listeners take a
	// narrower range than TCP and TCPSSL ones.
	if udpMin, udpMax := cloudFact("nlb:IdleTimeout/UDP").Min, cloudFact("nlb:IdleTimeout/UDP").Max; l.IdleTimeout != nil &&
		hasProtocol(s, ProtocolUDP) && (*l.IdleTimeout < udpMin || *l.IdleTimeout > udpMax) {
		r.fail(r.keyOf("idle-timeout"), r.value("idle-timeout"), fmt.Sprintf("a udp port's listener takes %d to %d", udpMin, udpMax), false)
	}
	if s.LoadBalancer.ID == "" && len(s.LoadBalancer.ZoneMaps) == 0 && !r.failed("zone-maps") {
		r.fail(r.keyOf("zone-maps"), r.value("zone-maps"), "required unless "+r.keyOf("id")+" is set: "+r.entry("zone-maps").Format, false)
	}
	r.requires(Or(l.CACert, false), "cacert", len(l.CACertIDs) == 0, "cacert-id")
	r.requires(Or(l.ALPN, false), "alpn", l.ALPNPolicy == nil, "alpn-policy")
	for _, port := range s.Ports {
		// Range groups take any port: with ecs backends they would be
		// built from node ports they cannot express, so backends wait too.
		if port.PortRange != nil && s.Backend.Type != BackendENI {
			r.fail(r.keyOf("listener-port-range"), r.value("listener-port-range"), "requires "+BackendTypeKey+": eni", true)
			break
		}
	}
}

// VGroupPortNeedsID is the accepted text of a vgroup-port without id, the
// id annotation's key as written.
func VGroupPortNeedsID(idKey string) string {
	return "only with " + idKey + ": the groups must belong to the load balancer the Service reuses"
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
