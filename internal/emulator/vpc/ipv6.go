package vpc

import (
	"math/big"
	"net/http"
	"net/netip"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// IPv6 in the emulated VPC: a VPC with IPv6 enabled owns one /56 (allocated
// from ipv6Pool unless the request names one); each vSwitch may take one /64
// of it, numbered 0-255 as CreateVSwitch's Ipv6CidrBlock does; ENIs take
// addresses of their vSwitch's /64; custom routes may then have IPv6
// destinations.

// ErrCodeIPv6NotEnabled is the emulator's code for an IPv6 operation in a VPC
// or vSwitch without IPv6.
const ErrCodeIPv6NotEnabled = "OperationFailed.Ipv6NotEnabled"

// ipv6Pool is the range the emulator's VPC /56 blocks come from (a /40 of
// the BGP range Alibaba Cloud announces, so addresses look as the cloud's;
// apart from SLB's 2408:4005:3c0:… and NLB's 2408:4005:3ff::/48).
var ipv6Pool = netip.MustParsePrefix("2408:4005:100::/40")

// ipv6Unicast is global unicast space, where a named VPC block must lie.
var ipv6Unicast = netip.MustParsePrefix("2000::/3")

func errIPv6NotEnabled(what, id string) *api.Error {
	return api.Errorf(http.StatusBadRequest, ErrCodeIPv6NotEnabled, "IPv6 is not enabled for the specified %s %s.", what, id)
}

// parseCIDR6 parses an IPv6 CIDR with zero host bits; a bare address is a
// /128 when bare is set.
func parseCIDR6(s string, bare bool) (netip.Prefix, bool) {
	s = strings.TrimSpace(s)
	if bare && !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return netip.Prefix{}, false
		}
		return netip.PrefixFrom(a, 128), true
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p.Masked() != p {
		return netip.Prefix{}, false
	}
	return p, true
}

// isIPv6 reports whether s is written as an IPv6 address or CIDR.
func isIPv6(s string) bool { return strings.Contains(s, ":") }

// enableIPv6 gives v its /56: want when set, else the pool's lowest free one.
func (s *Service) enableIPv6(v *VPC, want string) error {
	used := map[netip.Prefix]bool{}
	for _, o := range s.state.VPCs {
		if p, ok := parseCIDR6(o.IPv6CIDRBlock, false); ok {
			used[p] = true
		}
	}
	if want != "" {
		p, ok := parseCIDR6(want, false)
		if !ok || p.Bits() != 56 || !within(p, ipv6Unicast) {
			return api.Errorf(http.StatusBadRequest, "InvalidIpv6CidrBlock.Malformed", "Specified IPv6 CIDR block %q is not valid: it must be a global unicast /56.", want)
		}
		if used[p] {
			return api.Errorf(http.StatusBadRequest, "InvalidIpv6CidrBlock.InUse", "Specified IPv6 CIDR block %s is already used by another VPC.", p)
		}
		v.IPv6CIDRBlock = p.String()
		return nil
	}
	base := ipv6Pool.Addr().As16()
	for n := uint32(0); n < 1<<16; n++ {
		b := base
		b[5], b[6] = byte(n>>8), byte(n)
		p := netip.PrefixFrom(netip.AddrFrom16(b), 56)
		if !used[p] {
			v.IPv6CIDRBlock = p.String()
			return nil
		}
	}
	return api.Errorf(http.StatusBadRequest, "QuotaExceeded.Ipv6CidrBlock", "The emulator's IPv6 pool %s is exhausted.", ipv6Pool)
}

// vswitchIPv6 returns the /64 number n (0-255) of the VPC's /56.
func vswitchIPv6(v *VPC, n int) (netip.Prefix, error) {
	vp, ok := parseCIDR6(v.IPv6CIDRBlock, false)
	if !ok {
		return netip.Prefix{}, errIPv6NotEnabled("VPC", v.ID)
	}
	if n < 0 || n > 255 {
		return netip.Prefix{}, api.Errorf(http.StatusBadRequest, "InvalidIpv6CidrBlock.Malformed", "Specified Ipv6CidrBlock %d is not valid: it must be 0 to 255.", n)
	}
	b := vp.Addr().As16()
	b[7] = byte(n)
	return netip.PrefixFrom(netip.AddrFrom16(b), 64), nil
}

