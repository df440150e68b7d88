package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// Metric is one measured figure, with its target when the issue sets one.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
	// Target is the target as text ("<= 1.2"), Met whether Value meets it
	// (absent without a target).
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
}

// Result is one scenario's outcome; the JSON files of successive runs can
// be compared.
type Result struct {
	Scenario string         `json:"scenario"`
	Title    string         `json:"title"`
	Quick    bool           `json:"quick"`
	Params   map[string]any `json:"params"`
	Start    time.Time      `json:"start"`
	Seconds  float64        `json:"seconds"`
	Metrics  []Metric       `json:"metrics"`
	// Calls are the cloud calls of the measured interval by action;
	// PerService divides them by the Services of the scenario.
	Calls      []ActionCalls `json:"calls,omitempty"`
	PerService int           `json:"perService,omitempty"`
	Plan       []PlanStep    `json:"minimalPlan,omitempty"`
	CCM        *ProcUsage    `json:"ccm,omitempty"`
	// Timeline samples a burst about once a second, for the charts.
	Timeline []Sample `json:"timeline,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	Error    string   `json:"error,omitempty"`
}

func (r *Result) metric(name string, value float64, unit string) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Value: value, Unit: unit})
}

// target records a metric with an upper-bound target.
func (r *Result) target(name string, value float64, unit string, max float64) {
	met := value <= max
	r.Metrics = append(r.Metrics, Metric{Name: name, Value: value, Unit: unit, Target: fmt.Sprintf("<= %g", max), Met: &met})
}

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Print writes the result as tables.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "\n== %s: %s (%.1fs)\n", r.Scenario, r.Title, r.Seconds)
	if r.Error != "" {
		fmt.Fprintf(w, "ERROR: %s\n", r.Error)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tvalue\ttarget\tmet")
	for _, m := range r.Metrics {
		met := ""
		if m.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*m.Met]
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\n", m.Name, strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", m.Value), "0"), "."), m.Unit, m.Target, met)
	}
	tw.Flush()
	if len(r.Calls) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		per := "per svc"
		if r.PerService == 0 {
			per = ""
		}
		fmt.Fprintf(tw, "product\taction\tkind\tcalls\terrors\t%s\tquota/s\tbound s\t\n", per)
		for _, c := range r.Calls {
			kind := "read"
			if c.Write {
				kind = "write"
			}
			ps := ""
			if r.PerService > 0 {
				ps = fmt.Sprintf("%.2f", float64(c.Calls)/float64(r.PerService))
			}
			q, b := "", ""
			if c.QuotaQPS > 0 {
				q, b = fmt.Sprintf("%.2f", c.QuotaQPS), fmt.Sprintf("%.1f", c.BoundSeconds)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t\n", c.Product, c.Action, kind, c.Calls, c.Errors, ps, q, b)
		}
		tw.Flush()
	}
	if r.CCM != nil {
		fmt.Fprintf(w, "CCM: peak RSS %.1f MB (anonymous peak %.1f MB, binary pages %.1f MB), end RSS %.1f MB, CPU %.1f s over %.0f s (avg %.2f cores, peak %.2f)\n",
			r.CCM.PeakRSSMB, r.CCM.PeakAnonMB, r.CCM.EndFileMB, r.CCM.EndRSSMB, r.CCM.CPUSeconds, r.CCM.Seconds, r.CCM.AvgCores, r.CCM.PeakCores)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// writeJSON writes the result to dir/<scenario>.json, and its SVG charts
// beside it.
func (r *Result) writeJSON(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, r.Scenario+".json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	_, err = r.writeCharts(dir)
	return err
}
