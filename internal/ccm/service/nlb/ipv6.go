package nlb

import (
	"net/netip"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// Server group address families as NLB spells them.
const (
	ipv4      = "ipv4"
	dualStack = "DualStack"
)

// backendIPVersion is the backend-ip-version the Service asks for, lower
// case: ipv4, ipv6 or dualstack.
func backendIPVersion(s *annotations.Settings) string {
	return strings.ToLower(annotations.Or(s.Backend.IPVersion, annotations.DefaultBackendIPVersion))
}

// groupIPVersion is the server group family for a backend-ip-version: NLB
// groups are ipv4 or DualStack, and only DualStack ones take IPv6 servers.
func groupIPVersion(version string) string {
	if version == "ipv6" || version == "dualstack" {
		return dualStack
	}
	return ipv4
}

// sameIPVersion compares group families; the cloud reports ipv4 for
// groups created without the parameter.
func sameIPVersion(current, desired string) bool {
	norm := func(v string) string {
		if v == "" {
			return ipv4
		}
		return strings.ToLower(v)
	}
	return norm(current) == norm(desired)
}

// servers turns a target into its group members. Ip groups of ECS
// backends register the instance by address: its primary IPv4 (ipv4), its
// primary ENI's IPv6 (ipv6), or both (dualstack); an instance without the
// address asked for is left out until it has one. Other groups register
// one member whatever the family: the instance or ENI itself.
func servers(t service.Target, eni bool, typ, version string, addr Addresses, desc string) []Server {
	if typ != GroupIP || eni || version == ipv4 {
		if srv, ok := server(t, eni, typ, addr, desc); ok {
			return []Server{srv}
		}
		return nil
	}
	var out []Server
	if version == "dualstack" {
		if srv, ok := server(t, eni, typ, addr, desc); ok {
			out = append(out, srv)
		}
	}
	if ip := addr.InstanceIPv6s[t.InstanceID]; ip != "" {
		out = append(out, Server{Port: t.Port, Weight: t.Weight, Description: desc, ServerID: ip, IP: ip, Type: ServerIP})
	}
	return out
}

// primaryIPv6 is the first IPv6 address of an instance's primary ENI, ""
// without one.
func primaryIPv6(in ecs.Instance) string {
	for _, ni := range in.NetworkInterfaces.NetworkInterface {
		if ni.Type != "" && ni.Type != "Primary" {
			continue
		}
		for _, s := range ni.Ipv6Sets.Ipv6Set {
			if a, err := netip.ParseAddr(s.Ipv6Address); err == nil && a.Is6() && !a.Is4In6() {
				return a.String()
			}
		}
	}
	return ""
}
