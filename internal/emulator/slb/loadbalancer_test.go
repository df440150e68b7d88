package slb_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func TestCreateLoadBalancer(t *testing.T) {
	_, c := newEnv(t)
	tests := []struct {
		name   string
		mutate func(r *slb.CreateLoadBalancerRequest)
		check  func(t *testing.T, r *slb.CreateLoadBalancerResponse)
		code   string
		status int
	}{
		{name: "intranet gets a private address of the vSwitch", check: func(t *testing.T, r *slb.CreateLoadBalancerResponse) {
			if !strings.HasPrefix(r.LoadBalancerId, "lb-") || !strings.HasPrefix(r.Address, "192.168.0.") ||
				r.VpcId != testVPC || r.VSwitchId != testVSwitch || r.NetworkType != "vpc" || r.AddressIPVersion != "ipv4" {
				t.Fatalf("unexpected response %+v", r)
			}
		}},
		{name: "fixed VIP", mutate: func(r *slb.CreateLoadBalancerRequest) { r.Address = "192.168.0.77" }, check: func(t *testing.T, r *slb.CreateLoadBalancerResponse) {
			if r.Address != "192.168.0.77" {
				t.Fatalf("address %s", r.Address)
			}
		}},
		{name: "internet gets a public address", mutate: func(r *slb.CreateLoadBalancerRequest) {
			r.AddressType, r.VSwitchId, r.PayType = "internet", "", "PrePay"
		}, check: func(t *testing.T, r *slb.CreateLoadBalancerResponse) {
			if !strings.HasPrefix(r.Address, "47.99.") || r.NetworkType != "classic" || r.OrderId == 0 {
				t.Fatalf("unexpected response %+v", r)
			}
		}},
		{name: "ipv6 internet", mutate: func(r *slb.CreateLoadBalancerRequest) {
			r.AddressType, r.VSwitchId, r.AddressIPVersion = "internet", "", "ipv6"
		}, check: func(t *testing.T, r *slb.CreateLoadBalancerResponse) {
			if !strings.Contains(r.Address, ":") || r.AddressIPVersion != "ipv6" {
				t.Fatalf("unexpected response %+v", r)
			}
		}},
		{name: "intranet without vSwitch is in the classic network", mutate: func(r *slb.CreateLoadBalancerRequest) { r.VSwitchId = "" }, check: func(t *testing.T, r *slb.CreateLoadBalancerResponse) {
			if !strings.HasPrefix(r.Address, "10.157.") || r.NetworkType != "classic" || r.VpcId != "" || r.VSwitchId != "" {
				t.Fatalf("unexpected response %+v", r)
			}
		}},
		{name: "classic intranet with a VPC address", mutate: func(r *slb.CreateLoadBalancerRequest) { r.VSwitchId, r.Address = "", "192.168.0.78" }, code: "InvalidParameter", status: 400},
		{name: "unknown vSwitch", mutate: func(r *slb.CreateLoadBalancerRequest) { r.VSwitchId = "vsw-nope" }, code: "InvalidVSwitchId.NotFound", status: 404},
		{name: "VPC mismatch", mutate: func(r *slb.CreateLoadBalancerRequest) { r.VpcId = "vpc-slbother" }, code: "InvalidParameter", status: 400},
		{name: "zone mismatch", mutate: func(r *slb.CreateLoadBalancerRequest) { r.MasterZoneId = "cn-hangzhou-k" }, code: "InvalidParameter", status: 400},
		{name: "taken VIP", mutate: func(r *slb.CreateLoadBalancerRequest) { r.Address = "192.168.0.77" }, code: "InvalidPrivateIpAddress.Duplicated", status: 400},
		{name: "bad address type", mutate: func(r *slb.CreateLoadBalancerRequest) { r.AddressType = "public" }, code: "InvalidParameter", status: 400},
		{name: "bad spec", mutate: func(r *slb.CreateLoadBalancerRequest) { r.LoadBalancerSpec = "slb.s9.huge" }, code: "InvalidParameter", status: 400},
		{name: "ipv6 intranet", mutate: func(r *slb.CreateLoadBalancerRequest) { r.AddressIPVersion = "ipv6" }, code: "InvalidParameter", status: 400},
		{name: "reserved tag key", mutate: func(r *slb.CreateLoadBalancerRequest) {
			r.Tag = &[]slb.CreateLoadBalancerTag{{Key: "aliyun-x", Value: "v"}}
		}, code: "InvalidParameter", status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := slb.CreateCreateLoadBalancerRequest()
			r.AddressType, r.VSwitchId, r.LoadBalancerSpec = "intranet", testVSwitch, "slb.s1.small"
			if tt.mutate != nil {
				tt.mutate(r)
			}
			resp, err := c.CreateLoadBalancer(r)
			if tt.code != "" {
				wantErr(t, err, tt.code, tt.status)
				return
			}
			must(t, err)
			tt.check(t, resp)
		})
	}
}

