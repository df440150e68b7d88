package nlb_test

import (
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestDeleteLostResponseDuringTheJob: with the cloud's job time, the
// replay of a DeleteLoadBalancer whose answer was lost finds the load
// balancer locked by its own deletion job; the release must still finish
// in one pass (the replay carries the first call's ClientToken and gets its
// job) and leave nothing behind.
func TestDeleteLostResponseDuringTheJob(t *testing.T) {
	f := newFixture(t)
	req := f.ensureNew(request(t, svc("lost-delete-job", nil), instances, nil))
	lbID := req.LoadBalancerID
	emulatortest.NoError(t, f.env.Emulator.Store.Settings().SetDelay(store.DelayNLBJob, 500*time.Millisecond))
	_, err := f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "nlb", Action: "DeleteLoadBalancer", Drop: true, After: true, Count: 1})
	emulatortest.NoError(t, err)
	if _, err := deleteBound(f.ctx, f.p, req); err != nil {
		t.Fatalf("release: %v", err)
	}
	if n := len(f.env.Emulator.Requests(gateway.RequestFilter{Product: "nlb", Action: "DeleteLoadBalancer"})); n != 2 {
		t.Errorf("DeleteLoadBalancer sent %d times, want the lost one and its replay", n)
	}
	for _, r := range f.env.Emulator.Requests(gateway.RequestFilter{Product: "nlb", Action: "DeleteLoadBalancer"}) {
		if r.Code != "OK" {
			t.Errorf("DeleteLoadBalancer answered %s", r.Code)
		}
	}
	if f.lbExists(lbID) {
		t.Error("load balancer still exists after the release")
	}
}
