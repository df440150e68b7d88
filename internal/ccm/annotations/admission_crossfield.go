package annotations

import (
	"fmt"
	"strings"
)

// crossField generates crossField's and ports' rules over the Service.
func (g *admissionGen) crossField() {
	// Spec ports: every one TCP or UDP (both kinds).
	g.check("p_spec_ports", "variables.owner == '' ? '' : (variables.ports.transformList(i, p, !(p.?protocol.orValue('TCP') in ['TCP', 'UDP']), "+
		"'spec.ports[' + string(i) + '].protocol: invalid value ' + "+quoteCEL("p.protocol")+" + ': accepted: TCP, UDP') + [''])[0]",
		"spec.ports[*].protocol: accepted: TCP, UDP")
	for _, o := range []string{"clb", "nlb"} {
		x := g.crossFor(o)
		vg := "lvgroup_port_" + o
		needsBefore, needsAfter, _ := strings.Cut(VGroupPortNeedsID("\x00"), "\x00")
		x.requires("vgroup_id", fmt.Sprintf("%s && !variables.%s_skip && variables.p_vgroup_port_%s == '' && variables.%s_e.exists(x, x != '') && !%s", celPresent("vgroup-port"), vg, o, vg, celPresent("id")),
			celKeyOf("vgroup-port"), celVal("vgroup-port"), lit(needsBefore)+" + "+celKeyOf("id")+" + "+lit(needsAfter))
		if o == "clb" {
			x.clb()
			continue
		}
		x.nlb()
	}
}

// celKeyOf is the CEL of an annotation's key as written, else its
// current key.
func celKeyOf(suffix string) string {
	return fmt.Sprintf("(variables.k_%s != '' ? variables.k_%s : %s)", ident(suffix), ident(suffix), lit(Key(suffix)))
}

// celVal is the CEL of an annotation's value.
func celVal(suffix string) string { return "variables.v_" + ident(suffix) }

// celPresent is the CEL of whether an annotation is set.
func celPresent(suffix string) string { return fmt.Sprintf("(variables.k_%s != '')", ident(suffix)) }

// celOn is the CEL of whether an annotation is set to on.
func celOn(suffix string) string {
	return fmt.Sprintf("(%s && %s.lowerAscii() == 'on')", celPresent(suffix), celVal(suffix))
}

// crossRules generates the cross-field rules of one load balancer kind.
type crossRules struct {
	g *admissionGen
	// o is clb or nlb, owner its Owner.
	o, owner string
	// known says the listener protocols are known; protos are they, per
	// Service port; last tells whether port i is the last of its number.
	known, protos, last string
}

// crossFor defines the variables of kind o's listener protocols.
func (g *admissionGen) crossFor(o string) *crossRules {
	x := &crossRules{g: g, o: o, owner: strings.ToUpper(o)}
	pp := "lprotocol_port_" + o
	// The listener protocol of each Service port, as Parse's Ports
	// (protocol-port applies whole, at the last port of each number).
	applied := fmt.Sprintf("(%s && !variables.%s_skip && variables.p_protocol_port_%s == '')", celPresent("protocol-port"), pp, o)
	g.v("known_"+o, fmt.Sprintf("!%s || !variables.%s_skip", celPresent("protocol-port"), pp))
	x.last = "variables.ports.transformList(j, q, q.port == p.port, j)[variables.ports.transformList(j, q, q.port == p.port, j).size() - 1] == i"
	names := fmt.Sprintf("variables.%[1]s_e[j] != '' && int(x) == p.port", pp)
	g.v("protos_"+o, fmt.Sprintf("variables.ports.transformList(i, p, "+
		"(%[1]s && %[2]s && variables.%[3]s_v.exists(j, x, %[4]s)) ? variables.%[3]s_k[variables.%[3]s_v.transformList(j, x, %[4]s, j)[0]] : "+
		"(p.?protocol.orValue('TCP') == 'UDP' ? 'udp' : p.?protocol.orValue('TCP') == 'TCP' ? 'tcp' : ''))", applied, x.last, pp, names))
	x.protos = "variables.protos_" + o
	x.known = "variables.known_" + o
	return x
}

