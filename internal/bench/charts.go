package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/svgplot"
)

// Sample is one point of a burst's timeline.
type Sample struct {
	// Seconds since the Services were created.
	Seconds float64 `json:"s"`
	// Addressed is how many of the burst's Services had an address.
	Addressed int `json:"addressed"`
	// Calls are the cloud calls since the burst began, by "product/action".
	Calls map[string]int `json:"calls,omitempty"`
}

// maxRateSeries bounds the lines of the calls-over-time chart: the
// busiest actions only, so the chart stays readable.
const maxRateSeries = 6

// Charts returns the SVG charts of a result, by file name suffix:
// "addressed" (Services addressed over time against the quota bound; a burst
// only), "calls" (average calls per second by action against each action's
// limit) and "rate" (calls per second by action over time, when the result
// has a timeline).
func Charts(r *Result) map[string][]byte {
	out := map[string][]byte{}
	if c, ok := addressedChart(r); ok {
		out["addressed"] = c.SVG()
	}
	if c, ok := callsChart(r); ok {
		out["calls"] = c.SVG()
	}
	if c, ok := rateChart(r); ok {
		out["rate"] = c.SVG()
	}
	return out
}

// metricValue finds a metric by name, or by name prefix when prefix is set.
func (r *Result) metricValue(name string, prefix bool) (Metric, bool) {
	for _, m := range r.Metrics {
		if m.Name == name || (prefix && strings.HasPrefix(m.Name, name)) {
			return m, true
		}
	}
	return Metric{}, false
}

// addressedChart plots a burst: from its timeline when it has one, else
// through the milestones every result records (0 at creation, half, all).
func addressedChart(r *Result) (svgplot.LineChart, bool) {
	all, ok := r.metricValue("time to all addressed", false)
	if !ok {
		return svgplot.LineChart{}, false
	}
	n := 0
	if v, ok := r.Params["services"].(float64); ok {
		n = int(v)
	} else if v, ok := r.Params["services"].(int); ok {
		n = v
	}
	if n == 0 {
		return svgplot.LineChart{}, false
	}
	measured := svgplot.Series{Name: "Services addressed"}
	if len(r.Timeline) > 0 {
		for _, s := range r.Timeline {
			measured.Points = append(measured.Points, svgplot.Point{X: s.Seconds, Y: float64(s.Addressed)})
		}
	} else {
		measured.Name, measured.Markers = "Services addressed (milestones)", true
		measured.Points = []svgplot.Point{{X: 0, Y: 0}}
		if half, ok := r.metricValue("time to 50% addressed", false); ok {
			measured.Points = append(measured.Points, svgplot.Point{X: half.Value, Y: float64(n) / 2})
		}
		measured.Points = append(measured.Points, svgplot.Point{X: all.Value, Y: float64(n)})
	}
	c := svgplot.LineChart{
		Title:  fmt.Sprintf("%s: %s — Services addressed over time", r.Scenario, r.Title),
		XLabel: "seconds since the Services were created", YLabel: "Services with an address",
		Series: []svgplot.Series{measured},
	}
	// The quota bound is the fastest any controller could go: the busiest
	// action's calls at its published limit.
	if b, ok := r.metricValue("quota lower bound (", true); ok && b.Value > 0 {
		action := strings.TrimSuffix(strings.TrimPrefix(b.Name, "quota lower bound ("), ")")
		c.Series = append(c.Series, svgplot.Series{Name: "quota bound (" + action + ")", Dashed: true,
			Points: []svgplot.Point{{X: 0, Y: 0}, {X: b.Value, Y: float64(n)}}})
	}
	return c, true
}

// callsChart shows each action's average rate over the run next to its
// limit under the run's quota profile.
func callsChart(r *Result) (svgplot.BarChart, bool) {
	if len(r.Calls) == 0 || r.Seconds <= 0 {
		return svgplot.BarChart{}, false
	}
	calls := append([]ActionCalls(nil), r.Calls...)
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].Calls > calls[j].Calls })
	c := svgplot.BarChart{
		Title:     fmt.Sprintf("%s: %s — calls per second by action", r.Scenario, r.Title),
		XLabel:    fmt.Sprintf("calls per second, averaged over the %.0f s measured", r.Seconds),
		ValueName: "calls/s (errors included)", MarkName: "the action's limit (quota profile)",
	}
	for _, a := range calls {
		c.Bars = append(c.Bars, svgplot.Bar{Label: a.Product + " " + a.Action, Value: float64(a.Calls) / r.Seconds, Mark: a.QuotaQPS})
	}
	return c, true
}

// rateChart differentiates the timeline's cumulative calls into calls per
// second, for the busiest actions.
func rateChart(r *Result) (svgplot.LineChart, bool) {
	if len(r.Timeline) < 2 {
		return svgplot.LineChart{}, false
	}
	last := r.Timeline[len(r.Timeline)-1].Calls
	keys := make([]string, 0, len(last))
	for k := range last {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if last[keys[i]] != last[keys[j]] {
			return last[keys[i]] > last[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > maxRateSeries {
		keys = keys[:maxRateSeries]
	}
	c := svgplot.LineChart{
		Title:  fmt.Sprintf("%s: %s — calls per second by action over time", r.Scenario, r.Title),
		XLabel: "seconds since the Services were created", YLabel: "calls per second",
	}
	for _, k := range keys {
		s := svgplot.Series{Name: strings.Replace(k, "/", " ", 1)}
		for i := 1; i < len(r.Timeline); i++ {
			a, b := r.Timeline[i-1], r.Timeline[i]
			if dt := b.Seconds - a.Seconds; dt > 0 {
				s.Points = append(s.Points, svgplot.Point{X: b.Seconds, Y: float64(b.Calls[k]-a.Calls[k]) / dt})
			}
		}
		c.Series = append(c.Series, s)
	}
	return c, true
}

// writeCharts writes the result's charts next to its JSON, as
// dir/<scenario>-<chart>.svg; it returns the files written.
func (r *Result) writeCharts(dir string) ([]string, error) {
	var names []string
	for suffix, svg := range Charts(r) {
		path := filepath.Join(dir, r.Scenario+"-"+suffix+".svg")
		if err := os.WriteFile(path, svg, 0o644); err != nil {
			return names, fmt.Errorf("write chart: %w", err)
		}
		names = append(names, path)
	}
	sort.Strings(names)
	return names, nil
}

// PlotDir reads every result JSON in dir (as `make bench` writes them) and
// writes its charts beside it; it returns the files written.
func PlotDir(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list results: %w", err)
	}
	var written []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return written, fmt.Errorf("read result: %w", err)
		}
		var r Result
		if err := json.Unmarshal(data, &r); err != nil {
			return written, fmt.Errorf("parse %s: %w", f, err)
		}
		if r.Scenario == "" {
			continue
		}
		names, err := r.writeCharts(dir)
		written = append(written, names...)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}
