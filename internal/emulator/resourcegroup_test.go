package emulator_test

import (
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestResourceGroupDefaultIsSharedAcrossProducts: every product files a
// resource created without ResourceGroupId under the account's one default
// group, keeps a group the request names, and reports it on read.
func TestResourceGroupDefaultIsSharedAcrossProducts(t *testing.T) {
	env := emulatortest.Start(t)
	env.Seed(t, &api.Seed{VPCs: []api.SeedVPC{{ID: "vpc-rg", CIDRBlock: "172.16.0.0/16", VSwitches: []api.SeedVSwitch{
		{ID: "vsw-rg-h", ZoneID: "cn-hangzhou-h", CIDRBlock: "172.16.1.0/24"},
		{ID: "vsw-rg-i", ZoneID: "cn-hangzhou-i", CIDRBlock: "172.16.2.0/24"},
	}}}})
	cases := []struct {
		name string
		// create makes a resource in group rg ("" = none named) and returns
		// the group its Describe/List/Get response reports.
		create func(t *testing.T, rg string) string
	}{
		{"vpc", func(t *testing.T, rg string) string {
			r := vpc.CreateCreateVpcRequest()
			r.CidrBlock, r.ResourceGroupId = "10.0.0.0/16", rg
			out, err := env.VPC(t).CreateVpc(r)
			emulatortest.NoError(t, err)
			d := vpc.CreateDescribeVpcsRequest()
			d.VpcId = out.VpcId
			got, err := env.VPC(t).DescribeVpcs(d)
			emulatortest.NoError(t, err)
			if out.ResourceGroupId != got.Vpcs.Vpc[0].ResourceGroupId {
				t.Fatalf("CreateVpc says %q, DescribeVpcs %q", out.ResourceGroupId, got.Vpcs.Vpc[0].ResourceGroupId)
			}
			return got.Vpcs.Vpc[0].ResourceGroupId
		}},
		{"ecs security group", func(t *testing.T, rg string) string {
			r := ecs.CreateCreateSecurityGroupRequest()
			r.VpcId, r.ResourceGroupId = "vpc-rg", rg
			out, err := env.ECS(t).CreateSecurityGroup(r)
			emulatortest.NoError(t, err)
			d := ecs.CreateDescribeSecurityGroupsRequest()
			d.SecurityGroupId = out.SecurityGroupId
			got, err := env.ECS(t).DescribeSecurityGroups(d)
			emulatortest.NoError(t, err)
			return got.SecurityGroups.SecurityGroup[0].ResourceGroupId
		}},
		{"slb load balancer", func(t *testing.T, rg string) string {
			r := slb.CreateCreateLoadBalancerRequest()
			r.AddressType, r.VpcId, r.VSwitchId, r.ResourceGroupId = "intranet", "vpc-rg", "vsw-rg-h", rg
			out, err := env.SLB(t).CreateLoadBalancer(r)
			emulatortest.NoError(t, err)
			d := slb.CreateDescribeLoadBalancerAttributeRequest()
			d.LoadBalancerId = out.LoadBalancerId
			got, err := env.SLB(t).DescribeLoadBalancerAttribute(d)
			emulatortest.NoError(t, err)
			return got.ResourceGroupId
		}},
		{"nlb load balancer", func(t *testing.T, rg string) string {
			r := nlb.CreateCreateLoadBalancerRequest()
			r.AddressType, r.VpcId, r.ResourceGroupId = "Intranet", "vpc-rg", rg
			r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: "cn-hangzhou-h", VSwitchId: "vsw-rg-h"}, {ZoneId: "cn-hangzhou-i", VSwitchId: "vsw-rg-i"}}
			out, err := env.NLB(t).CreateLoadBalancer(r)
			emulatortest.NoError(t, err)
			d := nlb.CreateGetLoadBalancerAttributeRequest()
			d.LoadBalancerId = out.LoadbalancerId
			got, err := env.NLB(t).GetLoadBalancerAttribute(d)
			emulatortest.NoError(t, err)
			return got.ResourceGroupId
		}},
		{"nlb server group", func(t *testing.T, rg string) string {
			r := nlb.CreateCreateServerGroupRequest()
			r.ServerGroupName, r.VpcId, r.Protocol, r.ResourceGroupId = "sg", "vpc-rg", "TCP", rg
			out, err := env.NLB(t).CreateServerGroup(r)
			emulatortest.NoError(t, err)
			d := nlb.CreateListServerGroupsRequest()
			d.ServerGroupIds = &[]string{out.ServerGroupId}
			got, err := env.NLB(t).ListServerGroups(d)
			emulatortest.NoError(t, err)
			return got.ServerGroups[0].ResourceGroupId
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.create(t, ""); got != api.DefaultResourceGroupID {
				t.Errorf("no group named: reported %q, want the default %q", got, api.DefaultResourceGroupID)
			}
			if got := tc.create(t, "rg-acfmteam"); got != "rg-acfmteam" {
				t.Errorf("rg-acfmteam named: reported %q", got)
			}
		})
	}
}
