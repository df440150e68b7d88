package slb_test

import (
	"errors"
	"testing"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	"github.com/alibabacloud-go/tea/dara"
	"github.com/alibabacloud-go/tea/tea"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/emulatortest"
)

// TestSignatureV3 calls SLB through the darabonba generic client, which
// signs with ACS3-HMAC-SHA256 and sends the action only in headers.
func TestSignatureV3(t *testing.T) {
	env, c := newEnv(t)
	lb := createLB(t, c, nil)
	oc, err := openapi.NewClient(&openapi.Config{
		AccessKeyId:     dara.String(emulatortest.AccessKeyID),
		AccessKeySecret: dara.String(emulatortest.AccessKeySecret),
		Endpoint:        dara.String(env.Endpoint),
		Protocol:        dara.String("HTTP"),
		RegionId:        dara.String(env.Region),
	})
	must(t, err)
	params := &openapi.Params{
		Action: dara.String("DescribeLoadBalancerAttribute"), Version: dara.String("2014-05-15"),
		Pathname: dara.String("/"), Method: dara.String("POST"), AuthType: dara.String("AK"),
		Style: dara.String("RPC"), ReqBodyType: dara.String("formData"), BodyType: dara.String("json"),
	}
	call := func(id string) (map[string]any, error) {
		req := &openapi.OpenApiRequest{Query: map[string]*string{"RegionId": dara.String(env.Region), "LoadBalancerId": dara.String(id)}}
		return oc.CallApi(params, req, &dara.RuntimeOptions{})
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
