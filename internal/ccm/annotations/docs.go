package annotations

import (
	"bytes"
	"fmt"
	"strings"
)

//go:generate go test -run ^(TestDocsUpToDate|TestAdmissionUpToDate)$ -update .

// Docs renders docs/annotations.md from the Registry, so the documentation
// can never drift from what the code reads.
func Docs() []byte {
	var b bytes.Buffer
	b.WriteString("<!-- Code generated from internal/ccm/annotations/registry.go; DO NOT EDIT. -->\n")
	b.WriteString("<!-- Regenerate: go generate ./internal/ccm/annotations -->\n\n")
	b.WriteString("# Service annotations\n\n")
	fmt.Fprintf(&b, "Every key below is `%s<suffix>`. The legacy prefix `%s<suffix>` is read for every suffix; when a Service carries both, the current prefix wins. ", Prefix, LegacyPrefix)
	b.WriteString("Values are trimmed; an empty value counts as absent unless noted. On/off, true/false and enum values are case-insensitive. ")
	b.WriteString("An annotation of the other load balancer kind is ignored. Every invalid value is reported at once in one Warning event naming the key as written, the value (in a comma-separated list, the position and text of each bad element) and what is accepted; ")
	fmt.Fprintf(&b, "quoted values are cut at %d characters and the event at %d bytes (the first problems in full, then how many more). ", MaxValueChars, MaxMessageBytes)
	b.WriteString("While any value is invalid, the load balancer and its listeners are left as they are, but the backends keep following Nodes and endpoints; when a key marked *Backends* is invalid, the Service gets no cloud change at all.\n\n")
	b.WriteString("An absent annotation with no default leaves the cloud's current value alone. *Immutable* attributes cannot change after creation: a differing value is reported as an event, never applied.\n")
	sections := []struct {
		title string
		scope Scope
		note  string
	}{
		{"Shared (CLB and NLB)", ScopeShared, ""},
		{"CLB", ScopeCLB, "CLB-only keys, and the CLB form of keys both kinds read with different accepted values."},
		{"NLB", ScopeNLB, "NLB-only keys, and the NLB form of keys both kinds read with different accepted values. NLBs are always created with deletion and modification protection on."},
		{"Keys outside the prefix", ScopeRouting, "These keys are read verbatim (no legacy form)."},
	}
	for _, sec := range sections {
		fmt.Fprintf(&b, "\n## %s\n\n", sec.title)
		if sec.note != "" {
			b.WriteString(sec.note + "\n\n")
		}
		b.WriteString("| key | accepted | default | description |\n|---|---|---|---|\n")
		for i := range Registry {
			a := &Registry[i]
			if !inSection(a, sec.scope) {
				continue
			}
			name := a.Suffix()
			doc := a.Doc
			if a.Immutable {
				doc += " *Immutable.*"
			}
			if a.Backends {
				doc += " *Backends.*"
			}
			if a.NotApplied != "" {
				doc += fmt.Sprintf(" **Not applied** except the default: %s; another value gets a Warning event `%s`.", a.NotApplied, EventNotApplied)
			}
			def := a.Default
			if def == "" {
				def = "–"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, cell(a.Accepted()), cell(def), cell(doc))
		}
	}
	b.WriteString("\n## Cross-field rules\n\n")
	for _, rule := range crossFieldRules {
		b.WriteString("- " + rule + "\n")
	}
	fmt.Fprintf(&b, "\n## Admission policy\n\nThe ValidatingAdmissionPolicy `%s` (`deploy/admission`, the chart's `admission` values, [admission.md](admission.md)) is generated from this table: every value rule and cross-field rule above refuses a LoadBalancer Service at `kubectl apply` with the message of the CCM's Warning event, except what only the CCM can decide:\n\n", AdmissionPolicyName)
	for _, rule := range admissionLeftToCCM {
		b.WriteString("- " + rule + "\n")
	}
	return b.Bytes()
}

// crossFieldRules documents the checks in crossField and ports.
var crossFieldRules = []string{
	"Ports named in `protocol-port`, `vgroup-port`, `forward-port` and `listener-port-range` must be Service ports, each at most once; `udp` only for UDP Service ports, every other listener protocol only for TCP ones.",
	"CLB: an `https` port requires `cert-id`; `domain-extensions` require an `https` port.",
	"CLB: `forward-port` maps an `http` port to an `https` port (both set through `protocol-port`).",
	"CLB: `acl-status: on` requires `acl-id`; `connection-drain: on` requires `connection-drain-timeout`.",
	"CLB: `sticky-session: on` requires `sticky-session-type`; `insert` requires `cookie-timeout`, `server` requires `cookie`.",
	"NLB: `zone-maps` is required unless `id` is set; a `tcpssl` port requires `cert-id`; `cacert: on` requires `cacert-id`; `alpn: on` requires `alpn-policy`; `listener-port-range` requires `" + BackendTypeKey + ": eni`.",
	"`vgroup-port` requires `id` (CLB and NLB): the groups it names must belong to the reused load balancer, so a Service creating its own is refused before anything is created.",
	"Service ports must be TCP or UDP (SCTP is rejected).",
	"These cross-field problems also stop backend updates (like a *Backends* key): a non-TCP/UDP Service port, `vgroup-port` without `id`, a CLB `forward-port` the `protocol-port` protocols do not allow (a forwarding port has no vServer group), and an NLB `listener-port-range` without eni backends.",
}

func inSection(a *Annotation, s Scope) bool {
	if s == ScopeRouting {
		return a.Legacy == ""
	}
	return a.Legacy != "" && a.Scope == s
}

func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
