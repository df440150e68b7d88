package annotations

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Parse reads every annotation of svc once into typed settings.
//
// On invalid values it returns the settings it could build together with
// an *InvalidError listing every problem. In those settings an invalid
// annotation counts as absent: its field is nil, zero or the default, and a
// comma-separated one is not applied at all, never in part; every other
// field holds what it would hold if the invalid annotations were removed
// (a cross-field problem keeps the values involved, which are each valid).
// So when InvalidError.BackendsUsable reports true, everything the backend
// pass reads (Owner, Backend, Ports, LoadBalancer.ID and the methods built
// on them) is exactly what the Service asks for, and callers may compute
// and sync its backends; they must not apply load balancer or listener
// settings, which are incomplete. Callers may also use them to clean up.
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
	r := &reader{ann: svc.Annotations, owner: owner, keys: map[string]string{}, forwardAt: map[int32]element{}}
	s := &Settings{Owner: owner, Keys: r.keys, defaults: defaults}
	r.loadBalancer(s)
	r.listener(s)
	r.backend(s, defaults)
	r.ports(s, svc)
	r.crossField(s)
	s.notApplied = r.notApplied()
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
	// forwardAt is the forward-port element of each forwarding port, so the
	// cross-field check can point at the element it rejects.
	forwardAt map[int32]element
}

// notApplied describes each annotation present with a value the
// controllers do not apply (registry NotApplied), in registry order.
func (r *reader) notApplied() []string {
	var out []string
	for i := range Registry {
		a := &Registry[i]
		if a.NotApplied == "" || !a.Scope.has(r.owner) {
			continue
		}
		key, v, ok := lookup(r.ann, a)
		if v = strings.TrimSpace(v); !ok || v == "" || strings.EqualFold(v, a.Default) {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s is not applied: %s", key, quote(v), a.NotApplied))
	}
	return out
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

// fail records a problem outside one annotation's own syntax (cross-field
// checks, spec fields); backends says whether it leaves a setting the
// backend pass reads unknown.
func (r *reader) fail(key, value, accepted string, backends bool) {
	r.problems = append(r.problems, Problem{Key: key, Value: value, Accepted: accepted, AffectsBackends: backends})
}

func (r *reader) failA(a *Annotation, key, value string) { r.failWhy(a, key, value, "") }

// failWhy records an invalid value of a, with a reason when its accepted
// text alone would not tell which rule the value breaks.
func (r *reader) failWhy(a *Annotation, key, value, reason string) {
	r.problems = append(r.problems, Problem{Key: key, Value: value, Reason: reason, Accepted: a.Accepted(), AffectsBackends: a.Backends})
}

// failElem records one bad element of a comma-separated value, so the
// user is pointed at it instead of at the whole (possibly long) value.
func (r *reader) failElem(a *Annotation, key, value string, e element, reason string) {
	r.problems = append(r.problems, Problem{Key: key, Value: value, Index: e.n, Element: e.text, Reason: reason, Accepted: a.Accepted(), AffectsBackends: a.Backends})
}

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
	if why := idProblem(v, prefix); why != "" {
		if strings.Contains(v, ",") {
			why = "one id is accepted, not a list"
		} else {
			why = "the id " + why
		}
		r.failWhy(a, key, v, why)
		return nil
	}
	return &v
}

// idProblem says what is wrong with a cloud resource id, as a predicate
// for the caller to name its subject ("" = valid).
func idProblem(v, prefix string) string {
	switch {
	case !strings.HasPrefix(v, prefix):
		return "does not start with " + prefix
	case len(v) == len(prefix):
		return "is empty after " + prefix
	case len(v) > 128:
		return "is longer than 128 characters"
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "has characters other than letters, digits, '-' and '_'"
		}
	}
	return ""
}

func validID(v, prefix string) bool { return idProblem(v, prefix) == "" }

// element is one item of a comma-separated value.
type element struct {
	// n is the 1-based position as written, empty items counted, so a
	// message points where the user looks.
	n int
	// text is the item, trimmed.
	text string
}

// elements splits a comma list, dropping empty items so a trailing comma
// is harmless.
func elements(v string) []element {
	var out []element
	for i, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, element{n: i + 1, text: item})
		}
	}
	return out
}

// repeats is the reason for an element that repeats what element n set.
func repeats(what string, n int) string {
	return fmt.Sprintf("repeats the %s of element %d", what, n)
}

