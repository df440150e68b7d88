package ecs_test

import (
	"encoding/json"
	"testing"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	util "github.com/alibabacloud-go/tea-utils/v2/service"
	"github.com/alibabacloud-go/tea/tea"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/emulatortest"
)

// TestV3SignedCall reaches the product through the darabonba generic client,
// which signs with ACS3-HMAC-SHA256 and sends the action only in headers.
func TestV3SignedCall(t *testing.T) {
	env := emulatortest.Start(t)
	env.Seed(t, &api.Seed{VPCs: []api.SeedVPC{{ID: "vpc-v3", CIDRBlock: "10.0.0.0/8", VSwitches: []api.SeedVSwitch{{ID: "vsw-v3", ZoneID: "cn-hangzhou-h", CIDRBlock: "10.1.0.0/16"}}}}, Instances: []api.SeedInstance{{ID: "i-v3", VSwitchID: "vsw-v3"}}})
	client, err := openapi.NewClient(&openapi.Config{
		AccessKeyId:     tea.String(emulatortest.AccessKeyID),
		AccessKeySecret: tea.String(emulatortest.AccessKeySecret),
		Endpoint:        tea.String(env.Endpoint),
		Protocol:        tea.String("HTTP"),
		RegionId:        tea.String(env.Region),
	})
	if err != nil {
		t.Fatal(err)
	}
	params := &openapi.Params{
		Action: tea.String("DescribeInstances"), Version: tea.String("2014-05-26"), Pathname: tea.String("/"), Method: tea.String("POST"),
		AuthType: tea.String("AK"), Style: tea.String("RPC"), ReqBodyType: tea.String("formData"), BodyType: tea.String("json"),
	}
	req := &openapi.OpenApiRequest{Query: map[string]*string{"RegionId": tea.String(env.Region), "InstanceIds": tea.String(`["i-v3"]`)}}
	resp, err := client.CallApi(params, req, &util.RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(resp["body"])
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		TotalCount int
		RequestId  string
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	if body.TotalCount != 1 || body.RequestId == "" {
		t.Fatalf("V3 DescribeInstances: %s", raw)
	}
}
