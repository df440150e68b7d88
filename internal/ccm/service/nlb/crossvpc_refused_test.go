package nlb_test

import (
	"errors"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// TestReuseAcrossVPCsIsARefusal: the refusal of an NLB of another VPC is a
// reuse refusal (*service.RefusedError, reason ReuseLoadBalancerRefused),
// which the controller reports once as a Warning and does not retry, as
// it does a CLB of another VPC; not a failed sync retried with backoff
// (seen in the sandbox: SyncLoadBalancerFailed and two NLB reads per
// retry).
func TestReuseAcrossVPCsIsARefusal(t *testing.T) {
	f := newFixture(t)
	lbID := otherVPCLoadBalancer(t, f)

	m := f.mark()
	_, err := ensureBound(f.ctx, f.p, request(t, svc("cross-vpc", map[string]string{"id": lbID}), instances[:2], nil))
	var refused *service.RefusedError
	if !errors.As(err, &refused) || refused.Reason != service.EventReuseRefused {
		t.Fatalf("Ensure on an NLB of another VPC: %T %v; want a *service.RefusedError with reason %s", err, err, service.EventReuseRefused)
	}
	if _, writes, by := f.callsSince(m); writes != 0 {
		t.Fatalf("writes before the refusal: %v", by)
	}
}
