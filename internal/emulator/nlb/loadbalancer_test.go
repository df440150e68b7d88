package nlb_test

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func TestCreateLoadBalancerProvisioningAndDelete(t *testing.T) {
	f := newFixture(t)
	setDelays(t, f.env, 300*time.Millisecond, 0)
	r := lbRequest("web-lb")
	r.AddressType = "Internet"
	r.AddressIpVersion = "DualStack"
	r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{
		{ZoneId: zoneH, VSwitchId: "vsw-h", PrivateIPv4Address: "172.16.1.100"},
		{ZoneId: zoneI, VSwitchId: "vsw-i", AllocationId: "eip-mine"},
	}
	r.DeletionProtectionConfig = nlb.CreateLoadBalancerDeletionProtectionConfig{Enabled: "true", Reason: "prod"}
	r.ModificationProtectionConfig = nlb.CreateLoadBalancerModificationProtectionConfig{Status: "ConsoleProtection", Reason: "managed"}
	r.LoadBalancerBillingConfig = nlb.CreateLoadBalancerLoadBalancerBillingConfig{PayType: "PostPay"}
	r.Tag = &[]nlb.CreateLoadBalancerTag{{Key: "kubernetes.do.not.delete", Value: "web"}}
	r.SecurityGroupIds = &[]string{"sg-a1"}
	resp, err := f.c.CreateLoadBalancer(r)
	noErr(t, err)
	id := resp.LoadbalancerId
	if !strings.HasPrefix(id, "nlb-") || resp.OrderId == 0 || resp.JobId == "" {
		t.Fatalf("create response: %+v", resp)
	}

	got := f.getLB(t, id)
	if got.LoadBalancerStatus != "Provisioning" {
		t.Fatalf("status right after create = %s, want Provisioning", got.LoadBalancerStatus)
	}
	// The creation's job lasts as long as Provisioning does.
	js := nlb.CreateGetJobStatusRequest()
	js.JobId = resp.JobId
	job, err := f.c.GetJobStatus(js)
	noErr(t, err)
	if job.Status != "Processing" {
		t.Fatalf("creation job %s while Provisioning", job.Status)
	}
	if got.DNSName != id+".cn-hangzhou.nlb.aliyuncs.com" || got.VpcId != "vpc-a" || got.AddressType != "Internet" ||
		got.AddressIpVersion != "DualStack" || got.Ipv6AddressType != "Intranet" || got.LoadBalancerName != "web-lb" ||
		got.LoadBalancerType != "Network" || got.RegionId != "cn-hangzhou" || got.LoadBalancerBusinessStatus != "Normal" ||
		got.LoadBalancerBillingConfig.PayType != "PostPay" || !got.CrossZoneEnabled {
		t.Fatalf("attribute: %+v", got)
	}
	if _, err := time.Parse("2006-01-02T15:04:05Z", got.CreateTime); err != nil {
		t.Fatalf("CreateTime %q: %v", got.CreateTime, err)
	}
	if !got.DeletionProtectionConfig.Enabled || got.DeletionProtectionConfig.Reason != "prod" || got.DeletionProtectionConfig.EnabledTime == "" {
		t.Fatalf("deletion protection: %+v", got.DeletionProtectionConfig)
	}
	if got.ModificationProtectionConfig.Status != "ConsoleProtection" || got.ModificationProtectionConfig.Reason != "managed" {
		t.Fatalf("modification protection: %+v", got.ModificationProtectionConfig)
	}
	if len(got.Tags) != 1 || got.Tags[0].TagKey != "kubernetes.do.not.delete" || got.Tags[0].TagValue != "web" {
		t.Fatalf("tags: %+v", got.Tags)
	}
	if len(got.SecurityGroupIds) != 1 || got.SecurityGroupIds[0] != "sg-a1" || got.OperationLocks == nil {
		t.Fatalf("security groups %v, locks %v", got.SecurityGroupIds, got.OperationLocks)
	}
	if len(got.ZoneMappings) != 2 {
		t.Fatalf("zones: %+v", got.ZoneMappings)
	}
	for i, z := range got.ZoneMappings {
		if len(z.LoadBalancerAddresses) != 1 {
			t.Fatalf("zone %d addresses: %+v", i, z)
		}
		a := z.LoadBalancerAddresses[0]
		cidr := map[string]string{zoneH: "172.16.1.0/24", zoneI: "172.16.2.0/24"}[z.ZoneId]
		if ip, err := netip.ParseAddr(a.PrivateIPv4Address); err != nil || !netip.MustParsePrefix(cidr).Contains(ip) {
			t.Fatalf("zone %s private IP %q not in %s", z.ZoneId, a.PrivateIPv4Address, cidr)
		}
		if a.PublicIPv4Address == "" || a.AllocationId == "" || a.Ipv6Address == "" || !strings.HasPrefix(a.EniId, "eni-") {
			t.Fatalf("zone %s address: %+v", z.ZoneId, a)
		}
	}
	if a := got.ZoneMappings[0].LoadBalancerAddresses[0]; a.PrivateIPv4Address != "172.16.1.100" {
		t.Fatalf("requested private IP not used: %+v", a)
	}
	if a := got.ZoneMappings[1].LoadBalancerAddresses[0]; a.AllocationId != "eip-mine" {
		t.Fatalf("requested EIP not used: %+v", a)
	}

	// Mutations while Provisioning are refused.
	u := nlb.CreateUpdateLoadBalancerAttributeRequest()
	u.LoadBalancerId, u.LoadBalancerName = id, "renamed"
	_, err = f.c.UpdateLoadBalancerAttribute(u)
	wantErr(t, err, "IncorrectStatus.loadbalancer", http.StatusBadRequest)

	eventually(t, "Active", func() bool { return f.getLB(t, id).LoadBalancerStatus == "Active" })

	d := nlb.CreateDeleteLoadBalancerRequest()
	d.LoadBalancerId = id
	_, err = f.c.DeleteLoadBalancer(d)
	wantErr(t, err, "OperationDenied.DeletionProtectionEnabled", http.StatusBadRequest)

	p := nlb.CreateUpdateLoadBalancerProtectionRequest()
	p.LoadBalancerId = id
	p.DeletionProtectionEnabled = requests.NewBoolean(false)
	p.ModificationProtectionStatus = "NonProtection"
	_, err = f.c.UpdateLoadBalancerProtection(p)
	noErr(t, err)
	got = f.getLB(t, id)
	if got.DeletionProtectionConfig.Enabled || got.ModificationProtectionConfig.Status != "NonProtection" {
		t.Fatalf("protection after update: %+v %+v", got.DeletionProtectionConfig, got.ModificationProtectionConfig)
	}

	del, err := f.c.DeleteLoadBalancer(d)
	noErr(t, err)
	if del.JobId == "" {
		t.Fatal("DeleteLoadBalancer returned no JobId")
	}
	g := nlb.CreateGetLoadBalancerAttributeRequest()
	g.LoadBalancerId = id
	_, err = f.c.GetLoadBalancerAttribute(g)
	wantErr(t, err, "ResourceNotFound.loadBalancer", http.StatusNotFound)
	// The released private IP can be taken again.
	r2 := lbRequest("again")
	r2.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-h", PrivateIPv4Address: "172.16.1.100"}, {ZoneId: zoneI, VSwitchId: "vsw-i"}}
	f.createLB(t, r2)
}

