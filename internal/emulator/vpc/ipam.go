package vpc

import (
	"encoding/binary"
	"net/http"
	"net/netip"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// cgnat is the cloud-service range every VPC routes to its services; custom
// routes must stay out of it.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// privateRanges are the RFC 1918 blocks a VPC CIDR must lie in.
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
}

// parseCIDR parses an IPv4 CIDR; a bare address is a /32 when bare is set.
// Host bits must be zero, as the cloud refuses 10.0.0.1/24.
func parseCIDR(s string, bare bool) (netip.Prefix, bool) {
	s = strings.TrimSpace(s)
	if bare && !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return netip.Prefix{}, false
		}
		return netip.PrefixFrom(a, 32), true
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() || p.Masked() != p {
		return netip.Prefix{}, false
	}
	return p, true
}

// within reports whether inner lies completely inside outer.
func within(inner, outer netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

func addrToU32(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func u32ToAddr(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// usableRange returns the first and last assignable addresses of a vSwitch:
// the cloud reserves the network address and the last three addresses.
func usableRange(p netip.Prefix) (first, last uint32, ok bool) {
	size := uint64(1) << (32 - p.Bits())
	if size < 8 {
		return 0, 0, false
	}
	base := addrToU32(p.Addr())
	return base + 1, base + uint32(size-4), true
}

// capacity is the number of assignable addresses of a vSwitch CIDR.
func capacity(p netip.Prefix) int64 {
	first, last, ok := usableRange(p)
	if !ok {
		return 0
	}
	return int64(last-first) + 1
}

// available is the AvailableIpAddressCount of a vSwitch.
func (v *VSwitch) available() int64 {
	p, ok := parseCIDR(v.CIDRBlock, false)
	if !ok {
		return 0
	}
	n := capacity(p) - int64(len(v.UsedIPs))
	if n < 0 {
		n = 0
	}
	return n
}

// allocate reserves want (when set) or the lowest free address.
func (v *VSwitch) allocate(want string) (string, error) {
	p, ok := parseCIDR(v.CIDRBlock, false)
	if !ok {
		return "", api.Errorf(http.StatusInternalServerError, "InternalError", "vSwitch %s has an invalid CIDR %s", v.ID, v.CIDRBlock)
	}
	first, last, ok := usableRange(p)
	if !ok {
		return "", api.Errorf(http.StatusBadRequest, ErrCodeVSwitchFull, "The specified vSwitch %s has no available IP address.", v.ID)
	}
	if v.UsedIPs == nil {
		v.UsedIPs = map[string]bool{}
	}
	if want != "" {
		a, err := netip.ParseAddr(strings.TrimSpace(want))
		if err != nil || !a.Is4() {
			return "", api.Errorf(http.StatusBadRequest, "InvalidPrivateIpAddress.Malformed", "The specified private IP address %q is not valid.", want)
		}
		if u := addrToU32(a); !p.Contains(a) || u < first || u > last {
			return "", api.Errorf(http.StatusBadRequest, "InvalidPrivateIpAddress.Mismatch", "The specified private IP address %s is not in the usable range of vSwitch %s (%s).", want, v.ID, v.CIDRBlock)
		}
		if v.UsedIPs[a.String()] {
			return "", api.Errorf(http.StatusBadRequest, "InvalidPrivateIpAddress.Duplicated", "The specified private IP address %s is already in use.", want)
		}
		v.UsedIPs[a.String()] = true
		return a.String(), nil
	}
	for u := first; u <= last; u++ {
		ip := u32ToAddr(u).String()
		if !v.UsedIPs[ip] {
			v.UsedIPs[ip] = true
			return ip, nil
		}
		if u == last {
			break
		}
	}
	return "", api.Errorf(http.StatusBadRequest, ErrCodeVSwitchFull, "The specified vSwitch %s has no available IP address.", v.ID)
}
