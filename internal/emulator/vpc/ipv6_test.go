package vpc_test

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

func TestIPv6VPCAndVSwitches(t *testing.T) {
	env := emulatortest.Start(t)
	c := env.VPC(t)

	create := func(enable bool, block string) (*vpc.CreateVpcResponse, error) {
		r := vpc.CreateCreateVpcRequest()
		r.CidrBlock = "192.168.0.0/16"
		if enable {
			r.EnableIpv6 = requests.NewBoolean(true)
		}
		r.Ipv6CidrBlock = block
		return c.CreateVpc(r)
	}
	dual, err := create(true, "")
	noErr(t, err)
	named, err := create(true, "2001:db8:1:ff00::/56")
	noErr(t, err)
	plain, err := create(false, "")
	noErr(t, err)
	for _, tc := range []struct {
		name, block, code string
	}{
		{"not a /56", "2001:db8::/48", "InvalidIpv6CidrBlock.Malformed"},
		{"host bits", "2001:db8:1:ff01::/56", "InvalidIpv6CidrBlock.Malformed"},
		{"ipv4", "10.0.0.0/8", "InvalidIpv6CidrBlock.Malformed"},
		{"in use", "2001:db8:1:ff00::/56", "InvalidIpv6CidrBlock.InUse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := create(true, tc.block)
			wantErr(t, err, tc.code, http.StatusBadRequest)
		})
	}

	attr := func(id string) *vpc.DescribeVpcAttributeResponse {
		r := vpc.CreateDescribeVpcAttributeRequest()
		r.VpcId = id
		a, err := c.DescribeVpcAttribute(r)
		noErr(t, err)
		return a
	}
	d := attr(dual.VpcId)
	p, err := netip.ParsePrefix(d.Ipv6CidrBlock)
	if err != nil || p.Bits() != 56 || !d.EnabledIpv6 || len(d.Ipv6CidrBlocks.Ipv6CidrBlock) != 1 || d.Ipv6CidrBlocks.Ipv6CidrBlock[0].Ipv6CidrBlock != d.Ipv6CidrBlock {
		t.Fatalf("dual-stack VPC: %q %v %+v", d.Ipv6CidrBlock, d.EnabledIpv6, d.Ipv6CidrBlocks)
	}
	if n := attr(named.VpcId).Ipv6CidrBlock; n != "2001:db8:1:ff00::/56" {
		t.Fatalf("named block: %q", n)
	}
	if a := attr(plain.VpcId); a.Ipv6CidrBlock != "" || a.EnabledIpv6 || len(a.Ipv6CidrBlocks.Ipv6CidrBlock) != 0 {
		t.Fatalf("IPv4-only VPC reports IPv6: %+v", a)
	}
	list := vpc.CreateDescribeVpcsRequest()
	list.VpcId = dual.VpcId
	lr, err := c.DescribeVpcs(list)
	noErr(t, err)
	if v := lr.Vpcs.Vpc[0]; v.Ipv6CidrBlock != d.Ipv6CidrBlock || !v.EnabledIpv6 || len(v.Ipv6CidrBlocks.Ipv6CidrBlock) != 1 {
		t.Fatalf("DescribeVpcs: %+v", v)
	}

	vsw := func(vpcID, cidr string, n int) (*vpc.CreateVSwitchResponse, error) {
		r := vpc.CreateCreateVSwitchRequest()
		r.VpcId, r.ZoneId, r.CidrBlock = vpcID, "cn-hangzhou-h", cidr
		if n >= 0 {
			r.Ipv6CidrBlock = requests.NewInteger(n)
		}
		return c.CreateVSwitch(r)
	}
	sw, err := vsw(dual.VpcId, "192.168.1.0/24", 7)
	noErr(t, err)
	_, err = vsw(dual.VpcId, "192.168.2.0/24", 7)
	wantErr(t, err, "InvalidIpv6CidrBlock.Overlapped", http.StatusBadRequest)
	_, err = vsw(dual.VpcId, "192.168.2.0/24", 256)
	wantErr(t, err, "InvalidIpv6CidrBlock.Malformed", http.StatusBadRequest)
	_, err = vsw(plain.VpcId, "192.168.2.0/24", 1)
	wantErr(t, err, "OperationFailed.Ipv6NotEnabled", http.StatusBadRequest)
	v4only, err := vsw(dual.VpcId, "192.168.3.0/24", -1)
	noErr(t, err)

	dr := vpc.CreateDescribeVSwitchesRequest()
	dr.VpcId = dual.VpcId
	sws, err := c.DescribeVSwitches(dr)
	noErr(t, err)
	got := map[string]vpc.VSwitch{}
	for _, s := range sws.VSwitches.VSwitch {
		got[s.VSwitchId] = s
	}
	b := p.Addr().As16()
	b[7] = 7
	want := netip.PrefixFrom(netip.AddrFrom16(b), 64).String()
	if s := got[sw.VSwitchId]; s.Ipv6CidrBlock != want || !s.EnabledIpv6 {
		t.Fatalf("vSwitch 7 of %s: got %q (enabled %v), want %s", p, s.Ipv6CidrBlock, s.EnabledIpv6, want)
	}
	if s := got[v4only.VSwitchId]; s.Ipv6CidrBlock != "" || s.EnabledIpv6 {
		t.Fatalf("IPv4-only vSwitch: %+v", s)
	}
}

