package soak

import (
	"context"
	"testing"
	"time"
)

// TestSoakQuick is the soak of make test: 45 s of chaos with every kind of
// fault, then the invariant checker; every violation fails the test.
func TestSoakQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and CCM processes")
	}
	o := Quick()
	o.Logf = t.Logf
	o.WorkDir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d: workload %v, faults %v, %d kills, failover %+v, time to address %+v, settled in %.0fs, checked %v",
		rep.Seed, rep.Workload, rep.Faults, rep.Kills, rep.Failover, rep.TimeToAddress, rep.SettleSeconds, rep.Checked)
	for _, v := range rep.Violations {
		t.Errorf("%s", v)
	}
	if rep.Kills == 0 || rep.Failover.N == 0 {
		t.Errorf("no leader was killed and replaced (kills %d, failovers %d)", rep.Kills, rep.Failover.N)
	}
}
