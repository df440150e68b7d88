package cloud_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/emulatortest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
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

	// The quota is lifted: a few seconds of clean calls raise the rate.
	if !gw.RemoveThrottle(rule.ID) {
		t.Fatal("throttle rule vanished")
	}
	deadline := time.Now().Add(3500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if err := describeLBs(context.Background(), c); err != nil {
			t.Fatalf("call after the quota was lifted: %v", err)
		}
	}
	raised := c.Throttle().Rate(cloud.SLB, "DescribeLoadBalancers")
	t.Logf("action rate %.2f/s after 3.5s without throttling", raised)
	if raised < slowed+2*(ceiling-0.4)/20-1e-9 {
		t.Errorf("action rate %.2f/s after the quota was lifted, want at least two additive steps above %.2f/s", raised, slowed)
	}
}
