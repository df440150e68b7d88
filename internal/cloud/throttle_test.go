package cloud_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

func describeLBs(ctx context.Context, c *cloud.Client) error {
	_, err := cloud.Do(ctx, c, cloud.SLB, "DescribeLoadBalancers", func(cl *cloud.Clients) (*slb.DescribeLoadBalancersResponse, error) {
		return cl.SLB.DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
	})
	return err
}

// TestAdaptiveThrottleAgainstEmulator: a client whose ceiling is five times
// what the cloud allows one action slows that action to the cloud's quota
// on the first Throttling answers, so that concurrent reconciles each
// finish within their retry budget; once the quota is lifted it speeds up
// again. Another action of the product keeps its own rate.
func TestAdaptiveThrottleAgainstEmulator(t *testing.T) {
	const (
		ceiling    = 40
		serverQPS  = 8
		reconciles = 4
		callsEach  = 10
		budget     = 8
	)
	env := emulatortest.Start(t)
	gw := env.Emulator.Gateway
	rule, err := gw.AddThrottle(gateway.ThrottleRule{Scope: gateway.ThrottleScopeAPI, Product: "slb", Action: "DescribeLoadBalancers", QPS: serverQPS})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, env, cloud.Options{QPS: ceiling, Burst: ceiling, MaxAttempts: 6, BaseBackoff: 20 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
	start := time.Now()
	// The lowest rate the action reached while the reconciles ran.
	lowest := make(chan float64)
	stop := make(chan struct{})
	go func() {
		low := float64(ceiling)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			low = min(low, c.Throttle().Rate(cloud.SLB, "DescribeLoadBalancers"))
			select {
			case <-stop:
				lowest <- low
				return
			case <-tick.C:
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, reconciles*callsEach)
	left := make(chan int, reconciles)
	for range reconciles {
		wg.Go(func() {
			ctx := cloud.WithRetryBudget(context.Background(), budget)
			for range callsEach {
				if err := describeLBs(ctx, c); err != nil {
					errs <- err
				}
			}
			n, _ := cloud.RetryBudgetLeft(ctx)
			left <- n
		})
	}
	wg.Wait()
	close(stop)
	low := <-lowest
	close(errs)
	close(left)
	for err := range errs {
		t.Errorf("call failed under throttling: %v", err)
	}
	minLeft := budget
	for n := range left {
		minLeft = min(minLeft, n)
	}
	logged := env.Emulator.Requests(gateway.RequestFilter{Product: "slb", Action: "DescribeLoadBalancers", Since: start})
	throttled := 0
	for _, r := range logged {
		if r.Code == "Throttling.Api" {
			throttled++
		}
	}
	slowed := c.Throttle().Rate(cloud.SLB, "DescribeLoadBalancers")
	t.Logf("%d calls in %v: %d attempts reached the emulator, %d throttled; action rate fell to %.2f/s and is now %.2f/s, product rate %.2f/s; fewest retries left in a reconcile: %d of %d",
		reconciles*callsEach, time.Since(start).Round(time.Millisecond), len(logged), throttled, low, slowed, c.Throttle().Rate(cloud.SLB, ""), minLeft, budget)
	if throttled == 0 {
		t.Fatalf("the emulator never throttled: the test did not exercise the limiter")
	}
	if low > serverQPS {
		t.Errorf("action rate fell only to %.2f/s, want at most the cloud's %d/s", low, serverQPS)
	}
	if slowed >= ceiling {
		t.Errorf("action rate back at the ceiling %.2f/s while the cloud still throttled", slowed)
	}
	if minLeft <= 0 {
		t.Errorf("a reconcile spent its whole retry budget")
	}
	if r := c.Throttle().Rate(cloud.SLB, "DescribeVServerGroups"); r != ceiling {
		t.Errorf("an untouched action's rate is %.2f/s, want the ceiling %d", r, ceiling)
	}

	// The quota is lifted: the advertised Limit still paces the action
	// (until limitTTL; TestQuotaRaisedIsFound covers the expiry), so no
	// call is throttled and the rate stays at the Limit.
	if !gw.RemoveThrottle(rule.ID) {
		t.Fatal("throttle rule vanished")
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if err := describeLBs(context.Background(), c); err != nil {
			t.Fatalf("call after the quota was lifted: %v", err)
		}
	}
	if r := c.Throttle().Rate(cloud.SLB, "DescribeLoadBalancers"); r > serverQPS {
		t.Errorf("action rate %.2f/s within the advertised Limit's lifetime, want at most the Limit %d/s", r, serverQPS)
	}
}

// pace is one action driven by concurrent callers through the client.
type pace struct {
	action string
	call   func(context.Context, *cloud.Client) error
}

// drive runs workers goroutines per pace, each calling its action in a loop
// until ctx is done, and returns the errors of calls made before that.
func drive(ctx context.Context, c *cloud.Client, workers int, paces ...pace) []error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range paces {
		for range workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					if err := p.call(ctx, c); err != nil && ctx.Err() == nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("%s: %w", p.action, err))
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	return errs
}

// tally counts the served and the throttled calls of an SLB action that
// arrived in [from, to).
func tally(env *emulatortest.Env, action string, from, to time.Time) (served, throttled int) {
	for _, r := range env.Emulator.Requests(gateway.RequestFilter{Product: "slb", Action: action, Since: from}) {
		if !r.Time.Before(to) {
			continue
		}
		if strings.HasPrefix(r.Code, "Throttling") {
			throttled++
		} else {
			served++
		}
	}
	return served, throttled
}

// lbWrites are two cheap CLB write actions of the quota profile's write
// class on one load balancer, created before any quota applies.
func lbWrites(t *testing.T, env *emulatortest.Env) (rename, activate pace) {
	t.Helper()
	lb, err := env.SLB(t).CreateLoadBalancer(slb.CreateCreateLoadBalancerRequest())
	emulatortest.NoError(t, err)
	rename = pace{"SetLoadBalancerName", func(ctx context.Context, c *cloud.Client) error {
		r := slb.CreateSetLoadBalancerNameRequest()
		r.LoadBalancerId, r.LoadBalancerName = lb.LoadBalancerId, "paced"
		_, err := cloud.Do(ctx, c, cloud.SLB, "SetLoadBalancerName", func(cl *cloud.Clients) (*slb.SetLoadBalancerNameResponse, error) {
			return cl.SLB.SetLoadBalancerName(r)
		})
		return err
	}}
	activate = pace{"SetLoadBalancerStatus", func(ctx context.Context, c *cloud.Client) error {
		r := slb.CreateSetLoadBalancerStatusRequest()
		r.LoadBalancerId, r.LoadBalancerStatus = lb.LoadBalancerId, "active"
		_, err := cloud.Do(ctx, c, cloud.SLB, "SetLoadBalancerStatus", func(cl *cloud.Clients) (*slb.SetLoadBalancerStatusResponse, error) {
			return cl.SLB.SetLoadBalancerStatus(r)
		})
		return err
	}}
	return rename, activate
}

// profileQPS is the quota profile alibaba's limit of an SLB write action.
func profileQPS(t *testing.T, action string, scale float64) float64 {
	t.Helper()
	p, err := gateway.LookupQuotaProfile(gateway.QuotaProfileAlibaba)
	if err != nil {
		t.Fatal(err)
	}
	return p.QPS("slb", action, false, scale)
}

// TestPacedAtPublishedWriteQuota: under the published CLB write quota
// (1.5/s per action, quota profile alibaba at scale 1), concurrent callers
// of one write action with the default client options are paced at the
// quota the first refusals advertise: the action runs at its quota and
// the cloud refuses almost nothing after the first answers.
func TestPacedAtPublishedWriteQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 20 s")
	}
	const (
		workers = 4
		run     = 20 * time.Second
	)
	env := emulatortest.Start(t)
	rename, _ := lbWrites(t, env)
	if _, err := env.Emulator.Gateway.ApplyQuotaProfile(gateway.QuotaProfileAlibaba, 1); err != nil {
		t.Fatal(err)
	}
	quota := profileQPS(t, rename.action, 1)
	c := newClient(t, env, cloud.Options{})
	// No deadline: the calls at the end would fail waiting past it.
	ctx, cancel := context.WithCancel(context.Background())
	defer time.AfterFunc(run, cancel).Stop()
	start := time.Now()
	errs := drive(ctx, c, workers, rename)
	end := time.Now()
	for _, err := range errs {
		t.Errorf("call failed: %v", err)
	}
	served, throttled := tally(env, rename.action, start, end)
	achieved := float64(served) / end.Sub(start).Seconds()
	for _, r := range env.Emulator.Requests(gateway.RequestFilter{Product: "slb", Action: rename.action, Since: start}) {
		if r.Code != gateway.CodeOK {
			t.Logf("%s at %v", r.Code, r.Time.Sub(start).Round(time.Millisecond))
		}
	}
	t.Logf("%d callers of %s for %v at a quota of %.2f/s: %d served (%.2f/s, %.2fx the quota), %d throttled; client rate %.2f/s",
		workers, rename.action, end.Sub(start).Round(time.Millisecond), quota, served, achieved, achieved/quota, throttled, c.Throttle().Rate(cloud.SLB, rename.action))
	if achieved < 0.9*quota {
		t.Errorf("achieved %.2f/s, want at least 0.9x the quota %.2f/s", achieved, quota)
	}
	// The callers' first calls all leave before any answer can say the
	// quota, so up to one refusal per caller is unavoidable; after that the
	// action is paced at the advertised Limit (the old client: 20).
	if throttled > workers {
		t.Errorf("%d calls throttled, want at most %d (the first call of each caller)", throttled, workers)
	}
}