func TestCreateLoadBalancerValidation(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		mod    func(r *nlb.CreateLoadBalancerRequest)
		code   string
		status int
	}{
		{"missing address type", func(r *nlb.CreateLoadBalancerRequest) { r.AddressType = "" }, "MissingParameter", 400},
		{"bad address type", func(r *nlb.CreateLoadBalancerRequest) { r.AddressType = "Public" }, "InvalidParameter", 400},
		{"bad ip version", func(r *nlb.CreateLoadBalancerRequest) { r.AddressIpVersion = "ipv6" }, "InvalidParameter", 400},
		{"missing vpc", func(r *nlb.CreateLoadBalancerRequest) { r.VpcId = "" }, "MissingParameter", 400},
		{"unknown vpc", func(r *nlb.CreateLoadBalancerRequest) { r.VpcId = "vpc-nope" }, "ResourceNotFound.Vpc", 404},
		{"no zones", func(r *nlb.CreateLoadBalancerRequest) { r.ZoneMappings = nil }, "MissingParameter", 400},
		{"one zone", func(r *nlb.CreateLoadBalancerRequest) {
			r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-h"}}
		}, "InvalidZones", 400},
		{"duplicate zone", func(r *nlb.CreateLoadBalancerRequest) {
			r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-h"}, {ZoneId: zoneH, VSwitchId: "vsw-h"}}
		}, "InvalidZones", 400},
		{"vswitch in other zone", func(r *nlb.CreateLoadBalancerRequest) {
			r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-h"}, {ZoneId: zoneJ, VSwitchId: "vsw-i"}}
		}, "InvalidZones", 400},
		{"vswitch in other vpc", func(r *nlb.CreateLoadBalancerRequest) {
			r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-b"}, {ZoneId: zoneI, VSwitchId: "vsw-i"}}
		}, "ResourceNotFound.VSwitch", 404},
		{"unknown vswitch", func(r *nlb.CreateLoadBalancerRequest) {
			r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-x"}, {ZoneId: zoneI, VSwitchId: "vsw-i"}}
		}, "ResourceNotFound.VSwitch", 404},
		{"missing vswitch", func(r *nlb.CreateLoadBalancerRequest) {
			r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH}, {ZoneId: zoneI, VSwitchId: "vsw-i"}}
		}, "MissingParameter", 400},
		{"ip outside vswitch", func(r *nlb.CreateLoadBalancerRequest) {
			r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-h"}, {ZoneId: zoneI, VSwitchId: "vsw-i", PrivateIPv4Address: "172.16.1.5"}}
		}, "InvalidPrivateIpAddress.Mismatch", 400},
		{"ip taken", func(r *nlb.CreateLoadBalancerRequest) {
			r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-h", PrivateIPv4Address: "172.16.1.10"}, {ZoneId: zoneI, VSwitchId: "vsw-i"}}
		}, "InvalidPrivateIpAddress.Duplicated", 400},
		{"illegal name", func(r *nlb.CreateLoadBalancerRequest) { r.LoadBalancerName = "-bad" }, "IllegalParam.LoadBalancerName", 400},
		{"bad pay type", func(r *nlb.CreateLoadBalancerRequest) {
			r.LoadBalancerBillingConfig = nlb.CreateLoadBalancerLoadBalancerBillingConfig{PayType: "PrePay"}
		}, "InvalidParameter", 400},
		{"bad modification status", func(r *nlb.CreateLoadBalancerRequest) {
			r.ModificationProtectionConfig = nlb.CreateLoadBalancerModificationProtectionConfig{Status: "Locked"}
		}, "InvalidParameter", 400},
		{"security group of other vpc", func(r *nlb.CreateLoadBalancerRequest) { r.SecurityGroupIds = &[]string{"sg-b"} }, "InvalidParameter", 400},
		{"unknown security group", func(r *nlb.CreateLoadBalancerRequest) { r.SecurityGroupIds = &[]string{"sg-zz"} }, "ResourceNotFound.SecurityGroup", 404},
		{"reserved tag", func(r *nlb.CreateLoadBalancerRequest) {
			r.Tag = &[]nlb.CreateLoadBalancerTag{{Key: "aliyun:x", Value: "v"}}
		}, "IllegalParam.TagKey", 400},
		{"dry run", func(r *nlb.CreateLoadBalancerRequest) { r.DryRun = requests.NewBoolean(true) }, "DryRunOperation", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := lbRequest("lb-" + strconv.Itoa(len(tc.name)))
			tc.mod(r)
			_, err := f.c.CreateLoadBalancer(r)
			wantErr(t, err, tc.code, tc.status)
		})
	}
	l := nlb.CreateListLoadBalancersRequest()
	resp, err := f.c.ListLoadBalancers(l)
	noErr(t, err)
	if resp.TotalCount != 0 {
		t.Fatalf("failed creates left %d load balancers", resp.TotalCount)
	}
}

