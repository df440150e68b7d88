package nlb_test

import (
	"errors"
	"testing"

	sdknlb "github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestReuseAcrossVPCsIsARefusal: the refusal of an NLB of another VPC is a
// reuse refusal (*service.RefusedError, reason ReuseLoadBalancerRefused),
// which the controller reports once as a Warning and does not retry, as
// it does a CLB of another VPC; not a failed sync retried with backoff
// (seen in the sandbox: SyncLoadBalancerFailed and two NLB reads per
// retry).
func TestReuseAcrossVPCsIsARefusal(t *testing.T) {
	f := newFixture(t)
	f.env.Seed(t, &api.Seed{VPCs: []api.SeedVPC{{ID: "vpc-other", CIDRBlock: "172.16.0.0/16", VSwitches: []api.SeedVSwitch{
		{ID: "vsw-oh", ZoneID: zoneH, CIDRBlock: "172.16.1.0/24"},
		{ID: "vsw-oi", ZoneID: zoneI, CIDRBlock: "172.16.2.0/24"},
	}}}})
	r := sdknlb.CreateCreateLoadBalancerRequest()
	r.AddressType, r.VpcId, r.LoadBalancerName = "Intranet", "vpc-other", "other-vpc-lb"
	r.ZoneMappings = &[]sdknlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-oh"}, {ZoneId: zoneI, VSwitchId: "vsw-oi"}}
	resp, err := f.sdk.CreateLoadBalancer(r)
	emulatortest.NoError(t, err)
	lbID := resp.LoadbalancerId
	emulatortest.Eventually(t, "LB Active", func() bool { return f.getLB(lbID).LoadBalancerStatus == "Active" })

	m := f.mark()
	_, err = ensureBound(f.ctx, f.p, request(t, svc("cross-vpc", map[string]string{"id": lbID}), instances[:2], nil))
	var refused *service.RefusedError
	if !errors.As(err, &refused) || refused.Reason != service.EventReuseRefused {
		t.Fatalf("Ensure on an NLB of another VPC: %T %v; want a *service.RefusedError with reason %s", err, err, service.EventReuseRefused)
	}
	if _, writes, by := f.callsSince(m); writes != 0 {
		t.Fatalf("writes before the refusal: %v", by)
	}
}