// dualStack seeds a VPC with IPv6 (vSwitch /64 number 1) and one without.
func dualStack(t *testing.T, env *emulatortest.Env) {
	t.Helper()
	one := 1
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{
			{ID: "vpc-6", CIDRBlock: "172.16.0.0/12", IPv6CIDRBlock: "2001:db8:6:100::/56", RouteTableID: "vtb-6",
				VSwitches: []api.SeedVSwitch{{ID: "vsw-6", ZoneID: "cn-hangzhou-h", CIDRBlock: "172.16.1.0/24", IPv6CIDRBlock: &one}}},
			{ID: "vpc-4", CIDRBlock: "10.0.0.0/8", RouteTableID: "vtb-4", VSwitches: []api.SeedVSwitch{{ID: "vsw-4", ZoneID: "cn-hangzhou-i", CIDRBlock: "10.1.0.0/16"}}},
		},
		Instances: []api.SeedInstance{
			{ID: "i-6", VSwitchID: "vsw-6", IPv6AddressCount: 1},
			{ID: "i-4", VSwitchID: "vsw-4"},
		},
	})
}

func TestIPv6Routes(t *testing.T) {
	env := emulatortest.Start(t)
	dualStack(t, env)
	noErr(t, env.Emulator.Store.Settings().SetDelay(store.DelayRouteEntry, 0))
	c := env.VPC(t)

	_, err := createRoute(c, "vtb-6", "fd00:10:244:1::/64", "i-6")
	noErr(t, err)
	cases := []struct {
		name, table, cidr, hop, code string
	}{
		{"ipv4-only VPC", "vtb-4", "fd00:10:244:2::/64", "i-4", "OperationFailed.Ipv6NotEnabled"},
		{"inside a vSwitch /64", "vtb-6", "2001:db8:6:101::/80", "i-6", "InvalidCIDRBlock.Overlapped"},
		{"duplicate", "vtb-6", "fd00:10:244:1::/64", "i-6", "InvalidCIDRBlock.Duplicate"},
		{"host bits", "vtb-6", "fd00:10:244:1::1/64", "i-6", "InvalidCIDRBlock.Malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createRoute(c, tc.table, tc.cidr, tc.hop)
			wantErr(t, err, tc.code, http.StatusBadRequest)
		})
	}

	batch := vpc.CreateCreateRouteEntriesRequest()
	batch.RouteEntries = &[]vpc.CreateRouteEntriesRouteEntries{
		{RouteTableId: "vtb-6", DstCidrBlock: "fd00:10:244:3::/64", NextHop: "i-6", NextHopType: "Instance", IpVersion: "IPv6"},
		{RouteTableId: "vtb-6", DstCidrBlock: "10.244.3.0/24", NextHop: "i-6", NextHopType: "Instance", IpVersion: "IPv4"},
		{RouteTableId: "vtb-6", DstCidrBlock: "fd00:10:244:4::/64", NextHop: "i-6", NextHopType: "Instance", IpVersion: "IPv4"},
		{RouteTableId: "vtb-4", DstCidrBlock: "fd00:10:244:5::/64", NextHop: "i-4", NextHopType: "Instance"},
	}
	br, err := c.CreateRouteEntries(batch)
	noErr(t, err)
	if br.SuccessCount != 2 || br.FailedCount != 2 {
		t.Fatalf("batch: %+v", br)
	}
	codes := map[string]string{}
	for _, f := range br.FailedRouteEntries {
		codes[f.DstCidrBlock] = f.FailedCode
	}
	if codes["fd00:10:244:4::/64"] != "InvalidParameter" || codes["fd00:10:244:5::/64"] != "OperationFailed.Ipv6NotEnabled" {
		t.Fatalf("failures: %+v", br.FailedRouteEntries)
	}

	versions := map[string]string{}
	for _, e := range entries(t, c, "vtb-6", "Custom") {
		versions[e.DestinationCidrBlock] = e.IpVersion
	}
	want := map[string]string{"fd00:10:244:1::/64": "ipv6", "fd00:10:244:3::/64": "ipv6", "10.244.3.0/24": "ipv4"}
	for k, v := range want {
		if versions[k] != v {
			t.Fatalf("IpVersion of %s = %q, want %q (all: %v)", k, versions[k], v, versions)
		}
	}
	if len(versions) != len(want) {
		t.Fatalf("entries: %v", versions)
	}

	del := vpc.CreateDeleteRouteEntryRequest()
	del.RouteTableId, del.DestinationCidrBlock, del.NextHopId = "vtb-6", "fd00:10:244:1::/64", "i-6"
	_, err = c.DeleteRouteEntry(del)
	noErr(t, err)
	f := vpc.CreateDescribeRouteEntryListRequest()
	f.RouteTableId, f.DestinationCidrBlock = "vtb-6", "fd00:10:244:3::/64"
	fr, err := c.DescribeRouteEntryList(f)
	noErr(t, err)
	if len(fr.RouteEntrys.RouteEntry) != 1 || fr.RouteEntrys.RouteEntry[0].IpVersion != "ipv6" {
		t.Fatalf("filter by IPv6 destination: %+v", fr.RouteEntrys.RouteEntry)
	}
}