func TestCreateLoadBalancerClientTokenAndQuota(t *testing.T) {
	f := newFixture(t)
	r := lbRequest("tok")
	r.ClientToken = "token-1"
	first := f.createLB(t, r)
	if again := f.createLB(t, r); again != first {
		t.Fatalf("ClientToken retry created %s, want %s", again, first)
	}
	r.LoadBalancerName = "other"
	_, err := f.c.CreateLoadBalancer(r)
	wantErr(t, err, "IdempotentParameterMismatch", http.StatusBadRequest)

	noErr(t, f.env.Emulator.Store.Settings().SetQuota(store.QuotaNLBInstances, 2))
	f.createLB(t, lbRequest("second"))
	_, err = f.c.CreateLoadBalancer(lbRequest("third"))
	wantErr(t, err, "QuotaExceeded.LoadBalancersNum", http.StatusBadRequest)
}

func TestListLoadBalancersFilters(t *testing.T) {
	f := newFixture(t)
	a := lbRequest("alpha")
	a.Tag = &[]nlb.CreateLoadBalancerTag{{Key: "team", Value: "red"}}
	idA := f.createLB(t, a)
	b := lbRequest("beta")
	b.AddressType = "Internet"
	b.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneI, VSwitchId: "vsw-i"}, {ZoneId: zoneJ, VSwitchId: "vsw-j"}}
	idB := f.createLB(t, b)
	c := lbRequest("gamma")
	c.VpcId = "vpc-b"
	c.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-b"}, {ZoneId: zoneI, VSwitchId: "vsw-b2"}}
	c.Tag = &[]nlb.CreateLoadBalancerTag{{Key: "team", Value: "blue"}}
	idC := f.createLB(t, c)

	addrA := f.getLB(t, idA).ZoneMappings[0].LoadBalancerAddresses[0].PrivateIPv4Address
	cases := []struct {
		name string
		mod  func(r *nlb.ListLoadBalancersRequest)
		want []string
	}{
		{"all", func(r *nlb.ListLoadBalancersRequest) {}, []string{idA, idB, idC}},
		{"ids", func(r *nlb.ListLoadBalancersRequest) { r.LoadBalancerIds = &[]string{idC, idA} }, []string{idA, idC}},
		{"names", func(r *nlb.ListLoadBalancersRequest) { r.LoadBalancerNames = &[]string{"beta"} }, []string{idB}},
		{"vpc", func(r *nlb.ListLoadBalancersRequest) { r.VpcIds = &[]string{"vpc-a"} }, []string{idA, idB}},
		{"address type", func(r *nlb.ListLoadBalancersRequest) { r.AddressType = "Internet" }, []string{idB}},
		{"zone", func(r *nlb.ListLoadBalancersRequest) { r.ZoneId = zoneJ }, []string{idB}},
		{"tag key", func(r *nlb.ListLoadBalancersRequest) { r.Tag = &[]nlb.ListLoadBalancersTag{{Key: "team"}} }, []string{idA, idC}},
		{"tag value", func(r *nlb.ListLoadBalancersRequest) {
			r.Tag = &[]nlb.ListLoadBalancersTag{{Key: "team", Value: "blue"}}
		}, []string{idC}},
		{"status", func(r *nlb.ListLoadBalancersRequest) { r.LoadBalancerStatus = "Active" }, []string{idA, idB, idC}},
		{"dns name", func(r *nlb.ListLoadBalancersRequest) { r.DNSName = idB + ".cn-hangzhou.nlb.aliyuncs.com" }, []string{idB}},
		{"address", func(r *nlb.ListLoadBalancersRequest) { r.Address = addrA }, []string{idA}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := nlb.CreateListLoadBalancersRequest()
			tc.mod(r)
			resp, err := f.c.ListLoadBalancers(r)
			noErr(t, err)
			var got []string
			for _, lb := range resp.LoadBalancers {
				got = append(got, lb.LoadBalancerId)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") || resp.TotalCount != len(tc.want) {
				t.Fatalf("got %v (total %d), want %v", got, resp.TotalCount, tc.want)
			}
		})
	}

	// List items carry the {Key, Value} tag spelling and the full shape.
	r := nlb.CreateListLoadBalancersRequest()
	r.LoadBalancerIds = &[]string{idA}
	resp, err := f.c.ListLoadBalancers(r)
	noErr(t, err)
	it := resp.LoadBalancers[0]
	if len(it.Tags) != 1 || it.Tags[0].Key != "team" || it.Tags[0].Value != "red" || len(it.ZoneMappings) != 2 ||
		it.AliUid == 0 || it.DNSName == "" || it.LoadBalancerStatus != "Active" {
		t.Fatalf("list item: %+v", it)
	}

	// Paging with MaxResults and NextToken.
	var seen []string
	token := ""
	for page := 0; page < 5; page++ {
		r := nlb.CreateListLoadBalancersRequest()
		r.MaxResults = requests.NewInteger(2)
		r.NextToken = token
		resp, err := f.c.ListLoadBalancers(r)
		noErr(t, err)
		if resp.MaxResults != 2 || resp.TotalCount != 3 {
			t.Fatalf("page %d: %+v", page, resp)
		}
		for _, lb := range resp.LoadBalancers {
			seen = append(seen, lb.LoadBalancerId)
		}
		if token = resp.NextToken; token == "" {
			break
		}
	}
	if strings.Join(seen, ",") != strings.Join([]string{idA, idB, idC}, ",") {
		t.Fatalf("paged through %v", seen)
	}

	many := make([]string, 21)
	for i := range many {
		many[i] = "nlb-" + strconv.Itoa(i)
	}
	r = nlb.CreateListLoadBalancersRequest()
	r.LoadBalancerIds = &many
	_, err = f.c.ListLoadBalancers(r)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
	r = nlb.CreateListLoadBalancersRequest()
	r.MaxResults = requests.NewInteger(101)
	_, err = f.c.ListLoadBalancers(r)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
}

