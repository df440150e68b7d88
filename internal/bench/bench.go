// Package bench is the scale benchmark of the CCM (docs/performance.md): the CCM
// binary as a process against a local control plane with kwok Nodes and
// pods and the in-process emulator with per-call latency and the API rate
// limits of a quota profile. Each scenario prints tables and writes JSON
// (OutDir/<scenario>.json) so that runs can be compared; docs/performance.md
// holds the last figures against the targets.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// Scenario names.
const (
	ScenarioW1     = "w1"     // burst of CLB Services
	ScenarioW1NLB  = "w1-nlb" // burst of NLB Services
	ScenarioW2     = "w2"     // CCM restart with everything converged
	ScenarioW3     = "w3"     // node churn
	ScenarioW4     = "w4"     // memory and CPU at size
	ScenarioRoutes = "routes" // route burst
)

// AllScenarios in run order.
var AllScenarios = []string{ScenarioW1, ScenarioW2, ScenarioW1NLB, ScenarioW3, ScenarioRoutes, ScenarioW4}

// Options configure a run. Zero sizes take the full (issue) or quick
// defaults.
type Options struct {
	// Quick runs every scenario small (a smoke run of a few minutes).
	Quick bool
	// Scenarios to run (default all); w2 and w3 run w1's burst first.
	Scenarios []string
	// OutDir receives one JSON file per scenario ("" = none).
	OutDir string
	// WorkDir holds component logs (a temp dir, removed after a
	// successful run, when empty).
	WorkDir string
	// QuotaProfile is the emulator's API rate-limit profile ("none" =
	// unlimited); QuotaScale multiplies its limits.
	QuotaProfile string
	QuotaScale   float64
	// ProductQuotaScale overrides QuotaScale per product ("nlb": 1).
	ProductQuotaScale map[string]float64
	// Latency is added to every cloud call.
	Latency time.Duration
	// Sizes.
	Services, NLBServices, Nodes, ChurnNodes int
	// ChurnInterval, when positive, makes W3's Nodes join (and leave) one
	// at a time this far apart instead of all at once.
	ChurnInterval       time.Duration
	W4Services, W4Nodes int
	// W4Endpoints is how many ready endpoints W4 writes into the
	// Services' EndpointSlices (about W4Endpoints/W4Services each).
	// W4Pods > 0 runs W4 with that many kwok pods instead, whose slices
	// the EndpointSlice controller writes as kwok makes them ready.
	W4Endpoints, W4Pods int
	// W4SliceUpdates is how many EndpointSlice updates per second W4
	// makes during its window (endpoint mode), the churn of rollouts.
	W4SliceUpdates int
	RouteNodes     int
	// RestartWindow is how long W2 counts calls after the restart;
	// W4Window how long W4 samples once every object exists; Timeout
	// bounds each wait for convergence.
	RestartWindow, W4Window, Timeout time.Duration
	// CCMArgs are extra CCM flags and CCMEnv extra CCM environment (e.g.
	// GOMEMLIMIT=75MiB), for comparing settings.
	CCMArgs, CCMEnv []string
	// ProfileDir, when set, receives CCM pprof profiles: CPU during each
	// W1 burst (its first ProfileSeconds) and heap at the end of W1 and W4.
	ProfileDir string
	// Out receives progress and tables.
	Out io.Writer
}

