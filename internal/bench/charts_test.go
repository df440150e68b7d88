package bench

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestChartsOfPublishedResult: the published W1 result (no timeline) gets
// the addressed chart through its milestones and the calls chart.
func TestChartsOfPublishedResult(t *testing.T) {
	data, err := os.ReadFile("../../docs/bench-results/w1.json")
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	c := Charts(&r)
	if _, ok := c["rate"]; ok || len(c) != 2 {
		t.Fatalf("charts %v, want addressed and calls", keys(c))
	}
	if s := string(c["addressed"]); !strings.Contains(s, "milestones") || !strings.Contains(s, "quota bound (AddVServerGroupBackendServers)") {
		t.Errorf("addressed chart lacks the milestones or the bound")
	}
	if s := string(c["calls"]); !strings.Contains(s, "slb AddVServerGroupBackendServers") {
		t.Errorf("calls chart lacks the busiest action")
	}
}

// TestRateChart differentiates cumulative counts into rates.
func TestRateChart(t *testing.T) {
	r := &Result{Scenario: "w1", Title: "t", Params: map[string]any{"services": 2}, Seconds: 2,
		Metrics: []Metric{{Name: "time to all addressed", Value: 2}},
		Timeline: []Sample{
			{Seconds: 0, Calls: map[string]int{}},
			{Seconds: 1, Addressed: 1, Calls: map[string]int{"slb/CreateLoadBalancer": 10}},
			{Seconds: 2, Addressed: 2, Calls: map[string]int{"slb/CreateLoadBalancer": 30}},
		}}
	c, ok := rateChart(r)
	if !ok || len(c.Series) != 1 || c.Series[0].Name != "slb CreateLoadBalancer" {
		t.Fatalf("rate chart %+v", c)
	}
	if p := c.Series[0].Points; len(p) != 2 || p[0].Y != 10 || p[1].Y != 20 {
		t.Errorf("rates %v, want 10 then 20 per second", p)
	}
	a, ok := addressedChart(r)
	if !ok || len(a.Series[0].Points) != 3 || a.Series[0].Markers {
		t.Errorf("addressed chart from the timeline: %+v", a.Series)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
