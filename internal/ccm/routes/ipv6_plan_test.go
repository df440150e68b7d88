package routes

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseClusterCIDRDualStack(t *testing.T) {
	for _, tc := range []struct {
		in, want, errHas string
	}{
		{in: "10.244.0.0/16", want: "10.244.0.0/16"},
		{in: "10.244.0.0/16, fd00:10:244::/56", want: "10.244.0.0/16 fd00:10:244::/56"},
		{in: "fd00:10:244::/56,10.244.0.0/16", want: "10.244.0.0/16 fd00:10:244::/56"},
		{in: "10.244.0.0/16,10.245.0.0/16", errHas: "one CIDR per IP family"},
		{in: "fd00::/48,fd01::/48", errHas: "IPv4"},
	} {
		got, err := parseClusterCIDR(tc.in)
		switch {
		case tc.errHas != "":
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.errHas)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		default:
			if s := netipList(got); s != tc.want {
				t.Errorf("%q: got %s, want %s", tc.in, s, tc.want)
			}
		}
	}
}

func netipList(ps []netip.Prefix) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return strings.Join(out, " ")
}

func TestNodesToTargetsIPv6(t *testing.T) {
	dual := []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/56")}
	in := []*corev1.Node{
		node("a", "cn-hangzhou.i-a", []string{"10.244.1.0/24", "fd00:10:244:1::/64"}, nil),
		node("b", "cn-hangzhou.i-b", []string{"10.244.2.0/24", "fd00:99::/64"}, nil),
		node("c", "cn-hangzhou.i-c", []string{"fd00:10:244:1::/64"}, nil),
	}
	ns, skips := nodesToTargets(in, dual, "cn-hangzhou")
	want := []target{tgt("a", "i-a", "10.244.1.0/24"), tgt("a", "i-a", "fd00:10:244:1::/64"), tgt("b", "i-b", "10.244.2.0/24")}
	if !reflect.DeepEqual(ns.Targets, want) {
		t.Errorf("targets %v, want %v", ns.Targets, want)
	}
	var reasons []string
	for _, s := range skips {
		reasons = append(reasons, s.Node+": "+s.Reason)
	}
	if want := []string{"b: podCIDR fd00:99::/64 is outside the cluster CIDR", "c: podCIDR fd00:10:244:1::/64 is also Node a's"}; !reflect.DeepEqual(reasons, want) {
		t.Errorf("skips %q, want %q", reasons, want)
	}
	// An IPv4 cluster ignores IPv6 podCIDRs without a word.
	ns, skips = nodesToTargets(in[:1], dual[:1], "cn-hangzhou")
	if len(ns.Targets) != 1 || len(skips) != 0 {
		t.Errorf("IPv4 cluster: targets %v, skips %v", ns.Targets, skips)
	}
}