// TestActionsRunAtTheirOwnQuotas: two write actions of one product, each
// with a quota above --cloud-api-qps (quota profile alibaba at scale 20:
// 30/s each), run at once near their own quotas: the product's limiter does
// not cap their sum, and each action probes above its starting rate until
// the cloud advertises its quota.
func TestActionsRunAtTheirOwnQuotas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 10 s")
	}
	const (
		workers = 4
		scale   = 20
		run     = 10 * time.Second
		// warmup is left out of the measured rate: the actions start at
		// --cloud-api-qps and take a few seconds to probe up to the quota.
		warmup = 5 * time.Second
	)
	env := emulatortest.Start(t)
	rename, activate := lbWrites(t, env)
	if _, err := env.Emulator.Gateway.ApplyQuotaProfile(gateway.QuotaProfileAlibaba, scale); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, env, cloud.Options{})
	// No deadline: the calls at the end would fail waiting past it.
	ctx, cancel := context.WithCancel(context.Background())
	defer time.AfterFunc(run, cancel).Stop()
	start := time.Now()
	errs := drive(ctx, c, workers, rename, activate)
	end := time.Now()
	for _, err := range errs {
		t.Errorf("call failed: %v", err)
	}
	var sum float64
	for _, p := range []pace{rename, activate} {
		quota := profileQPS(t, p.action, scale)
		served, throttled := tally(env, p.action, start.Add(warmup), end)
		all, allThrottled := tally(env, p.action, start, end)
		achieved := float64(served) / end.Sub(start.Add(warmup)).Seconds()
		sum += achieved
		t.Logf("%s at a quota of %.0f/s: %.1f/s after the first %v (%d throttled), %d served and %d throttled in all; client rate %.1f/s",
			p.action, quota, achieved, warmup, throttled, all, allThrottled, c.Throttle().Rate(cloud.SLB, p.action))
		if achieved < 0.8*quota {
			t.Errorf("%s ran at %.1f/s, want at least 0.8x its quota %.0f/s", p.action, achieved, quota)
		}
		if allThrottled > 10 {
			t.Errorf("%s: %d calls throttled, want at most 10", p.action, allThrottled)
		}
	}
	if sum <= 20 {
		t.Errorf("the two actions together ran at %.1f/s, want more than the old 20/s product cap", sum)
	}
}

