package slb_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func TestVServerGroupLifecycle(t *testing.T) {
	_, c := newEnv(t)
	lb := createLB(t, c, nil).LoadBalancerId

	cr := slb.CreateCreateVServerGroupRequest()
	cr.LoadBalancerId, cr.VServerGroupName = lb, "web"
	// The existing CCM's spelling: lower-case keys and numbers.
	cr.BackendServers = `[{"serverId":"` + instance1 + `","port":80,"weight":100,"type":"ecs","description":"n1"}]`
	cr.Tag = &[]slb.CreateVServerGroupTag{{Key: "k", Value: "v"}}
	created, err := c.CreateVServerGroup(cr)
	must(t, err)
	gid := created.VServerGroupId
	if !strings.HasPrefix(gid, "rsp-") || len(created.BackendServers.BackendServer) != 1 || created.BackendServers.BackendServer[0].Port != 80 {
		t.Fatalf("unexpected create response %+v", created)
	}

	add := slb.CreateAddVServerGroupBackendServersRequest()
	// The documented spelling: capitalised keys and strings.
	add.VServerGroupId = gid
	add.BackendServers = `[{"ServerId":"` + instance2 + `","Port":"8080","Weight":"30","Type":"ecs"},` +
		`{"ServerId":"` + testENI + `","ServerIp":"` + testENIIP + `","Port":"80","Weight":"10","Type":"eni"}]`
	added, err := c.AddVServerGroupBackendServers(add)
	must(t, err)
	if len(added.BackendServers.BackendServer) != 3 {
		t.Fatalf("after add: %+v", added.BackendServers)
	}

	set := slb.CreateSetVServerGroupAttributeRequest()
	set.VServerGroupId, set.VServerGroupName = gid, "web2"
	set.BackendServers = `[{"ServerId":"` + instance2 + `","Port":8080,"Weight":0}]`
	setResp, err := c.SetVServerGroupAttribute(set)
	must(t, err)
	if setResp.VServerGroupName != "web2" {
		t.Fatalf("name %q", setResp.VServerGroupName)
	}

	mod := slb.CreateModifyVServerGroupBackendServersRequest()
	mod.VServerGroupId = gid
	mod.OldBackendServers = `[{"ServerId":"` + instance1 + `","Port":80}]`
	mod.NewBackendServers = `[{"ServerId":"` + instance1 + `","Port":81,"Weight":60}]`
	_, err = c.ModifyVServerGroupBackendServers(mod)
	must(t, err)

	attrReq := slb.CreateDescribeVServerGroupAttributeRequest()
	attrReq.VServerGroupId = gid
	attr, err := c.DescribeVServerGroupAttribute(attrReq)
	must(t, err)
	got := map[string]string{}
	for _, b := range attr.BackendServers.BackendServer {
		got[b.ServerId] = fmt.Sprintf("%s/%d/%d/%s", b.Type, b.Port, b.Weight, b.ServerIp)
	}
	if attr.VServerGroupName != "web2" || attr.LoadBalancerId != lb || len(attr.Tags.Tag) != 1 ||
		!strings.HasPrefix(got[instance1], "ecs/81/60/192.168.0.") || !strings.HasPrefix(got[instance2], "ecs/8080/0/") ||
		got[testENI] != "eni/80/10/"+testENIIP {
		t.Fatalf("unexpected attribute %+v (%v)", attr, got)
	}

	rm := slb.CreateRemoveVServerGroupBackendServersRequest()
	rm.VServerGroupId = gid
	rm.BackendServers = `[{"ServerId":"` + testENI + `","ServerIp":"` + testENIIP + `","Port":80,"Type":"eni"},{"ServerId":"i-notmember","Port":80}]`
	removed, err := c.RemoveVServerGroupBackendServers(rm)
	must(t, err)
	if len(removed.BackendServers.BackendServer) != 2 {
		t.Fatalf("after remove: %+v", removed.BackendServers)
	}

	createTCP(t, c, lb, 80, func(r *slb.CreateLoadBalancerTCPListenerRequest) { r.VServerGroupId = gid })
	list := slb.CreateDescribeVServerGroupsRequest()
	list.LoadBalancerId, list.IncludeListener = lb, requests.NewBoolean(true)
	groups, err := c.DescribeVServerGroups(list)
	must(t, err)
	g := groups.VServerGroups.VServerGroup
	if len(g) != 1 || g[0].ServerCount != 2 || g[0].VServerGroupName != "web2" ||
		len(g[0].AssociatedObjects.Listeners.Listener) != 1 || g[0].AssociatedObjects.Listeners.Listener[0].Port != 80 ||
		g[0].AssociatedObjects.Listeners.Listener[0].Protocol != "tcp" {
		t.Fatalf("unexpected groups %+v", g)
	}
	lbs := slb.CreateDescribeLoadBalancersRequest()
	lbs.ServerId = instance2
	byServer, err := c.DescribeLoadBalancers(lbs)
	must(t, err)
	if byServer.TotalCount != 1 {
		t.Fatalf("ServerId filter found %d", byServer.TotalCount)
	}

	del := slb.CreateDeleteVServerGroupRequest()
	del.VServerGroupId = gid
	_, err = c.DeleteVServerGroup(del)
	wantErr(t, err, "RspoolVipExist", http.StatusBadRequest)
	dl := slb.CreateDeleteLoadBalancerListenerRequest()
	dl.LoadBalancerId, dl.ListenerPort = lb, requests.NewInteger(80)
	_, err = c.DeleteLoadBalancerListener(dl)
	must(t, err)
	_, err = c.DeleteVServerGroup(del)
	must(t, err)
	_, err = c.DescribeVServerGroupAttribute(attrReq)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
	if !strings.Contains(err.Error(), "The specified VServerGroupId does not exist") {
		t.Fatalf("message: %v", err)
	}
}

