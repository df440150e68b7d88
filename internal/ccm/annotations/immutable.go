package annotations

import (
	"fmt"
	"net"
	"strings"
)

// CloudLBAttributes are the creation-time attributes of an existing load
// balancer, as read from the cloud ("" = unknown, never reported).
type CloudLBAttributes struct {
	// AddressType is internet or intranet.
	AddressType string
	// NetworkType is classic or vpc (CLB).
	NetworkType string
	// VSwitchID is the CLB's vSwitch.
	VSwitchID string
	// MasterZoneID is the CLB's primary zone.
	MasterZoneID string
	// SlaveZoneID is the CLB's secondary zone.
	SlaveZoneID string
	// IPVersion is ipv4, ipv6 or DualStack.
	IPVersion string
	// ResourceGroupID is the resource group.
	ResourceGroupID string
	// Address is the CLB's VIP.
	Address string
}

// Change is an annotation asking for a value of an attribute the cloud
// cannot change on an existing load balancer.
type Change struct {
	// Key is the annotation key as the user wrote it.
	Key string
	// Current is the cloud's value.
	Current string
	// Desired is the annotation's value.
	Desired string
}

// String renders the change for a Warning event.
func (c Change) String() string {
	return fmt.Sprintf("%s is %q but the load balancer has %q, which cannot change after creation (recreate the Service, or remove the annotation)", c.Key, c.Desired, c.Current)
}

// ImmutableChanges lists the annotations (those the registry marks
// Immutable for the Service's kind) that the user set to a value the
// existing load balancer does not have. The controller reports them
// instead of failing silently; it must not try to apply them.
func ImmutableChanges(current CloudLBAttributes, desired *Settings) []Change {
	if desired == nil {
		return nil
	}
	lb := desired.LoadBalancer
	pairs := []struct {
		suffix string
		want   *string
		have   string
		same   func(a, b string) bool
	}{
		{"address-type", lb.AddressType, current.AddressType, strings.EqualFold},
		{"network-type", lb.NetworkType, current.NetworkType, strings.EqualFold},
		{"vswitch-id", lb.VSwitchID, current.VSwitchID, equal},
		{"master-zoneid", lb.MasterZoneID, current.MasterZoneID, equal},
		{"slave-zoneid", lb.SlaveZoneID, current.SlaveZoneID, equal},
		{"ip-version", lb.IPVersion, current.IPVersion, strings.EqualFold},
		{"resource-group-id", lb.ResourceGroupID, current.ResourceGroupID, equal},
		{"ip", lb.IP, current.Address, sameIP},
	}
	var out []Change
	for _, p := range pairs {
		a, ok := Find(p.suffix, desired.Owner)
		if !ok || !a.Immutable || p.want == nil || p.have == "" || p.same(*p.want, p.have) {
			continue
		}
		out = append(out, Change{Key: desired.Key(p.suffix), Current: p.have, Desired: *p.want})
	}
	return out
}

func equal(a, b string) bool { return a == b }

func sameIP(a, b string) bool {
	x, y := net.ParseIP(a), net.ParseIP(b)
	if x == nil || y == nil {
		return a == b
	}
	return x.Equal(y)
}