func TestUpdateLoadBalancer(t *testing.T) {
	f := newFixture(t)
	r := lbRequest("upd")
	r.AddressIpVersion = "DualStack"
	id := f.createLB(t, r)

	u := nlb.CreateUpdateLoadBalancerAttributeRequest()
	u.LoadBalancerId, u.LoadBalancerName = id, "renamed"
	u.CrossZoneEnabled = requests.NewBoolean(false)
	u.Cps = requests.NewInteger(1000)
	ur, err := f.c.UpdateLoadBalancerAttribute(u)
	noErr(t, err)
	got := f.getLB(t, id)
	if ur.JobId == "" || got.LoadBalancerName != "renamed" || got.CrossZoneEnabled || got.Cps != 1000 {
		t.Fatalf("after UpdateLoadBalancerAttribute (job %q): %+v", ur.JobId, got)
	}

	z := nlb.CreateUpdateLoadBalancerZonesRequest()
	z.LoadBalancerId = id
	z.ZoneMappings = &[]nlb.UpdateLoadBalancerZonesZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-h"}, {ZoneId: zoneJ, VSwitchId: "vsw-j"}}
	oldH := got.ZoneMappings[0].LoadBalancerAddresses[0].PrivateIPv4Address
	zr, err := f.c.UpdateLoadBalancerZones(z)
	noErr(t, err)
	got = f.getLB(t, id)
	if zr.JobId == "" || len(got.ZoneMappings) != 2 || got.ZoneMappings[1].ZoneId != zoneJ ||
		got.ZoneMappings[0].LoadBalancerAddresses[0].PrivateIPv4Address != oldH {
		t.Fatalf("zones after update: %+v", got.ZoneMappings)
	}
	// A fresh request: the SDK keeps the flattened fields of earlier sends.
	z = nlb.CreateUpdateLoadBalancerZonesRequest()
	z.LoadBalancerId = id
	z.ZoneMappings = &[]nlb.UpdateLoadBalancerZonesZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-h"}}
	_, err = f.c.UpdateLoadBalancerZones(z)
	wantErr(t, err, "InvalidZones", http.StatusBadRequest)

	a := nlb.CreateUpdateLoadBalancerAddressTypeConfigRequest()
	a.LoadBalancerId, a.AddressType = id, "Internet"
	_, err = f.c.UpdateLoadBalancerAddressTypeConfig(a)
	noErr(t, err)
	got = f.getLB(t, id)
	if got.AddressType != "Internet" || got.ZoneMappings[0].LoadBalancerAddresses[0].PublicIPv4Address == "" {
		t.Fatalf("after address type change: %+v", got)
	}
	_, err = f.c.UpdateLoadBalancerAddressTypeConfig(a)
	wantErr(t, err, "IncorrectStatus.loadbalancer", http.StatusBadRequest)

	e := nlb.CreateEnableLoadBalancerIpv6InternetRequest()
	e.LoadBalancerId = id
	_, err = f.c.EnableLoadBalancerIpv6Internet(e)
	noErr(t, err)
	if got = f.getLB(t, id); got.Ipv6AddressType != "Internet" {
		t.Fatalf("Ipv6AddressType = %q after enable", got.Ipv6AddressType)
	}
	dis := nlb.CreateDisableLoadBalancerIpv6InternetRequest()
	dis.LoadBalancerId = id
	_, err = f.c.DisableLoadBalancerIpv6Internet(dis)
	noErr(t, err)
	if got = f.getLB(t, id); got.Ipv6AddressType != "Intranet" {
		t.Fatalf("Ipv6AddressType = %q after disable", got.Ipv6AddressType)
	}
	v4 := f.createLB(t, lbRequest("v4only"))
	e.LoadBalancerId = v4
	_, err = f.c.EnableLoadBalancerIpv6Internet(e)
	wantErr(t, err, "IncorrectStatus.loadbalancer", http.StatusBadRequest)

	bw := nlb.CreateAttachCommonBandwidthPackageToLoadBalancerRequest()
	bw.LoadBalancerId, bw.BandwidthPackageId = id, "cbwp-test"
	_, err = f.c.AttachCommonBandwidthPackageToLoadBalancer(bw)
	noErr(t, err)
	if got = f.getLB(t, id); got.BandwidthPackageId != "cbwp-test" {
		t.Fatalf("BandwidthPackageId = %q", got.BandwidthPackageId)
	}
	bw.LoadBalancerId = v4
	_, err = f.c.AttachCommonBandwidthPackageToLoadBalancer(bw)
	wantErr(t, err, "IncorrectStatus.loadbalancer", http.StatusBadRequest)
	dbw := nlb.CreateDetachCommonBandwidthPackageFromLoadBalancerRequest()
	dbw.LoadBalancerId, dbw.BandwidthPackageId = id, "cbwp-test"
	_, err = f.c.DetachCommonBandwidthPackageFromLoadBalancer(dbw)
	noErr(t, err)
	if got = f.getLB(t, id); got.BandwidthPackageId != "" {
		t.Fatalf("BandwidthPackageId = %q after detach", got.BandwidthPackageId)
	}

	g := nlb.CreateUpdateLoadBalancerAttributeRequest()
	g.LoadBalancerId = "nlb-missing"
	_, err = f.c.UpdateLoadBalancerAttribute(g)
	wantErr(t, err, "ResourceNotFound.loadBalancer", http.StatusNotFound)
}

