package console_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// world is the state the console tests look at, built through the SDK the
// way the CCM and a user build it.
type world struct {
	env       *emulatortest.Env
	vpcID     string
	vswIDs    []string
	instances []string
	lbID      string
	groupID   string
	nlbID     string
}

// buildWorld creates a VPC with two vSwitches, three tagged instances, a
// CLB with a TCP listener forwarding to a vServer group of the instances
// (distinct weights and ports), an ACL, and an NLB with a listener and a
// server group.
func buildWorld(t *testing.T) *world {
	t.Helper()
	env := emulatortest.Start(t)
	// Short asynchronous delays: the pages show the settled states, and
	// the test need not wait the default seconds for them.
	fast := 20 * time.Millisecond
	if err := env.Emulator.Gateway.UpdateSettings(gateway.SettingsDoc{Delays: map[string]gateway.Duration{
		store.DelayNLBProvisioning: gateway.Duration(fast), store.DelayNLBJob: gateway.Duration(fast),
		store.DelaySLBConfiguring: gateway.Duration(fast), store.DelayECSInstance: gateway.Duration(fast),
	}}); err != nil {
		t.Fatalf("settings: %v", err)
	}
	w := &world{env: env}
	vc, ec, sc, nc := env.VPC(t), env.ECS(t), env.SLB(t), env.NLB(t)

	cv := vpc.CreateCreateVpcRequest()
	cv.RegionId, cv.CidrBlock, cv.VpcName = env.Region, "192.168.0.0/16", "console-vpc"
	var v *vpc.CreateVpcResponse
	settle(t, "CreateVpc", func() (err error) { v, err = vc.CreateVpc(cv); return err })
	w.vpcID = v.VpcId
	for i, zone := range []string{env.Region + "-h", env.Region + "-i"} {
		cs := vpc.CreateCreateVSwitchRequest()
		cs.RegionId, cs.VpcId, cs.ZoneId = env.Region, w.vpcID, zone
		cs.CidrBlock, cs.VSwitchName = "192.168."+strconv.Itoa(i)+".0/24", "console-vsw-"+zone[len(zone)-1:]
		var s *vpc.CreateVSwitchResponse
		settle(t, "CreateVSwitch", func() (err error) { s, err = vc.CreateVSwitch(cs); return err })
		w.vswIDs = append(w.vswIDs, s.VSwitchId)
	}
	csg := ecs.CreateCreateSecurityGroupRequest()
	csg.RegionId, csg.VpcId, csg.SecurityGroupName = env.Region, w.vpcID, "console-sg"
	var sg *ecs.CreateSecurityGroupResponse
	settle(t, "CreateSecurityGroup", func() (err error) { sg, err = ec.CreateSecurityGroup(csg); return err })
	for i := 0; i < 3; i++ {
		ri := ecs.CreateRunInstancesRequest()
		ri.RegionId, ri.ImageId, ri.InstanceType = env.Region, "ubuntu_22_04_x64", "ecs.g7.large"
		ri.VSwitchId, ri.SecurityGroupId = w.vswIDs[i%2], sg.SecurityGroupId
		ri.InstanceName, ri.HostName = "node-"+strconv.Itoa(i), "node-"+strconv.Itoa(i)
		ri.Tag = &[]ecs.RunInstancesTag{{Key: "role", Value: "worker"}, {Key: "index", Value: strconv.Itoa(i)}}
		var r *ecs.RunInstancesResponse
		settle(t, "RunInstances", func() (err error) { r, err = ec.RunInstances(ri); return err })
		w.instances = append(w.instances, r.InstanceIdSets.InstanceIdSet...)
	}

	cl := slb.CreateCreateLoadBalancerRequest()
	cl.RegionId, cl.LoadBalancerName, cl.LoadBalancerSpec = env.Region, "console-clb", "slb.s1.small"
	cl.AddressType, cl.VpcId, cl.VSwitchId = "intranet", w.vpcID, w.vswIDs[0]
	var lb *slb.CreateLoadBalancerResponse
	settle(t, "CreateLoadBalancer", func() (err error) { lb, err = sc.CreateLoadBalancer(cl); return err })
	w.lbID = lb.LoadBalancerId
	cg := slb.CreateCreateVServerGroupRequest()
	cg.RegionId, cg.LoadBalancerId, cg.VServerGroupName = env.Region, w.lbID, "console-group"
	cg.BackendServers = `[{"ServerId":"` + w.instances[0] + `","Port":"30080","Weight":"100","Type":"ecs"},` +
		`{"ServerId":"` + w.instances[1] + `","Port":"30080","Weight":"50","Type":"ecs"},` +
		`{"ServerId":"` + w.instances[2] + `","Port":"30081","Weight":"0","Type":"ecs"}]`
	var g *slb.CreateVServerGroupResponse
	settle(t, "CreateVServerGroup", func() (err error) { g, err = sc.CreateVServerGroup(cg); return err })
	w.groupID = g.VServerGroupId
	ll := slb.CreateCreateLoadBalancerTCPListenerRequest()
	ll.RegionId, ll.LoadBalancerId, ll.ListenerPort = env.Region, w.lbID, requests.NewInteger(80)
	ll.Bandwidth, ll.VServerGroupId = requests.NewInteger(-1), w.groupID
	settle(t, "CreateLoadBalancerTCPListener", func() error { _, err := sc.CreateLoadBalancerTCPListener(ll); return err })
	ca := slb.CreateCreateAccessControlListRequest()
	ca.RegionId, ca.AclName = env.Region, "console-acl"
	settle(t, "CreateAccessControlList", func() error { _, err := sc.CreateAccessControlList(ca); return err })

	cn := nlb.CreateCreateLoadBalancerRequest()
	cn.RegionId, cn.AddressType, cn.VpcId, cn.LoadBalancerName = env.Region, "Intranet", w.vpcID, "console-nlb"
	cn.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: env.Region + "-h", VSwitchId: w.vswIDs[0]}, {ZoneId: env.Region + "-i", VSwitchId: w.vswIDs[1]}}
	var n *nlb.CreateLoadBalancerResponse
	settle(t, "CreateLoadBalancer", func() (err error) { n, err = nc.CreateLoadBalancer(cn); return err })
	w.nlbID = n.LoadbalancerId
	cng := nlb.CreateCreateServerGroupRequest()
	cng.RegionId, cng.ServerGroupName, cng.VpcId, cng.Protocol = env.Region, "console-nlb-group", w.vpcID, "TCP"
	var ng *nlb.CreateServerGroupResponse
	settle(t, "CreateServerGroup", func() (err error) { ng, err = nc.CreateServerGroup(cng); return err })
	as := nlb.CreateAddServersToServerGroupRequest()
	as.RegionId, as.ServerGroupId = env.Region, ng.ServerGroupId
	as.Servers = &[]nlb.AddServersToServerGroupServers{{ServerId: w.instances[0], ServerType: "Ecs", Port: "30443", Weight: "100"}}
	settle(t, "AddServersToServerGroup", func() error { _, err := nc.AddServersToServerGroup(as); return err })
	cnl := nlb.CreateCreateListenerRequest()
	cnl.RegionId, cnl.LoadBalancerId, cnl.ListenerProtocol = env.Region, w.nlbID, "TCP"
	cnl.ListenerPort, cnl.ServerGroupId = requests.NewInteger(443), ng.ServerGroupId
	settle(t, "CreateListener", func() error { _, err := nc.CreateListener(cnl); return err })
	return w
}

// settle runs a create call until the resources it depends on are out of
// their transient states: the emulator, like the cloud, answers a call on a
// resource still being set up with a Conflict or Incorrect*Status error.
func settle(t *testing.T, what string, call func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := call()
		if err == nil {
			return
		}
		if msg := err.Error(); time.Now().After(deadline) || !(strings.Contains(msg, "Conflict") || strings.Contains(msg, "Status")) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
