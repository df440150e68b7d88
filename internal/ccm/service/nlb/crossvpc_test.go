package nlb_test

import (
	"strings"
	"testing"

	sdknlb "github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestReuseAcrossVPCs: reusing an NLB of another VPC than the cluster's is
// refused before any write when the server groups would be Instance groups
// (they take only servers of the NLB's VPC), and allowed with
// server-group-type ip, whose groups in the NLB's VPC take the Nodes'
// addresses.
func TestReuseAcrossVPCs(t *testing.T) {
	f := newFixture(t)
	lbID := otherVPCLoadBalancer(t, f)

	refused := svc("cross-vpc", map[string]string{"id": lbID, "force-override-listeners": "true"})
	m := f.mark()
	_, err := ensureBound(f.ctx, f.p, request(t, refused, instances[:2], nil))
	if err == nil || !strings.Contains(err.Error(), "vpc-other") || !strings.Contains(err.Error(), vpcID) || !strings.Contains(err.Error(), "server-group-type") {
		t.Fatalf("Instance groups on an NLB of another VPC: %v", err)
	}
	if _, writes, by := f.callsSince(m); writes != 0 {
		t.Fatalf("writes before the refusal: %v", by)
	}

	allowed := svc("cross-vpc-ip", map[string]string{"id": lbID, "force-override-listeners": "true", "server-group-type": "ip"})
	// The NLB's zones are its own VPC's: no zone-maps.
	delete(allowed.Annotations, annotations.Key("zone-maps"))
	f.ensure(request(t, allowed, instances[:2], nil))
	groups := f.groupsOf(allowed)
	if len(groups) != 1 || groups[0].VpcId != "vpc-other" || groups[0].ServerGroupType != "Ip" {
		t.Fatalf("groups %+v, want one Ip group in vpc-other", groups)
	}
	if got := f.servers(groups[0].ServerGroupId); len(got) != 2 {
		t.Errorf("servers %v, want the two Nodes' addresses", got)
	}
	if l := f.listeners(lbID); len(l) != 1 || l[0].ServerGroupId != groups[0].ServerGroupId {
		t.Errorf("listeners %+v", l)
	}
}

// otherVPCLoadBalancer seeds a second VPC with vSwitches in the fixture's
// zones and returns an Active NLB made in it by the SDK, as a user would.
func otherVPCLoadBalancer(t *testing.T, f *fixture) string {
	t.Helper()
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
	return lbID
}
