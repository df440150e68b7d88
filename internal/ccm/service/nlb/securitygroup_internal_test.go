package nlb

import (
	"net/netip"
	"slices"
	"testing"
)

func TestPlanRules(t *testing.T) {
	p := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, v := range s {
			out = append(out, netip.MustParsePrefix(v))
		}
		return out
	}
	cur := func(id, policy, prio, cidr string) sgRule {
		return sgRule{ID: id, Policy: policy, Priority: prio, CIDR: cidr, Protocol: sgAllProtocols, Ports: sgAllPorts}
	}
	for _, tc := range []struct {
		name      string
		ranges    []netip.Prefix
		dualStack bool
		current   []sgRule
		add       []string
		revoke    []string
	}{
		{name: "new group", ranges: p("10.0.0.0/8"), add: []string{"accept 10.0.0.0/8", "drop 0.0.0.0/0"}},
		{name: "converged", ranges: p("10.0.0.0/8"), current: []sgRule{cur("r1", "accept", "1", "10.0.0.0/8"), cur("r2", "drop", "100", "0.0.0.0/0")}},
		{name: "one replaced", ranges: p("10.0.0.0/8", "172.16.0.0/12"),
			current: []sgRule{cur("r1", "accept", "1", "10.0.0.0/8"), cur("r3", "accept", "1", "192.168.0.0/16"), cur("r2", "drop", "100", "0.0.0.0/0")},
			add:     []string{"accept 172.16.0.0/12"}, revoke: []string{"r3"}},
		{name: "priority drift repaired", ranges: p("10.0.0.0/8"), current: []sgRule{cur("r1", "accept", "5", "10.0.0.0/8"), cur("r2", "drop", "100", "0.0.0.0/0")},
			add: []string{"accept 10.0.0.0/8"}, revoke: []string{"r1"}},
		{name: "IPv6 range drops IPv6 too", ranges: p("2001:db8::/32"), add: []string{"accept 2001:db8::/32", "drop 0.0.0.0/0", "drop ::/0"}},
		{name: "dual-stack load balancer drops IPv6", ranges: p("10.0.0.0/8"), dualStack: true, add: []string{"accept 10.0.0.0/8", "drop 0.0.0.0/0", "drop ::/0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			add, revoke := planRules(desiredRules(tc.ranges, tc.dualStack), tc.current)
			var got []string
			for _, r := range add {
				got = append(got, r.Policy+" "+r.CIDR)
				if r.IPv6 == netip.MustParsePrefix(r.CIDR).Addr().Is4() {
					t.Errorf("rule %+v: IPv6 flag wrong", r)
				}
			}
			if !slices.Equal(got, tc.add) || !slices.Equal(revoke, tc.revoke) {
				t.Errorf("add %v revoke %v, want %v and %v", got, revoke, tc.add, tc.revoke)
			}
		})
	}
}
