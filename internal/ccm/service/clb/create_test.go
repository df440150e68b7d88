package clb_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestCreatedLoadBalancerVanishes: the created load balancer is not read
// back, so one that is gone by the time the sync uses it (deleted right
// after its create here; a ClientToken replaying a load balancer deleted
// since looks the same) shows as the first group create failing with
// InvalidLoadBalancerId.NotFound. The sync then creates anew, with another
// token (the same one would replay the vanished load balancer), and
// converges on the new one in the same pass.
func TestCreatedLoadBalancerVanishes(t *testing.T) {
	f := newACLFixture(t)
	s := aclService("vanish")
	s.Annotations[annotations.Key("delete-protection")] = "off"
	// Time to delete the load balancer before the sync's first use of it.
	rule, err := f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "CreateVServerGroup", Count: 1, Latency: gateway.Duration(500 * time.Millisecond)})
	emulatortest.NoError(t, err)
	defer f.env.Emulator.Gateway.RemoveFault(rule.ID)

	deleted := make(chan string, 1)
	go func() {
		tags, _ := json.Marshal([]map[string]string{{"TagKey": naming.TagKeyDefaultName, "TagValue": naming.DefaultLBName(s)}})
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			r := slb.CreateDescribeLoadBalancersRequest()
			r.Tags = string(tags)
			resp, err := f.sdk.DescribeLoadBalancers(r)
			if err != nil || len(resp.LoadBalancers.LoadBalancer) == 0 {
				continue
			}
			id := resp.LoadBalancers.LoadBalancer[0].LoadBalancerId
			d := slb.CreateDeleteLoadBalancerRequest()
			d.LoadBalancerId = id
			if _, err := f.sdk.DeleteLoadBalancer(d); err == nil {
				deleted <- id
				return
			}
		}
		deleted <- ""
	}()

	res, err := f.ensure(s, "")
	emulatortest.NoError(t, err)
	gone := <-deleted
	if gone == "" {
		t.Fatal("the created load balancer was never deleted")
	}
	if res.LoadBalancerID == gone {
		t.Fatalf("the sync reports the deleted load balancer %s", gone)
	}
	creates := 0
	for _, r := range f.env.Emulator.Requests(gateway.RequestFilter{Product: "slb"}) {
		if r.Action == "CreateLoadBalancer" {
			creates++
		}
	}
	if creates != 2 {
		t.Errorf("%d CreateLoadBalancer calls, want 2", creates)
	}
	r := slb.CreateDescribeLoadBalancersRequest()
	resp, err := f.sdk.DescribeLoadBalancers(r)
	emulatortest.NoError(t, err)
	if n := len(resp.LoadBalancers.LoadBalancer); n != 1 || resp.LoadBalancers.LoadBalancer[0].LoadBalancerId != res.LoadBalancerID {
		t.Fatalf("load balancers %+v, want only %s", resp.LoadBalancers.LoadBalancer, res.LoadBalancerID)
	}
	lr := slb.CreateDescribeLoadBalancerListenersRequest()
	lr.LoadBalancerId = &[]string{res.LoadBalancerID}
	ls, err := f.sdk.DescribeLoadBalancerListeners(lr)
	emulatortest.NoError(t, err)
	if len(ls.Listeners) != 1 || ls.Listeners[0].ListenerPort != 80 || ls.Listeners[0].VServerGroupId == "" {
		t.Errorf("listeners %+v on the new load balancer", ls.Listeners)
	}
}
