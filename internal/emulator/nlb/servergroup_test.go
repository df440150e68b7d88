package nlb_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func (f *fixture) listSG(t *testing.T, id string) nlb.ServerGroup {
	t.Helper()
	r := nlb.CreateListServerGroupsRequest()
	r.ServerGroupIds = &[]string{id}
	resp, err := f.c.ListServerGroups(r)
	noErr(t, err)
	if len(resp.ServerGroups) != 1 {
		t.Fatalf("ListServerGroups(%s): %+v", id, resp)
	}
	return resp.ServerGroups[0]
}

func (f *fixture) servers(t *testing.T, sg string) []nlb.Server {
	t.Helper()
	r := nlb.CreateListServerGroupServersRequest()
	r.ServerGroupId = sg
	resp, err := f.c.ListServerGroupServers(r)
	noErr(t, err)
	return resp.Servers
}

func TestCreateServerGroup(t *testing.T) {
	f := newFixture(t)
	setDelays(t, f.env, 0, 300*time.Millisecond)
	r := nlb.CreateCreateServerGroupRequest()
	r.ServerGroupName, r.VpcId, r.Protocol, r.Scheduler = "k8s.30080.TCP.web.default.c1", "vpc-a", "TCP", "sch"
	r.ConnectionDrainEnabled = requests.NewBoolean(true)
	r.ConnectionDrainTimeout = requests.NewInteger(30)
	r.PreserveClientIpEnabled = requests.NewBoolean(true)
	r.HealthCheckConfig = nlb.CreateServerGroupHealthCheckConfig{
		HealthCheckEnabled: "true", HealthCheckType: "HTTP", HealthCheckConnectPort: "8080", HealthCheckInterval: "5",
		HealthCheckUrl: "/healthz", HealthCheckDomain: "example.com", HealthCheckHttpCode: &[]string{"http_2xx", "http_3xx"},
		HealthyThreshold: "3", UnhealthyThreshold: "4", HealthCheckConnectTimeout: "6",
	}
	r.Tag = &[]nlb.CreateServerGroupTag{{Key: "ack.aliyun.com", Value: "c1"}}
	resp, err := f.c.CreateServerGroup(r)
	noErr(t, err)
	if !strings.HasPrefix(resp.ServerGroupId, "sgp-") || resp.JobId == "" {
		t.Fatalf("create: %+v", resp)
	}
	g := f.listSG(t, resp.ServerGroupId)
	if g.ServerGroupStatus != "Creating" {
		t.Fatalf("status right after create = %s, want Creating", g.ServerGroupStatus)
	}
	hc := g.HealthCheck
	if g.ServerGroupName != r.ServerGroupName || g.ServerGroupType != "Instance" || g.Scheduler != "Sch" || g.Protocol != "TCP" ||
		g.VpcId != "vpc-a" || !g.ConnectionDrainEnabled || g.ConnectionDrainTimeout != 30 || !g.PreserveClientIpEnabled ||
		g.AddressIPVersion != "ipv4" || g.RegionId != "cn-hangzhou" || g.ServerCount != 0 || g.RelatedLoadBalancerIds == nil ||
		len(g.Tags) != 1 || g.Tags[0].Key != "ack.aliyun.com" || g.Tags[0].Value != "c1" {
		t.Fatalf("server group: %+v", g)
	}
	if !hc.HealthCheckEnabled || hc.HealthCheckType != "HTTP" || hc.HealthCheckConnectPort != 8080 || hc.HealthCheckInterval != 5 ||
		hc.HealthCheckUrl != "/healthz" || hc.HealthCheckDomain != "example.com" || strings.Join(hc.HealthCheckHttpCode, ",") != "http_2xx,http_3xx" ||
		hc.HealthyThreshold != 3 || hc.UnhealthyThreshold != 4 || hc.HealthCheckConnectTimeout != 6 || hc.HttpCheckMethod != "GET" {
		t.Fatalf("health check: %+v", hc)
	}
	// Changing a group that is still Creating conflicts with its job.
	a := nlb.CreateAddServersToServerGroupRequest()
	a.ServerGroupId = resp.ServerGroupId
	a.Servers = &[]nlb.AddServersToServerGroupServers{{ServerId: "i-a", ServerType: "Ecs", Port: "80"}}
	_, err = f.c.AddServersToServerGroup(a)
	wantErr(t, err, "Conflict.Lock", http.StatusBadRequest)
	eventually(t, "Available", func() bool { return f.listSG(t, resp.ServerGroupId).ServerGroupStatus == "Available" })

	cases := []struct {
		name   string
		mod    func(r *nlb.CreateServerGroupRequest)
		code   string
		status int
	}{
		{"missing name", func(r *nlb.CreateServerGroupRequest) { r.ServerGroupName = "" }, "MissingParameter", 400},
		{"missing vpc", func(r *nlb.CreateServerGroupRequest) { r.VpcId = "" }, "MissingParameter", 400},
		{"unknown vpc", func(r *nlb.CreateServerGroupRequest) { r.VpcId = "vpc-x" }, "ResourceNotFound.Vpc", 404},
		{"bad protocol", func(r *nlb.CreateServerGroupRequest) { r.Protocol = "HTTP" }, "InvalidParameter", 400},
		{"bad type", func(r *nlb.CreateServerGroupRequest) { r.ServerGroupType = "Fc" }, "InvalidParameter", 400},
		{"bad scheduler", func(r *nlb.CreateServerGroupRequest) { r.Scheduler = "random" }, "InvalidParameter", 400},
		{"drain timeout", func(r *nlb.CreateServerGroupRequest) { r.ConnectionDrainTimeout = requests.NewInteger(901) }, "InvalidParameter", 400},
		{"health interval", func(r *nlb.CreateServerGroupRequest) {
			r.HealthCheckConfig = nlb.CreateServerGroupHealthCheckConfig{HealthCheckInterval: "51"}
		}, "InvalidParameter", 400},
		{"http code", func(r *nlb.CreateServerGroupRequest) {
			r.HealthCheckConfig = nlb.CreateServerGroupHealthCheckConfig{HealthCheckHttpCode: &[]string{"http_6xx"}}
		}, "InvalidParameter", 400},
		{"dry run", func(r *nlb.CreateServerGroupRequest) { r.DryRun = requests.NewBoolean(true) }, "DryRunOperation", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := nlb.CreateCreateServerGroupRequest()
			r.ServerGroupName, r.VpcId = "valid-name", "vpc-a"
			tc.mod(r)
			_, err := f.c.CreateServerGroup(r)
			wantErr(t, err, tc.code, tc.status)
		})
	}
}

