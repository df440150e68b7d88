// Package soak runs the CCM under fire for a while (docs/reliability.md): two or more
// replicas of the binary with leader election against a local control
// plane with kwok Nodes and the emulated cloud, a seeded random schedule
// of Service and Node changes with bad input across namespaces, injected
// cloud errors, latency and lost responses, leader SIGKILLs, an API-server
// restart and a window in which every cloud call times out. Sentinel
// resources of another owner are created first and compared at the end;
// after a settle period an invariant checker reports every violation with
// its evidence. See docs/reliability.md.
package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Options configure one soak run.
type Options struct {
	// Seed makes the schedule reproducible; 0 picks one from the clock
	// (printed, and kept in the report).
	Seed int64
	// Duration is the chaos phase.
	Duration time.Duration
	// Settle bounds the wait for convergence after the chaos.
	Settle time.Duration
	// Replicas is the number of CCM processes.
	Replicas int
	// Nodes registered at start, SpareInstances more that join later.
	Nodes, SpareInstances int
	// MaxServices bounds the live Services of the workload.
	MaxServices int
	// StepEvery is the mean time between two workload changes.
	StepEvery time.Duration
	// KillEvery is the mean time between two leader SIGKILLs (0: none).
	KillEvery time.Duration
	// LeaseDuration, RenewDeadline and RetryPeriod are the replicas'
	// leader-election flags: a SIGKILLed leader's Lease is taken over no
	// sooner than LeaseDuration after its last renewal.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ErrorRate is the share of cloud calls answered with an error,
	// LossRate the share of creates and deletes whose response is lost.
	ErrorRate, LossRate float64
	// TimeoutWindow is how long every cloud call times out (0: never).
	TimeoutWindow time.Duration
	// APIServerRestart restarts kube-apiserver once mid-chaos.
	APIServerRestart bool
	// InjectBug runs the replicas against a cloud that answers their
	// DeleteAccessControlList with success and keeps the list (bug.go):
	// the run must report the leak.
	InjectBug bool
	// CCMArgs are extra CCM flags.
	CCMArgs []string
	// WorkDir holds logs; a temp dir when empty (removed after a run
	// without violations).
	WorkDir string
	// Out is the path of the JSON report ("" = none).
	Out string
	// Logf receives progress.
	Logf func(string, ...any)
}

// Defaults are the options of `make soak`: 15 minutes.
func Defaults() Options {
	return Options{
		Duration: 15 * time.Minute, Settle: 5 * time.Minute, Replicas: 2, Nodes: 5, SpareInstances: 5,
		MaxServices: 40, StepEvery: 2 * time.Second, KillEvery: 76 * time.Second,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		ErrorRate: 0.10, LossRate: 0.05, TimeoutWindow: 60 * time.Second, APIServerRestart: true,
	}
}

// Quick are the options of the soak inside `make test`: about a minute of
// chaos with every kind of fault, shorter leases and a shorter timeout
// window.
func Quick() Options {
	o := Defaults()
	o.Duration, o.Settle = 45*time.Second, 2*time.Minute
	o.Nodes, o.SpareInstances, o.MaxServices = 3, 2, 12
	o.StepEvery, o.KillEvery = 1500*time.Millisecond, 20*time.Second
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
	o.TimeoutWindow = 8 * time.Second
	return o
}

// Report is the figures of one run, written as JSON.
type Report struct {
	Seed     int64   `json:"seed"`
	Duration string  `json:"duration"`
	Replicas int     `json:"replicas"`
	Workload Counts  `json:"workload"`
	Faults   Counts  `json:"faultsInjected"`
	Kills    int     `json:"leaderKills"`
	Exits    int     `json:"replicaExits"`
	Failover Summary `json:"failoverSeconds"`
	// LeaseDuration is the replicas' --leader-elect-lease-duration, the
	// bound of a SIGKILL failover.
	LeaseDuration  string      `json:"leaseDuration"`
	APIServerDown  float64     `json:"apiServerDownSeconds,omitempty"`
	TimeoutWindow  string      `json:"timeoutWindow,omitempty"`
	TimeToAddress  Summary     `json:"timeToAddressSeconds"`
	NeverAddressed int         `json:"neverAddressed"`
	SettleSeconds  float64     `json:"settleSeconds"`
	CloudCalls     int         `json:"cloudCalls"`
	Violations     []Violation `json:"violations"`
	ViolationCount int         `json:"violationCount"`
	InjectedBug    string      `json:"injectedBug,omitempty"`
	WorkDir        string      `json:"workDir"`
	ChaosEndedAt   string      `json:"chaosEndedAt"`
	// Checked counts what the final check compared.
	Checked Counts `json:"checked"`
}

