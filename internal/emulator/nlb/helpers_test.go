package nlb_test

import (
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// Assertions shared by all product tests live in emulatortest.
var (
	wantErr    = emulatortest.WantServerError
	noErr      = emulatortest.NoError
	eventually = emulatortest.Eventually
)

// setDelays sets the NLB provisioning and job delays.
func setDelays(t *testing.T, env *emulatortest.Env, provisioning, job time.Duration) {
	t.Helper()
	s := env.Emulator.Store.Settings()
	noErr(t, s.SetDelay(store.DelayNLBProvisioning, provisioning))
	noErr(t, s.SetDelay(store.DelayNLBJob, job))
}

// fixture is an emulator with a network seeded: vpc-a with vSwitches in
// three zones, an instance with a secondary ENI and five security groups;
// vpc-b with one vSwitch, an instance and a security group.
type fixture struct {
	env *emulatortest.Env
	c   *nlb.Client
}

const (
	zoneH = "cn-hangzhou-h"
	zoneI = "cn-hangzhou-i"
	zoneJ = "cn-hangzhou-j"
)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := emulatortest.Start(t)
	setDelays(t, env, 0, 0)
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{
			{ID: "vpc-a", CIDRBlock: "172.16.0.0/12", VSwitches: []api.SeedVSwitch{
				{ID: "vsw-h", ZoneID: zoneH, CIDRBlock: "172.16.1.0/24"},
				{ID: "vsw-i", ZoneID: zoneI, CIDRBlock: "172.16.2.0/24"},
				{ID: "vsw-j", ZoneID: zoneJ, CIDRBlock: "172.16.3.0/24"},
			}},
			{ID: "vpc-b", CIDRBlock: "10.0.0.0/8", VSwitches: []api.SeedVSwitch{
				{ID: "vsw-b", ZoneID: zoneH, CIDRBlock: "10.1.0.0/16"},
				{ID: "vsw-b2", ZoneID: zoneI, CIDRBlock: "10.2.0.0/16"},
			}},
		},
		SecurityGroups: []api.SeedSecurityGroup{
			{ID: "sg-a1", VpcID: "vpc-a"}, {ID: "sg-a2", VpcID: "vpc-a"}, {ID: "sg-a3", VpcID: "vpc-a"},
			{ID: "sg-a4", VpcID: "vpc-a"}, {ID: "sg-a5", VpcID: "vpc-a"}, {ID: "sg-b", VpcID: "vpc-b"},
		},
		Instances: []api.SeedInstance{
			{ID: "i-a", VSwitchID: "vsw-h", PrivateIP: "172.16.1.10", SecondaryENIs: []api.SeedENI{{ID: "eni-a", PrivateIPs: []string{"172.16.1.50", "172.16.1.51"}}}},
			{ID: "i-a2", VSwitchID: "vsw-i", PrivateIP: "172.16.2.10"},
			{ID: "i-b", VSwitchID: "vsw-b", PrivateIP: "10.1.0.10"},
		},
	})
	return &fixture{env: env, c: env.NLB(t)}
}

// lbRequest is a valid CreateLoadBalancer request in vpc-a over zones h and i.
func lbRequest(name string) *nlb.CreateLoadBalancerRequest {
	r := nlb.CreateCreateLoadBalancerRequest()
	r.LoadBalancerType = "Network"
	r.AddressType = "Intranet"
	r.VpcId = "vpc-a"
	r.LoadBalancerName = name
	r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-h"}, {ZoneId: zoneI, VSwitchId: "vsw-i"}}
	return r
}

func (f *fixture) createLB(t *testing.T, r *nlb.CreateLoadBalancerRequest) string {
	t.Helper()
	resp, err := f.c.CreateLoadBalancer(r)
	noErr(t, err)
	return resp.LoadbalancerId
}

func (f *fixture) getLB(t *testing.T, id string) *nlb.GetLoadBalancerAttributeResponse {
	t.Helper()
	r := nlb.CreateGetLoadBalancerAttributeRequest()
	r.LoadBalancerId = id
	resp, err := f.c.GetLoadBalancerAttribute(r)
	noErr(t, err)
	return resp
}

func (f *fixture) jobStatus(t *testing.T, id string) string {
	t.Helper()
	r := nlb.CreateGetJobStatusRequest()
	r.JobId = id
	resp, err := f.c.GetJobStatus(r)
	noErr(t, err)
	return resp.Status
}

// createSG creates a server group in vpc, of type typ (Instance or Ip).
func (f *fixture) createSG(t *testing.T, name, vpc, typ, proto string, anyPort bool) string {
	t.Helper()
	r := nlb.CreateCreateServerGroupRequest()
	r.ServerGroupName, r.VpcId, r.ServerGroupType, r.Protocol = name, vpc, typ, proto
	if anyPort {
		r.AnyPortEnabled = requests.NewBoolean(true)
	}
	resp, err := f.c.CreateServerGroup(r)
	noErr(t, err)
	return resp.ServerGroupId
}

func (f *fixture) createListener(t *testing.T, lb, sg, proto string, port int) string {
	t.Helper()
	r := nlb.CreateCreateListenerRequest()
	r.LoadBalancerId, r.ServerGroupId, r.ListenerProtocol = lb, sg, proto
	r.ListenerPort = requests.NewInteger(port)
	resp, err := f.c.CreateListener(r)
	noErr(t, err)
	return resp.ListenerId
}
