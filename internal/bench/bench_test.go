package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuickRun runs every scenario at smoke size through the real CCM
// binary, control plane, kwok and emulator. It asserts no performance
// target, only that each scenario runs to its end and measures something:
// every Service addressed, cloud calls counted, the CCM's memory read.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three local clusters and the CCM (about 3 minutes)")
	}
	var out bytes.Buffer
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	results, err := Run(ctx, Options{
		Quick: true, OutDir: dir, Out: &out,
		Services: 8, NLBServices: 3, Nodes: 6, ChurnNodes: 3, RouteNodes: 20,
		W4Services: 40, W4Nodes: 20, W4Endpoints: 200,
		RestartWindow: 10 * time.Second, W4Window: 10 * time.Second,
	})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ScenarioW1, ScenarioW1NLB, ScenarioW2, ScenarioW3 + "-add", ScenarioW3 + "-remove", ScenarioRoutes, ScenarioW4}
	got := map[string]*Result{}
	for _, r := range results {
		got[r.Scenario] = r
		if r.Error != "" {
			t.Errorf("%s: %s", r.Scenario, r.Error)
		}
	}
	for _, s := range want {
		r, ok := got[s]
		if !ok {
			t.Errorf("no result for %s", s)
			continue
		}
		if r.CCM == nil || r.CCM.PeakRSSMB <= 0 {
			t.Errorf("%s: CCM memory not measured", s)
		}
		if s != ScenarioW2 && len(r.Calls) == 0 {
			t.Errorf("%s: no cloud calls counted", s)
		}
	}
	for _, s := range []string{ScenarioW1, ScenarioW1NLB} {
		if r := got[s]; r != nil && !hasMetric(r, "groups with every Node") {
			t.Errorf("%s: cloud not checked", s)
		}
	}
	for _, s := range []string{ScenarioW1, ScenarioW1NLB} {
		r := got[s]
		if r == nil {
			continue
		}
		if n := len(r.Timeline); n == 0 || r.Timeline[n-1].Addressed != r.Params["services"] {
			t.Errorf("%s: timeline does not end with every Service addressed: %+v", s, r.Timeline)
		}
		for _, chart := range []string{"addressed", "calls", "rate"} {
			if _, err := os.Stat(filepath.Join(dir, s+"-"+chart+".svg")); err != nil {
				t.Errorf("%s: chart %s not written: %v", s, chart, err)
			}
		}
	}
	if !strings.Contains(out.String(), "== w4") {
		t.Error("tables not printed")
	}
}

func hasMetric(r *Result, prefix string) bool {
	for _, m := range r.Metrics {
		if strings.HasPrefix(m.Name, prefix) && m.Value > 0 {
			return true
		}
	}
	return false
}
