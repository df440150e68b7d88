package clb

import (
	"net/netip"
	"slices"
	"testing"
)

func TestPlanEntries(t *testing.T) {
	have := func(raw ...string) map[netip.Prefix]string {
		m := map[netip.Prefix]string{}
		for _, r := range raw {
			p, ok := entryPrefix(r)
			if !ok {
				t.Fatalf("entry %q", r)
			}
			m[p] = r
		}
		return m
	}
	for _, tc := range []struct {
		name         string
		want         []string
		have         map[netip.Prefix]string
		add, removed []string
	}{
		{name: "new list", want: []string{"10.0.0.0/8", "192.168.0.1/32"}, have: have(), add: []string{"10.0.0.0/8", "192.168.0.1/32"}},
		{name: "converged; a bare address is a /32", want: []string{"10.0.0.0/8", "192.168.0.1/32"}, have: have("192.168.0.1", "10.0.0.0/8")},
		{name: "one replaced", want: []string{"10.0.0.0/8", "172.16.0.0/12"}, have: have("10.0.0.0/8", "192.168.0.0/16"), add: []string{"172.16.0.0/12"}, removed: []string{"192.168.0.0/16"}},
		{name: "removed as the cloud spells it", want: []string{"10.0.0.0/8"}, have: have("10.0.0.0/8", "192.168.0.1"), removed: []string{"192.168.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			add, remove := planEntries(tc.want, tc.have)
			if !slices.Equal(add, tc.add) || !slices.Equal(remove, tc.removed) {
				t.Errorf("add %v remove %v, want %v and %v", add, remove, tc.add, tc.removed)
			}
		})
	}
}