func TestServerGroupServers(t *testing.T) {
	f := newFixture(t)
	sg := f.createSG(t, "backends", "vpc-a", "Instance", "TCP", false)
	setDelays(t, f.env, 0, 300*time.Millisecond)

	a := nlb.CreateAddServersToServerGroupRequest()
	a.ServerGroupId = sg
	a.Servers = &[]nlb.AddServersToServerGroupServers{
		{ServerId: "i-a", ServerType: "Ecs", Port: "80", Weight: "50", Description: "node a"},
		{ServerId: "eni-a", ServerType: "Eni", ServerIp: "172.16.1.51", Port: "8080"},
		{ServerId: "i-a2", ServerType: "Ecs", Port: "80"},
	}
	resp, err := f.c.AddServersToServerGroup(a)
	noErr(t, err)
	if resp.JobId == "" || resp.ServerGroupId != sg {
		t.Fatalf("add: %+v", resp)
	}
	got := f.servers(t, sg)
	if len(got) != 3 {
		t.Fatalf("servers: %+v", got)
	}
	want := []nlb.Server{
		{ServerId: "i-a", ServerType: "Ecs", ServerIp: "172.16.1.10", Port: 80, Weight: 50, Description: "node a", ZoneId: zoneH, ServerGroupId: sg, Status: "Adding"},
		{ServerId: "eni-a", ServerType: "Eni", ServerIp: "172.16.1.51", Port: 8080, Weight: 100, ZoneId: zoneH, ServerGroupId: sg, Status: "Adding"},
		{ServerId: "i-a2", ServerType: "Ecs", ServerIp: "172.16.2.10", Port: 80, Weight: 100, ZoneId: zoneI, ServerGroupId: sg, Status: "Adding"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("server %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if g := f.listSG(t, sg); g.ServerGroupStatus != "Configuring" || g.ServerCount != 3 {
		t.Fatalf("group during add: %s, %d servers", g.ServerGroupStatus, g.ServerCount)
	}
	// Another change while the add job runs conflicts.
	rm := nlb.CreateRemoveServersFromServerGroupRequest()
	rm.ServerGroupId = sg
	rm.Servers = &[]nlb.RemoveServersFromServerGroupServers{{ServerId: "i-a2", ServerType: "Ecs", Port: "80"}}
	_, err = f.c.RemoveServersFromServerGroup(rm)
	wantErr(t, err, "Conflict.Lock", http.StatusBadRequest)
	eventually(t, "servers Available", func() bool {
		for _, s := range f.servers(t, sg) {
			if s.Status != "Available" {
				return false
			}
		}
		return true
	})
	setDelays(t, f.env, 0, 0)

	up := nlb.CreateUpdateServerGroupServersAttributeRequest()
	up.ServerGroupId = sg
	up.Servers = &[]nlb.UpdateServerGroupServersAttributeServers{{ServerId: "i-a", ServerType: "Ecs", Port: "80", Weight: "0", Description: "drained"}}
	ur, err := f.c.UpdateServerGroupServersAttribute(up)
	noErr(t, err)
	if s := f.servers(t, sg)[0]; ur.JobId == "" || s.Weight != 0 || s.Description != "drained" {
		t.Fatalf("after update: %+v", s)
	}

	rr, err := f.c.RemoveServersFromServerGroup(rm)
	noErr(t, err)
	if got := f.servers(t, sg); rr.JobId == "" || len(got) != 2 {
		t.Fatalf("after remove: %+v", got)
	}
	// Filters of ListServerGroupServers.
	l := nlb.CreateListServerGroupServersRequest()
	l.ServerGroupId = sg
	l.ServerIps = &[]string{"172.16.1.51"}
	lr, err := f.c.ListServerGroupServers(l)
	noErr(t, err)
	if lr.TotalCount != 1 || lr.Servers[0].ServerId != "eni-a" {
		t.Fatalf("filter by IP: %+v", lr)
	}

	cases := []struct {
		name    string
		servers []nlb.AddServersToServerGroupServers
		code    string
		status  int
	}{
		{"already in group", []nlb.AddServersToServerGroupServers{{ServerId: "i-a", ServerType: "Ecs", Port: "80"}}, "DuplicatedParam.Server", 400},
		{"twice in call", []nlb.AddServersToServerGroupServers{{ServerId: "i-a2", ServerType: "Ecs", Port: "81"}, {ServerId: "i-a2", ServerType: "Ecs", Port: "81"}}, "DuplicatedParam.Server", 400},
		{"instance of other vpc", []nlb.AddServersToServerGroupServers{{ServerId: "i-b", ServerType: "Ecs", Port: "80"}}, "ResourceNotFound.BackendServer", 404},
		{"unknown instance", []nlb.AddServersToServerGroupServers{{ServerId: "i-none", ServerType: "Ecs", Port: "80"}}, "ResourceNotFound.BackendServer", 404},
		{"ip not on eni", []nlb.AddServersToServerGroupServers{{ServerId: "eni-a", ServerType: "Eni", ServerIp: "172.16.1.99", Port: "80"}}, "ResourceNotFound.BackendServer", 404},
		{"eni without ip", []nlb.AddServersToServerGroupServers{{ServerId: "eni-a", ServerType: "Eni", Port: "80"}}, "MissingParameter", 400},
		{"ip server in instance group", []nlb.AddServersToServerGroupServers{{ServerId: "10.0.0.1", ServerType: "Ip", ServerIp: "10.0.0.1", Port: "80"}}, "InvalidParameter", 400},
		{"missing port", []nlb.AddServersToServerGroupServers{{ServerId: "i-a2", ServerType: "Ecs"}}, "MissingParameter", 400},
		{"bad weight", []nlb.AddServersToServerGroupServers{{ServerId: "i-a2", ServerType: "Ecs", Port: "82", Weight: "101"}}, "InvalidParameter", 400},
		{"missing type", []nlb.AddServersToServerGroupServers{{ServerId: "i-a2", Port: "82"}}, "MissingParameter", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := nlb.CreateAddServersToServerGroupRequest()
			a.ServerGroupId = sg
			a.Servers = &tc.servers
			_, err := f.c.AddServersToServerGroup(a)
			wantErr(t, err, tc.code, tc.status)
		})
	}
	rm2 := nlb.CreateRemoveServersFromServerGroupRequest()
	rm2.ServerGroupId = sg
	rm2.Servers = &[]nlb.RemoveServersFromServerGroupServers{{ServerId: "i-a2", ServerType: "Ecs", Port: "80"}}
	_, err = f.c.RemoveServersFromServerGroup(rm2)
	wantErr(t, err, "ResourceNotFound.BackendServer", http.StatusNotFound)
	a.ServerGroupId = "sgp-none"
	_, err = f.c.AddServersToServerGroup(a)
	wantErr(t, err, "ResourceNotFound.serverGroup", http.StatusNotFound)
}

func TestServerGroupServerQuotas(t *testing.T) {
	f := newFixture(t)
	sg := f.createSG(t, "ips", "vpc-a", "Ip", "UDP", false)
	if g := f.listSG(t, sg); g.ServerGroupType != "Ip" || g.HealthCheck.HealthCheckType != "UDP" {
		t.Fatalf("ip group: %+v", g)
	}
	settings := f.env.Emulator.Store.Settings()
	noErr(t, settings.SetQuota(store.QuotaNLBServersPerCall, 3))
	noErr(t, settings.SetQuota(store.QuotaNLBServersPerGroup, 5))
	add := func(from, n int) error {
		var servers []nlb.AddServersToServerGroupServers
		for i := from; i < from+n; i++ {
			ip := "192.168.0." + strconv.Itoa(i)
			servers = append(servers, nlb.AddServersToServerGroupServers{ServerId: ip, ServerIp: ip, ServerType: "Ip", Port: "53"})
		}
		a := nlb.CreateAddServersToServerGroupRequest()
		a.ServerGroupId, a.Servers = sg, &servers
		_, err := f.c.AddServersToServerGroup(a)
		return err
	}
	wantErr(t, add(1, 4), "QuotaExceeded.ServersNum", http.StatusBadRequest)
	noErr(t, add(1, 3))
	wantErr(t, add(10, 3), "QuotaExceeded.ServersNum", http.StatusBadRequest)
	noErr(t, add(10, 2))
	if got := f.servers(t, sg); len(got) != 5 || got[0].ServerType != "Ip" || got[0].ServerIp != "192.168.0.1" || got[0].ZoneId != "" {
		t.Fatalf("ip servers: %+v", got)
	}
	// An Ip group takes only Ip servers.
	a := nlb.CreateAddServersToServerGroupRequest()
	a.ServerGroupId = sg
	a.Servers = &[]nlb.AddServersToServerGroupServers{{ServerId: "i-a", ServerType: "Ecs", Port: "53"}}
	_, err := f.c.AddServersToServerGroup(a)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
}

func TestUpdateAndDeleteServerGroup(t *testing.T) {
	f := newFixture(t)
	sg := f.createSG(t, "upd", "vpc-a", "Instance", "TCP", false)
	u := nlb.CreateUpdateServerGroupAttributeRequest()
	u.ServerGroupId, u.ServerGroupName, u.Scheduler = sg, "renamed", "Wlc"
	u.HealthCheckConfig = nlb.UpdateServerGroupAttributeHealthCheckConfig{HealthCheckEnabled: "false"}
	u.PreserveClientIpEnabled = requests.NewBoolean(true)
	resp, err := f.c.UpdateServerGroupAttribute(u)
	noErr(t, err)
	g := f.listSG(t, sg)
	if resp.JobId == "" || g.ServerGroupName != "renamed" || g.Scheduler != "Wlc" || g.HealthCheck.HealthCheckEnabled || !g.PreserveClientIpEnabled {
		t.Fatalf("after update: %+v", g)
	}
	bad := nlb.CreateUpdateServerGroupAttributeRequest()
	bad.ServerGroupId, bad.Scheduler = sg, "nope"
	_, err = f.c.UpdateServerGroupAttribute(bad)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
	if g := f.listSG(t, sg); g.Scheduler != "Wlc" {
		t.Fatalf("a failed update changed the scheduler to %s", g.Scheduler)
	}

	// Filters of ListServerGroups.
	other := f.createSG(t, "other", "vpc-b", "Ip", "TCP", false)
	l := nlb.CreateListServerGroupsRequest()
	l.VpcId = "vpc-b"
	lr, err := f.c.ListServerGroups(l)
	noErr(t, err)
	if lr.TotalCount != 1 || lr.ServerGroups[0].ServerGroupId != other {
		t.Fatalf("filter by VPC: %+v", lr)
	}
	l = nlb.CreateListServerGroupsRequest()
	l.ServerGroupNames = &[]string{"renamed"}
	lr, err = f.c.ListServerGroups(l)
	noErr(t, err)
	if lr.TotalCount != 1 || lr.ServerGroups[0].ServerGroupId != sg {
		t.Fatalf("filter by name: %+v", lr)
	}

	d := nlb.CreateDeleteServerGroupRequest()
	d.ServerGroupId = sg
	dr, err := f.c.DeleteServerGroup(d)
	noErr(t, err)
	if dr.JobId == "" || dr.ServerGroupId != sg {
		t.Fatalf("delete: %+v", dr)
	}
	_, err = f.c.DeleteServerGroup(d)
	wantErr(t, err, "ResourceNotFound.serverGroup", http.StatusNotFound)
}