func TestLoadBalancerSecurityGroups(t *testing.T) {
	f := newFixture(t)
	id := f.createLB(t, lbRequest("sg"))
	join := func(ids ...string) error {
		r := nlb.CreateLoadBalancerJoinSecurityGroupRequest()
		r.LoadBalancerId, r.SecurityGroupIds = id, &ids
		resp, err := f.c.LoadBalancerJoinSecurityGroup(r)
		if err == nil && resp.JobId == "" {
			t.Fatal("join returned no JobId")
		}
		return err
	}
	noErr(t, join("sg-a1", "sg-a2"))
	noErr(t, join("sg-a2", "sg-a3", "sg-a4"))
	if got := f.getLB(t, id).SecurityGroupIds; strings.Join(got, ",") != "sg-a1,sg-a2,sg-a3,sg-a4" {
		t.Fatalf("security groups: %v", got)
	}
	wantErr(t, join("sg-a5"), "QuotaInsufficient", http.StatusBadRequest)
	wantErr(t, join("sg-b"), "InvalidParameter", http.StatusBadRequest)
	wantErr(t, join("sg-none"), "ResourceNotFound.SecurityGroup", http.StatusNotFound)

	l := nlb.CreateLoadBalancerLeaveSecurityGroupRequest()
	l.LoadBalancerId, l.SecurityGroupIds = id, &[]string{"sg-a1", "sg-a3"}
	resp, err := f.c.LoadBalancerLeaveSecurityGroup(l)
	noErr(t, err)
	if got := f.getLB(t, id).SecurityGroupIds; resp.JobId == "" || strings.Join(got, ",") != "sg-a2,sg-a4" {
		t.Fatalf("security groups after leave: %v", got)
	}
	noErr(t, join("sg-a5"))
}

