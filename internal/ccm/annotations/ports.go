package annotations

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// portFields applies the annotations whose elements name Service ports:
// protocol-port, vgroup-port, forward-port and listener-port-range.
type portFields struct {
	r   *reader
	s   *Settings
	svc *corev1.Service
	// index is the position in s.Ports of each Service port number.
	index map[int32]int
}

// ports builds one Port per Service port and applies protocol-port,
// vgroup-port, forward-port and listener-port-range, whose port fields must
// name existing Service ports. Each of them is applied whole or, with any
// bad element, not at all.
func (r *reader) ports(s *Settings, svc *corev1.Service) {
	p := &portFields{r: r, s: s, svc: svc, index: map[int32]int{}}
	for i, sp := range svc.Spec.Ports {
		proto, ok := portProtocol(sp.Protocol)
		if !ok {
			// The port's listener and group cannot be named: backends too.
			r.fail(fmt.Sprintf("spec.ports[%d].protocol", i), string(sp.Protocol), "TCP, UDP", true)
		}
		p.index[sp.Port] = i
		s.Ports = append(s.Ports, Port{Name: sp.Name, Port: sp.Port, NodePort: sp.NodePort, TargetPort: sp.TargetPort, Protocol: proto})
	}
	p.protocolPort()
	p.vgroupPort()
	if r.owner == OwnerCLB {
		p.forwardPort()
	}
	if r.owner == OwnerNLB {
		p.portRange()
	}
}

// portOf finds the Service port an element's port field names, or says
// what is wrong with it.
func (p *portFields) portOf(text string) (int, string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return 0, "a port is required"
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, "the port is not a number"
	}
	i, ok := p.index[int32(n)]
	if !ok || n < 1 || n > 65535 {
		return 0, fmt.Sprintf("port %d is not a Service port", n)
	}
	return i, ""
}

// once says which element already named a Service port, if any.
func (p *portFields) once(at map[int]int, i int) string {
	if n, dup := at[i]; dup {
		return fmt.Sprintf("port %d is already given by element %d", p.s.Ports[i].Port, n)
	}
	return ""
}

// protocolPort applies protocol-port: proto:port,...
func (p *portFields) protocolPort() {
	a, key, v, ok := p.r.raw("protocol-port")
	if !ok {
		return
	}
	allowed := []string{"tcp", "udp", "http", "https"}
	if p.r.owner == OwnerNLB {
		allowed = []string{"tcp", "udp", "tcpssl"}
	}
	at, protos := map[int]int{}, map[int]Protocol{}
	valid := p.r.allElements(a, key, v, func(e element) string {
		proto, port, found := strings.Cut(e.text, ":")
		proto = strings.ToLower(strings.TrimSpace(proto))
		i, why := p.portOf(port)
		switch {
		case !found:
			why = "expected proto:port"
		case !slices.Contains(allowed, proto):
			why = "the protocol is not one of " + strings.Join(allowed, ", ")
		case why == "":
			why = p.once(at, i)
		}
		// http, https and tcpssl listeners carry TCP; udp must stay udp.
		if why == "" && (proto == "udp") != (p.svc.Spec.Ports[i].Protocol == corev1.ProtocolUDP) {
			why = fmt.Sprintf("port %d is %s in the Service, so its listener protocol must match (udp only for UDP ports)", p.s.Ports[i].Port, p.svc.Spec.Ports[i].Protocol)
		}
		if why == "" {
			at[i], protos[i] = e.n, Protocol(proto)
		}
		return why
	})
	if valid {
		for i, proto := range protos {
			p.s.Ports[i].Protocol, p.s.Ports[i].ProtocolFromAnnotation = proto, true
		}
	}
}

// perPort reads a list annotation whose elements each set one Service
// port: parse returns the port's index, the value and why it refuses the
// element; a port named again is refused. set holds the values by port
// index, nil when the list is absent or any element was refused, so that
// the list applies whole or not at all.
func perPort[T any](p *portFields, suffix string, parse func(e element) (i int, t T, why string)) (set map[int]T) {
	a, key, v, ok := p.r.raw(suffix)
	if !ok {
		return nil
	}
	at, set := map[int]int{}, map[int]T{}
	ok = p.r.allElements(a, key, v, func(e element) string {
		i, t, why := parse(e)
		if why == "" {
			why = p.once(at, i)
		}
		if why == "" {
			at[i], set[i] = e.n, t
		}
		return why
	})
	if !ok {
		return nil
	}
	return set
}

// vgroupPort applies vgroup-port: group-id:port,...
func (p *portFields) vgroupPort() {
	prefix := "rsp-"
	if p.r.owner == OwnerNLB {
		prefix = "sgp-"
	}
	ids := perPort(p, "vgroup-port", func(e element) (int, string, string) {
		id, port, found := strings.Cut(e.text, ":")
		id = strings.TrimSpace(id)
		i, why := p.portOf(port)
		switch {
		case !found:
			why = "expected " + prefix + "…:port"
		case !validID(id, prefix):
			why = "the group id " + idProblem(id, prefix)
		}
		return i, id, why
	})
	for i, id := range ids {
		p.s.Ports[i].VGroupID = id
	}
}

// forwarding is one accepted forward-port element: the HTTPS port it
// forwards to, and the element for later cross-field messages.
type forwarding struct {
	to int32
	e  element
}

// forwardPort applies the CLB's forward-port: httpPort:httpsPort,...
func (p *portFields) forwardPort() {
	fwd := perPort(p, "forward-port", func(e element) (int, forwarding, string) {
		from, target, found := strings.Cut(e.text, ":")
		fi, why := p.portOf(from)
		ti, whyTo := p.portOf(target)
		switch {
		case !found:
			why = "expected httpPort:httpsPort"
		case why != "":
		case whyTo != "":
			why = whyTo
		case fi == ti:
			why = "a port cannot forward to itself"
		}
		if why != "" {
			return fi, forwarding{}, why
		}
		return fi, forwarding{to: p.s.Ports[ti].Port, e: e}, ""
	})
	for i, f := range fwd {
		p.s.Ports[i].ForwardTo = f.to
		p.r.forwardAt[p.s.Ports[i].Port] = f.e
	}
}

// portRange applies the NLB's listener-port-range: start-end:port,...
func (p *portFields) portRange() {
	ranges := perPort(p, "listener-port-range", func(e element) (int, *PortRange, string) {
		rg, port, found := strings.Cut(e.text, ":")
		start, end, dash := strings.Cut(rg, "-")
		lo, err1 := strconv.Atoi(strings.TrimSpace(start))
		hi, err2 := strconv.Atoi(strings.TrimSpace(end))
		i, why := p.portOf(port)
		switch {
		case !found:
			why = "expected start-end:port"
		case !dash:
			why = "the range is not start-end"
		case err1 != nil || err2 != nil:
			why = "the range bounds are not numbers"
		case lo < 1 || hi > 65535:
			why = "the range is not within 1–65535"
		case lo > hi:
			why = "the range starts after it ends"
		}
		return i, &PortRange{Start: int32(lo), End: int32(hi)}, why
	})
	for i, pr := range ranges {
		p.s.Ports[i].PortRange = pr
	}
}
