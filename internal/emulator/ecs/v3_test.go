package ecs_test

import (
	"fmt"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestV3SignedCall reaches the product through the darabonba generic client,
// which signs with ACS3-HMAC-SHA256 and sends the action only in headers.
func TestV3SignedCall(t *testing.T) {
	env := emulatortest.Start(t)
	env.Seed(t, &api.Seed{VPCs: []api.SeedVPC{{ID: "vpc-v3", CIDRBlock: "10.0.0.0/8", VSwitches: []api.SeedVSwitch{{ID: "vsw-v3", ZoneID: "cn-hangzhou-h", CIDRBlock: "10.1.0.0/16"}}}}, Instances: []api.SeedInstance{{ID: "i-v3", VSwitchID: "vsw-v3"}}})
	resp, err := env.CallV3(t, "DescribeInstances", "2014-05-26", map[string]string{"RegionId": env.Region, "InstanceIds": `["i-v3"]`}, nil)
	noErr(t, err)
	body, _ := resp["body"].(map[string]any)
	if fmt.Sprint(body["TotalCount"]) != "1" || fmt.Sprint(body["RequestId"]) == "" || body["RequestId"] == nil {
		t.Fatalf("V3 DescribeInstances: %v", body)
	}
}