// guard limits a rule to Services of this kind.
func (x *crossRules) guard(body string) string {
	return fmt.Sprintf("variables.owner != %s ? '' : (%s)", lit(x.owner), body)
}

// requires adds a rule refusing key's value when cond holds.
func (x *crossRules) requires(name, cond, key, value, accepted string) {
	x.g.check("x_"+x.o+"_"+name, x.guard(fmt.Sprintf("(%s) ? %s : ''", cond, wholeCEL(key, value, accepted))), name+": see docs/annotations.md, Cross-field rules")
}

// clb adds the CLB's cross-field rules.
func (x *crossRules) clb() {
	g, known, protos, last := x.g, x.known, x.protos, x.last
	keyOf, val, present, on, guard, requires := celKeyOf, celVal, celPresent, celOn, x.guard, x.requires
	// The scheduler must suit every listener's protocol.
	var table []string
	for _, proto := range []string{"tcp", "udp", "http", "https"} {
		table = append(table, fmt.Sprintf("%s: %s", lit(proto), litList(CLBSchedulers(proto))))
	}
	tbl := "{" + strings.Join(table, ", ") + "}"
	g.check("x_clb_scheduler", guard(fmt.Sprintf("(!%[1]s || variables.p_scheduler_clb != '' || !%[2]s) ? '' : "+
		"(variables.ports.transformList(i, p, %[3]s[i] in %[4]s && !(%[5]s.lowerAscii() in %[4]s[%[3]s[i]]), "+
		"%[6]s + ': invalid value ' + %[7]s + ': accepted: port ' + string(p.port) + ' is ' + %[3]s[i] + ', whose listeners take ' + %[4]s[%[3]s[i]].join(', ')) + [''])[0]",
		present("scheduler"), known, protos, tbl, val("scheduler"), keyOf("scheduler"), quoteCEL(val("scheduler")))),
		"scheduler: see docs/annotations.md, Cross-field rules")
	requires("https_cert", fmt.Sprintf("%s && 'https' in %s && !%s", known, protos, present("cert-id")), keyOf("protocol-port"), val("protocol-port"), "'an https port requires ' + "+keyOf("cert-id"))
	// forward-port: an http port to an https port.
	fw := "lforward_port_clb"
	fwApplied := fmt.Sprintf("(%s && !variables.%s_skip && variables.p_forward_port_clb == '')", present("forward-port"), fw)
	g.v("fwd_clb", fmt.Sprintf("variables.ports.transformList(i, p, (%[1]s && %[2]s) ? "+
		"(variables.%[3]s_k.transformList(j, x, variables.%[3]s_e[j] != '' && int(x) == p.port, j) + [-1])[0] : -1)", fwApplied, last, fw))
	toProto := fmt.Sprintf("%s[variables.ports.transformList(j, q, q.port == int(variables.%s_v[variables.fwd_clb[i]]), j)[0]]", protos, fw)
	g.check("x_clb_forward", guard(fmt.Sprintf("!%[1]s ? '' : (variables.ports.transformList(i, p, variables.fwd_clb[i] >= 0 && !(%[2]s[i] == 'http' && %[3]s == 'https'), %[4]s) + [''])[0]",
		known, protos, toProto,
		elemCEL(keyOf("forward-port"), "variables.fwd_clb[i]", "variables."+fw+"_e[variables.fwd_clb[i]]",
			fmt.Sprintf("'port ' + string(p.port) + ' is ' + %s[i] + ' and port ' + string(int(variables.%s_v[variables.fwd_clb[i]])) + ' is ' + %s", protos, fw, toProto),
			"'httpPort:httpsPort where ' + "+keyOf("protocol-port")+" + ' maps the first port to http and the second to https'"))),
		"forward-port: see docs/annotations.md, Cross-field rules")
	requires("acl", fmt.Sprintf("%s && !%s", on("acl-status"), present("acl-id")), keyOf("acl-status"), val("acl-status"), "'on requires ' + "+keyOf("acl-id"))
	g.check("x_clb_sticky", guard(fmt.Sprintf("!%[1]s ? '' : !%[2]s ? %[3]s : %[4]s != '' ? '' : (%[5]s.lowerAscii() == 'insert' && !%[6]s) ? %[7]s : (%[5]s.lowerAscii() == 'server' && !%[8]s) ? %[9]s : ''",
		on("sticky-session"), present("sticky-session-type"),
		wholeCEL(keyOf("sticky-session"), val("sticky-session"), "'on requires ' + "+keyOf("sticky-session-type")),
		"variables.p_sticky_session_type_clb", val("sticky-session-type"), present("cookie-timeout"),
		wholeCEL(keyOf("sticky-session-type"), val("sticky-session-type"), "'insert requires ' + "+keyOf("cookie-timeout")),
		present("cookie"),
		wholeCEL(keyOf("sticky-session-type"), val("sticky-session-type"), "'server requires ' + "+keyOf("cookie")))),
		"sticky-session: see docs/annotations.md, Cross-field rules")
	requires("drain", fmt.Sprintf("%s && !%s", on("connection-drain"), present("connection-drain-timeout")), keyOf("connection-drain"), val("connection-drain"), "'on requires ' + "+keyOf("connection-drain-timeout"))
	requires("domains", fmt.Sprintf("%s && %s && !variables.ldomain_extensions_clb_skip && variables.p_domain_extensions_clb == '' && variables.ldomain_extensions_clb_e.exists(x, x != '') && !('https' in %s)", known, present("domain-extensions"), protos),
		keyOf("domain-extensions"), val("domain-extensions"), "'requires an https port in ' + "+keyOf("protocol-port"))
}