func (o *Options) defaults() {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if len(o.Scenarios) == 0 {
		o.Scenarios = AllScenarios
	}
	if o.QuotaProfile == "" {
		o.QuotaProfile = gateway.QuotaProfileAlibaba
	}
	if o.QuotaProfile == "none" {
		o.QuotaProfile = ""
	}
	// A full run compresses the published limits in time so that all
	// scenarios fit half an hour on a 2-core machine while each burst
	// stays bound by its quota, not by the client or the machine: CLB,
	// VPC and ECS ×20 (the CLB burst's 8,000 AddVServerGroupBackendServers
	// take 267 s at 30/s instead of 89 minutes at the published 1.5/s),
	// NLB ×1 (at ×20 its 9 s bound would be under the CCM's 100 calls/s
	// product ceiling and the machine's call rate). Targets are ratios
	// to the bound, so they mean the same at any scale.
	if o.QuotaScale <= 0 {
		o.QuotaScale = 1
		if !o.Quick {
			o.QuotaScale = 20
			if o.ProductQuotaScale == nil {
				o.ProductQuotaScale = map[string]float64{"nlb": 1}
			}
		}
	}
	if o.Latency == 0 {
		o.Latency = 20 * time.Millisecond
	}
	set := func(p *int, full, quick int) {
		if *p == 0 {
			*p = full
			if o.Quick {
				*p = quick
			}
		}
	}
	setD := func(p *time.Duration, full, quick time.Duration) {
		if *p == 0 {
			*p = full
			if o.Quick {
				*p = quick
			}
		}
	}
	set(&o.Services, 1000, 20)
	set(&o.NLBServices, 300, 6)
	set(&o.Nodes, 100, 10)
	set(&o.ChurnNodes, 50, 5)
	set(&o.W4Services, 5000, 100)
	set(&o.W4Nodes, 1000, 50)
	set(&o.W4Endpoints, 50000, 500)
	if o.W4SliceUpdates == 0 {
		o.W4SliceUpdates = 20
	}
	set(&o.RouteNodes, 500, 30)
	setD(&o.RestartWindow, 2*time.Minute, 20*time.Second)
	setD(&o.W4Window, 3*time.Minute, 20*time.Second)
	setD(&o.Timeout, 45*time.Minute, 3*time.Minute)
}

func (o *Options) wants(s string) bool {
	for _, x := range o.Scenarios {
		if x == s {
			return true
		}
	}
	return false
}

// runner is one run.
type runner struct {
	o       Options
	start   time.Time
	results []*Result
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.o.Out, "%7.1fs  %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// Run runs the chosen scenarios and returns their results. A scenario that
// fails is reported with its error and the run goes on with the next
// environment; Run's error says which failed.
func Run(ctx context.Context, o Options) ([]*Result, error) {
	o.defaults()
	for _, s := range o.Scenarios {
		if !contains(AllScenarios, s) {
			return nil, fmt.Errorf("unknown scenario %q; known: %s", s, strings.Join(AllScenarios, ", "))
		}
	}
	if o.QuotaProfile != "" {
		if _, err := gateway.LookupQuotaProfile(o.QuotaProfile); err != nil {
			return nil, err
		}
	}
	r := &runner{o: o, start: time.Now()}
	work := o.WorkDir
	temp := work == ""
	if temp {
		var err error
		if work, err = os.MkdirTemp("", "ccm-bench-"); err != nil {
			return nil, err
		}
	}
	r.logf("benchmark (quick=%v) scenarios %s; quota profile %q ×%g %v, latency %s; logs in %s",
		o.Quick, strings.Join(o.Scenarios, ","), o.QuotaProfile, o.QuotaScale, o.ProductQuotaScale, o.Latency, work)
	var failed []string
	run := func(name string, fn func(context.Context, string) error) {
		if err := fn(ctx, filepath.Join(work, name)); err != nil {
			failed = append(failed, name+": "+err.Error())
			r.logf("%s failed: %v", name, err)
		}
	}
	if o.wants(ScenarioW1) || o.wants(ScenarioW1NLB) || o.wants(ScenarioW2) || o.wants(ScenarioW3) {
		run("lb", r.runLB)
	}
	if o.wants(ScenarioRoutes) {
		run("routes", r.runRoutes)
	}
	if o.wants(ScenarioW4) {
		run("w4", r.runW4)
	}
	r.logf("benchmark done in %s", time.Since(r.start).Round(time.Second))
	for _, res := range r.results {
		if err := res.writeJSON(o.OutDir); err != nil {
			failed = append(failed, "write "+res.Scenario+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		return r.results, fmt.Errorf("%d scenario group(s) failed (logs kept in %s): %s", len(failed), work, strings.Join(failed, "; "))
	}
	if temp {
		_ = os.RemoveAll(work)
	}
	return r.results, nil
}

// add records and prints a result.
func (r *runner) add(res *Result) {
	res.Quick = r.o.Quick
	r.results = append(r.results, res)
	res.Print(r.o.Out)
}
