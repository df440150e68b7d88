package nlb_test

import (
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// TestDeletionIsAJob: a deleted LB reports Deleting, refuses changes and
// keeps its listeners (so their server group stays in use) until its job
// ends; then all of it is gone and the group can be deleted.
func TestDeletionIsAJob(t *testing.T) {
	f := newFixture(t)
	lb := f.createLB(t, lbRequest("deleting"))
	sg := f.createSG(t, "in-use", "vpc-a", "Instance", "TCP", false)
	f.createListener(t, lb, sg, "TCP", 80)
	setDelays(t, f.env, 0, 400*time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	del := nlb.CreateDeleteLoadBalancerRequest()
	del.LoadBalancerId = lb
	resp, err := f.c.DeleteLoadBalancer(del)
	noErr(t, err)
	if st := f.getLB(t, lb).LoadBalancerStatus; st != "Deleting" {
		t.Fatalf("status during the deletion job = %s, want Deleting", st)
	}
	dsg := nlb.CreateDeleteServerGroupRequest()
	dsg.ServerGroupId = sg
	_, err = f.c.DeleteServerGroup(dsg)
	wantErr(t, err, "ResourceInUse.ServerGroup", 400)
	upd := nlb.CreateUpdateLoadBalancerAttributeRequest()
	upd.LoadBalancerId, upd.LoadBalancerName = lb, "renamed"
	_, err = f.c.UpdateLoadBalancerAttribute(upd)
	wantErr(t, err, "IncorrectStatus.loadbalancer", 400)
	eventually(t, "the deletion job succeeds", func() bool { return f.jobStatus(t, resp.JobId) == "Succeeded" })
	get := nlb.CreateGetLoadBalancerAttributeRequest()
	get.LoadBalancerId = lb
	_, err = f.c.GetLoadBalancerAttribute(get)
	wantErr(t, err, "ResourceNotFound.loadBalancer", 404)
	_, err = f.c.DeleteServerGroup(dsg)
	noErr(t, err)
}

// TestFailJobFault: a failJob fault answers the call with its JobId, the
// job ends Failed and the change is rolled back; a failed create leaves a
// CreateFailed load balancer that can only be deleted.
func TestFailJobFault(t *testing.T) {
	f := newFixture(t)
	setDelays(t, f.env, 100*time.Millisecond, 100*time.Millisecond)
	sg := f.createSG(t, "servers", "vpc-a", "Instance", "TCP", false)
	time.Sleep(150 * time.Millisecond)
	_, err := f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "nlb", Action: "AddServersToServerGroup", Count: 1, FailJob: true})
	noErr(t, err)
	add := nlb.CreateAddServersToServerGroupRequest()
	add.ServerGroupId = sg
	add.Servers = &[]nlb.AddServersToServerGroupServers{{ServerId: "i-a", ServerType: "Ecs", Port: "80"}}
	resp, err := f.c.AddServersToServerGroup(add)
	noErr(t, err)
	if st := f.jobStatus(t, resp.JobId); st != "Processing" {
		t.Fatalf("job = %s, want Processing", st)
	}
	_, err = f.c.AddServersToServerGroup(add)
	wantErr(t, err, "Conflict.Lock", 400)
	eventually(t, "the job fails", func() bool { return f.jobStatus(t, resp.JobId) == "Failed" })
	list := nlb.CreateListServerGroupServersRequest()
	list.ServerGroupId = sg
	servers, err := f.c.ListServerGroupServers(list)
	noErr(t, err)
	if len(servers.Servers) != 0 {
		t.Fatalf("servers after a failed add = %+v, want none (rolled back)", servers.Servers)
	}

	_, err = f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "nlb", Action: "CreateLoadBalancer", Count: 1, FailJob: true})
	noErr(t, err)
	lb := f.createLB(t, lbRequest("failing"))
	if st := f.getLB(t, lb).LoadBalancerStatus; st != "Provisioning" {
		t.Fatalf("status = %s, want Provisioning", st)
	}
	eventually(t, "the create fails", func() bool { return f.getLB(t, lb).LoadBalancerStatus == "CreateFailed" })
	upd := nlb.CreateUpdateLoadBalancerAttributeRequest()
	upd.LoadBalancerId, upd.LoadBalancerName = lb, "renamed"
	_, err = f.c.UpdateLoadBalancerAttribute(upd)
	wantErr(t, err, "IncorrectStatus.loadbalancer", 400)
	del := nlb.CreateDeleteLoadBalancerRequest()
	del.LoadBalancerId = lb
	_, err = f.c.DeleteLoadBalancer(del)
	noErr(t, err)
	if _, err := f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "slb", FailJob: true}); err == nil {
		t.Fatal("a failJob fault on slb was accepted")
	}
}

// TestListenerHealth: GetListenerHealthStatus lists a server as Unhealthy
// when its instance is stopped or its check port does not listen.
func TestListenerHealth(t *testing.T) {
	f := newFixture(t)
	lb := f.createLB(t, lbRequest("health"))
	sg := f.createSG(t, "servers", "vpc-a", "Instance", "TCP", false)
	lsn := f.createListener(t, lb, sg, "TCP", 80)
	add := nlb.CreateAddServersToServerGroupRequest()
	add.ServerGroupId = sg
	add.Servers = &[]nlb.AddServersToServerGroupServers{{ServerId: "i-a", ServerType: "Ecs", Port: "8080"}, {ServerId: "i-a2", ServerType: "Ecs", Port: "8080"}}
	_, err := f.c.AddServersToServerGroup(add)
	noErr(t, err)
	unhealthy := func() map[string]string {
		r := nlb.CreateGetListenerHealthStatusRequest()
		r.ListenerId = lsn
		r.MaxResults = requests.NewInteger(20)
		resp, err := f.c.GetListenerHealthStatus(r)
		noErr(t, err)
		out := map[string]string{}
		for _, item := range resp.ListenerHealthStatus {
			for _, info := range item.ServerGroupInfos {
				for _, s := range info.NonNormalServers {
					out[s.ServerId] = s.Status + "/" + s.Reason.ReasonCode
				}
			}
		}
		return out
	}
	if got := unhealthy(); len(got) != 0 {
		t.Fatalf("unhealthy servers of running instances = %v", got)
	}
	if !f.env.Emulator.SetListeningPorts("i-a2", []int{22}) {
		t.Fatal("SetListeningPorts: no instance i-a2")
	}
	got := unhealthy()
	if got["i-a2"] != "Unhealthy/CONNECT_FAIL" || len(got) != 1 {
		t.Fatalf("with nothing listening on 8080 of i-a2: %v", got)
	}
	f.env.Emulator.SetListeningPorts("i-a2", nil)
	if got := unhealthy(); len(got) != 0 {
		t.Fatalf("after restoring the ports: %v", got)
	}
}
