package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// referenceEnv, set to a kubeconfig, makes the test binary the reference
// process of the regression check (RunReference) instead of running tests.
const referenceEnv = "ALICLOUD_BENCH_REFERENCE_KUBECONFIG"

// updateBaselineEnv=1 makes TestW4Regression write what it measured as the
// new baseline (keeping the margins) instead of comparing.
const updateBaselineEnv = "ALICLOUD_BENCH_UPDATE_BASELINE"

func TestMain(m *testing.M) {
	if kc := os.Getenv(referenceEnv); kc != "" {
		if err := RunReference(kc, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// w4Baseline is testdata/w4check-baseline.json: the sizes of the check,
// the ratios measured when the baseline was taken, and how far above them
// a run may go.
type w4Baseline struct {
	Comment  string `json:"comment"`
	Measured string `json:"measured"`
	// Sizes of the check.
	Services     int `json:"services"`
	Nodes        int `json:"nodes"`
	Endpoints    int `json:"endpoints"`
	NodeUpdates  int `json:"nodeUpdates"`
	SliceUpdates int `json:"sliceUpdates"`
	// The ratios CCM ÷ reference of the baseline run.
	PeakAnonRatio      float64 `json:"peakAnonRatio"`
	LiveHeapRatio      float64 `json:"liveHeapRatio"`
	AllocPerEventRatio float64 `json:"allocPerEventRatio"`
	// Margins: a run fails when a ratio exceeds the baseline's by more
	// than this fraction.
	Margins struct {
		PeakAnon      float64 `json:"peakAnon"`
		LiveHeap      float64 `json:"liveHeap"`
		AllocPerEvent float64 `json:"allocPerEvent"`
	} `json:"margins"`
	// Run is the whole baseline run, for reference.
	Run *W4CheckResult `json:"run,omitempty"`
}

const baselinePath = "testdata/w4check-baseline.json"

// TestW4Regression is the quick W4 of make test: it fails when the CCM's
// peak anonymous memory, live heap or heap allocated per event, each as a
// ratio to the reference informers measured in the same run, exceeds the
// committed baseline's ratio by more than its margin
// (testdata/w4check-baseline.json; docs/performance.md says how the
// margins were chosen). ALICLOUD_BENCH_UPDATE_BASELINE=1 rewrites the
// baseline from the run instead, for a change that moves a ratio on
// purpose.
func TestW4Regression(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster and the CCM (about a minute)")
	}
	raw, err := os.ReadFile(baselinePath)
	if err != nil {
		t.Fatal(err)
	}
	var base w4Baseline
	if err := json.Unmarshal(raw, &base); err != nil {
		t.Fatalf("%s: %v", baselinePath, err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	check := W4Check{
		Services: base.Services, Nodes: base.Nodes, Endpoints: base.Endpoints,
		NodeUpdates: base.NodeUpdates, SliceUpdates: base.SliceUpdates,
		Dir: t.TempDir(), Logf: t.Logf,
		Reference: func(kubeconfig string) *exec.Cmd {
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), referenceEnv+"="+kubeconfig)
			return cmd
		},
	}
	res, err := check.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("W4 check in %.1f s:\n%s", res.Seconds, out)
	if os.Getenv(updateBaselineEnv) == "1" {
		base.PeakAnonRatio, base.LiveHeapRatio, base.AllocPerEventRatio = res.PeakAnonRatio, res.LiveHeapRatio, res.AllocPerEventRatio
		base.Measured = time.Now().UTC().Format(time.RFC3339)
		base.Run = res
		b, _ := json.MarshalIndent(base, "", "  ")
		if err := os.WriteFile(filepath.Clean(baselinePath), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("baseline %s rewritten", baselinePath)
		return
	}
	for _, c := range []struct {
		name              string
		got, base, margin float64
	}{
		{"peak anonymous memory", res.PeakAnonRatio, base.PeakAnonRatio, base.Margins.PeakAnon},
		{"live heap", res.LiveHeapRatio, base.LiveHeapRatio, base.Margins.LiveHeap},
		{"heap allocated per event", res.AllocPerEventRatio, base.AllocPerEventRatio, base.Margins.AllocPerEvent},
	} {
		limit := c.base * (1 + c.margin)
		t.Logf("%s: CCM ÷ reference %.2f (baseline %.2f, limit %.2f)", c.name, c.got, c.base, limit)
		if c.got > limit {
			t.Errorf("%s regressed: CCM ÷ reference %.2f > %.2f (baseline %.2f + %.0f%%); if intended, rewrite the baseline with %s=1",
				c.name, c.got, limit, c.base, c.margin*100, updateBaselineEnv)
		}
	}
}
