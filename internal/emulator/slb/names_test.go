package slb_test

import (
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
)

// TestLoadBalancerNameRule follows the emulator's slb:LoadBalancerName
// fact: slashes are allowed (the Terraform provider's
// alicloud_slb_load_balancer docs), a leading digit or a space is not.
func TestLoadBalancerNameRule(t *testing.T) {
	_, c := newEnv(t)
	lb := createLB(t, c, func(r *slb.CreateLoadBalancerRequest) { r.LoadBalancerName = "team/web-1" })
	for _, bad := range []string{"1web", "web lb", "/web"} {
		r := slb.CreateSetLoadBalancerNameRequest()
		r.LoadBalancerId, r.LoadBalancerName = lb.LoadBalancerId, bad
		_, err := c.SetLoadBalancerName(r)
		wantErr(t, err, "InvalidParameter", 400)
	}
	r := slb.CreateSetLoadBalancerNameRequest()
	r.LoadBalancerId, r.LoadBalancerName = lb.LoadBalancerId, "team/api"
	_, err := c.SetLoadBalancerName(r)
	must(t, err)
}