// TestIPv6SeedFile: the --seed YAML form of the IPv6 fields, parsed
// strictly, seeds a dual-stack VPC, vSwitch and instance.
func TestIPv6SeedFile(t *testing.T) {
	sd, err := gateway.ParseSeed([]byte(`
vpcs:
- id: vpc-y
  cidrBlock: 192.168.0.0/16
  enableIpv6: true
  vswitches:
  - id: vsw-y
    zoneId: cn-hangzhou-h
    cidrBlock: 192.168.1.0/24
    ipv6CidrBlock: 3
instances:
- id: i-y
  vswitchId: vsw-y
  ipv6AddressCount: 2
`))
	noErr(t, err)
	env := emulatortest.Start(t)
	env.Seed(t, sd)
	r := vpc.CreateDescribeVSwitchesRequest()
	r.VSwitchId = "vsw-y"
	sws, err := env.VPC(t).DescribeVSwitches(r)
	noErr(t, err)
	p, err := netip.ParsePrefix(sws.VSwitches.VSwitch[0].Ipv6CidrBlock)
	if err != nil || p.Bits() != 64 || p.Addr().As16()[7] != 3 {
		t.Fatalf("vSwitch IPv6 block %q", sws.VSwitches.VSwitch[0].Ipv6CidrBlock)
	}
	d := ecs.CreateDescribeNetworkInterfacesRequest()
	d.InstanceId = "i-y"
	nis, err := env.ECS(t).DescribeNetworkInterfaces(d)
	noErr(t, err)
	if sets := nis.NetworkInterfaceSets.NetworkInterfaceSet[0].Ipv6Sets.Ipv6Set; len(sets) != 2 || !p.Contains(netip.MustParseAddr(sets[1].Ipv6Address)) {
		t.Fatalf("instance IPv6 %+v, want 2 addresses in %s", sets, p)
	}
}
