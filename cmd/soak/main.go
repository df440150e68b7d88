// Command soak runs the CCM under fire: replicas with leader
// election against a local control plane and the emulated cloud, a seeded
// random schedule of Service and Node changes, injected cloud faults,
// leader SIGKILLs, an API-server restart and a window of cloud timeouts;
// then an invariant checker. It prints every violation and exits 1 when
// there is one. See docs/reliability.md.
//
//	go run ./cmd/soak [--quick] [--seed N] [--duration 15m] [--out soak-results/soak.json] [--inject-bug]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/soak"
)

func main() {
	quick := flag.Bool("quick", false, "the short soak of make test (45 s of chaos, 4 s leases, an 8 s timeout window)")
	// Parse --quick first: it sets the defaults the other flags override.
	for _, a := range os.Args[1:] {
		if a == "--quick" || a == "-quick" || a == "--quick=true" || a == "-quick=true" {
			*quick = true
		}
	}
	o := soak.Defaults()
	if *quick {
		o = soak.Quick()
	}
	flag.Int64Var(&o.Seed, "seed", 0, "schedule seed (0: from the clock; printed so a run can be replayed)")
	flag.DurationVar(&o.Duration, "duration", o.Duration, "length of the chaos phase")
	flag.DurationVar(&o.Settle, "settle", o.Settle, "bound of the wait for convergence after the chaos")
	flag.IntVar(&o.Replicas, "replicas", o.Replicas, "CCM processes with leader election")
	flag.IntVar(&o.Nodes, "nodes", o.Nodes, "Nodes registered at start")
	flag.IntVar(&o.SpareInstances, "spare-instances", o.SpareInstances, "instances that may join as Nodes later")
	flag.IntVar(&o.MaxServices, "max-services", o.MaxServices, "bound of live Services")
	flag.DurationVar(&o.StepEvery, "step-every", o.StepEvery, "mean time between two workload changes")
	flag.DurationVar(&o.KillEvery, "kill-every", o.KillEvery, "mean time between two leader SIGKILLs (0: none)")
	flag.DurationVar(&o.LeaseDuration, "lease-duration", o.LeaseDuration, "replicas' --leader-elect-lease-duration")
	flag.DurationVar(&o.RenewDeadline, "renew-deadline", o.RenewDeadline, "replicas' --leader-elect-renew-deadline")
	flag.DurationVar(&o.RetryPeriod, "retry-period", o.RetryPeriod, "replicas' --leader-elect-retry-period")
	flag.Float64Var(&o.ErrorRate, "error-rate", o.ErrorRate, "share of cloud calls answered with an error")
	flag.Float64Var(&o.LossRate, "loss-rate", o.LossRate, "share of creates and deletes whose response is lost after they were applied")
	flag.DurationVar(&o.TimeoutWindow, "timeout-window", o.TimeoutWindow, "how long every cloud call times out, once (0: never)")
	flag.BoolVar(&o.APIServerRestart, "apiserver-restart", o.APIServerRestart, "restart kube-apiserver once mid-chaos")
	flag.BoolVar(&o.InjectBug, "inject-bug", false, "run the CCM against a cloud that answers DeleteAccessControlList with success and keeps the list: the soak must report the leak")
	ccmArgs := flag.String("ccm-args", "", "extra CCM flags, space-separated")
	flag.StringVar(&o.WorkDir, "work-dir", "", "directory for logs (default: a temp dir, removed after a run without violations)")
	flag.StringVar(&o.Out, "out", "soak-results/soak.json", "JSON report (empty: none)")
	flag.Parse()
	o.CCMArgs = strings.Fields(*ccmArgs)
	o.Logf = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := soak.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	summary := *rep
	summary.Violations = nil
	out, _ := json.MarshalIndent(summary, "", "  ")
	fmt.Println(string(out))
	if rep.ViolationCount > 0 {
		fmt.Printf("%d violations (seed %d, logs in %s):\n", rep.ViolationCount, rep.Seed, rep.WorkDir)
		for _, v := range rep.Violations {
			fmt.Println("  " + v.String())
		}
		os.Exit(1)
	}
	fmt.Printf("0 violations (seed %d)\n", rep.Seed)
}
