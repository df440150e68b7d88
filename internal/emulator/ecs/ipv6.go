package ecs

import (
	"net/http"
	"slices"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// maxIPv6PerENI is the emulator's per-ENI IPv6 quota; the cloud's depends on
// the instance type (1 to 10 for common ones).
const maxIPv6PerENI = 10

// ipv6Sets is an ENI's Ipv6Sets as DescribeInstances and
// DescribeNetworkInterfaces report it.
func ipv6Sets(e *ENI) map[string]any {
	sets := []map[string]any{}
	for _, a := range e.IPv6s {
		sets = append(sets, map[string]any{"Ipv6Address": a})
	}
	return map[string]any{"Ipv6Set": sets}
}

// hasIPv6 reports whether the ENI holds any of ips (the Ipv6Address.N
// filter of DescribeNetworkInterfaces).
func hasIPv6(e *ENI, ips []string) bool {
	for _, a := range e.IPv6s {
		if slices.Contains(ips, a) {
			return true
		}
	}
	return false
}

// allocateIPv6s reserves the wanted addresses, then count more, in the
// vSwitch's /64; on failure nothing stays reserved.
func (s *Service) allocateIPv6s(vswitchID string, want []string, count int) ([]string, error) {
	var got []string
	undo := func() {
		for _, a := range got {
			s.vpc.ReleasePrivateIP(vswitchID, a)
		}
	}
	for _, w := range want {
		a, err := s.vpc.AllocateIPv6(vswitchID, w)
		if err != nil {
			undo()
			return nil, ecsIPError(err)
		}
		got = append(got, a)
	}
	for n := 0; n < count; n++ {
		a, err := s.vpc.AllocateIPv6(vswitchID, "")
		if err != nil {
			undo()
			return nil, ecsIPError(err)
		}
		got = append(got, a)
	}
	return got, nil
}

// assignIpv6Addresses adds IPv6 addresses to an ENI: Ipv6Address.N or
// Ipv6AddressCount, not both, as the cloud requires.
func (s *Service) assignIpv6Addresses(req *api.Request) (map[string]any, error) {
	p := req.Params
	e, err := s.requestedENI(req)
	if err != nil {
		return nil, err
	}
	id := e.ID
	want := p.List("Ipv6Address")
	count, err := p.IntRange("Ipv6AddressCount", 0, 1, maxIPv6PerENI)
	if err != nil {
		return nil, err
	}
	if len(p.List("Ipv6Prefix")) > 0 || p.Has("Ipv6PrefixCount") {
		return nil, api.InvalidParameter("Ipv6Prefix", "IPv6 prefixes (Ipv6Prefix.N, Ipv6PrefixCount) are not supported by the emulator.")
	}
	switch {
	case len(want) > 0 && count > 0:
		return nil, api.InvalidParameter("Ipv6AddressCount", "Ipv6Address.N and Ipv6AddressCount cannot be set together.")
	case len(want) == 0 && count == 0:
		return nil, api.MissingParameter("Ipv6AddressCount")
	}
	if n := len(e.IPv6s) + len(want) + count; n > maxIPv6PerENI {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidOperation.Ipv6CountExceeded", "The network interface %s would have %d IPv6 addresses; at most %d are allowed.", id, n, maxIPv6PerENI)
	}
	if s.vpc.VSwitchIPv6(e.VSwitchID) == "" {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidVSwitchId.Ipv6NotTurnOn", "IPv6 is not enabled for vSwitch %s of network interface %s.", e.VSwitchID, id)
	}
	got, err := s.allocateIPv6s(e.VSwitchID, want, count)
	if err != nil {
		return nil, err
	}
	e.IPv6s = append(e.IPv6s, got...)
	return map[string]any{
		"NetworkInterfaceId": id,
		"Ipv6Sets":           map[string]any{"Ipv6Address": got},
		"Ipv6PrefixSets":     map[string]any{"Ipv6Prefix": []string{}},
	}, nil
}

// unassignIpv6Addresses removes Ipv6Address.N from an ENI.
func (s *Service) unassignIpv6Addresses(req *api.Request) (map[string]any, error) {
	e, err := s.requestedENI(req)
	if err != nil {
		return nil, err
	}
	drop := req.Params.List("Ipv6Address")
	if len(drop) == 0 {
		return nil, api.MissingParameter("Ipv6Address.N")
	}
	for _, a := range drop {
		if !slices.Contains(e.IPv6s, a) {
			return nil, api.Errorf(http.StatusBadRequest, "InvalidIp.IpUnassigned", "The IPv6 address %s is not assigned to network interface %s.", a, e.ID)
		}
	}
	e.IPv6s = slices.DeleteFunc(e.IPv6s, func(a string) bool {
		if slices.Contains(drop, a) {
			s.vpc.ReleasePrivateIP(e.VSwitchID, a)
			return true
		}
		return false
	})
	return map[string]any{}, nil
}
