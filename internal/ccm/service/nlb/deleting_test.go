package nlb_test

import (
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	sdknlb "github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestDeleteWhileAnEarlierDeletionRuns: a leader killed after its
// DeleteLoadBalancer leaves the load balancer Deleting for the job's time;
// the next leader's release finds it so, must wait for that job (its
// server groups stay in use until it ends) and then finish in the same
// pass, deleting each server group once.
func TestDeleteWhileAnEarlierDeletionRuns(t *testing.T) {
	f := newFixture(t)
	s := svc("deleting", nil)
	req := f.ensureNew(request(t, s, instances, nil))
	lbID := req.LoadBalancerID
	groups := len(f.groupsOf(s))
	if groups == 0 {
		t.Fatal("the Service has no server groups")
	}
	emulatortest.NoError(t, f.env.Emulator.Store.Settings().SetDelay(store.DelayNLBJob, 500*time.Millisecond))
	// The earlier leader's calls: protection off, then the deletion whose
	// job it did not see end.
	p := sdknlb.CreateUpdateLoadBalancerProtectionRequest()
	p.LoadBalancerId, p.DeletionProtectionEnabled, p.ModificationProtectionStatus = lbID, requests.NewBoolean(false), "NonProtection"
	_, err := f.sdk.UpdateLoadBalancerProtection(p)
	emulatortest.NoError(t, err)
	r := sdknlb.CreateDeleteLoadBalancerRequest()
	r.LoadBalancerId = lbID
	_, err = f.sdk.DeleteLoadBalancer(r)
	emulatortest.NoError(t, err)
	if st := f.getLB(lbID).LoadBalancerStatus; st != "Deleting" {
		t.Fatalf("load balancer %s after its deletion call, want Deleting", st)
	}
	start := f.mark()
	if _, err := deleteBound(f.ctx, f.p, req); err != nil {
		t.Fatalf("release while the deletion job runs: %v", err)
	}
	if f.lbExists(lbID) {
		t.Error("load balancer still exists after the release")
	}
	if left := f.groupsOf(s); len(left) != 0 {
		t.Errorf("%d server groups left after the release", len(left))
	}
	_, _, byAction := f.callsSince(start)
	if n := byAction["DeleteServerGroup"]; n != groups {
		t.Errorf("DeleteServerGroup sent %d times for %d groups (all writes %v)", n, groups, byAction)
	}
	t.Logf("writes of the release: %v", byAction)
}
