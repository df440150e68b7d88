package apifacts

import (
	"slices"
	"strings"
	"testing"
)

func TestValidCLBName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a0123456789abcdef0123456789abcde", true},
		{"web-lb_1.prod", true},
		{"负载均衡-1", true},
		{"", false},
		{"1web", false},
		{"-web", false},
		{"web lb", false},
		{"web/lb", false},
		{"a" + strings.Repeat("b", 79), true},
		{"a" + strings.Repeat("b", 80), false},
	} {
		if got := ValidCLBName(tc.name); got != tc.ok {
			t.Errorf("ValidCLBName(%q) = %v, want %v", tc.name, got, tc.ok)
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
	if got := AllCLBSchedulers(); !slices.Equal(got, []string{"wrr", "rr", "sch", "tch"}) {
		t.Errorf("AllCLBSchedulers() = %v", got)
	}
	// A caller's edit must not change the table.
	CLBSchedulers("tcp")[0] = "wlc"
	if CLBSchedulers("tcp")[0] != "wrr" {
		t.Error("CLBSchedulers returned the table itself")
	}
}
