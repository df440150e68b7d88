package nlb_test

import (
	"net/http"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
)

// TestStateRoundTrip checks that the NLB state survives the JSON dump and
// restore that --state persistence relies on.
func TestStateRoundTrip(t *testing.T) {
	f := newFixture(t)
	lb := f.createLB(t, lbRequest("kept"))
	sg := f.createSG(t, "grp", "vpc-a", "Instance", "TCP", false)
	lsn := f.createListener(t, lb, sg, "TCP", 80)
	st := f.env.Emulator.Store
	dump, err := st.Dump()
	noErr(t, err)
	noErr(t, st.Reset())
	g := nlb.CreateGetLoadBalancerAttributeRequest()
	g.LoadBalancerId = lb
	_, err = f.c.GetLoadBalancerAttribute(g)
	wantErr(t, err, "ResourceNotFound.loadBalancer", http.StatusNotFound)
	noErr(t, st.Restore(dump))
	if got := f.getLB(t, lb); got.LoadBalancerName != "kept" || got.LoadBalancerStatus != "Active" {
		t.Fatalf("restored LB: %+v", got)
	}
	if got := f.getListener(t, lsn); got.ServerGroupId != sg || got.ListenerStatus != "Running" {
		t.Fatalf("restored listener: %+v", got)
	}
}