func TestCreateLoadBalancerClientToken(t *testing.T) {
	_, c := newEnv(t)
	a := createLB(t, c, func(r *slb.CreateLoadBalancerRequest) { r.ClientToken = "tok-1"; r.LoadBalancerName = "a" })
	b := createLB(t, c, func(r *slb.CreateLoadBalancerRequest) { r.ClientToken = "tok-1"; r.LoadBalancerName = "a" })
	if a.LoadBalancerId != b.LoadBalancerId || a.Address != b.Address {
		t.Fatalf("retry created a second load balancer: %s vs %s", a.LoadBalancerId, b.LoadBalancerId)
	}
	r := slb.CreateCreateLoadBalancerRequest()
	r.AddressType, r.VSwitchId, r.ClientToken, r.LoadBalancerName = "intranet", testVSwitch, "tok-1", "other"
	_, err := c.CreateLoadBalancer(r)
	wantErr(t, err, "IdempotentParameterMismatch", http.StatusBadRequest)
	all, err := c.DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
	must(t, err)
	if all.TotalCount != 1 {
		t.Fatalf("TotalCount %d, want 1", all.TotalCount)
	}
}

func TestLoadBalancerQuota(t *testing.T) {
	env, c := newEnv(t)
	must(t, env.Emulator.Store.Settings().SetQuota(store.QuotaSLBInstances, 2))
	createLB(t, c, nil)
	createLB(t, c, nil)
	r := slb.CreateCreateLoadBalancerRequest()
	r.AddressType = "internet"
	_, err := c.CreateLoadBalancer(r)
	wantErr(t, err, "QuotaExceeded.LoadBalancersNum", http.StatusBadRequest)
}

func TestDeleteLoadBalancer(t *testing.T) {
	_, c := newEnv(t)
	lb := createLB(t, c, func(r *slb.CreateLoadBalancerRequest) { r.DeleteProtection = "on"; r.Address = "192.168.0.50" })
	createTCP(t, c, lb.LoadBalancerId, 80, nil)
	gid := createGroup(t, c, lb.LoadBalancerId, "")

	del := slb.CreateDeleteLoadBalancerRequest()
	del.LoadBalancerId = lb.LoadBalancerId
	_, err := c.DeleteLoadBalancer(del)
	wantErr(t, err, "OperationDenied.DeleteProtectionIsOn", http.StatusBadRequest)

	dp := slb.CreateSetLoadBalancerDeleteProtectionRequest()
	dp.LoadBalancerId, dp.DeleteProtection = lb.LoadBalancerId, "off"
	_, err = c.SetLoadBalancerDeleteProtection(dp)
	must(t, err)
	_, err = c.DeleteLoadBalancer(del)
	must(t, err)

	_, err = c.DeleteLoadBalancer(del)
	wantErr(t, err, "InvalidLoadBalancerId.NotFound", http.StatusNotFound)
	if !strings.Contains(err.Error(), "LoadBalancerId does not exist") {
		t.Fatalf("message must contain the text the CCM matches: %v", err)
	}
	g := slb.CreateDescribeVServerGroupAttributeRequest()
	g.VServerGroupId = gid
	_, err = c.DescribeVServerGroupAttribute(g)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
	// The VIP went back to the vSwitch.
	createLB(t, c, func(r *slb.CreateLoadBalancerRequest) { r.Address = "192.168.0.50" })
}

