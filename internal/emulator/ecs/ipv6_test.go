package ecs_test

import (
	"net/http"
	"net/netip"
	"slices"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

func TestIPv6Addresses(t *testing.T) {
	env := emulatortest.Start(t)
	one := 1
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{
			{ID: "vpc-6", CIDRBlock: "172.16.0.0/12", IPv6CIDRBlock: "2001:db8:6:100::/56", VSwitches: []api.SeedVSwitch{
				{ID: "vsw-6", ZoneID: "cn-hangzhou-h", CIDRBlock: "172.16.1.0/24", IPv6CIDRBlock: &one},
				{ID: "vsw-4", ZoneID: "cn-hangzhou-i", CIDRBlock: "172.16.2.0/24"},
			}},
		},
		Instances: []api.SeedInstance{
			{ID: "i-named", VSwitchID: "vsw-6", IPv6Addresses: []string{"2001:db8:6:101::a"}, PrimaryENIID: "eni-named"},
			{ID: "i-auto", VSwitchID: "vsw-6", IPv6AddressCount: 1, PrimaryENIID: "eni-auto"},
			{ID: "i-v4", VSwitchID: "vsw-4", PrimaryENIID: "eni-v4"},
		},
	})
	c := env.ECS(t)

	v6of := func(id string) []string {
		r := describe(t, c, func(r *ecs.DescribeInstancesRequest) { r.InstanceIds = jsonList(id) })
		var out []string
		for _, s := range r.Instances.Instance[0].NetworkInterfaces.NetworkInterface[0].Ipv6Sets.Ipv6Set {
			out = append(out, s.Ipv6Address)
		}
		return out
	}
	if got := v6of("i-named"); !slices.Equal(got, []string{"2001:db8:6:101::a"}) {
		t.Fatalf("named: %v", got)
	}
	auto := v6of("i-auto")
	if len(auto) != 1 || !netip.MustParsePrefix("2001:db8:6:101::/64").Contains(netip.MustParseAddr(auto[0])) {
		t.Fatalf("auto: %v", auto)
	}
	if got := v6of("i-v4"); len(got) != 0 {
		t.Fatalf("IPv4-only instance: %v", got)
	}

	// Seeding an address into a vSwitch without IPv6 fails and leaks nothing.
	before := available(t, env, "vsw-4")
	if _, err := env.Emulator.Seed(&api.Seed{Instances: []api.SeedInstance{{VSwitchID: "vsw-4", IPv6AddressCount: 1}}}); err == nil {
		t.Fatal("seed with IPv6 in an IPv4-only vSwitch succeeded")
	}
	if after := available(t, env, "vsw-4"); after != before {
		t.Fatalf("failed seed leaked addresses: %d -> %d", before, after)
	}

	assign := func(eni string, mut func(r *ecs.AssignIpv6AddressesRequest)) (*ecs.AssignIpv6AddressesResponse, error) {
		r := ecs.CreateAssignIpv6AddressesRequest()
		r.NetworkInterfaceId = eni
		mut(r)
		return c.AssignIpv6Addresses(r)
	}
	ar, err := assign("eni-auto", func(r *ecs.AssignIpv6AddressesRequest) { r.Ipv6AddressCount = requests.NewInteger(2) })
	noErr(t, err)
	if len(ar.Ipv6Sets.Ipv6Address) != 2 || ar.NetworkInterfaceId != "eni-auto" {
		t.Fatalf("assign: %+v", ar)
	}
	for _, tc := range []struct {
		name, eni, code string
		mut             func(r *ecs.AssignIpv6AddressesRequest)
	}{
		{"taken", "eni-auto", "InvalidIpv6Address.InUse", func(r *ecs.AssignIpv6AddressesRequest) { r.Ipv6Address = &[]string{"2001:db8:6:101::a"} }},
		{"outside", "eni-auto", "InvalidIpv6Address.Mismatch", func(r *ecs.AssignIpv6AddressesRequest) { r.Ipv6Address = &[]string{"2001:db8:6:102::1"} }},
		{"no ipv6 vswitch", "eni-v4", "InvalidVSwitchId.Ipv6NotTurnOn", func(r *ecs.AssignIpv6AddressesRequest) { r.Ipv6AddressCount = requests.NewInteger(1) }},
		{"neither", "eni-auto", "MissingParameter", func(r *ecs.AssignIpv6AddressesRequest) {}},
		{"over quota", "eni-auto", "InvalidOperation.Ipv6CountExceeded", func(r *ecs.AssignIpv6AddressesRequest) { r.Ipv6AddressCount = requests.NewInteger(8) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := assign(tc.eni, tc.mut)
			wantErr(t, err, tc.code, http.StatusBadRequest)
		})
	}

	// DescribeNetworkInterfaces reports and filters by IPv6 address.
	nr := ecs.CreateDescribeNetworkInterfacesRequest()
	nr.Ipv6Address = &[]string{ar.Ipv6Sets.Ipv6Address[1]}
	resp, err := c.DescribeNetworkInterfaces(nr)
	noErr(t, err)
	if len(resp.NetworkInterfaceSets.NetworkInterfaceSet) != 1 {
		t.Fatalf("filter by IPv6: %+v", resp.NetworkInterfaceSets)
	}
	if e := resp.NetworkInterfaceSets.NetworkInterfaceSet[0]; e.NetworkInterfaceId != "eni-auto" || len(e.Ipv6Sets.Ipv6Set) != 3 {
		t.Fatalf("ENI: %s %+v", e.NetworkInterfaceId, e.Ipv6Sets)
	}

	un := ecs.CreateUnassignIpv6AddressesRequest()
	un.NetworkInterfaceId, un.Ipv6Address = "eni-auto", &[]string{ar.Ipv6Sets.Ipv6Address[0]}
	_, err = c.UnassignIpv6Addresses(un)
	noErr(t, err)
	_, err = c.UnassignIpv6Addresses(un)
	wantErr(t, err, "InvalidIp.IpUnassigned", http.StatusBadRequest)
	// The freed address can be assigned again.
	_, err = assign("eni-named", func(r *ecs.AssignIpv6AddressesRequest) { r.Ipv6Address = &[]string{ar.Ipv6Sets.Ipv6Address[0]} })
	noErr(t, err)

	// Releasing an instance frees its IPv6 addresses.
	del := ecs.CreateDeleteInstanceRequest()
	del.InstanceId, del.Force = "i-named", requests.NewBoolean(true)
	_, err = c.DeleteInstance(del)
	noErr(t, err)
	_, err = assign("eni-auto", func(r *ecs.AssignIpv6AddressesRequest) { r.Ipv6Address = &[]string{"2001:db8:6:101::a"} })
	noErr(t, err)
}