// idList validates a comma list of ids that all carry prefix ("" = any
// token without blanks, ':' or '='); ok is false when absent or invalid.
func (r *reader) idList(suffix, prefix string) (ids []string, ok bool) {
	a, key, v, present := r.raw(suffix)
	if !present {
		return nil, false
	}
	seen := map[string]int{}
	bad := false
	for _, e := range elements(v) {
		why := ""
		switch {
		case prefix != "":
			if why = idProblem(e.text, prefix); why != "" {
				why = "the id " + why
			}
		case strings.ContainsAny(e.text, " \t:="):
			why = "ids are separated by commas and contain no blanks, ':' or '='"
		}
		if n, dup := seen[e.text]; why == "" && dup {
			why = repeats("id", n)
		}
		if why != "" {
			r.failElem(a, key, v, e, why)
			bad = true
			continue
		}
		seen[e.text] = e.n
		ids = append(ids, e.text)
	}
	if bad {
		return nil, false
	}
	return ids, true
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
		if (r.owner == OwnerCLB && !validCLBName(v)) || (r.owner == OwnerNLB && !validNLBName(v)) {
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
	seen := map[string]int{}
	bad := false
	for _, e := range elements(v) {
		k, val, _ := strings.Cut(e.text, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		lk := strings.ToLower(k)
		why := ""
		switch {
		case k == "":
			why = "a tag key is required"
		case len([]rune(k)) > tagKeyMax:
			why = fmt.Sprintf("the key is longer than %d characters", tagKeyMax)
		case len([]rune(val)) > tagValueMax:
			why = fmt.Sprintf("the value is longer than %d characters", tagValueMax)
		case strings.HasPrefix(lk, "aliyun") || strings.HasPrefix(lk, "acs:"):
			why = "the key starts with aliyun or acs:, which the cloud reserves"
		case k == naming.TagKeyDefaultName || k == naming.TagKeyCluster:
			why = "the controller sets the " + k + " tag itself"
		case strings.Contains(lk, "http://") || strings.Contains(lk, "https://"):
			why = "the key contains http:// or https://"
		case seen[k] > 0:
			why = repeats("key", seen[k])
		}
		if why != "" {
			r.failElem(a, key, v, e, why)
			bad = true
			continue
		}
		seen[k] = e.n
		out = append(out, Tag{Key: k, Value: val})
	}
	if bad {
		return nil
	}
	if len(out) > 20 {
		r.failWhy(a, key, v, fmt.Sprintf("%d tags, more than 20", len(out)))
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
	seen := map[string]int{}
	bad := false
	for _, e := range elements(v) {
		f := strings.Split(e.text, ":")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		why := ""
		switch {
		case len(f) < 2:
			why = "a vSwitch is required after the zone"
		case len(f) > 4:
			why = "more than 4 ':'-separated fields"
		case f[0] == "":
			why = "a zone is required"
		case seen[f[0]] > 0:
			why = repeats("zone", seen[f[0]])
		case !validID(f[1], "vsw-"):
			why = "the vSwitch id " + idProblem(f[1], "vsw-")
		case len(f) > 2 && f[2] != "" && (net.ParseIP(f[2]) == nil || net.ParseIP(f[2]).To4() == nil):
			why = "the address is not an IPv4 address"
		case len(f) > 3 && f[3] != "" && !validID(f[3], "eip-"):
			why = "the EIP allocation id " + idProblem(f[3], "eip-")
		}
		if why != "" {
			r.failElem(a, key, v, e, why)
			bad = true
			continue
		}
		m := ZoneMapping{ZoneID: f[0], VSwitchID: f[1]}
		if len(f) > 2 {
			m.IPv4Address = f[2]
		}
		if len(f) > 3 {
			m.AllocationID = f[3]
		}
		seen[f[0]] = e.n
		out = append(out, m)
	}
	if bad {
		return nil
	}
	if zones := cloudFact("nlb:ZoneMappings"); len(out) < zones.Min || len(out) > zones.Max {
		r.failWhy(a, key, v, fmt.Sprintf("%d zones given", len(out)))
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
	seen := map[string]int{}
	bad := false
	for _, e := range elements(v) {
		d, cert, found := strings.Cut(e.text, ":")
		d, cert = strings.TrimSpace(d), strings.TrimSpace(cert)
		why := ""
		switch {
		case !found || cert == "":
			why = "a certificate id is required after the domain"
		case strings.ContainsAny(cert, " :"):
			why = "the certificate id contains a blank or ':'"
		case len(validation.IsDNS1123Subdomain(strings.ToLower(strings.TrimPrefix(d, "*.")))) > 0:
			why = "the domain is not a DNS name (a leading *. is allowed)"
		case seen[d] > 0:
			why = repeats("domain", seen[d])
		}
		if why != "" {
			r.failElem(a, key, v, e, why)
			bad = true
			continue
		}
		seen[d] = e.n
		out = append(out, DomainExtension{Domain: d, CertID: cert})
	}
	if bad {
		return nil
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
		var codes []string
		seen := map[string]int{}
		es := elements(v)
		bad := len(es) == 0
		if bad {
			r.failWhy(a, key, v, "no status class given")
		}
		for _, e := range es {
			c := strings.ToLower(e.text)
			why := ""
			switch {
			case c != "http_2xx" && c != "http_3xx" && c != "http_4xx" && c != "http_5xx":
				why = "not a status class"
			case seen[c] > 0:
				why = repeats("class", seen[c])
			}
			if why != "" {
				r.failElem(a, key, v, e, why)
				bad = true
				continue
			}
			seen[c] = e.n
			codes = append(codes, c)
		}
		if !bad {
			h.HTTPCodes = codes
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

// validLabelKey applies the selector's own key rules, so a key we accept
// can never make BackendSelector fail.
func validLabelKey(k string) bool {
	_, err := labels.NewRequirement(k, selection.Exists, nil)
	return err == nil
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
		at := map[string]int{}
		es := elements(v)
		bad := len(es) == 0
		if bad {
			r.failWhy(a, key, v, "no k=v given")
		}
		for _, e := range es {
			k, val, found := strings.Cut(e.text, "=")
			k, val = strings.TrimSpace(k), strings.TrimSpace(val)
			why := ""
			switch {
			case !found:
				why = "a value is required: k=v"
			case !validLabelKey(k):
				why = "the key is not a label key (an optional DNS prefix and '/', then 1–63 letters, digits, '-', '_' or '.')"
			case len(validation.IsValidLabelValue(val)) > 0:
				why = "the value is not a label value (up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"
			case at[k] > 0:
				why = repeats("key", at[k])
			}
			if why != "" {
				r.failElem(a, key, v, e, why)
				bad = true
				continue
			}
			at[k] = e.n
			set[k] = val
		}
		if !bad {
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
// name existing Service ports. Each of them is applied whole or, with any
// bad element, not at all.
func (r *reader) ports(s *Settings, svc *corev1.Service) {
	index := map[int32]int{}
	for i, sp := range svc.Spec.Ports {
		proto, ok := portProtocol(sp.Protocol)
		if !ok {
			// The port's listener and group cannot be named: backends too.
			r.fail(fmt.Sprintf("spec.ports[%d].protocol", i), string(sp.Protocol), "TCP, UDP", true)
		}
		index[sp.Port] = i
		s.Ports = append(s.Ports, Port{Name: sp.Name, Port: sp.Port, NodePort: sp.NodePort, TargetPort: sp.TargetPort, Protocol: proto})
	}
	// portOf finds the Service port an element's port field names, or says
	// what is wrong with it.
	portOf := func(text string) (int, string) {
		text = strings.TrimSpace(text)
		if text == "" {
			return 0, "a port is required"
		}
		n, err := strconv.Atoi(text)
		if err != nil {
			return 0, "the port is not a number"
		}
		i, ok := index[int32(n)]
		if !ok || n < 1 || n > 65535 {
			return 0, fmt.Sprintf("port %d is not a Service port", n)
		}
		return i, ""
	}
	// once says which element already named a Service port, if any.
	once := func(at map[int]int, i int) string {
		if n, dup := at[i]; dup {
			return fmt.Sprintf("port %d is already given by element %d", s.Ports[i].Port, n)
		}
		return ""
	}

	if a, key, v, ok := r.raw("protocol-port"); ok {
		allowed := []string{"tcp", "udp", "http", "https"}
		if r.owner == OwnerNLB {
			allowed = []string{"tcp", "udp", "tcpssl"}
		}
		at, protos, bad := map[int]int{}, map[int]Protocol{}, false
		for _, e := range elements(v) {
			proto, port, found := strings.Cut(e.text, ":")
			proto = strings.ToLower(strings.TrimSpace(proto))
			i, why := portOf(port)
			switch {
			case !found:
				why = "expected proto:port"
			case !slices.Contains(allowed, proto):
				why = "the protocol is not one of " + strings.Join(allowed, ", ")
			case why == "":
				why = once(at, i)
			}
			// http, https and tcpssl listeners carry TCP; udp must stay udp.
			if why == "" && (proto == "udp") != (svc.Spec.Ports[i].Protocol == corev1.ProtocolUDP) {
				why = fmt.Sprintf("port %d is %s in the Service, so its listener protocol must match (udp only for UDP ports)", s.Ports[i].Port, svc.Spec.Ports[i].Protocol)
			}
			if why != "" {
				r.failElem(a, key, v, e, why)
				bad = true
				continue
			}
			at[i], protos[i] = e.n, Protocol(proto)
		}
		if !bad {
			for i, proto := range protos {
				s.Ports[i].Protocol, s.Ports[i].ProtocolFromAnnotation = proto, true
			}
		}
	}

	if a, key, v, ok := r.raw("vgroup-port"); ok {
		prefix := "rsp-"
		if r.owner == OwnerNLB {
			prefix = "sgp-"
		}
		at, ids, bad := map[int]int{}, map[int]string{}, false
		for _, e := range elements(v) {
			id, port, found := strings.Cut(e.text, ":")
			id = strings.TrimSpace(id)
			i, why := portOf(port)
			switch {
			case !found:
				why = "expected " + prefix + "…:port"
			case !validID(id, prefix):
				why = "the group id " + idProblem(id, prefix)
			case why == "":
				why = once(at, i)
			}
			if why != "" {
				r.failElem(a, key, v, e, why)
				bad = true
				continue
			}
			at[i], ids[i] = e.n, id
		}
		if !bad {
			for i, id := range ids {
				s.Ports[i].VGroupID = id
			}
		}
	}

	if r.owner == OwnerCLB {
		if a, key, v, ok := r.raw("forward-port"); ok {
			at, to, bad := map[int]int{}, map[int]int32{}, false
			for _, e := range elements(v) {
				from, target, found := strings.Cut(e.text, ":")
				fi, why := portOf(from)
				ti, whyTo := portOf(target)
				switch {
				case !found:
					why = "expected httpPort:httpsPort"
				case why != "":
				case whyTo != "":
					why = whyTo
				case fi == ti:
					why = "a port cannot forward to itself"
				default:
					why = once(at, fi)
				}
				if why != "" {
					r.failElem(a, key, v, e, why)
					bad = true
					continue
				}
				at[fi], to[fi] = e.n, s.Ports[ti].Port
				r.forwardAt[s.Ports[fi].Port] = e
			}
			if bad {
				r.forwardAt = map[int32]element{}
			} else {
				for i, port := range to {
					s.Ports[i].ForwardTo = port
				}
			}
		}
	}

	if r.owner == OwnerNLB {
		if a, key, v, ok := r.raw("listener-port-range"); ok {
			at, ranges, bad := map[int]int{}, map[int]*PortRange{}, false
			for _, e := range elements(v) {
				rg, port, found := strings.Cut(e.text, ":")
				start, end, dash := strings.Cut(rg, "-")
				lo, err1 := strconv.Atoi(strings.TrimSpace(start))
				hi, err2 := strconv.Atoi(strings.TrimSpace(end))
				i, why := portOf(port)
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
				case why == "":
					why = once(at, i)
				}
				if why != "" {
					r.failElem(a, key, v, e, why)
					bad = true
					continue
				}
				at[i], ranges[i] = e.n, &PortRange{Start: int32(lo), End: int32(hi)}
			}
			if !bad {
				for i, pr := range ranges {
					s.Ports[i].PortRange = pr
				}
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
	// vgroup-port binds groups of a load balancer the Service reuses: one
	// it creates has no groups but its own (CLB vServer groups belong to
	// their load balancer; an NLB server group must be used by a listener
	// of the Service's load balancer), so without id every sync would fail
	// after the load balancer was created. One rule for both kinds,
	// checked before anything is created.
	if s.LoadBalancer.ID == "" && !r.failed("id") && slices.ContainsFunc(s.Ports, func(p Port) bool { return p.VGroupID != "" }) {
		r.fail(r.keyOf("vgroup-port"), val("vgroup-port"), VGroupPortNeedsID(r.keyOf("id")), true)
	}
	l := &s.Listener
	if r.owner == OwnerCLB {
		// The scheduler is one value for every listener; each listener's
		// protocol must accept it.
		if l.Scheduler != nil {
			for _, port := range s.Ports {
				if ok := CLBSchedulers(string(port.Protocol)); ok != nil && !slices.Contains(ok, *l.Scheduler) {
					r.fail(r.keyOf("scheduler"), val("scheduler"), fmt.Sprintf("port %d is %s, whose listeners take %s", port.Port, port.Protocol, strings.Join(ok, ", ")), false)
					break
				}
			}
		}
		if has(ProtocolHTTPS) && l.CertID == nil {
			r.fail(r.keyOf("protocol-port"), val("protocol-port"), "an https port requires "+r.keyOf("cert-id"), false)
		}
		for _, port := range s.Ports {
			if port.ForwardTo == 0 {
				continue
			}
			// A port that forwards has no vServer group, so a forward the
			// protocols do not allow leaves the groups unknown too.
			if to, _ := s.PortByNumber(port.ForwardTo); port.Protocol != ProtocolHTTP || to.Protocol != ProtocolHTTPS {
				e := r.forwardAt[port.Port]
				r.problems = append(r.problems, Problem{
					Key: r.keyOf("forward-port"), Value: val("forward-port"), Index: e.n, Element: e.text,
					Reason:          fmt.Sprintf("port %d is %s and port %d is %s", port.Port, port.Protocol, to.Port, to.Protocol),
					Accepted:        fmt.Sprintf("httpPort:httpsPort where %s maps the first port to http and the second to https", r.keyOf("protocol-port")),
					AffectsBackends: true,
				})
			}
		}
		if Or(l.ACLStatus, false) && l.ACLID == nil && !r.failed("acl-id") {
			r.fail(r.keyOf("acl-status"), val("acl-status"), "on requires "+r.keyOf("acl-id"), false)
		}
		if Or(l.StickySession, false) {
			switch {
			case l.StickySessionType == nil && !r.failed("sticky-session-type"):
				r.fail(r.keyOf("sticky-session"), val("sticky-session"), "on requires "+r.keyOf("sticky-session-type"), false)
			case l.StickySessionType == nil:
			case *l.StickySessionType == "insert" && l.CookieTimeout == nil && !r.failed("cookie-timeout"):
				r.fail(r.keyOf("sticky-session-type"), val("sticky-session-type"), "insert requires "+r.keyOf("cookie-timeout"), false)
			case *l.StickySessionType == "server" && l.Cookie == nil && !r.failed("cookie"):
				r.fail(r.keyOf("sticky-session-type"), val("sticky-session-type"), "server requires "+r.keyOf("cookie"), false)
			}
		}
		if Or(l.ConnectionDrain, false) && l.ConnectionDrainTimeout == nil && !r.failed("connection-drain-timeout") {
			r.fail(r.keyOf("connection-drain"), val("connection-drain"), "on requires "+r.keyOf("connection-drain-timeout"), false)
		}
		if len(l.DomainExtensions) > 0 && !has(ProtocolHTTPS) {
			r.fail(r.keyOf("domain-extensions"), val("domain-extensions"), "requires an https port in "+r.keyOf("protocol-port"), false)
		}
		return
	}
	// The tcpssl port itself is valid (its group is a TCP group); only the
	// listener lacks a certificate. An invalid cert-id is reported already.
	if has(ProtocolTCPSSL) && len(l.CertIDs) == 0 && !r.failed("cert-id") {
		r.fail(r.keyOf("protocol-port"), val("protocol-port"), "a tcpssl port requires "+r.keyOf("cert-id"), false)
	}
	// One idle timeout serves every listener, and UDP listeners take a
	// narrower range than TCP and TCPSSL ones.
	if udpMin, udpMax := cloudFact("nlb:IdleTimeout/UDP").Min, cloudFact("nlb:IdleTimeout/UDP").Max; l.IdleTimeout != nil &&
		has(ProtocolUDP) && (*l.IdleTimeout < udpMin || *l.IdleTimeout > udpMax) {
		r.fail(r.keyOf("idle-timeout"), val("idle-timeout"), fmt.Sprintf("a udp port's listener takes %d to %d", udpMin, udpMax), false)
	}
	if s.LoadBalancer.ID == "" && len(s.LoadBalancer.ZoneMaps) == 0 && !r.failed("zone-maps") {
		r.fail(r.keyOf("zone-maps"), val("zone-maps"), "required unless "+r.keyOf("id")+" is set: "+r.entry("zone-maps").Format, false)
	}
	if Or(l.CACert, false) && len(l.CACertIDs) == 0 && !r.failed("cacert-id") {
		r.fail(r.keyOf("cacert"), val("cacert"), "on requires "+r.keyOf("cacert-id"), false)
	}
	if Or(l.ALPN, false) && l.ALPNPolicy == nil && !r.failed("alpn-policy") {
		r.fail(r.keyOf("alpn"), val("alpn"), "on requires "+r.keyOf("alpn-policy"), false)
	}
	for _, port := range s.Ports {
		// Range groups take any port: with ecs backends they would be
		// built from node ports they cannot express, so backends wait too.
		if port.PortRange != nil && s.Backend.Type != BackendENI {
			r.fail(r.keyOf("listener-port-range"), val("listener-port-range"), "requires "+BackendTypeKey+": eni", true)
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