// setVSwitchIPv6 gives sw the /64 number n of its VPC's /56.
func (s *Service) setVSwitchIPv6(v *VPC, sw *VSwitch, n int) error {
	p, err := vswitchIPv6(v, n)
	if err != nil {
		return err
	}
	for _, o := range s.state.VSwitches {
		if o.VpcID == v.ID && o.ID != sw.ID && o.IPv6CIDRBlock == p.String() {
			return api.Errorf(http.StatusBadRequest, "InvalidIpv6CidrBlock.Overlapped", "Specified IPv6 CIDR block %s is used by vSwitch %s.", p, o.ID)
		}
	}
	sw.IPv6CIDRBlock = p.String()
	return nil
}

// ipv6Index is the number of a vSwitch's /64 within the VPC's /56, as
// CreateVSwitch's Ipv6CidrBlock takes it.
func ipv6Index(cidr string) (int, bool) {
	p, ok := parseCIDR6(cidr, false)
	if !ok {
		return 0, false
	}
	return int(p.Addr().As16()[7]), true
}

// vpcIPv6View adds the IPv6 fields to a DescribeVpcs or DescribeVpcAttribute
// item.
func vpcIPv6View(v *VPC, out map[string]any) {
	blocks := []any{}
	if v.IPv6CIDRBlock != "" {
		blocks = append(blocks, map[string]any{"Ipv6CidrBlock": v.IPv6CIDRBlock, "Ipv6Isp": "BGP"})
	}
	out["Ipv6CidrBlock"] = v.IPv6CIDRBlock
	out["EnabledIpv6"] = v.IPv6CIDRBlock != ""
	out["Ipv6CidrBlocks"] = map[string]any{"Ipv6CidrBlock": blocks}
}

// vswitchIPv6View adds the IPv6 fields to a vSwitch item.
func vswitchIPv6View(sw *VSwitch, out map[string]any) {
	out["Ipv6CidrBlock"] = sw.IPv6CIDRBlock
	out["EnabledIpv6"] = sw.IPv6CIDRBlock != ""
}

// ipv6Params reads CreateVpc's EnableIpv6 and Ipv6CidrBlock: the block to
// ask for (empty for the pool's next) and whether IPv6 is wanted at all.
func ipv6Params(p api.Params) (want string, enable bool, err error) {
	enable, err = p.Bool("EnableIpv6", false)
	if err != nil {
		return "", false, err
	}
	want = p.String("Ipv6CidrBlock")
	if want != "" && !enable {
		return "", false, api.Errorf(http.StatusBadRequest, "InvalidParam.EnableIpv6", "Ipv6CidrBlock requires EnableIpv6=true.")
	}
	return want, enable, nil
}

// vswitchIPv6Param reads CreateVSwitch's Ipv6CidrBlock (the /64's number);
// set is false when absent.
func vswitchIPv6Param(p api.Params) (n int, set bool, err error) {
	if !p.Has("Ipv6CidrBlock") {
		return 0, false, nil
	}
	n, err = p.Int("Ipv6CidrBlock", 0)
	return n, err == nil, err
}

// allocate6 reserves want (when set) or the lowest free address of the
// vSwitch's /64; the cloud hands out addresses from ::1 upwards here too.
func (v *VSwitch) allocate6(want string) (string, error) {
	p, ok := parseCIDR6(v.IPv6CIDRBlock, false)
	if !ok {
		return "", errIPv6NotEnabled("vSwitch", v.ID)
	}
	if v.UsedIPv6 == nil {
		v.UsedIPv6 = map[string]bool{}
	}
	if want != "" {
		a, err := netip.ParseAddr(strings.TrimSpace(want))
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return "", api.Errorf(http.StatusBadRequest, "InvalidIpv6Address.Malformed", "The specified IPv6 address %q is not valid.", want)
		}
		if !p.Contains(a) || a == p.Addr() {
			return "", api.Errorf(http.StatusBadRequest, "InvalidIpv6Address.Mismatch", "The specified IPv6 address %s is not in the IPv6 CIDR block %s of vSwitch %s.", want, v.IPv6CIDRBlock, v.ID)
		}
		if v.UsedIPv6[a.String()] {
			return "", api.Errorf(http.StatusBadRequest, "InvalidIpv6Address.InUse", "The specified IPv6 address %s is already in use.", a)
		}
		v.UsedIPv6[a.String()] = true
		return a.String(), nil
	}
	base := new(big.Int).SetBytes(p.Addr().AsSlice())
	for n := int64(1); n < 1<<20; n++ {
		var b [16]byte
		new(big.Int).Add(base, big.NewInt(n)).FillBytes(b[:])
		a := netip.AddrFrom16(b).String()
		if !v.UsedIPv6[a] {
			v.UsedIPv6[a] = true
			return a, nil
		}
	}
	return "", api.Errorf(http.StatusBadRequest, ErrCodeVSwitchFull, "The specified vSwitch %s has no available IPv6 address.", v.ID)
}

