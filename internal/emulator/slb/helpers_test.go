package slb_test

import (
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// The seeded network every test starts from.
const (
	testVPC      = "vpc-slbtest"
	testVSwitch  = "vsw-slbtest"
	testZone     = "cn-hangzhou-h"
	otherVSwitch = "vsw-slbother"
	instance1    = "i-slbtest1"
	instance2    = "i-slbtest2"
	otherInst    = "i-slbother"
	testENI      = "eni-slbtest"
	testENIIP    = "192.168.0.200"
	seedCert     = "1234567890123456_18f0000000a_1714763408_709981430"
	seedCACert   = "1234567890123456_18f0000000b_1714763409_709981431"
)

func newEnv(t testing.TB) (*emulatortest.Env, *slb.Client) {
	t.Helper()
	env := emulatortest.Start(t)
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{
			{ID: testVPC, CIDRBlock: "192.168.0.0/16", VSwitches: []api.SeedVSwitch{
				{ID: testVSwitch, ZoneID: testZone, CIDRBlock: "192.168.0.0/24"},
			}},
			{ID: "vpc-slbother", CIDRBlock: "10.0.0.0/16", VSwitches: []api.SeedVSwitch{
				{ID: otherVSwitch, ZoneID: testZone, CIDRBlock: "10.0.0.0/24"},
			}},
		},
		Instances: []api.SeedInstance{
			{ID: instance1, VSwitchID: testVSwitch},
			{ID: instance2, VSwitchID: testVSwitch, SecondaryENIs: []api.SeedENI{{ID: testENI, PrivateIPs: []string{testENIIP}}}},
			{ID: otherInst, VSwitchID: otherVSwitch},
		},
		Certificates: []api.SeedCertificate{
			{ID: seedCert, Name: "seeded", Domain: "www.example.com"},
			{ID: seedCACert, Type: "ca", Domain: "ca.example.com"},
		},
	})
	return env, env.SLB(t)
}

// Assertions shared by all product tests live in emulatortest.
var (
	wantErr = emulatortest.WantServerError
	must    = emulatortest.NoError
)

func createLB(t *testing.T, c *slb.Client, mutate func(r *slb.CreateLoadBalancerRequest)) *slb.CreateLoadBalancerResponse {
	t.Helper()
	r := slb.CreateCreateLoadBalancerRequest()
	r.AddressType = "intranet"
	r.VSwitchId = testVSwitch
	r.LoadBalancerSpec = "slb.s1.small"
	if mutate != nil {
		mutate(r)
	}
	resp, err := c.CreateLoadBalancer(r)
	if err != nil {
		t.Fatalf("create load balancer: %v", err)
	}
	return resp
}

func createTCP(t *testing.T, c *slb.Client, lbID string, port int, mutate func(r *slb.CreateLoadBalancerTCPListenerRequest)) {
	t.Helper()
	r := slb.CreateCreateLoadBalancerTCPListenerRequest()
	r.LoadBalancerId = lbID
	r.ListenerPort = requests.NewInteger(port)
	r.BackendServerPort = requests.NewInteger(port)
	r.Bandwidth = requests.NewInteger(-1)
	if mutate != nil {
		mutate(r)
	}
	_, err := c.CreateLoadBalancerTCPListener(r)
	must(t, err)
}

func createGroup(t *testing.T, c *slb.Client, lbID, backends string) string {
	t.Helper()
	r := slb.CreateCreateVServerGroupRequest()
	r.LoadBalancerId = lbID
	r.VServerGroupName = "group"
	r.BackendServers = backends
	resp, err := c.CreateVServerGroup(r)
	must(t, err)
	return resp.VServerGroupId
}

// selfSigned returns a PEM certificate and key for cn.
func selfSigned(t *testing.T, cn string, isCA bool) (string, string) {
	t.Helper()
	return emulatortest.SelfSigned(t, cn, isCA)
}
