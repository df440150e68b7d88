package cloud_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestCallSendsTheRequestsAction: Call names the product and action after
// the typed request, decodes the typed answer, and classifies a failure as
// Do does.
func TestCallSendsTheRequestsAction(t *testing.T) {
	env := emulatortest.Start(t)
	c := newClient(t, env, cloud.Options{MaxAttempts: 2})
	resp, err := cloud.Call(context.Background(), c, slb.CreateDescribeLoadBalancersRequest(), slb.CreateDescribeLoadBalancersResponse)
	if err != nil {
		t.Fatal(err)
	}
	if resp.RequestId == "" {
		t.Error("the answer was not decoded into the typed response")
	}
	if n := env.Emulator.Calls("slb", "DescribeLoadBalancers"); n != 1 {
		t.Errorf("%d DescribeLoadBalancers calls, want 1", n)
	}
	if _, err := env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "DescribeLoadBalancers", Count: 1,
		Error: &gateway.FaultError{Code: "InvalidParameter", Status: 400, Message: "injected"}}); err != nil {
		t.Fatal(err)
	}
	_, err = cloud.Call(context.Background(), c, slb.CreateDescribeLoadBalancersRequest(), slb.CreateDescribeLoadBalancersResponse)
	var ce *cloud.Error
	if !errors.As(err, &ce) || ce.Product != cloud.SLB || ce.Action != "DescribeLoadBalancers" || ce.Class != cloud.ClassInvalid {
		t.Errorf("err = %v, want a classified slb DescribeLoadBalancers error", err)
	}
}

// TestCallHonoursTheClientToken: a create whose outcome is unknown is sent
// again only when its request carries a ClientToken, with no option needed.
func TestCallHonoursTheClientToken(t *testing.T) {
	for _, tc := range []struct {
		name      string
		token     string
		wantCalls int
	}{
		{"without a token the create is not replayed", "", 1},
		{"with a token the create is replayed", "token-1", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := emulatortest.Start(t)
			c := newClient(t, env, cloud.Options{MaxAttempts: 3})
			if _, err := env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "CreateLoadBalancer", Count: 1,
				Error: &gateway.FaultError{Code: "ServiceUnavailable", Status: 503, Message: "injected"}}); err != nil {
				t.Fatal(err)
			}
			r := slb.CreateCreateLoadBalancerRequest()
			r.LoadBalancerName, r.AddressType, r.ClientToken = "call-test", "internet", tc.token
			_, _ = cloud.Call(context.Background(), c, r, slb.CreateCreateLoadBalancerResponse)
			if n := env.Emulator.Calls("slb", "CreateLoadBalancer"); n != tc.wantCalls {
				t.Errorf("%d CreateLoadBalancer calls, want %d", n, tc.wantCalls)
			}
		})
	}
}