// nlb adds the NLB's cross-field rules.
func (x *crossRules) nlb() {
	known, protos := x.known, x.protos
	keyOf, val, present, on, requires := celKeyOf, celVal, celPresent, celOn, x.requires
	idList := func(suffix string) string {
		l := "l" + ident(suffix) + "_nlb"
		return fmt.Sprintf("(!%s || (!variables.%s_skip && variables.p_%s_nlb == '' && !variables.%s_e.exists(x, x != '')))", present(suffix), l, ident(suffix), l)
	}
	udpMin, udpMax := cloudFact("nlb:IdleTimeout/UDP").Min, cloudFact("nlb:IdleTimeout/UDP").Max
	requires("udp_idle", fmt.Sprintf("%s && variables.p_idle_timeout_nlb == '' && %s && 'udp' in %s && (int(%s) < %d || int(%s) > %d)", present("idle-timeout"), known, protos, val("idle-timeout"), udpMin, val("idle-timeout"), udpMax),
		keyOf("idle-timeout"), val("idle-timeout"), lit(fmt.Sprintf("a udp port's listener takes %d to %d", udpMin, udpMax)))
	requires("tcpssl_cert", fmt.Sprintf("%s && 'tcpssl' in %s && %s", known, protos, idList("cert-id")), keyOf("protocol-port"), val("protocol-port"), "'a tcpssl port requires ' + "+keyOf("cert-id"))
	zm, _ := Find("zone-maps", OwnerNLB)
	requires("zone_maps", fmt.Sprintf("!%s && !(%s && variables.p_id_nlb == '')", present("zone-maps"), present("id")), keyOf("zone-maps"), val("zone-maps"), fmt.Sprintf("'required unless ' + %s + %s", keyOf("id"), lit(" is set: "+zm.Format)))
	requires("cacert", fmt.Sprintf("%s && %s", on("cacert"), idList("cacert-id")), keyOf("cacert"), val("cacert"), "'on requires ' + "+keyOf("cacert-id"))
	requires("alpn", fmt.Sprintf("%s && !%s", on("alpn"), present("alpn-policy")), keyOf("alpn"), val("alpn"), "'on requires ' + "+keyOf("alpn-policy"))
	requires("port_range", fmt.Sprintf("%s && !variables.llistener_port_range_nlb_skip && variables.p_listener_port_range_nlb == '' && variables.llistener_port_range_nlb_e.exists(x, x != '') && %s && %s.lowerAscii() == 'ecs'",
		present("listener-port-range"), present("backend-type"), val("backend-type")),
		keyOf("listener-port-range"), val("listener-port-range"), lit("requires "+BackendTypeKey+": eni"))
}
