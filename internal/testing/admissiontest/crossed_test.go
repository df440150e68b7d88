package admissiontest

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// crossedServices is how many random Services TestCrossedWithParser sends.
const crossedServices = 400

// TestCrossedWithParser feeds the same Services to the parser and to the
// API server (through the Warn binding, which reports every failing rule)
// and requires them to agree: every policy message is one of the parser's
// problems, verbatim, and the policy names every annotation the parser
// finds a problem with. Services mix valid and invalid values of random
// entries, legacy keys, padding, case changes, repeats, companions of the
// cross-field rules, duplicate port numbers and SCTP ports.
func TestCrossedWithParser(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(29))
	var entries []*annotations.Annotation
	for i := range annotations.Registry {
		if a := &annotations.Registry[i]; a.Scope != annotations.ScopeRouting {
			entries = append(entries, a)
		}
	}
	extras := [][]string{
		{"protocol-port", "https:443"}, {"protocol-port", "http:80,https:443,udp:53"}, {"protocol-port", "tcpssl:443"},
		{"cert-id", "cert-1"}, {"cert-id", ","}, {"forward-port", "80:443"}, {"scheduler", "sch"}, {"scheduler", "Qch"},
		{"acl-status", "on"}, {"acl-id", "acl-1"}, {"sticky-session", "ON"}, {"sticky-session-type", "insert"},
		{"sticky-session-type", "server"}, {"cookie", "s"}, {"cookie-timeout", "10"}, {"connection-drain", "on"},
		{"connection-drain-timeout", "30"}, {"domain-extensions", "a.example.com:c"}, {"cacert", "on"}, {"cacert-id", "ca"},
		{"alpn", "on"}, {"alpn-policy", "http2only"}, {"id", "nlb-1"}, {"id", "lb-1"}, {"zone-maps", zoneMaps},
		{"listener-port-range", "1-2:80"}, {annotations.BackendTypeKey, "ecs"}, {annotations.BackendTypeKey, "eni"},
		{"protocol-port", "tcp:80,tcp:80"}, {"protocol-port", "udp:80"}, {"vgroup-port", "rsp-a:80,rsp-b:80"},
		{"additional-resource-tags", "a=1,a=2"}, {"additional-resource-tags", strings.Repeat("t,", 21)},
		{"zone-maps", "z:vsw-a:1.2.3.4:eip-1,z2:vsw-b::,z3:vsw-c:::x"}, {"zone-maps", "a:vsw-1"},
		{"health-check-httpcode", ","}, {"backend-label", "k8s.io/x=y,=v,k=" + strings.Repeat("v", 64)},
		{"name", strings.Repeat("n", 300)}, {"id", "lb-a,lb-b"}, {"forward-port", "80:443,80:53"},
		{"listener-port-range", "0-5:80,x-1:443,7:53"}, {"domain-extensions", "*.a.b:c,*.a.b:d,bad_.x:c,x:c d"},
	}
	for n := 0; n < crossedServices; n++ {
		owner := annotations.OwnerCLB
		if rng.Intn(2) == 1 {
			owner = annotations.OwnerNLB
		}
		kv := map[string]string{}
		if owner == annotations.OwnerNLB && rng.Intn(4) > 0 {
			kv[annotations.Key("zone-maps")] = zoneMaps
		}
		for k := rng.Intn(6) + 1; k > 0; k-- {
			a := entries[rng.Intn(len(entries))]
			s, ok := sampleOf(a, owner)
			if !ok {
				s = sample{valid: "anything", invalid: " "}
			}
			v := s.valid
			if rng.Intn(2) == 0 {
				v = s.invalid
			}
			key := a.Key
			switch rng.Intn(6) {
			case 0:
				if a.Legacy != "" {
					key = a.Legacy
				}
			case 1:
				v = " " + v + "\t"
			case 2:
				v = strings.ToUpper(v)
			case 3:
				v = v + "," + v
			}
			kv[key] = v
			for j := 0; j+1 < len(s.extra); j += 2 {
				kv[keyOf(s.extra[j])] = s.extra[j+1]
			}
		}
		for k := rng.Intn(3); k > 0; k-- {
			e := extras[rng.Intn(len(extras))]
			key := keyOf(e[0])
			if rng.Intn(5) == 0 && !strings.Contains(e[0], "/") {
				key = annotations.LegacyKey(e[0])
			}
			kv[key] = e[1]
		}
		// The cluster's default backend type is not visible to the policy:
		// keep listener-port-range with an explicit one.
		_, lpr := kv[annotations.Key("listener-port-range")]
		_, legacy := kv[annotations.LegacyKey("listener-port-range")]
		if bt := strings.ToLower(strings.TrimSpace(kv[annotations.BackendTypeKey])); (lpr || legacy) && bt != "ecs" && bt != "eni" {
			kv[annotations.BackendTypeKey] = "eni"
		}
		var flat []string
		for k, v := range kv {
			flat = append(flat, k, v)
		}
		svc := service("crossed", classOf(owner), flat...)
		switch rng.Intn(8) {
		case 0:
			svc.Spec.Ports[2].Protocol = corev1.ProtocolSCTP
		case 1:
			// 80/TCP and 80/UDP.
			svc.Spec.Ports[2].Port = 80
		}
		compare(ctx, t, svc)
	}
}

// compare sends svc through the Warn binding and checks the policy's
// messages against the parser's problems.
func compare(ctx context.Context, t *testing.T, svc *corev1.Service) {
	t.Helper()
	takeWarnings()
	if err := create(ctx, warnCS, warnNS, svc); err != nil {
		t.Fatalf("dry-run create: %v\nannotations: %q", err, svc.Annotations)
	}
	got := trimAll(trimAll(takeWarnings(), warnPrefix), "invalid Service annotation: ")
	var problems []annotations.Problem
	if err := parse(svc); err != nil {
		var inv *annotations.InvalidError
		if !errors.As(err, &inv) {
			t.Fatalf("parse: %v", err)
		}
		problems = inv.Problems
	}
	var want, wantKeys, gotKeys []string
	for _, p := range problems {
		want = append(want, p.String())
		if !slices.Contains(wantKeys, p.Key) {
			wantKeys = append(wantKeys, p.Key)
		}
	}
	for _, w := range got {
		i := slices.Index(want, w)
		if i < 0 {
			t.Errorf("the policy says %q, which the parser does not\n  parser: %q\n  annotations: %q\n  ports: %v", w, want, svc.Annotations, svc.Spec.Ports)
			continue
		}
		if k := problems[i].Key; !slices.Contains(gotKeys, k) {
			gotKeys = append(gotKeys, k)
		}
	}
	slices.Sort(wantKeys)
	slices.Sort(gotKeys)
	if !slices.Equal(wantKeys, gotKeys) {
		t.Errorf("the parser finds problems with %q, the policy with %q\n  parser: %q\n  policy: %q\n  annotations: %q", wantKeys, gotKeys, want, got, svc.Annotations)
	}
}