// TestQuotaRaisedIsFound: an action paced at an advertised Limit keeps it
// while it holds; once it expires (shortened here from 10 minutes), the
// action probes above it and finds a quota raised meanwhile.
func TestQuotaRaisedIsFound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for up to 20 s")
	}
	const (
		workers = 4
		low     = 4
		high    = 20
		ttl     = 2 * time.Second
	)
	env := emulatortest.Start(t)
	rename, _ := lbWrites(t, env)
	gw := env.Emulator.Gateway
	rule, err := gw.AddThrottle(gateway.ThrottleRule{Scope: gateway.ThrottleScopeAPI, Product: "slb", Action: rename.action, QPS: low})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, env, cloud.Options{})
	cloud.SetLimitTTL(c.Throttle(), ttl)
	ctx, cancel := context.WithCancel(context.Background())
	defer time.AfterFunc(20*time.Second, cancel).Stop()
	done := make(chan []error)
	go func() { done <- drive(ctx, c, workers, rename) }()

	// Within the Limit's lifetime (from the first refusals, at the start)
	// the action is paced at it.
	time.Sleep(ttl / 2)
	if r := c.Throttle().Rate(cloud.SLB, rename.action); r != low {
		t.Errorf("rate %.2f/s under a quota of %d/s, want the advertised %d/s", r, low, low)
	}
	time.Sleep(ttl)
	raised := time.Now()
	if !gw.RemoveThrottle(rule.ID) {
		t.Fatal("throttle rule vanished")
	}
	if _, err := gw.AddThrottle(gateway.ThrottleRule{Scope: gateway.ThrottleScopeAPI, Product: "slb", Action: rename.action, QPS: high}); err != nil {
		t.Fatal(err)
	}
	var found time.Duration
	for ctx.Err() == nil {
		if c.Throttle().Rate(cloud.SLB, rename.action) >= 0.9*high {
			found = time.Since(raised)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	settled := time.Now()
	if found > 0 && ctx.Err() == nil {
		// Run 3 s at the new quota, then stop.
		time.Sleep(3 * time.Second)
	}
	end := time.Now()
	cancel()
	for _, err := range <-done {
		t.Errorf("call failed: %v", err)
	}
	served, throttled := tally(env, rename.action, settled, end)
	_, throttledAll := tally(env, rename.action, time.Time{}, end)
	achieved := float64(served) / end.Sub(settled).Seconds()
	t.Logf("quota raised from %d/s to %d/s; limit lifetime %v; client rate reached %.1f/s after %v; then %.1f/s served (%d throttled); %d throttled in all",
		low, high, ttl, c.Throttle().Rate(cloud.SLB, rename.action), found.Round(time.Millisecond), achieved, throttled, throttledAll)
	if found == 0 {
		t.Fatalf("the raised quota was not found within the test's 20 s")
	}
	if achieved < 0.8*high {
		t.Errorf("ran at %.1f/s after finding the raised quota, want at least 0.8x %d/s", achieved, high)
	}
}
