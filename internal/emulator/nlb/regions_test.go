package nlb_test

import (
	"strings"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
)

func TestDescribeZonesAndRegions(t *testing.T) {
	f := newFixture(t)
	z, err := f.c.DescribeZones(nlb.CreateDescribeZonesRequest())
	noErr(t, err)
	var zones []string
	for _, zone := range z.Zones {
		zones = append(zones, zone.ZoneId)
	}
	if !strings.Contains(strings.Join(zones, ","), zoneH) || len(zones) < 2 {
		t.Fatalf("zones: %v", zones)
	}
	r, err := f.c.DescribeRegions(nlb.CreateDescribeRegionsRequest())
	noErr(t, err)
	found := false
	for _, reg := range r.Regions {
		if reg.RegionId == "cn-hangzhou" {
			found = reg.RegionEndpoint == "nlb.cn-hangzhou.aliyuncs.com" && reg.LocalName != ""
		}
	}
	if !found {
		t.Fatalf("regions: %+v", r.Regions)
	}
}
