package gateway_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestLostResponseCreateLoadBalancer: with a drop-after rule installed
// through the control API, the official SDK's CreateLoadBalancer fails with
// a transport error, yet the LB exists and the request log shows the call
// as applied: the case a blind replay of a create would duplicate.
func TestLostResponseCreateLoadBalancer(t *testing.T) {
	env := emulatortest.Start(t)
	rule := []byte(`{"product":"slb","action":"CreateLoadBalancer","drop":true,"after":true,"count":1}`)
	resp, err := http.Post("http://"+env.Endpoint+"/_emulator/faults", "application/json", bytes.NewReader(rule))
	emulatortest.NoError(t, err)
	var added gateway.FaultRule
	err = json.NewDecoder(resp.Body).Decode(&added)
	_ = resp.Body.Close()
	emulatortest.NoError(t, err)
	if resp.StatusCode != http.StatusCreated || !added.Drop || !added.After {
		t.Fatalf("add rule: %d %+v", resp.StatusCode, added)
	}

	c := env.SLB(t)
	req := slb.CreateCreateLoadBalancerRequest()
	req.LoadBalancerName = "lost-response"
	_, err = c.CreateLoadBalancer(req)
	var se *sdkerrors.ServerError
	if err == nil || errors.As(err, &se) {
		t.Fatalf("want a transport error, got %v", err)
	}

	desc := slb.CreateDescribeLoadBalancersRequest()
	desc.LoadBalancerName = "lost-response"
	lbs, err := c.DescribeLoadBalancers(desc)
	emulatortest.NoError(t, err)
	if n := len(lbs.LoadBalancers.LoadBalancer); n != 1 {
		t.Fatalf("%d load balancers after a lost response, want 1: the call must be applied", n)
	}

	recs := env.Emulator.Requests(gateway.RequestFilter{Product: "slb", Action: "CreateLoadBalancer"})
	if len(recs) != 1 {
		t.Fatalf("%d CreateLoadBalancer calls logged, want 1", len(recs))
	}
	if r := recs[0]; r.Code != gateway.CodeOK || r.Status != http.StatusOK || !r.ResponseDropped || r.Fault != added.ID {
		t.Fatalf("log record %+v", r)
	}
	if rules := env.Emulator.Gateway.Faults(); len(rules) != 0 {
		t.Fatalf("a count-1 rule is still installed: %+v", rules)
	}
}