// Counts are named event counts.
type Counts map[string]int

// Summary is a distribution of seconds.
type Summary struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
}

func summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) float64 { return s[int(p*float64(len(s)-1)+0.5)].Seconds() }
	return Summary{N: len(s), Min: s[0].Seconds(), Median: q(0.5), P90: q(0.9), Max: s[len(s)-1].Seconds()}
}

// Run runs the soak and returns its report; the error is set when the
// soak could not run, not when it found violations (see Report.Violations).
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano() % 1_000_000_000
	}
	if o.Replicas < 2 {
		return nil, fmt.Errorf("need at least 2 replicas, got %d", o.Replicas)
	}
	tempDir := o.WorkDir == ""
	if tempDir {
		d, err := os.MkdirTemp("", "soak-")
		if err != nil {
			return nil, err
		}
		o.WorkDir = d
	}
	o.Logf("soak: seed %d (replay with --seed %d), chaos %v, work dir %s", o.Seed, o.Seed, o.Duration, o.WorkDir)
	e, err := startEnv(ctx, o)
	if err != nil {
		return nil, err
	}
	defer e.stop()
	s, err := createSentinels(ctx, e)
	if err != nil {
		return nil, err
	}
	o.Logf("soak: sentinels %+v", s.ids)
	w := newWorkload(e, s, o.Seed)
	if err := w.setup(ctx); err != nil {
		return nil, err
	}
	ch := newChaos(e, o.Seed+1)
	// Addresses are watched through the settle phase: a Service created
	// just before the chaos ended gets its address then.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go w.watchAddresses(watchCtx)
	rep, err := runChaos(ctx, e, w, ch)
	if err != nil {
		return nil, err
	}
	settleStart := time.Now()
	o.Logf("soak: chaos over; settling (up to %v)", o.Settle)
	var violations []Violation
	w.mu.Lock()
	owners := maps.Clone(w.owners)
	w.mu.Unlock()
	for {
		violations, rep.Checked, err = check(ctx, e, s, owners)
		if err != nil {
			return nil, err
		}
		if len(violations) == 0 || time.Since(settleStart) > o.Settle {
			break
		}
		o.Logf("soak: %d violations still (first: %s)", len(violations), violations[0])
		if err := sleep(ctx, 5*time.Second); err != nil {
			return nil, err
		}
	}
	rep.SettleSeconds = time.Since(settleStart).Seconds()
	stopWatch()
	w.mu.Lock()
	var addr []time.Duration
	for _, d := range w.addr {
		addr = append(addr, d)
	}
	rep.TimeToAddress, rep.NeverAddressed = summarize(addr), len(w.created)-len(w.addr)
	w.mu.Unlock()
	rep.Violations, rep.ViolationCount = violations, len(violations)
	if e.bug != nil {
		rep.InjectedBug = fmt.Sprintf("%s answered with success and not applied (%d calls)", bugAction, e.bug.lost.Load())
	}
	for _, c := range e.cloud.Counters() {
		rep.CloudCalls += c.Calls
	}
	rep.WorkDir = o.WorkDir
	if len(violations) > 0 || !tempDir {
		e.cluster.KeepLogs()
	}
	if o.Out != "" {
		if err := writeJSON(o.Out, rep); err != nil {
			return rep, err
		}
	}
	if tempDir && len(violations) == 0 {
		defer os.RemoveAll(o.WorkDir)
	}
	return rep, nil
}

