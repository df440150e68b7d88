package nlb_test

import (
	"strings"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// TestCreateFailedLoadBalancer: when the cloud's create job fails, the
// load balancer ends CreateFailed; the pass that created it says so at
// once instead of writing listeners to it (which the cloud refuses with
// IncorrectStatus, retried until the pass gives up), and so does the next.
func TestCreateFailedLoadBalancer(t *testing.T) {
	f := newFixture(t)
	_, err := f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "nlb", Action: "CreateLoadBalancer", Count: 1, FailJob: true})
	if err != nil {
		t.Fatal(err)
	}
	req := request(t, svc("failing", map[string]string{"address-type": "intranet"}), instances, nil)
	start := f.mark()
	_, err = ensureBound(f.ctx, f.p, req)
	if err == nil || !strings.Contains(err.Error(), "CreateFailed") {
		t.Fatalf("Ensure over a failed create: %v, want an error naming CreateFailed", err)
	}
	_, _, byAction := f.callsSince(start)
	for _, a := range []string{"CreateListener", "UpdateLoadBalancerAttribute", "CreateLoadBalancer"} {
		if want := map[string]int{"CreateLoadBalancer": 1}[a]; byAction[a] != want {
			t.Errorf("%s calls = %d, want %d (all calls %v)", a, byAction[a], want, byAction)
		}
	}
	_, err = ensureBound(f.ctx, f.p, req)
	if err == nil || !strings.Contains(err.Error(), "CreateFailed") {
		t.Fatalf("second Ensure: %v, want an error naming CreateFailed", err)
	}
}