func TestVServerGroupBackendValidation(t *testing.T) {
	env, c := newEnv(t)
	lb := createLB(t, c, nil).LoadBalancerId
	gid := createGroup(t, c, lb, "")
	many := make([]string, 21)
	for i := range many {
		many[i] = fmt.Sprintf(`{"ServerId":"%s","Port":%d}`, instance1, 1000+i)
	}
	tests := []struct {
		name     string
		backends string
		code     string
		status   int
	}{
		{"instance in another VPC", `[{"ServerId":"` + otherInst + `","Port":80}]`, "InvalidServerId.NotFound", 400},
		{"unknown instance", `[{"ServerId":"i-nope","Port":80}]`, "InvalidServerId.NotFound", 400},
		{"eni without ip", `[{"ServerId":"` + testENI + `","Port":80,"Type":"eni"}]`, "MissingParameter", 400},
		{"eni with foreign ip", `[{"ServerId":"` + testENI + `","ServerIp":"192.168.0.9","Port":80,"Type":"eni"}]`, "InvalidServerId.NotFound", 400},
		{"weight too high", `[{"ServerId":"` + instance1 + `","Port":80,"Weight":101}]`, "InvalidParameter", 400},
		{"no port", `[{"ServerId":"` + instance1 + `"}]`, "MissingParameter", 400},
		{"bad json", `[{"ServerId":`, "InvalidParameter", 400},
		{"bad type", `[{"ServerId":"` + instance1 + `","Port":80,"Type":"ip"}]`, "InvalidParameter", 400},
		{"too many per call", "[" + strings.Join(many, ",") + "]", "TooManyBackendServers", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := slb.CreateAddVServerGroupBackendServersRequest()
			r.VServerGroupId, r.BackendServers = gid, tt.backends
			_, err := c.AddVServerGroupBackendServers(r)
			wantErr(t, err, tt.code, tt.status)
		})
	}

	// The per-call limit is configurable (the existing CCM sends 40).
	must(t, env.Emulator.Store.Settings().SetQuota(store.QuotaSLBBackendsPerCall, 40))
	r := slb.CreateAddVServerGroupBackendServersRequest()
	r.VServerGroupId, r.BackendServers = gid, "["+strings.Join(many, ",")+"]"
	_, err := c.AddVServerGroupBackendServers(r)
	must(t, err)

	// Per load balancer quota: 21 entries exist now.
	must(t, env.Emulator.Store.Settings().SetQuota(store.QuotaSLBBackendsPerLB, 22))
	r = slb.CreateAddVServerGroupBackendServersRequest()
	r.VServerGroupId = gid
	r.BackendServers = `[{"ServerId":"` + instance2 + `","Port":1},{"ServerId":"` + instance2 + `","Port":2}]`
	_, err = c.AddVServerGroupBackendServers(r)
	wantErr(t, err, "InstanceBackendServerNumberOverLimit", http.StatusBadRequest)

	r.VServerGroupId = "rsp-nope"
	_, err = c.AddVServerGroupBackendServers(r)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
}

func TestVServerGroupProcessing(t *testing.T) {
	env, c := newEnv(t)
	must(t, env.Emulator.Store.Settings().SetDelay(store.DelaySLBConfiguring, 300*time.Millisecond))
	lb := createLB(t, c, nil).LoadBalancerId
	gid := createGroup(t, c, lb, "")
	add := func() error {
		r := slb.CreateAddVServerGroupBackendServersRequest()
		r.VServerGroupId, r.BackendServers = gid, `[{"ServerId":"`+instance1+`","Port":80}]`
		_, err := c.AddVServerGroupBackendServers(r)
		return err
	}
	must(t, add())
	wantErr(t, add(), "VServerGroupProcessing", http.StatusBadRequest)
	time.Sleep(350 * time.Millisecond)
	must(t, add())
}
