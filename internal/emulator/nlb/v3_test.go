package nlb_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/alibabacloud-go/tea/tea"
)

// TestSignatureV3 drives NLB with the darabonba generic client, which signs
// with ACS3-HMAC-SHA256 and sends the parameters in the form body, as the
// existing CCM does.
func TestSignatureV3(t *testing.T) {
	f := newFixture(t)
	call := func(action string, body map[string]any) (map[string]any, error) {
		return f.env.CallV3(t, action, "2022-04-30", nil, body)
	}
	out, err := call("CreateLoadBalancer", map[string]any{
		"AddressType": "Intranet", "VpcId": "vpc-a", "LoadBalancerName": "v3",
		"ZoneMappings": []map[string]any{{"ZoneId": zoneH, "VSwitchId": "vsw-h"}, {"ZoneId": zoneI, "VSwitchId": "vsw-i"}},
	})
	noErr(t, err)
	body, _ := out["body"].(map[string]any)
	id, _ := body["LoadbalancerId"].(string)
	if !strings.HasPrefix(id, "nlb-") {
		t.Fatalf("V3 CreateLoadBalancer: %v", out)
	}
	out, err = call("GetLoadBalancerAttribute", map[string]any{"LoadBalancerId": id})
	noErr(t, err)
	body, _ = out["body"].(map[string]any)
	if body["LoadBalancerName"] != "v3" || body["VpcId"] != "vpc-a" {
		t.Fatalf("V3 GetLoadBalancerAttribute: %v", body)
	}
	_, err = call("GetLoadBalancerAttribute", map[string]any{"LoadBalancerId": "nlb-none"})
	var se *tea.SDKError
	if !asSDKError(err, &se) || tea.IntValue(se.StatusCode) != http.StatusNotFound || tea.StringValue(se.Code) != "ResourceNotFound.loadBalancer" {
		t.Fatalf("V3 not found: %v", err)
	}
}

func asSDKError(err error, target **tea.SDKError) bool {
	se, ok := err.(*tea.SDKError)
	if ok {
		*target = se
	}
	return ok
}