// AllocateIPv6 reserves an IPv6 address in a vSwitch's /64: want when
// non-empty, else the next free one; an *api.Error when the vSwitch has no
// IPv6 block or the address is taken or outside it.
func (s *Service) AllocateIPv6(vswitchID, want string) (string, error) {
	v, ok := s.state.VSwitches[vswitchID]
	if !ok {
		return "", errVSwitchNotFound(vswitchID)
	}
	return v.allocate6(want)
}

// VSwitchIPv6 returns a vSwitch's IPv6 /64 ("" without IPv6).
func (s *Service) VSwitchIPv6(vswitchID string) string {
	if v, ok := s.state.VSwitches[vswitchID]; ok {
		return v.IPv6CIDRBlock
	}
	return ""
}

// releaseIPv6 frees an address reserved with AllocateIPv6.
func (v *VSwitch) releaseIPv6(ip string) {
	if a, err := netip.ParseAddr(ip); err == nil {
		delete(v.UsedIPv6, a.String())
	}
}

// validateRoute6 applies the cloud's rules to an IPv6 destination: the VPC
// must have IPv6, and the destination must not lie inside a vSwitch's /64.
func (s *Service) validateRoute6(t *RouteTable, dst string) (netip.Prefix, *api.Error) {
	p, ok := parseCIDR6(dst, true)
	if !ok {
		return netip.Prefix{}, api.Errorf(http.StatusBadRequest, "InvalidCIDRBlock.Malformed", "The specified destination CIDR block %q is not valid.", dst)
	}
	v, ok := s.state.VPCs[t.VpcID]
	if !ok || v.IPv6CIDRBlock == "" {
		return netip.Prefix{}, errIPv6NotEnabled("VPC", t.VpcID)
	}
	for _, sw := range s.state.VSwitches {
		if sw.VpcID != t.VpcID {
			continue
		}
		if sp, ok := parseCIDR6(sw.IPv6CIDRBlock, false); ok && within(p, sp) {
			return netip.Prefix{}, api.Errorf(http.StatusBadRequest, "InvalidCIDRBlock.Overlapped", "The destination CIDR block %s must not equal or lie inside the IPv6 CIDR block %s of vSwitch %s.", p, sw.IPv6CIDRBlock, sw.ID)
		}
	}
	return p, nil
}

// ipVersion is a route entry's IpVersion as DescribeRouteEntryList reports it.
func ipVersion(cidr string) string {
	if isIPv6(cidr) {
		return "ipv6"
	}
	return "ipv4"
}

// checkIPVersion checks a CreateRouteEntries item's IpVersion (IPv4 or
// IPv6, any case; empty follows the destination) against its destination.
func checkIPVersion(version, dst string) *api.Error {
	if version == "" {
		return nil
	}
	switch strings.ToLower(version) {
	case "ipv4", "ipv6":
	default:
		return api.InvalidParameter("IpVersion", "The IpVersion %q is not valid (IPv4 or IPv6).", version)
	}
	if strings.ToLower(version) != ipVersion(dst) {
		return api.InvalidParameter("IpVersion", "The IpVersion %s does not match the destination CIDR block %s.", version, dst)
	}
	return nil
}

// parseDest parses a route destination of either family; a bare address is
// a host route.
func parseDest(s string) (netip.Prefix, bool) {
	if isIPv6(s) {
		return parseCIDR6(s, true)
	}
	return parseCIDR(s, true)
}
