package admissiontest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// TestEveryEntry: for every registry entry with a rule, a valid value is
// admitted and an invalid one refused with the message of the parser's
// Warning event; entries that accept any value have no rule.
func TestEveryEntry(t *testing.T) {
	ctx := context.Background()
	checked := 0
	for i := range annotations.Registry {
		a := &annotations.Registry[i]
		if a.Scope == annotations.ScopeRouting {
			continue
		}
		for _, owner := range []annotations.Owner{annotations.OwnerCLB, annotations.OwnerNLB} {
			scope := annotations.ScopeCLB
			if owner == annotations.OwnerNLB {
				scope = annotations.ScopeNLB
			}
			if a.Scope&scope == 0 {
				continue
			}
			name := owner.String() + "/" + a.Suffix()
			s, ok := sampleOf(a, owner)
			if !ok {
				if a.Kind == annotations.KindFormat {
					t.Errorf("%s: no samples for a KindFormat entry: add them to formatSamples", name)
				}
				continue
			}
			checked++
			t.Run(name, func(t *testing.T) {
				kv := base(owner)
				for j := 0; j+1 < len(s.extra); j += 2 {
					kv = append(kv, keyOf(s.extra[j]), s.extra[j+1])
				}
				good := service("good", classOf(owner), append(kv, a.Key, s.valid)...)
				if err := parse(good); err != nil {
					t.Fatalf("sample %q: the parser refuses it: %v", s.valid, err)
				}
				if err := create(ctx, cs, denyNS, good); err != nil {
					t.Errorf("valid %q refused: %v", s.valid, err)
				}
				bad := service("bad", classOf(owner), append(base(owner), a.Key, s.invalid)...)
				perr := parse(bad)
				var inv *annotations.InvalidError
				if !errors.As(perr, &inv) || len(inv.Problems) != 1 {
					t.Fatalf("sample %q: want one parser problem, got %v", s.invalid, perr)
				}
				err := create(ctx, cs, denyNS, bad)
				if err == nil {
					t.Fatalf("invalid %q admitted; the parser says %v", s.invalid, perr)
				}
				if want := denial(perr.Error()); !strings.HasSuffix(err.Error(), want) {
					t.Errorf("invalid %q refused with\n  %v\nwant the parser's message\n  %s", s.invalid, err, want)
				}
			})
		}
	}
	if checked < 80 {
		t.Errorf("only %d entries checked", checked)
	}
}

// TestCrossFieldRules: every cross-field rule of the parser that the policy
// checks, refused with the parser's message.
func TestCrossFieldRules(t *testing.T) {
	ctx := context.Background()
	clb, nlb := annotations.OwnerCLB, annotations.OwnerNLB
	cases := []struct {
		name  string
		owner annotations.Owner
		kv    []string
		ports string // "sctp": an SCTP port
	}{
		{"https needs cert-id", clb, []string{"protocol-port", "https:443"}, ""},
		{"scheduler per protocol", clb, []string{"scheduler", "SCH", "protocol-port", "http:80"}, ""},
		{"forward to a non-https port", clb, []string{"forward-port", "80:443", "protocol-port", "http:80"}, ""},
		{"acl-status needs acl-id", clb, []string{"acl-status", "on"}, ""},
		{"sticky-session needs a type", clb, []string{"sticky-session", "on"}, ""},
		{"insert needs cookie-timeout", clb, []string{"sticky-session", "on", "sticky-session-type", "insert"}, ""},
		{"server needs cookie", clb, []string{"sticky-session", "on", "sticky-session-type", "server"}, ""},
		{"connection-drain needs a timeout", clb, []string{"connection-drain", "on"}, ""},
		{"domain-extensions need https", clb, []string{"domain-extensions", "a.example.com:cert-2"}, ""},
		{"SCTP port", clb, nil, "sctp"},
		{"vgroup-port needs id (CLB)", clb, []string{"vgroup-port", "rsp-a:80"}, ""},
		{"vgroup-port needs id (NLB)", nlb, []string{"zone-maps", zoneMaps, "vgroup-port", "sgp-a:80"}, ""},
		{"tcpssl needs cert-id", nlb, []string{"zone-maps", zoneMaps, "protocol-port", "tcpssl:443"}, ""},
		{"zone-maps required", nlb, []string{"scheduler", "rr"}, ""},
		{"cacert needs cacert-id", nlb, []string{"zone-maps", zoneMaps, "cacert", "on"}, ""},
		{"alpn needs a policy", nlb, []string{"zone-maps", zoneMaps, "alpn", "on"}, ""},
		{"udp listener idle timeout", nlb, []string{"zone-maps", zoneMaps, "idle-timeout", "60"}, ""},
		{"port range needs eni", nlb, []string{"zone-maps", zoneMaps, "listener-port-range", "100-200:80", annotations.BackendTypeKey, "ecs"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var kv []string
			for j := 0; j+1 < len(c.kv); j += 2 {
				kv = append(kv, keyOf(c.kv[j]), c.kv[j+1])
			}
			svc := service("cross", classOf(c.owner), kv...)
			if c.ports == "sctp" {
				svc.Spec.Ports[2].Protocol = "SCTP"
			}
			perr := parse(svc)
			var inv *annotations.InvalidError
			if !errors.As(perr, &inv) || len(inv.Problems) != 1 {
				t.Fatalf("want one parser problem, got %v", perr)
			}
			err := create(ctx, cs, denyNS, svc)
			if err == nil {
				t.Fatalf("admitted; the parser says %v", perr)
			}
			if want := denial(perr.Error()); !strings.HasSuffix(err.Error(), want) {
				t.Errorf("refused with\n  %v\nwant the parser's message\n  %s", err, want)
			}
		})
	}
}

// TestNotOurs: Services another controller owns, or that are not
// LoadBalancers, are never refused.
func TestNotOurs(t *testing.T) {
	ctx := context.Background()
	bad := []string{annotations.Key("scheduler"), "nope"}
	cases := map[string]func() error{
		"class annotation": func() error {
			return create(ctx, cs, denyNS, service("other", nil, append(bad, annotations.ClassKey, "alb")...))
		},
		"another loadBalancerClass": func() error {
			return create(ctx, cs, denyNS, service("other", ptr("example.com/lb"), bad...))
		},
		"type annotation nlb (gate unknown)": func() error {
			return create(ctx, cs, denyNS, service("other", nil, append(bad, annotations.LoadBalancerTypeKey, "nlb")...))
		},
		"ClusterIP": func() error {
			svc := service("other", nil, bad...)
			svc.Spec.Type = "ClusterIP"
			return create(ctx, cs, denyNS, svc)
		},
		"no binding in the namespace": func() error {
			return create(ctx, cs, freeNS, service("other", nil, bad...))
		},
	}
	for name, f := range cases {
		if err := f(); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
	// The type annotation "clb" is served without the gate: checked.
	if err := create(ctx, cs, denyNS, service("other", nil, append(bad, annotations.LoadBalancerTypeKey, "CLB")...)); err == nil {
		t.Errorf("type annotation clb: a bad scheduler admitted")
	}
}
