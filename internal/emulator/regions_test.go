package emulator_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// regionCall is one listing per product, sent in a given region.
type regionCall struct {
	product, action, version string
	call                     func(env *emulatortest.Env, t *testing.T, region string) error
}

func regionCalls() []regionCall {
	do := func(c *sdk.Client, req requests.AcsRequest, resp responses.AcsResponse, region string) error {
		req.GetQueryParams()["RegionId"] = region
		return c.DoAction(req, resp)
	}
	return []regionCall{
		{"ecs", "DescribeInstances", "2014-05-26", func(env *emulatortest.Env, t *testing.T, region string) error {
			return do(&env.ECS(t).Client, ecs.CreateDescribeInstancesRequest(), ecs.CreateDescribeInstancesResponse(), region)
		}},
		{"vpc", "DescribeVpcs", "2016-04-28", func(env *emulatortest.Env, t *testing.T, region string) error {
			return do(&env.VPC(t).Client, vpc.CreateDescribeVpcsRequest(), vpc.CreateDescribeVpcsResponse(), region)
		}},
		{"slb", "DescribeLoadBalancers", "2014-05-15", func(env *emulatortest.Env, t *testing.T, region string) error {
			return do(&env.SLB(t).Client, slb.CreateDescribeLoadBalancersRequest(), slb.CreateDescribeLoadBalancersResponse(), region)
		}},
		{"nlb", "ListLoadBalancers", "2022-04-30", func(env *emulatortest.Env, t *testing.T, region string) error {
			return do(&env.NLB(t).Client, nlb.CreateListLoadBalancersRequest(), nlb.CreateListLoadBalancersResponse(), region)
		}},
	}
}

// TestUnknownRegionsAreRefused checks that a region outside the table
// fails with each product's own code instead of answering empty lists, that
// the table is configurable, and which products require RegionId.
func TestUnknownRegionsAreRefused(t *testing.T) {
	env := emulatortest.StartWith(t, emulator.Config{Regions: []string{"cn-beijing"}})
	want := map[string]struct {
		code     string
		status   int
		required bool
	}{
		"ecs": {"InvalidRegionId.NotFound", http.StatusNotFound, true},
		"vpc": {"InvalidRegionId.NotFound", http.StatusNotFound, true},
		"slb": {"InvalidRegionId.NotFound", http.StatusNotFound, true},
		"nlb": {"UnauthorizedRegion", http.StatusBadRequest, false},
	}
	for _, c := range regionCalls() {
		t.Run(c.product, func(t *testing.T) {
			w := want[c.product]
			for _, region := range []string{"cn-nowhere", "cn-shanghai"} {
				emulatortest.WantServerError(t, c.call(env, t, region), w.code, w.status)
			}
			for _, region := range []string{"cn-beijing", env.Region} {
				if err := c.call(env, t, region); err != nil {
					t.Errorf("configured region %s refused: %v", region, err)
				}
			}
			// The legacy SDK always sends RegionId; a darabonba call need not.
			_, err := env.CallV3(t, c.action, c.version, nil, nil)
			if w.required {
				if err == nil {
					t.Fatalf("%s without RegionId accepted", c.action)
				}
				emulatortest.WantTeaError(t, err, "MissingParameter", http.StatusBadRequest)
			} else if err != nil {
				t.Fatalf("%s without RegionId: %v", c.action, err)
			}
		})
	}
}

// TestDefaultCLBZonesAreInTheZoneTable checks that an internet CLB created
// without zones gets the region's first two zones, as NLB's DescribeZones
// lists them, and that a zone outside the table is refused.
func TestDefaultCLBZonesAreInTheZoneTable(t *testing.T) {
	env := emulatortest.Start(t)
	zreq := nlb.CreateDescribeZonesRequest()
	zones, err := env.NLB(t).DescribeZones(zreq)
	emulatortest.NoError(t, err)
	var ids []string
	for _, z := range zones.Zones {
		ids = append(ids, z.ZoneId)
	}
	create := slb.CreateCreateLoadBalancerRequest()
	create.LoadBalancerName = "zones"
	created, err := env.SLB(t).CreateLoadBalancer(create)
	emulatortest.NoError(t, err)
	attr := slb.CreateDescribeLoadBalancerAttributeRequest()
	attr.LoadBalancerId = created.LoadBalancerId
	got, err := env.SLB(t).DescribeLoadBalancerAttribute(attr)
	emulatortest.NoError(t, err)
	if len(ids) < 2 || got.MasterZoneId != ids[0] || got.SlaveZoneId != ids[1] {
		t.Fatalf("zones %s/%s, want the first two of %v", got.MasterZoneId, got.SlaveZoneId, ids)
	}
	if slices.Contains(ids, "cn-hangzhou-a") {
		t.Fatalf("zone table %v has cn-hangzhou-a", ids)
	}
	create.MasterZoneId = "cn-hangzhou-a"
	_, err = env.SLB(t).CreateLoadBalancer(create)
	emulatortest.WantServerError(t, err, "InvalidParameter", http.StatusBadRequest)
}
