// Command bench runs the CCM scale benchmark (docs/performance.md): the CCM binary
// against a local control plane with kwok Nodes and pods and the emulated
// cloud with per-call latency and a published API rate-limit profile. Each
// scenario prints tables and writes OUT/<scenario>.json.
//
//	go run ./cmd/bench [--quick] [--scenario w1,w1-nlb,w2,w3,routes,w4] [--out DIR]
//	    [--quota-profile alibaba|none] [--quota-scale 20] [--product-quota-scale nlb=1] [--latency 20ms]
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/alicloud-ccm/alicloud-ccm/internal/bench"
)

func main() {
	var o bench.Options
	var scenarios string
	flag.BoolVar(&o.Quick, "quick", false, "run every scenario small (a smoke run of a few minutes; targets are not meaningful)")
	flag.StringVar(&scenarios, "scenario", "", "comma-separated scenarios: "+strings.Join(bench.AllScenarios, ",")+" (default all; w2 and w3 run w1's burst first)")
	flag.StringVar(&o.OutDir, "out", "bench-results", "directory for one JSON file per scenario (empty: none)")
	flag.StringVar(&o.WorkDir, "work-dir", "", "directory for component logs (default: a temp dir, removed after a successful run)")
	flag.StringVar(&o.QuotaProfile, "quota-profile", "alibaba", "emulator API rate-limit profile, or none")
	flag.Float64Var(&o.QuotaScale, "quota-scale", 0, "multiply every limit of the quota profile: a raised quota, or a run compressed in time (default 20, with nlb=1 unless --product-quota-scale is given; quick 1)")
	flag.Func("product-quota-scale", "per-product quota scales overriding --quota-scale, e.g. nlb=1,vpc=5", func(v string) error {
		o.ProductQuotaScale = map[string]float64{}
		for _, kv := range strings.Split(v, ",") {
			k, f, ok := strings.Cut(strings.TrimSpace(kv), "=")
			x, err := strconv.ParseFloat(f, 64)
			if !ok || k == "" || err != nil || x <= 0 || math.IsInf(x, 0) {
				return fmt.Errorf("want product=factor with a positive factor, got %q", kv)
			}
			o.ProductQuotaScale[k] = x
		}
		return nil
	})
	flag.DurationVar(&o.Latency, "latency", 0, "latency added to every cloud call (default 20ms)")
	flag.IntVar(&o.Services, "services", 0, "W1 CLB Services (default 1000; quick 20)")
	flag.IntVar(&o.NLBServices, "nlb-services", 0, "W1 NLB Services (default 300; quick 6)")
	flag.IntVar(&o.Nodes, "nodes", 0, "Nodes of W1-W3 (default 100; quick 10)")
	flag.IntVar(&o.ChurnNodes, "churn-nodes", 0, "Nodes W3 adds then removes (default 50; quick 5)")
	flag.DurationVar(&o.ChurnInterval, "churn-interval", 0, "W3 adds and removes its Nodes one at a time this far apart, e.g. 1s (default 0: all at once)")
	flag.IntVar(&o.W4Services, "w4-services", 0, "W4 Services (default 5000; quick 100)")
	flag.IntVar(&o.W4Nodes, "w4-nodes", 0, "W4 Nodes (default 1000; quick 50)")
	flag.IntVar(&o.W4Endpoints, "w4-endpoints", 0, "W4 ready endpoints written into the Services' EndpointSlices (default 50000; quick 500)")
	flag.IntVar(&o.W4Pods, "w4-pods", 0, "run W4 with this many kwok pods instead of written EndpointSlices (default 0: written slices)")
	flag.IntVar(&o.W4SliceUpdates, "w4-slice-updates", 0, "EndpointSlice updates per second during W4's window (default 20; negative: none)")
	flag.IntVar(&o.RouteNodes, "route-nodes", 0, "Nodes of the route burst (default 500; quick 30)")
	flag.DurationVar(&o.RestartWindow, "restart-window", 0, "W2 counting window (default 2m; quick 20s)")
	flag.DurationVar(&o.W4Window, "w4-window", 0, "W4 sampling window once every object exists (default 3m; quick 20s)")
	flag.DurationVar(&o.Timeout, "timeout", 0, "bound of each wait for convergence (default 45m; quick 3m)")
	flag.StringVar(&o.ProfileDir, "profile", "", "directory for CCM pprof profiles (CPU during each W1 burst, heap after W1 and W4); empty: none")
	var ccmArgs, ccmEnv string
	flag.StringVar(&ccmArgs, "ccm-args", "", "extra CCM flags, space-separated")
	flag.StringVar(&ccmEnv, "ccm-env", "", "extra CCM environment, space-separated NAME=value (e.g. GOMEMLIMIT=75MiB)")
	var plotDir string
	flag.StringVar(&plotDir, "plot", "", "run nothing: write the SVG charts of the result JSON files in this directory (e.g. docs/bench-results) beside them")
	flag.Parse()
	if plotDir != "" {
		written, err := bench.PlotDir(plotDir)
		for _, f := range written {
			fmt.Println(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	o.CCMArgs, o.CCMEnv = strings.Fields(ccmArgs), strings.Fields(ccmEnv)
	if scenarios != "" {
		o.Scenarios = strings.Split(scenarios, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := bench.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
