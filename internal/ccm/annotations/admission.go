package annotations

import (
	"fmt"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// AdmissionPolicyName is the name of the generated ValidatingAdmissionPolicy
// and of its binding.
const AdmissionPolicyName = "alicloud-ccm-service-annotations"

// AdmissionMaxChecked bounds the comma-separated values the policy checks:
// longer values, or with more elements, are left to the controller, so the
// policy's CEL cost stays within the API server's budget whatever the
// Service carries (its element checks are quadratic in the element count).
const (
	AdmissionMaxCheckedChars    = 4096
	AdmissionMaxCheckedElements = 64
)

// admissionLeftToCCM lists what the generated policy does not check (the
// controller still reports it as a Warning event); docs/annotations.md
// quotes it.
var admissionLeftToCCM = []string{
	"Services whose `" + LoadBalancerTypeKey + "` is `nlb`: whether they are NLB Services depends on the CCM's `LoadBalancerTypeAnnotation` feature gate, which the API server cannot see (Services with `spec.loadBalancerClass: " + NLBClass + "` are checked).",
	fmt.Sprintf("Comma-separated values longer than %d characters or with more than %d elements (the policy's CEL cost stays bounded).", AdmissionMaxCheckedChars, AdmissionMaxCheckedElements),
	"`listener-port-range` without a valid `" + BackendTypeKey + "`: the cluster's default backend type (`SERVICE_FORCE_BACKEND_ENI`, cloud-config `serviceBackendType`) is not visible to the API server; with `" + BackendTypeKey + ": ecs` it is refused.",
	"Immutable attributes (*Immutable* above): whether a value differs from the existing load balancer's needs the cloud.",
	"Tenancy grants: they are tags of cloud resources, which the API server cannot read.",
	"IPv6 addresses written with a dotted IPv4 part (`::ffff:1.2.3.4`) in `ip`.",
	"Each rule reports its first problem only (the CCM's event lists them all); a request with several bad annotations is refused with the first rule's message (`Warn` lists every rule's).",
	"Values quoted in messages escape `\"`, `\\`, newlines and tabs as the CCM does; other control characters are quoted as written.",
}

// AdmissionPolicy returns the ValidatingAdmissionPolicy generated from the
// Registry: every enumerated, ranged and formatted value and every
// cross-field rule of Parse that the API server can decide from the Service
// alone, each refusing with the message Parse's Warning event gives.
func AdmissionPolicy() *admissionv1.ValidatingAdmissionPolicy {
	g := newAdmissionGen()
	g.build()
	fail := admissionv1.Fail
	equiv := admissionv1.Equivalent
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: AdmissionPolicyName, Labels: map[string]string{"app.kubernetes.io/name": "cloud-controller-manager"}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{
				MatchPolicy: &equiv,
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
						Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
					},
				}},
			},
			MatchConditions: []admissionv1.MatchCondition{
				{Name: "load-balancer", Expression: "object.spec.type == 'LoadBalancer'"},
				{Name: "not-deleting", Expression: "!has(object.metadata.deletionTimestamp)"},
				// An update that changes neither annotations nor the fields
				// the rules read (e.g. the controller's own finalizer patch)
				// is never refused: a Service admitted before the policy
				// existed must still be cleaned up.
				{Name: "changed", Expression: "request.operation == 'CREATE' || oldObject.spec.type != 'LoadBalancer' || " +
					"object.metadata.?annotations.orValue({}) != oldObject.metadata.?annotations.orValue({}) || " +
					"object.spec.?ports.orValue([]) != oldObject.spec.?ports.orValue([]) || " +
					"object.spec.?loadBalancerClass.orValue('') != oldObject.spec.?loadBalancerClass.orValue('')"},
			},
			Variables:   g.vars,
			Validations: g.validations,
		},
	}
}

// AdmissionBinding returns the binding of the policy to every namespace with
// the given validation actions (Deny, Warn, Audit).
func AdmissionBinding(actions ...admissionv1.ValidationAction) *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: AdmissionPolicyName, Labels: map[string]string{"app.kubernetes.io/name": "cloud-controller-manager"}},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        AdmissionPolicyName,
			ValidationActions: actions,
		},
	}
}

