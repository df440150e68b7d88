package slb_test

import (
	"errors"
	"testing"

	"github.com/alibabacloud-go/tea/tea"
)

// TestSignatureV3 calls SLB through the darabonba generic client, which
// signs with ACS3-HMAC-SHA256 and sends the action only in headers.
func TestSignatureV3(t *testing.T) {
	env, c := newEnv(t)
	lb := createLB(t, c, nil)
	call := func(id string) (map[string]any, error) {
		return env.CallV3(t, "DescribeLoadBalancerAttribute", "2014-05-15", map[string]string{"RegionId": env.Region, "LoadBalancerId": id}, nil)
	}
	res, err := call(lb.LoadBalancerId)
	must(t, err)
	body, _ := res["body"].(map[string]any)
	if body["LoadBalancerId"] != lb.LoadBalancerId || body["Address"] != lb.Address {
		t.Fatalf("unexpected body %v", body)
	}
	_, err = call("lb-missing")
	var se *tea.SDKError
	if !errors.As(err, &se) || tea.StringValue(se.Code) != "InvalidLoadBalancerId.NotFound" || tea.IntValue(se.StatusCode) != 404 {
		t.Fatalf("want InvalidLoadBalancerId.NotFound/404, got %v", err)
	}
}
