package slb_test

import (
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
)

// TestStateRoundTrip dumps and restores the store, as persistence does,
// and checks the SLB resources survive with their relations.
func TestStateRoundTrip(t *testing.T) {
	env, c := newEnv(t)
	lb := createLB(t, c, func(r *slb.CreateLoadBalancerRequest) {
		r.Tag = &[]slb.CreateLoadBalancerTag{{Key: "k", Value: "v"}}
	}).LoadBalancerId
	gid := createGroup(t, c, lb, `[{"ServerId":"`+instance1+`","Port":80}]`)
	createTCP(t, c, lb, 80, func(r *slb.CreateLoadBalancerTCPListenerRequest) { r.VServerGroupId = gid })

	dump, err := env.Emulator.Store.Dump()
	must(t, err)
	must(t, env.Emulator.Store.Reset())
	if all, err := c.DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest()); err != nil || all.TotalCount != 0 {
		t.Fatalf("after reset: %v %+v", err, all)
	}
	must(t, env.Emulator.Store.Restore(dump))

	d := slb.CreateDescribeLoadBalancerTCPListenerAttributeRequest()
	d.LoadBalancerId, d.ListenerPort = lb, requests.NewInteger(80)
	attr, err := c.DescribeLoadBalancerTCPListenerAttribute(d)
	must(t, err)
	if attr.VServerGroupId != gid {
		t.Fatalf("listener lost its group: %+v", attr)
	}
	all, err := c.DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
	must(t, err)
	if all.TotalCount != 1 || len(all.LoadBalancers.LoadBalancer[0].Tags.Tag) != 1 {
		t.Fatalf("after restore: %+v", all)
	}
	// New resources still get fresh addresses and the old ones keep theirs.
	createLB(t, c, nil)
}