func TestDescribeLoadBalancers(t *testing.T) {
	_, c := newEnv(t)
	var ids []string
	for i := 0; i < 5; i++ {
		resp := createLB(t, c, func(r *slb.CreateLoadBalancerRequest) {
			r.LoadBalancerName = "lb-" + string(rune('a'+i))
			if i%2 == 0 {
				r.Tag = &[]slb.CreateLoadBalancerTag{{Key: "env", Value: "prod"}}
			}
		})
		ids = append(ids, resp.LoadBalancerId)
	}
	inet := createLB(t, c, func(r *slb.CreateLoadBalancerRequest) { r.AddressType, r.VSwitchId = "internet", "" })
	grp := createGroup(t, c, ids[1], `[{"ServerId":"`+instance1+`","Port":"80","Weight":"100"}]`)
	_ = grp

	tests := []struct {
		name  string
		setup func(r *slb.DescribeLoadBalancersRequest)
		total int
		first string
	}{
		{"all", nil, 6, ids[0]},
		{"by ids", func(r *slb.DescribeLoadBalancersRequest) { r.LoadBalancerId = ids[3] + "," + ids[4] }, 2, ids[3]},
		{"by name", func(r *slb.DescribeLoadBalancersRequest) { r.LoadBalancerName = "lb-c" }, 1, ids[2]},
		{"by address type", func(r *slb.DescribeLoadBalancersRequest) { r.AddressType = "internet" }, 1, inet.LoadBalancerId},
		{"by address", func(r *slb.DescribeLoadBalancersRequest) { r.Address = inet.Address }, 1, inet.LoadBalancerId},
		{"by vpc", func(r *slb.DescribeLoadBalancersRequest) { r.VpcId = testVPC }, 5, ids[0]},
		{"by vswitch", func(r *slb.DescribeLoadBalancersRequest) { r.VSwitchId = testVSwitch }, 5, ids[0]},
		{"by server", func(r *slb.DescribeLoadBalancersRequest) { r.ServerId = instance1 }, 1, ids[1]},
		{"by status", func(r *slb.DescribeLoadBalancersRequest) { r.LoadBalancerStatus = "inactive" }, 0, ""},
		{"by Tags JSON", func(r *slb.DescribeLoadBalancersRequest) { r.Tags = `[{"TagKey":"env","TagValue":"prod"}]` }, 3, ids[0]},
		{"by Tag.N", func(r *slb.DescribeLoadBalancersRequest) {
			r.Tag = &[]slb.DescribeLoadBalancersTag{{Key: "env", Value: "prod"}}
		}, 3, ids[0]},
		{"page 2 of size 4", func(r *slb.DescribeLoadBalancersRequest) {
			r.PageSize, r.PageNumber = requests.NewInteger(4), requests.NewInteger(2)
		}, 6, ids[4]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := slb.CreateDescribeLoadBalancersRequest()
			if tt.setup != nil {
				tt.setup(r)
			}
			resp, err := c.DescribeLoadBalancers(r)
			must(t, err)
			if resp.TotalCount != tt.total {
				t.Fatalf("TotalCount %d, want %d", resp.TotalCount, tt.total)
			}
			if tt.first != "" && resp.LoadBalancers.LoadBalancer[0].LoadBalancerId != tt.first {
				t.Fatalf("first %s, want %s", resp.LoadBalancers.LoadBalancer[0].LoadBalancerId, tt.first)
			}
		})
	}

	r := slb.CreateDescribeLoadBalancersRequest()
	r.LoadBalancerId = ids[0]
	resp, err := c.DescribeLoadBalancers(r)
	must(t, err)
	lb := resp.LoadBalancers.LoadBalancer[0]
	if lb.LoadBalancerStatus != "active" || lb.RegionId != "cn-hangzhou" || lb.MasterZoneId != testZone ||
		lb.LoadBalancerSpec != "slb.s1.small" || lb.CreateTimeStamp == 0 || lb.CreateTime == "" ||
		len(lb.Tags.Tag) != 1 || lb.Tags.Tag[0].TagKey != "env" || lb.PayType != "PayOnDemand" || lb.DeleteProtection != "off" {
		t.Fatalf("unexpected item %+v", lb)
	}

	bad := slb.CreateDescribeLoadBalancersRequest()
	bad.PageSize = requests.NewInteger(101)
	_, err = c.DescribeLoadBalancers(bad)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
}