// TestDeleteSecurityGroupInUse: ECS refuses to delete a group an NLB is in
// (DependencyViolation, naming the load balancer); once the load balancer
// leaves it (or is deleted) the group can go.
func TestDeleteSecurityGroupInUse(t *testing.T) {
	f := newFixture(t)
	id := f.createLB(t, lbRequest("sg-in-use"))
	j := nlb.CreateLoadBalancerJoinSecurityGroupRequest()
	j.LoadBalancerId, j.SecurityGroupIds = id, &[]string{"sg-a1", "sg-a2"}
	_, err := f.c.LoadBalancerJoinSecurityGroup(j)
	noErr(t, err)
	e := f.env.ECS(t)
	del := func(sg string) error {
		r := ecs.CreateDeleteSecurityGroupRequest()
		r.SecurityGroupId = sg
		_, err := e.DeleteSecurityGroup(r)
		return err
	}
	if se := wantErr(t, del("sg-a1"), "DependencyViolation", http.StatusForbidden); !strings.Contains(se.Message(), id) {
		t.Fatalf("the error does not name the load balancer: %s", se.Message())
	}
	l := nlb.CreateLoadBalancerLeaveSecurityGroupRequest()
	l.LoadBalancerId, l.SecurityGroupIds = id, &[]string{"sg-a1"}
	_, err = f.c.LoadBalancerLeaveSecurityGroup(l)
	noErr(t, err)
	noErr(t, del("sg-a1"))
	wantErr(t, del("sg-a2"), "DependencyViolation", http.StatusForbidden)
	d := nlb.CreateDeleteLoadBalancerRequest()
	d.LoadBalancerId = id
	_, err = f.c.DeleteLoadBalancer(d)
	noErr(t, err)
	noErr(t, del("sg-a2"))
}