// AdmissionManifests renders the policy (first) and a Deny binding as YAML
// documents, as committed in deploy/admission.
func AdmissionManifests() (policy, binding []byte) {
	header := "# Code generated from internal/ccm/annotations/registry.go; DO NOT EDIT.\n# Regenerate: go generate ./internal/ccm/annotations\n"
	p, err := yaml.Marshal(AdmissionPolicy())
	if err != nil {
		panic(fmt.Sprintf("annotations: marshal admission policy: %v", err))
	}
	b, err := yaml.Marshal(AdmissionBinding(admissionv1.Deny))
	if err != nil {
		panic(fmt.Sprintf("annotations: marshal admission binding: %v", err))
	}
	return append([]byte(header), stripCreation(p)...), append([]byte(header), stripCreation(b)...)
}

// stripCreation drops the empty status and creationTimestamp the API types
// marshal, which kubectl would otherwise show as a diff.
func stripCreation(b []byte) []byte {
	var out []string
	skip := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.TrimSpace(line) == "creationTimestamp: null":
			continue
		case line == "status: {}":
			continue
		case strings.HasPrefix(line, "status:"):
			skip = true
			continue
		case skip && strings.HasPrefix(line, " "):
			continue
		}
		skip = false
		out = append(out, line)
	}
	return []byte(strings.Join(out, "\n"))
}

// admissionGen accumulates the policy's variables and validations.
type admissionGen struct {
	vars        []admissionv1.Variable
	validations []admissionv1.Validation
	// keyVar is the variable name (without "variables.") of each suffix's
	// key-as-written, value and, for checked lists, skip flag.
	keyVar map[string]string
}

func newAdmissionGen() *admissionGen { return &admissionGen{keyVar: map[string]string{}} }

func (g *admissionGen) v(name, expr string) string {
	g.vars = append(g.vars, admissionv1.Variable{Name: name, Expression: expr})
	return "variables." + name
}

// check adds a validation refusing when the problem variable is non-empty.
func (g *admissionGen) check(name, problem, fallback string) {
	ref := g.v(name, problem)
	g.validations = append(g.validations, admissionv1.Validation{
		Expression:        ref + " == ''",
		MessageExpression: "'invalid Service annotation: ' + " + ref,
		Message:           "invalid Service annotation: " + fallback,
		Reason:            ptrReason(metav1.StatusReasonInvalid),
	})
}

func ptrReason(r metav1.StatusReason) *metav1.StatusReason { return &r }

// lit is a CEL string literal.
func lit(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}

