package vpc_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestLegacyStateClientToken restores a VPC state part in the format written
// before ClientToken records moved to package api, and checks a retry with
// the recorded token still answers with the recorded VPC, while other
// parameters under that token are still refused.
func TestLegacyStateClientToken(t *testing.T) {
	env := emulatortest.Start(t)
	c := env.VPC(t)
	legacy := fmt.Sprintf(`{
		"vpcs": {"vpc-legacy": {"id": "vpc-legacy", "name": "old", "description": "", "cidrBlock": "192.168.0.0/16",
			"regionId": %[1]q, "vRouterId": "vrt-legacy", "systemRouteTableId": "vtb-legacy", "isDefault": false,
			"createdAt": "2024-01-01T00:00:00Z", "seq": 1, "routeBusyUntil": "0001-01-01T00:00:00Z"}},
		"vswitches": {},
		"routeTables": {"vtb-legacy": {"id": "vtb-legacy", "name": "", "vpcId": "vpc-legacy", "vRouterId": "vrt-legacy",
			"type": "System", "regionId": %[1]q, "createdAt": "2024-01-01T00:00:00Z", "seq": 2}},
		"routeEntries": {},
		"eips": {},
		"tokens": {"CreateVpc/tok-legacy": {"ids": ["vpc-legacy"],
			"fingerprint": "CidrBlock=192.168.0.0/16&ClientToken=tok-legacy&RegionId=%[1]s&VpcName=old&"}},
		"seq": 2
	}`, env.Region)
	noErr(t, env.Emulator.Store.Restore(map[string]json.RawMessage{"vpc": json.RawMessage(legacy)}))

	req := vpc.CreateCreateVpcRequest()
	req.CidrBlock, req.VpcName, req.ClientToken = "192.168.0.0/16", "old", "tok-legacy"
	resp, err := c.CreateVpc(req)
	noErr(t, err)
	if resp.VpcId != "vpc-legacy" || resp.VRouterId != "vrt-legacy" || resp.RouteTableId != "vtb-legacy" {
		t.Fatalf("legacy token not replayed: %+v", resp)
	}
	req.VpcName = "new"
	_, err = c.CreateVpc(req)
	wantErr(t, err, "IdempotentParameterMismatch", http.StatusBadRequest)
}