func TestLoadBalancerAttributeAndSetters(t *testing.T) {
	_, c := newEnv(t)
	id := createLB(t, c, nil).LoadBalancerId
	inet := createLB(t, c, func(r *slb.CreateLoadBalancerRequest) { r.AddressType, r.VSwitchId = "internet", "" }).LoadBalancerId

	name := slb.CreateSetLoadBalancerNameRequest()
	name.LoadBalancerId, name.LoadBalancerName = id, "renamed"
	_, err := c.SetLoadBalancerName(name)
	must(t, err)
	st := slb.CreateSetLoadBalancerStatusRequest()
	st.LoadBalancerId, st.LoadBalancerStatus = id, "inactive"
	_, err = c.SetLoadBalancerStatus(st)
	must(t, err)
	mp := slb.CreateSetLoadBalancerModificationProtectionRequest()
	mp.LoadBalancerId, mp.ModificationProtectionStatus, mp.ModificationProtectionReason = id, "ConsoleProtection", "managed"
	_, err = c.SetLoadBalancerModificationProtection(mp)
	must(t, err)
	// ConsoleProtection only guards the console: API changes still work.
	spec := slb.CreateModifyLoadBalancerInstanceSpecRequest()
	spec.LoadBalancerId, spec.LoadBalancerSpec = id, "slb.s2.small"
	_, err = c.ModifyLoadBalancerInstanceSpec(spec)
	must(t, err)

	createTCP(t, c, id, 443, nil)
	h := slb.CreateCreateLoadBalancerHTTPListenerRequest()
	h.LoadBalancerId, h.ListenerPort, h.BackendServerPort = id, requests.NewInteger(80), requests.NewInteger(8080)
	h.StickySession, h.HealthCheck, h.Description = "off", "off", "web"
	_, err = c.CreateLoadBalancerHTTPListener(h)
	must(t, err)
	add := slb.CreateAddBackendServersRequest()
	add.LoadBalancerId, add.BackendServers = id, `[{"ServerId":"`+instance1+`","Weight":"50"}]`
	addResp, err := c.AddBackendServers(add)
	must(t, err)
	if len(addResp.BackendServers.BackendServer) != 1 || addResp.BackendServers.BackendServer[0].Weight != "50" {
		t.Fatalf("AddBackendServers response %+v", addResp.BackendServers)
	}

	a := slb.CreateDescribeLoadBalancerAttributeRequest()
	a.LoadBalancerId = id
	attr, err := c.DescribeLoadBalancerAttribute(a)
	must(t, err)
	if attr.LoadBalancerName != "renamed" || attr.LoadBalancerStatus != "inactive" || attr.LoadBalancerSpec != "slb.s2.small" ||
		attr.ModificationProtectionStatus != "ConsoleProtection" || attr.ModificationProtectionReason != "managed" ||
		attr.VpcId != testVPC || attr.AddressType != "intranet" {
		t.Fatalf("unexpected attribute %+v", attr)
	}
	if got := attr.ListenerPorts.ListenerPort; len(got) != 2 || got[0] != 80 || got[1] != 443 {
		t.Fatalf("ListenerPorts %v", got)
	}
	pp := attr.ListenerPortsAndProtocal.ListenerPortAndProtocal
	if len(pp) != 2 || pp[0].ListenerProtocal != "http" || pp[1].ListenerProtocal != "tcp" {
		t.Fatalf("ListenerPortsAndProtocal %+v", pp)
	}
	po := attr.ListenerPortsAndProtocol.ListenerPortAndProtocol
	if len(po) != 2 || po[0].ListenerProtocol != "http" || po[0].Description != "web" || po[1].ListenerPort != 443 {
		t.Fatalf("ListenerPortsAndProtocol %+v", po)
	}
	if bs := attr.BackendServers.BackendServer; len(bs) != 1 || bs[0].ServerId != instance1 || bs[0].Weight != 50 || bs[0].ServerIp == "" {
		t.Fatalf("BackendServers %+v", bs)
	}

	set := slb.CreateSetBackendServersRequest()
	set.LoadBalancerId, set.BackendServers = id, `[{"ServerId":"`+instance1+`","Weight":"10"}]`
	_, err = c.SetBackendServers(set)
	must(t, err)
	rm := slb.CreateRemoveBackendServersRequest()
	rm.LoadBalancerId, rm.BackendServers = id, `[{"ServerId":"`+instance1+`"}]`
	rmResp, err := c.RemoveBackendServers(rm)
	must(t, err)
	if len(rmResp.BackendServers.BackendServer) != 0 {
		t.Fatalf("backend not removed: %+v", rmResp.BackendServers)
	}

	inetSpec := slb.CreateModifyLoadBalancerInternetSpecRequest()
	inetSpec.LoadBalancerId, inetSpec.InternetChargeType, inetSpec.Bandwidth = id, "paybybandwidth", requests.NewInteger(10)
	_, err = c.ModifyLoadBalancerInternetSpec(inetSpec)
	wantErr(t, err, "Operation.NotAllowed", http.StatusBadRequest)
	inetSpec.LoadBalancerId = inet
	_, err = c.ModifyLoadBalancerInternetSpec(inetSpec)
	must(t, err)

	ct := slb.CreateModifyLoadBalancerInstanceChargeTypeRequest()
	ct.LoadBalancerId, ct.InstanceChargeType = inet, "PayByCLCU"
	_, err = c.ModifyLoadBalancerInstanceChargeType(ct)
	must(t, err)
	spec.LoadBalancerId = inet
	_, err = c.ModifyLoadBalancerInstanceSpec(spec)
	wantErr(t, err, "Operation.NotAllowed", http.StatusBadRequest)
	ct.InstanceChargeType = "PayBySpec"
	_, err = c.ModifyLoadBalancerInstanceChargeType(ct)
	wantErr(t, err, "MissingParameter", http.StatusBadRequest)

	a.LoadBalancerId = inet
	attr, err = c.DescribeLoadBalancerAttribute(a)
	must(t, err)
	if attr.InternetChargeType != "paybybandwidth" || attr.Bandwidth != 10 || attr.InstanceChargeType != "PayByCLCU" || attr.LoadBalancerSpec != "" {
		t.Fatalf("unexpected internet attribute %+v", attr)
	}

	a.LoadBalancerId = "lb-missing"
	_, err = c.DescribeLoadBalancerAttribute(a)
	wantErr(t, err, "InvalidLoadBalancerId.NotFound", http.StatusNotFound)
	st.LoadBalancerStatus = "locked"
	_, err = c.SetLoadBalancerStatus(st)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
}
