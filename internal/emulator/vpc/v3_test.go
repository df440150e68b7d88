package vpc_test

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
	env.Seed(t, &api.Seed{VPCs: []api.SeedVPC{{ID: "vpc-v3", CIDRBlock: "10.0.0.0/8"}}})
	resp, err := env.CallV3(t, "DescribeVpcs", "2016-04-28", map[string]string{"RegionId": env.Region, "VpcId": "vpc-v3"}, nil)
	noErr(t, err)
	body, _ := resp["body"].(map[string]any)
	if fmt.Sprint(body["TotalCount"]) != "1" || fmt.Sprint(body["RequestId"]) == "" || body["RequestId"] == nil {
		t.Fatalf("V3 DescribeVpcs: %v", body)
	}
}