func litList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = lit(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// ident turns a suffix or key into a CEL identifier part.
func ident(s string) string {
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	return strings.NewReplacer("-", "_", ".", "_").Replace(s)
}

// quoteCEL mirrors quote: strconv.Quote of at most MaxValueChars
// characters, then how long the whole was. x must be cheap to repeat.
func quoteCEL(x string) string {
	q := func(y string) string {
		return `'"' + ` + y + `.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n').replace('\r', '\\r').replace('\t', '\\t') + '"'`
	}
	return fmt.Sprintf("(%s.size() <= %d ? %s : %s + '…(truncated, ' + string(%s.size()) + ' chars)')",
		x, MaxValueChars, q(x), q(fmt.Sprintf("%s.substring(0, %d)", x, MaxValueChars)), x)
}

// Problem texts, as Problem.String renders them.
func wholeCEL(key, val, accepted string) string {
	return fmt.Sprintf("%s + ': invalid value ' + %s + ': accepted: ' + %s", key, quoteCEL(val), accepted)
}

func wholeWhyCEL(key, val, reason, accepted string) string {
	return fmt.Sprintf("%s + ': invalid value ' + %s + ': ' + %s + ' (accepted: ' + %s + ')'", key, quoteCEL(val), reason, accepted)
}

func elemCEL(key, idx, elem, reason, accepted string) string {
	return fmt.Sprintf("%s + ': element ' + string(%s + 1) + ' ' + %s + ' is invalid: ' + %s + ' (accepted: ' + %s + ')'", key, idx, quoteCEL(elem), reason, accepted)
}

// intRE matches what strconv.Atoi accepts and CEL's int() converts without
// overflow.
const intRE = `'^[+-]?[0-9]{1,18}$'`

// idProblemCEL mirrors idProblem.
func idProblemCEL(x, prefix string) string {
	return fmt.Sprintf("(!%[1]s.startsWith(%[2]s) ? %[3]s : %[1]s.size() == %[4]d ? %[5]s : bytes(%[1]s).size() > 128 ? 'is longer than 128 characters' : !%[1]s.matches('^[a-zA-Z0-9_-]*$') ? %[6]s : '')",
		x, lit(prefix), lit("does not start with "+prefix), len(prefix), lit("is empty after "+prefix), lit("has characters other than letters, digits, '-' and '_'"))
}

// cut returns CEL for strings.Cut's before and after parts.
func beforeCEL(x, sep string) string {
	return fmt.Sprintf("(%[1]s.contains(%[2]s) ? %[1]s.substring(0, %[1]s.indexOf(%[2]s)) : %[1]s)", x, lit(sep))
}

func afterCEL(x, sep string) string {
	return fmt.Sprintf("(%[1]s.contains(%[2]s) ? %[1]s.substring(%[1]s.indexOf(%[2]s) + 1) : '')", x, lit(sep))
}

// portOfCEL mirrors the parser's portOf on a trimmed text t.
func portOfCEL(t string) string {
	return fmt.Sprintf("(%[1]s == '' ? 'a port is required' : !%[1]s.matches(%[2]s) ? 'the port is not a number' : !(int(%[1]s) in variables.portNumbers) ? 'port ' + string(int(%[1]s)) + ' is not a Service port' : '')", t, intRE)
}

const (
	dns1123RE  = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	labelValRE = `^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$`
	labelKeyRE = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$`
)

// entry is one registry entry being generated.
type entry struct {
	a     *Annotation
	owner string // CLB or NLB
	id    string // CEL identifier part, unique per entry
	key   string // CEL: the key as written ('' = absent)
	val   string // CEL: the trimmed value
	acc   string // CEL literal of Accepted()
}

// listRule describes a comma-separated annotation the way the parser walks
// it: each element's own problems (pre), then a repeat of an earlier
// recorded element (dupKey, dup), then the problems checked after that
// (post). aux are per-element values the rules index by i.
type listRule struct {
	aux    [][2]string // name, CEL of e
	pre    string      // CEL reason using e and aux[i]
	dupKey string      // CEL string key of element i (pre passed), "" = none
	dup    string      // CEL reason given the earlier element's 0-based index "first"
	post   string      // CEL reason (pre passed), "" = none
	before string      // CEL whole-value reason checked before the elements ("" = none)
	after  string      // CEL whole-value reason when every element is fine
}

func (g *admissionGen) build() {
	g.v("ann", "object.metadata.?annotations.orValue({})")
	g.v("ports", "object.spec.?ports.orValue([])")
	g.v("portNumbers", "variables.ports.map(p, p.port)")
	lbType := g.v("lbType", fmt.Sprintf("variables.ann[?%s].orValue('').trim()", lit(LoadBalancerTypeKey)))
	// Decide without the type-annotation gate: "nlb" there is left to the
	// controller (admissionLeftToCCM).
	g.v("owner", fmt.Sprintf("has(object.spec.loadBalancerClass) ? (object.spec.loadBalancerClass == %s ? 'NLB' : '') : "+
		"(%s != '' && %s.lowerAscii() != 'clb') ? '' : (variables.ann[?%s].orValue('') != '' || %s in variables.ann) ? '' : 'CLB'",
		lit(NLBClass), lbType, lbType, lit(ClassKey), lit(TunnelTypeKey)))

	// Key as written and trimmed value of every suffix, as lookup and raw.
	for i := range Registry {
		a := &Registry[i]
		if a.Scope == ScopeRouting {
			continue
		}
		id := ident(a.Suffix())
		if _, done := g.keyVar[id]; done {
			continue
		}
		g.keyVar[id] = id
		present := func(k string) string {
			if a.EmptyIsValue {
				return lit(k) + " in variables.ann"
			}
			return fmt.Sprintf("(%s in variables.ann && variables.ann[%s].trim() != '')", lit(k), lit(k))
		}
		expr := fmt.Sprintf("%s ? %s : ''", present(a.Key), lit(a.Key))
		if a.Legacy != "" {
			expr = fmt.Sprintf("%s in variables.ann ? (%s ? %s : '') : (%s ? %s : '')", lit(a.Key), present(a.Key), lit(a.Key), present(a.Legacy), lit(a.Legacy))
		}
		k := g.v("k_"+id, expr)
		g.v("v_"+id, fmt.Sprintf("%s == '' ? '' : variables.ann[%s].trim()", k, k))
	}

	for i := range Registry {
		a := &Registry[i]
		if a.Scope == ScopeRouting {
			continue
		}
		if a.Scope == ScopeShared && !perKind[a.Suffix()] {
			g.entry(&entry{a: a, id: ident(a.Suffix()) + "_all"})
			continue
		}
		for _, o := range []Owner{OwnerCLB, OwnerNLB} {
			if a.Scope.has(o) {
				g.entry(&entry{a: a, owner: o.String(), id: ident(a.Suffix()) + "_" + strings.ToLower(o.String())})
			}
		}
	}
	g.crossField()
}

// perKind are the shared suffixes whose rule differs between CLB and NLB.
var perKind = map[string]bool{"id": true, "name": true}

// guard wraps a problem expression so it applies only to present values
// of the entry's kind (both kinds when owner is "").
func (g *admissionGen) guard(e *entry, body string) string {
	owner := "variables.owner == ''"
	if e.owner != "" {
		owner = fmt.Sprintf("variables.owner != %s", lit(e.owner))
	}
	return fmt.Sprintf("(%s || %s == '') ? '' : (%s)", owner, e.key, body)
}

func (g *admissionGen) entry(e *entry) {
	a := e.a
	e.key, e.val, e.acc = "variables.k_"+ident(a.Suffix()), "variables.v_"+ident(a.Suffix()), lit(a.Accepted())
	name := "p_" + e.id
	fallback := a.Key + ": accepted: " + a.Accepted()
	v := e.val
	switch a.Kind {
	case KindOnOff, KindTrueFalse, KindEnum:
		var vals []string
		switch a.Kind {
		case KindOnOff:
			vals = []string{"on", "off"}
		case KindTrueFalse:
			vals = []string{"true", "false"}
		default:
			for _, x := range a.Values {
				vals = append(vals, strings.ToLower(x))
			}
		}
		g.check(name, g.guard(e, fmt.Sprintf("%s.lowerAscii() in %s ? '' : %s", v, litList(vals), wholeCEL(e.key, v, e.acc))), fallback)
	case KindInt:
		g.check(name, g.guard(e, fmt.Sprintf("(%[1]s.matches(%[2]s) && int(%[1]s) >= %[3]d && int(%[1]s) <= %[4]d) ? '' : %[5]s", v, intRE, a.Min, a.Max, wholeCEL(e.key, v, e.acc))), fallback)
	case KindFormat:
		if body := g.formatRule(e); body != "" {
			g.check(name, g.guard(e, body), fallback)
		}
	}
}

// formatRule returns the problem expression of a KindFormat entry (”
// when the parser checks nothing).
func (g *admissionGen) formatRule(e *entry) string {
	if r, ok := portListRule(e); ok {
		return g.list(e, r)
	}
	if r, ok := listRuleOf(e); ok {
		return g.list(e, r)
	}
	return valueRule(e)
}

// valueRule is the problem expression of a single-valued KindFormat entry.
func valueRule(e *entry) string {
	a, v := e.a, e.val
	id := func(prefix string) string {
		why := idProblemCEL(v, prefix)
		return fmt.Sprintf("%s == '' ? '' : %s", why, wholeWhyCEL(e.key, v, fmt.Sprintf("(%s.contains(',') ? 'one id is accepted, not a list' : 'the id ' + %s)", v, why), e.acc))
	}
	bad := func(cond string) string { return fmt.Sprintf("(%s) ? %s : ''", cond, wholeCEL(e.key, v, e.acc)) }
	switch a.Suffix() {
	case "id":
		if e.owner == "NLB" {
			return id("nlb-")
		}
		return id("lb-")
	case "name":
		if e.owner == "NLB" {
			return bad(fmt.Sprintf("!%s.matches('^\\\\pL[\\\\pL\\\\p{Nd}._-]{%d,%d}$')", v, cloudFact("nlb:LoadBalancerName").Min-1, cloudFact("nlb:LoadBalancerName").Max-1))
		}
		return bad(fmt.Sprintf("!%s.matches('^\\\\pL[\\\\pL\\\\p{Nd}._/-]{%d,%d}$')", v, cloudFact("slb:LoadBalancerName").Min-1, cloudFact("slb:LoadBalancerName").Max-1))
	case "resource-group-id":
		return id("rg-")
	case "vswitch-id":
		return id("vsw-")
	case "acl-id":
		return id("acl-")
	case "bandwidth-package-id":
		return id("cbwp-")
	case "health-check-uri":
		return bad(fmt.Sprintf("!%[1]s.startsWith('/') || bytes(%[1]s).size() > 80 || %[1]s.contains(' ') || %[1]s.contains('\\t')", v))
	case "health-check-domain":
		return bad(fmt.Sprintf("%[1]s != '$_ip' && (bytes(%[1]s).size() > 80 || !%[1]s.matches('^[a-zA-Z0-9.-]*$'))", v))
	case "health-check-connect-port":
		return bad(fmt.Sprintf("!(%[1]s.matches(%[2]s) && (int(%[1]s) == %[3]d || (int(%[1]s) >= 1 && int(%[1]s) <= 65535)))", v, intRE, UseBackendPort))
	case "ip":
		// Dotted IPv6 forms are left to the controller (admissionLeftToCCM).
		return bad(fmt.Sprintf("!isIP(%[1]s) && !(%[1]s.contains('.') && %[1]s.indexOf(':') != %[1]s.lastIndexOf(':') && %[1]s.matches('^[0-9A-Fa-f:.]+$'))", v))
	case "hostname":
		return bad(fmt.Sprintf("bytes(%[1]s).size() > 253 || !%[1]s.matches('%[2]s')", v, dns1123RE))
	case "cookie":
		return bad(fmt.Sprintf("bytes(%[1]s).size() > 200 || %[1]s.startsWith('$') || !%[1]s.matches('^[!-~]*$') || %[1]s.contains(',') || %[1]s.contains(';')", v))
	}
	return ""
}

// idListRule checks a comma list of ids that carry prefix ("" = any token
// without blanks, ':' or '=').
func idListRule(prefix string) listRule {
	r := listRule{dupKey: "e", dup: "'repeats the id of element ' + string(first + 1)"}
	if prefix != "" {
		r.pre = fmt.Sprintf("(%s != '' ? 'the id ' + %s : '')", idProblemCEL("e", prefix), idProblemCEL("e", prefix))
	} else {
		r.pre = "((e.contains(' ') || e.contains('\\t') || e.contains(':') || e.contains('=')) ? " + lit("ids are separated by commas and contain no blanks, ':' or '='") + " : '')"
	}
	return r
}

// listRuleOf is the rule of a comma-list KindFormat entry whose elements
// do not name Service ports.
func listRuleOf(e *entry) (listRule, bool) {
	switch e.a.Suffix() {
	case "additional-resource-tags":
		return listRule{
			aux: [][2]string{{"k", beforeCEL("e", "=") + ".trim()"}, {"v", afterCEL("e", "=") + ".trim()"}},
			pre: fmt.Sprintf("(K == '' ? 'a tag key is required' : K.size() > %[3]d ? 'the key is longer than %[3]d characters' : V.size() > %[4]d ? 'the value is longer than %[4]d characters' : "+
				"(K.lowerAscii().startsWith('aliyun') || K.lowerAscii().startsWith('acs:')) ? 'the key starts with aliyun or acs:, which the cloud reserves' : "+
				"(K == %[1]s || K == %[2]s) ? 'the controller sets the ' + K + ' tag itself' : "+
				"(K.lowerAscii().contains('http://') || K.lowerAscii().contains('https://')) ? 'the key contains http:// or https://' : '')", lit(naming.TagKeyDefaultName), lit(naming.TagKeyCluster), tagKeyMax, tagValueMax),
			dupKey: "K",
			dup:    "'repeats the key of element ' + string(first + 1)",
			after:  "(COUNT > 20 ? string(COUNT) + ' tags, more than 20' : '')",
		}, true
	case "health-check-httpcode":
		return listRule{
			before: "(COUNT == 0 ? 'no status class given' : '')",
			pre:    "(!(e.lowerAscii() in ['http_2xx', 'http_3xx', 'http_4xx', 'http_5xx']) ? 'not a status class' : '')",
			dupKey: "e.lowerAscii()",
			dup:    "'repeats the class of element ' + string(first + 1)",
		}, true
	case "backend-label":
		return listRule{
			before: "(COUNT == 0 ? 'no k=v given' : '')",
			aux:    [][2]string{{"k", beforeCEL("e", "=") + ".trim()"}, {"v", afterCEL("e", "=") + ".trim()"}},
			pre: fmt.Sprintf("(!e.contains('=') ? 'a value is required: k=v' : (!K.matches('%s') || (K.contains('/') && K.substring(0, K.indexOf('/')).size() > 253)) ? %s : !V.matches('%s') ? %s : '')",
				labelKeyRE, lit("the key is not a label key (an optional DNS prefix and '/', then 1–63 letters, digits, '-', '_' or '.')"),
				labelValRE, lit("the value is not a label value (up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)")),
			dupKey: "K",
			dup:    "'repeats the key of element ' + string(first + 1)",
		}, true
	case "domain-extensions":
		return listRule{
			aux: [][2]string{{"k", beforeCEL("e", ":") + ".trim()"}, {"v", afterCEL("e", ":") + ".trim()"}},
			pre: fmt.Sprintf("((!e.contains(':') || V == '') ? 'a certificate id is required after the domain' : (V.contains(' ') || V.contains(':')) ? %s : "+
				"!((K.startsWith('*.') ? K.substring(2) : K).lowerAscii().matches('%s') && bytes(K.startsWith('*.') ? K.substring(2) : K).size() <= 253) ? 'the domain is not a DNS name (a leading *. is allowed)' : '')",
				lit("the certificate id contains a blank or ':'"), dns1123RE),
			dupKey: "K",
			dup:    "'repeats the domain of element ' + string(first + 1)",
		}, true
	case "zone-maps":
		// F[2] holds no ':' (the element is split on it): a dotted quad.
		ipv4 := "isIP(F[2]) && ip(F[2]).family() == 4"
		return listRule{
			aux:    [][2]string{{"f", "e.split(':').map(x, x.trim())"}},
			pre:    "(F.size() < 2 ? 'a vSwitch is required after the zone' : F.size() > 4 ? " + lit("more than 4 ':'-separated fields") + " : F[0] == '' ? 'a zone is required' : '')",
			dupKey: "F[0]",
			dup:    "'repeats the zone of element ' + string(first + 1)",
			post: fmt.Sprintf("(%s != '' ? 'the vSwitch id ' + %s : (F.size() > 2 && F[2] != '' && !(%s)) ? 'the address is not an IPv4 address' : (F.size() > 3 && F[3] != '' && %s != '') ? 'the EIP allocation id ' + %s : '')",
				idProblemCEL("F[1]", "vsw-"), idProblemCEL("F[1]", "vsw-"), ipv4, idProblemCEL("F[3]", "eip-"), idProblemCEL("F[3]", "eip-")),
			after: "((COUNT < 2 || COUNT > 10) ? string(COUNT) + ' zones given' : '')",
		}, true
	case "security-group-ids":
		return idListRule("sg-"), true
	case "cert-id", "cacert-id", "additional-cert-ids":
		return idListRule(""), true
	}
	return listRule{}, false
}

// portListRule is the rule of a comma-list KindFormat entry whose
// elements name Service ports.
func portListRule(e *entry) (listRule, bool) {
	switch e.a.Suffix() {
	case "protocol-port":
		allowed := []string{"tcp", "udp", "http", "https"}
		if e.owner == "NLB" {
			allowed = []string{"tcp", "udp", "tcpssl"}
		}
		return listRule{
			aux:    [][2]string{{"k", beforeCEL("e", ":") + ".trim().lowerAscii()"}, {"v", afterCEL("e", ":") + ".trim()"}},
			pre:    fmt.Sprintf("(!e.contains(':') ? 'expected proto:port' : !(K in %s) ? %s : %s)", litList(allowed), lit("the protocol is not one of "+strings.Join(allowed, ", ")), portOfCEL("V")),
			dupKey: "string(int(V))",
			dup:    "'port ' + string(int(V)) + ' is already given by element ' + string(first + 1)",
			post:   "((K == 'udp') != (SPEC == 'UDP') ? 'port ' + string(int(V)) + ' is ' + SPEC + ' in the Service, so its listener protocol must match (udp only for UDP ports)' : '')",
		}, true
	case "vgroup-port":
		prefix := "rsp-"
		if e.owner == "NLB" {
			prefix = "sgp-"
		}
		return listRule{
			aux:    [][2]string{{"k", beforeCEL("e", ":") + ".trim()"}, {"v", afterCEL("e", ":") + ".trim()"}},
			pre:    fmt.Sprintf("(!e.contains(':') ? %s : %s != '' ? 'the group id ' + %s : %s)", lit("expected "+prefix+"…:port"), idProblemCEL("K", prefix), idProblemCEL("K", prefix), portOfCEL("V")),
			dupKey: "string(int(V))",
			dup:    "'port ' + string(int(V)) + ' is already given by element ' + string(first + 1)",
		}, true
	case "forward-port":
		return listRule{
			aux:    [][2]string{{"k", beforeCEL("e", ":") + ".trim()"}, {"v", afterCEL("e", ":") + ".trim()"}},
			pre:    fmt.Sprintf("(!e.contains(':') ? 'expected httpPort:httpsPort' : %[1]s != '' ? %[1]s : %[2]s != '' ? %[2]s : int(K) == int(V) ? 'a port cannot forward to itself' : '')", portOfCEL("K"), portOfCEL("V")),
			dupKey: "string(int(K))",
			dup:    "'port ' + string(int(K)) + ' is already given by element ' + string(first + 1)",
		}, true
	case "listener-port-range":
		return listRule{
			aux: [][2]string{
				{"r", beforeCEL("e", ":")}, {"v", afterCEL("e", ":") + ".trim()"},
			},
			pre: fmt.Sprintf("(!e.contains(':') ? 'expected start-end:port' : !R.contains('-') ? 'the range is not start-end' : !(LO.matches(%[1]s) && HI.matches(%[1]s)) ? 'the range bounds are not numbers' : "+
				"(int(LO) < 1 || int(HI) > 65535) ? 'the range is not within 1–65535' : int(LO) > int(HI) ? 'the range starts after it ends' : %[2]s)", intRE, portOfCEL("V")),
			dupKey: "string(int(V))",
			dup:    "'port ' + string(int(V)) + ' is already given by element ' + string(first + 1)",
		}, true
	}
	return listRule{}, false
}

// list generates the per-element variables of a comma-separated entry and
// returns its problem expression: the first element problem, else the
// whole-value one.
func (g *admissionGen) list(e *entry, r listRule) string {
	pfx := "l" + e.id
	items := g.v(pfx+"_e", fmt.Sprintf("%s.split(',').map(s, s.trim())", e.val))
	count := fmt.Sprintf("%s.filter(x, x != '').size()", items)
	auxRef := map[string]string{}
	for _, a := range r.aux {
		auxRef[a[0]] = g.v(pfx+"_"+a[0], fmt.Sprintf("%s.map(e, %s)", items, a[1]))
	}
	// subst replaces the placeholders of a rule for element i.
	subst := func(s string) string {
		rep := []string{"COUNT", count}
		for name, ref := range auxRef {
			rep = append(rep, strings.ToUpper(name), fmt.Sprintf("%s[i]", ref))
		}
		if ref, ok := auxRef["r"]; ok {
			rep = append(rep, "LO", fmt.Sprintf("(%s[i].contains('-') ? %s[i].substring(0, %s[i].indexOf('-')) : %s[i]).trim()", ref, ref, ref, ref),
				"HI", fmt.Sprintf("(%s[i].contains('-') ? %s[i].substring(%s[i].indexOf('-') + 1) : '').trim()", ref, ref, ref))
		}
		rep = append(rep, "SPEC", "variables.ports.filter(p, p.port == int(V))[variables.ports.filter(p, p.port == int(V)).size() - 1].protocol")
		out := strings.NewReplacer(rep...).Replace(s)
		// SPEC expands to V, which needs a second pass.
		return strings.NewReplacer(rep...).Replace(out)
	}
	pre := g.v(pfx+"_pre", fmt.Sprintf("%s.transformList(i, e, e == '' ? '' : %s)", items, subst(r.pre)))
	post := ""
	if r.post != "" {
		post = g.v(pfx+"_post", fmt.Sprintf("%s.transformList(i, e, (e == '' || %s[i] != '') ? '' : %s)", items, pre, subst(r.post)))
	}
	final := fmt.Sprintf("%s.transformList(i, e, e == '' ? '' : %s[i])", items, pre)
	if r.dupKey != "" {
		keys := g.v(pfx+"_keys", fmt.Sprintf("%s.transformList(i, e, (e == '' || %s[i] != '') ? '' : %s)", items, pre, subst(r.dupKey)))
		recorded := fmt.Sprintf("x != '' && %s[j] == ''", pre)
		if post != "" {
			recorded += fmt.Sprintf(" && %s[j] == ''", post)
		}
		first := g.v(pfx+"_first", fmt.Sprintf("%s.transformList(i, e, (e == '' || %s[i] != '') ? -1 : (%s.transformList(j, x, j < i && %s && %s[j] == %s[i], j) + [-1])[0])",
			items, pre, items, recorded, keys, keys))
		postRef := "''"
		if post != "" {
			postRef = post + "[i]"
		}
		dup := strings.ReplaceAll(subst(r.dup), "first", first+"[i]")
		final = fmt.Sprintf("%s.transformList(i, e, e == '' ? '' : %s[i] != '' ? %s[i] : %s[i] >= 0 ? %s : %s)", items, pre, pre, first, dup, postRef)
	} else if post != "" {
		final = fmt.Sprintf("%s.transformList(i, e, e == '' ? '' : %s[i] != '' ? %s[i] : %s[i])", items, pre, pre, post)
	}
	reasons := g.v(pfx+"_reasons", final)
	elem := fmt.Sprintf("%s.transformList(i, w, w != '', %s)[0]", reasons, elemCEL(e.key, "i", items+"[i]", "w", e.acc))
	whole := func(reason string) string {
		return fmt.Sprintf("(%s) != '' ? %s : ''", strings.ReplaceAll(reason, "COUNT", count), wholeWhyCEL(e.key, e.val, strings.ReplaceAll(reason, "COUNT", count), e.acc))
	}
	body := fmt.Sprintf("%s.exists(w, w != '') ? %s : ''", reasons, elem)
	if r.after != "" {
		body = fmt.Sprintf("%s.exists(w, w != '') ? %s : %s", reasons, elem, whole(r.after))
	}
	if r.before != "" {
		body = fmt.Sprintf("(%s) != '' ? %s : (%s)", strings.ReplaceAll(r.before, "COUNT", count), wholeWhyCEL(e.key, e.val, strings.ReplaceAll(r.before, "COUNT", count), e.acc), body)
	}
	// Values too long to check within the CEL budget are left to the
	// controller; skipped says so for the cross-field rules.
	g.v(pfx+"_skip", fmt.Sprintf("%s.size() > %d || %s.split(',').size() > %d", e.val, AdmissionMaxCheckedChars, e.val, AdmissionMaxCheckedElements))
	return fmt.Sprintf("variables.%s_skip ? '' : (%s)", pfx, body)
}