// runChaos runs the workload and the faults for o.Duration. The kills,
// the API-server restart and the timeout window sit at fixed shares of the
// phase (kills jittered by the seed), so a seed replays them in order.
func runChaos(ctx context.Context, e *env, w *workload, ch *chaos) (*Report, error) {
	o := e.o
	runCtx := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go ch.supervise(ctx)
	if err := ch.startFaults(); err != nil {
		return nil, err
	}
	start := time.Now()
	type event struct {
		at   time.Duration
		what string
	}
	var events []event
	if o.KillEvery > 0 {
		for t := o.KillEvery; t < o.Duration; {
			events = append(events, event{t, "kill"})
			t += o.KillEvery*4/5 + time.Duration(ch.rng.Int63n(int64(o.KillEvery*2/5)+1))
		}
	}
	if o.APIServerRestart {
		events = append(events, event{o.Duration * 40 / 100, "apiserver"})
	}
	if o.TimeoutWindow > 0 {
		events = append(events, event{o.Duration * 65 / 100, "timeout"})
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].at < events[j].at })
	for _, ev := range events {
		o.Logf("soak: at %v: %s", ev.at.Round(time.Second), ev.what)
	}
	// The fixed canaries: a CLB and an NLB with source ranges created
	// early and deleted mid-way, so every run deletes an access control
	// list and a security group whatever the seed draws.
	canaries := []svcRef{}
	for _, isNLB := range []bool{false, true} {
		kind := map[bool]string{false: "clb", true: "nlb"}[isNLB]
		svc := w.newService(nsA, "canary-"+kind, isNLB, roleGood)
		svc.Spec.LoadBalancerSourceRanges = []string{rangesA, rangesB}
		ref := svcRef{ns: nsA, name: svc.Name, nlb: isNLB, attack: "canary"}
		if err := w.createService(ctx, svc, ref); err != nil {
			return nil, err
		}
		canaries = append(canaries, ref)
	}
	canaryDelete := o.Duration / 2
	var timeoutDone chan struct{}
	var apiDone chan error
	next, killDue := 0, false
	for time.Since(start) < o.Duration {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		el := time.Since(start)
		for next < len(events) && events[next].at <= el {
			switch events[next].what {
			case "kill":
				killDue = true
			case "apiserver":
				// The workload goes on meanwhile: its calls fail as a
				// user's would.
				apiDone = make(chan error, 1)
				go func() { apiDone <- ch.restartAPIServer(ctx) }()
			case "timeout":
				timeoutDone = make(chan struct{})
				go func(done chan struct{}) {
					defer close(done)
					_ = ch.timeoutWindow(ctx, o.TimeoutWindow)
				}(timeoutDone)
			}
			next++
		}
		if killDue {
			killDue = !ch.killLeader(ctx, runCtx)
		}
		if len(canaries) > 0 && el >= canaryDelete {
			var left []svcRef
			for _, ref := range canaries {
				if err := w.deleteService(ctx, ref); err != nil {
					o.Logf("soak: delete canary %s (again at the next step): %v", ref.key(), err)
					left = append(left, ref)
				}
			}
			canaries = left
		}
		w.step(ctx)
		wait := o.StepEvery/2 + time.Duration(w.rng.Int63n(int64(o.StepEvery)+1))
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
	if timeoutDone != nil {
		<-timeoutDone
	}
	if apiDone != nil {
		if err := <-apiDone; err != nil {
			return nil, err
		}
	}
	fired := ch.stopFaults()
	cancel()
	ch.wg.Wait()
	ch.measuring.Wait()
	// The last kill's replica may still be down: the settle phase runs
	// with every replica up.
	for _, r := range e.replicas {
		r.mu.Lock()
		down := r.ccm == nil || r.ccm.Exited()
		r.mu.Unlock()
		if down {
			if err := e.startReplica(context.Background(), r); err != nil {
				return nil, err
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	rep := &Report{
		Seed: o.Seed, Duration: o.Duration.String(), Replicas: o.Replicas,
		Workload: Counts(w.counts), Faults: Counts(fired), Kills: ch.kills, Exits: ch.exits,
		Failover: summarize(ch.failovers), LeaseDuration: o.LeaseDuration.String(),
		APIServerDown: ch.apiDown.Seconds(), ChaosEndedAt: time.Now().UTC().Format(time.RFC3339),
	}
	if o.TimeoutWindow > 0 {
		rep.TimeoutWindow = o.TimeoutWindow.String()
	}
	return rep, nil
}

// sleep waits d, or less when ctx ends (then it returns ctx's error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
