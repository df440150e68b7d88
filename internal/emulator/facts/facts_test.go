package facts

import (
	"strings"
	"testing"
)

func TestRulesWellFormed(t *testing.T) {
	for _, r := range All() {
		forms := 0
		if r.Values != nil {
			forms++
		}
		if r.Valid != nil {
			forms++
		}
		switch {
		case r.Source == "":
			t.Errorf("%s cites no source", r.Key)
		case forms > 1:
			t.Errorf("%s is both an enumeration and a name rule", r.Key)
		case r.Values == nil && r.Min > r.Max:
			t.Errorf("%s: min %d > max %d", r.Key, r.Min, r.Max)
		case !strings.HasPrefix(r.Key, "slb:") && !strings.HasPrefix(r.Key, "nlb:"):
			t.Errorf("%s names no product", r.Key)
		}
	}
}

func TestNameRules(t *testing.T) {
	for _, tc := range []struct {
		key, name string
		ok        bool
	}{
		{"slb:LoadBalancerName", "team/web-1.a_b", true},
		{"slb:LoadBalancerName", "负载均衡", true},
		{"slb:LoadBalancerName", "a", true},
		{"slb:LoadBalancerName", "/web", false},
		{"slb:LoadBalancerName", "web lb", false},
		{"slb:LoadBalancerName", "a" + strings.Repeat("b", 80), false},
		{"nlb:LoadBalancerName", "a", false},
		{"nlb:LoadBalancerName", "team/web", false},
		{"nlb:LoadBalancerName", "web-1.a_b", true},
		{"nlb:ServerGroupName", "1sg", false},
	} {
		if got := ValidName(tc.key, tc.name); got != tc.ok {
			t.Errorf("ValidName(%s, %q) = %v, want %v", tc.key, tc.name, got, tc.ok)
		}
	}
	if got := NameRule("slb:LoadBalancerName"); !strings.Contains(got, "slashes (/)") || !strings.Contains(got, "1 to 80") {
		t.Errorf("NameRule = %q", got)
	}
}
