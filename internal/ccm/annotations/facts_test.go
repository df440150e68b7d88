package annotations

import (
	"slices"
	"strings"
	"testing"
)

func TestCLBNameRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a0123456789abcdef0123456789abcde", true},
		{"web-lb_1.prod", true},
		{"team/web", true},
		{"负载均衡-1", true},
		{"", false},
		{"1web", false},
		{"-web", false},
		{"/web", false},
		{"web lb", false},
		{"a" + strings.Repeat("b", 79), true},
		{"a" + strings.Repeat("b", 80), false},
	} {
		if got := validCLBName(tc.name); got != tc.ok {
			t.Errorf("validCLBName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestNLBNameRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"web-nlb_1.prod", true},
		{"ab", true},
		{"a", false},
		{"team/web", false},
		{"1web", false},
		{"a" + strings.Repeat("b", 127), true},
		{"a" + strings.Repeat("b", 128), false},
	} {
		if got := validNLBName(tc.name); got != tc.ok {
			t.Errorf("validNLBName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestCLBSchedulers(t *testing.T) {
	for _, tc := range []struct {
		proto string
		want  []string
	}{
		{"tcp", []string{"wrr", "rr", "sch", "tch"}},
		{"UDP", []string{"wrr", "rr", "sch", "tch"}},
		{"http", []string{"wrr", "rr"}},
		{"https", []string{"wrr", "rr"}},
		{"tcpssl", nil},
	} {
		if got := CLBSchedulers(tc.proto); !slices.Equal(got, tc.want) {
			t.Errorf("CLBSchedulers(%s) = %v, want %v", tc.proto, got, tc.want)
		}
	}
	if got := allCLBSchedulers(); !slices.Equal(got, []string{"wrr", "rr", "sch", "tch"}) {
		t.Errorf("allCLBSchedulers() = %v", got)
	}
	CLBSchedulers("tcp")[0] = "wlc"
	if CLBSchedulers("tcp")[0] != "wrr" {
		t.Error("CLBSchedulers returned the table itself")
	}
}

// TestSharedAnnotationsMatchBothProducts holds the annotations that one
// range serves for CLB and NLB (the registry takes the CLB rule) to the
// NLB rule too.
func TestSharedAnnotationsMatchBothProducts(t *testing.T) {
	for suffix, param := range map[string]string{
		"healthy-threshold":            "HealthyThreshold",
		"unhealthy-threshold":          "UnhealthyThreshold",
		"health-check-interval":        "HealthCheckInterval",
		"health-check-connect-timeout": "HealthCheckConnectTimeout",
		"weight":                       "Weight",
		"default-weight":               "Weight",
	} {
		a, ok := Find(suffix, OwnerNLB)
		if !ok {
			t.Fatalf("no annotation %s", suffix)
		}
		f := cloudFact("nlb:" + param)
		if a.Min != f.Min || a.Max != f.Max {
			t.Errorf("%s takes %d to %d; NLB's %s is %d to %d (%s)", suffix, a.Min, a.Max, param, f.Min, f.Max, f.Source)
		}
	}
	for _, k := range []string{"TagKeyLength", "TagValueLength"} {
		if c, n := cloudFact("slb:"+k), cloudFact("nlb:"+k); c.Min != n.Min || c.Max != n.Max {
			t.Errorf("%s differs: CLB %d-%d, NLB %d-%d", k, c.Min, c.Max, n.Min, n.Max)
		}
	}
}

func TestCloudFactsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range CloudFacts {
		if seen[f.Key] {
			t.Errorf("duplicate fact %s", f.Key)
		}
		seen[f.Key] = true
		if f.Source == "" {
			t.Errorf("fact %s cites no source", f.Key)
		}
		if f.Values == nil && f.Min > f.Max {
			t.Errorf("fact %s: min %d > max %d", f.Key, f.Min, f.Max)
		}
	}
}
