package cloud

import (
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// saturate books calls of the action until one has to wait, as a caller
// queued on the limiter does.
func saturate(t *testing.T, th *Throttle, p Product, action string) {
	t.Helper()
	for range 1000 {
		if d, _, _, _ := th.delay(p, action, 0); d > 0 {
			return
		}
	}
	t.Fatalf("%s %s: no call had to wait", p, action)
}

// TestThrottleStateMachine: a throttle lowers only the scope the cloud
// named (the action for Throttling.Api, the product otherwise): to a new
// advertised Limit (raising it when below), by a fifth at or below a known
// one, by half without one, at most once per second, never below the floor. Quiet
// seconds in which calls queued raise the rate: half the gap back towards
// the rate where it was throttled, a hundredth of it near it, then steps
// doubling from a twentieth past it, up to the product ceiling; an idle
// limiter is not raised.
func TestThrottleStateMachine(t *testing.T) {
	type step struct {
		after time.Duration
		// op is a throttle code, "ok" for an answered call, "busy" for an
		// answered call after calls queued on the limiter.
		op   string
		hint Hint
		// wantAction and wantProduct are the rates after the step.
		wantAction, wantProduct float64
	}
	busy := func(wantAction float64) step { return step{time.Second, "busy", Hint{}, wantAction, 100} }
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"api throttle without a Limit halves the action only", []step{
			{0, "Throttling.Api", Hint{}, 10, 100},
		}},
		{"user throttle halves the product only", []step{
			{0, "Throttling.User", Hint{}, 20, 50},
		}},
		{"plain Throttling is the account's quota", []step{
			{0, "Throttling", Hint{}, 20, 50},
		}},
		{"user throttle with a Limit sets the product to it", []step{
			{0, "Throttling.User", Hint{Limit: 30}, 20, 30},
		}},
		{"throttles within a second count once", []step{
			{0, "Throttling.Api", Hint{}, 10, 100},
			{100 * time.Millisecond, "Throttling.Api", Hint{}, 10, 100},
			{900 * time.Millisecond, "Throttling.Api", Hint{}, 5, 100},
		}},
		{"advertised Limit sets the rate", []step{
			{0, "Throttling.Api", Hint{Limit: 2}, 2, 100},
		}},
		{"a Limit below the rate applies within the gap", []step{
			{0, "Throttling.Api", Hint{}, 10, 100},
			{100 * time.Millisecond, "Throttling.Api", Hint{Limit: 3}, 3, 100},
		}},
		{"throttled at the advertised Limit: a fifth off, then back to it", []step{
			{0, "Throttling.Api", Hint{Limit: 2}, 2, 100},
			{time.Second, "Throttling.Api", Hint{Limit: 2}, 1.6, 100},
			busy(1.8), busy(1.82), busy(1.84),
		}},
		{"a new Limit above the rate raises it: the refused calls were a burst", []step{
			{0, "Throttling.Api", Hint{Limit: 30}, 30, 100},
			{100 * time.Millisecond, "Throttling.Api", Hint{Limit: 30}, 30, 100},
			{time.Second, "Throttling.Api", Hint{Limit: 30}, 24, 100},
			busy(27), busy(27.3),
		}},
		{"floor holds", []step{
			{0, "Throttling.Api", Hint{Limit: 0.001}, 0.2, 100},
		}},
		{"an answered call within a second of a change does not raise", []step{
			{0, "Throttling.Api", Hint{}, 10, 100},
			{500 * time.Millisecond, "busy", Hint{}, 10, 100},
		}},
		{"an idle limiter is not raised", []step{
			{0, "Throttling.Api", Hint{}, 10, 100},
			{time.Second, "ok", Hint{}, 10, 100},
			{time.Second, "ok", Hint{}, 10, 100},
		}},
		{"recovery: half the gap, gently near the throttled rate, then probing", []step{
			{0, "Throttling.Api", Hint{}, 10, 100},
			busy(15), busy(17.5), busy(18.75),
			busy(18.95), busy(19.15), busy(19.35), busy(19.55), busy(19.75), busy(19.95), busy(20),
			busy(21), busy(23), busy(27),
		}},
		{"never throttled: probes above the starting rate up to the product ceiling", []step{
			busy(21), busy(23), busy(27), busy(35), busy(51), busy(83), busy(100), busy(100),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1700000000, 0)}
			th := newThrottle(clk, 20, 100, 40)
			th.Rate(SLB, "DescribeLoadBalancers") // the limiters exist from the start
			for i, s := range tc.steps {
				clk.step(s.after)
				switch s.op {
				case "ok":
					th.Succeeded(SLB, "DescribeLoadBalancers")
				case "busy":
					saturate(t, th, SLB, "DescribeLoadBalancers")
					th.Succeeded(SLB, "DescribeLoadBalancers")
				default:
					th.Throttled(SLB, "DescribeLoadBalancers", s.op, s.hint)
				}
				if a, p := th.Rate(SLB, "DescribeLoadBalancers"), th.Rate(SLB, ""); !near(a, s.wantAction) || !near(p, s.wantProduct) {
					t.Fatalf("step %d: action rate %v, product rate %v; want %v, %v", i, a, p, s.wantAction, s.wantProduct)
				}
			}
			// Other actions and products keep their own limiters.
			if r := th.Rate(SLB, "DescribeVServerGroups"); r != 20 {
				t.Errorf("another action's rate = %v, want the starting rate 20", r)
			}
			if r := th.Rate(ECS, ""); r != 100 {
				t.Errorf("another product's rate = %v, want the ceiling 100", r)
			}
		})
	}
}

// TestThrottleLimitExpires: an advertised Limit paces the action for
// limitTTL however busy it is; then the action probes above it and, the
// quota having been raised meanwhile, finds the new Limit within seconds.
func TestThrottleLimitExpires(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1700000000, 0)}
	th := newThrottle(clk, 20, 100, 40)
	const action = "AddVServerGroupBackendServers"
	th.Throttled(SLB, action, "Throttling.Api", Hint{Limit: 1.5})
	start := clk.Now()
	for clk.Now().Sub(start) < limitTTL-time.Second {
		clk.step(time.Second)
		saturate(t, th, SLB, action)
		th.Succeeded(SLB, action)
		if r := th.Rate(SLB, action); r != 1.5 {
			t.Fatalf("%v after the Limit: rate %v, want the Limit 1.5", clk.Now().Sub(start), r)
		}
	}
	var seconds int
	for ; th.Rate(SLB, action) < 15 && seconds < 60; seconds++ {
		clk.step(time.Second)
		saturate(t, th, SLB, action)
		th.Succeeded(SLB, action)
	}
	if seconds > 10 {
		t.Errorf("took %d s after the Limit expired to probe from 1.5/s past a raised quota of 15/s, want at most 10", seconds)
	}
	th.Throttled(SLB, action, "Throttling.Api", Hint{Limit: 15})
	if r := th.Rate(SLB, action); r != 15 {
		t.Errorf("rate %v after the raised Limit was advertised, want 15", r)
	}
}

// TestThrottleBurst: the bucket holds the configured burst at the starting
// rate and at most half an advertised Limit, so that a burst after an idle
// spell fits the cloud's own bucket.
func TestThrottleBurst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hint  Hint
		code  string
		burst int
	}{
		{"starting rate", Hint{}, "", 40},
		{"halved without a Limit", Hint{}, "Throttling.Api", 20},
		{"small Limit", Hint{Limit: 1.5}, "Throttling.Api", 1},
		{"Limit of 30/s", Hint{Limit: 30}, "Throttling.Api", 15},
		{"a new Limit above the ceiling: the ceiling, the configured burst", Hint{Limit: 200}, "Throttling.Api", 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1700000000, 0)}
			th := newThrottle(clk, 20, 100, 40)
			if tc.code != "" {
				th.Throttled(SLB, "CreateVServerGroup", tc.code, tc.hint)
			}
			_, act := th.limiters(SLB, "CreateVServerGroup")
			if b := act.lim.Burst(); b != tc.burst {
				t.Errorf("burst %d, want %d", b, tc.burst)
			}
		})
	}
}

// TestThrottleDelay: reservations follow the lowered rate, a TimeLeft hint
// holds the action until it ends, and a lowered limiter tells its waiters
// to book again.
func TestThrottleDelay(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1700000000, 0)}
	th := newThrottle(clk, 10, 100, 1)
	d, _, _, _ := th.delay(VPC, "DescribeRouteEntryList", 0)
	if d != 0 {
		t.Fatalf("first call waits %v, want 0", d)
	}
	d, gens, _, _ := th.delay(VPC, "DescribeRouteEntryList", 0)
	if d != 100*time.Millisecond {
		t.Fatalf("second call at 10 QPS, burst 1 waits %v, want 100ms", d)
	}
	if th.lowered(VPC, "DescribeRouteEntryList", gens) {
		t.Fatal("lowered before any throttle")
	}
	clk.step(time.Second)
	th.Throttled(VPC, "DescribeRouteEntryList", "Throttling.Api", Hint{TimeLeft: 700 * time.Millisecond})
	if !th.lowered(VPC, "DescribeRouteEntryList", gens) {
		t.Fatal("a waiter booked before the throttle is not told to book again")
	}
	d, _, _, _ = th.delay(VPC, "DescribeRouteEntryList", 0)
	if d != 700*time.Millisecond {
		t.Fatalf("call during a 700ms hold waits %v", d)
	}
	clk.step(time.Second)
	d, _, cancel, _ := th.delay(VPC, "DescribeRouteEntryList", 0)
	if d != 0 {
		t.Fatalf("call after the hold waits %v, want 0", d)
	}
	cancel()
	d, _, _, _ = th.delay(VPC, "DescribeRouteEntryList", 0)
	if d != 0 {
		t.Fatalf("a cancelled reservation was not given back: next call waits %v", d)
	}
	d, gens, _, _ = th.delay(VPC, "DescribeRouteEntryList", 0)
	if d != 200*time.Millisecond {
		t.Fatalf("at the halved 5 QPS the next call waits %v, want 200ms", d)
	}
	// A call that cannot wait that long books nothing.
	if d, _, _, ok := th.delay(VPC, "DescribeRouteEntryList", 100*time.Millisecond); ok || d != 400*time.Millisecond {
		t.Fatalf("with 100ms to spare: wait %v, booked %v; want 400ms, not booked", d, ok)
	}
	if d, _, _, _ = th.delay(VPC, "DescribeRouteEntryList", 0); d != 400*time.Millisecond {
		t.Fatalf("after a call that could not wait, the next waits %v, want 400ms", d)
	}
	// A product-scope throttle lowers the product's limiter: its waiters
	// book again too.
	clk.step(5 * time.Second)
	th.Throttled(VPC, "DescribeVSwitches", "Throttling.User", Hint{})
	if !th.lowered(VPC, "DescribeRouteEntryList", gens) {
		t.Fatal("a waiter is not told to book again after its product was lowered")
	}
	// The hold is bounded, whatever the header says.
	clk.step(time.Minute)
	th.Throttled(VPC, "DescribeRouteEntryList", "Throttling.Api", Hint{TimeLeft: time.Hour})
	d, _, _, _ = th.delay(VPC, "DescribeRouteEntryList", 0)
	if d > maxHold {
		t.Fatalf("hold %v exceeds %v", d, maxHold)
	}
}

// TestThrottleProductCeiling: the product ceiling is never below the
// starting rate of an action.
func TestThrottleProductCeiling(t *testing.T) {
	th := newThrottle(&fakeClock{now: time.Unix(1700000000, 0)}, 50, 10, 40)
	if r := th.Rate(NLB, ""); r != 50 {
		t.Errorf("product rate %v with --cloud-api-qps 50 above a product ceiling of 10, want 50", r)
	}
}

// TestHintOf reads the gateway's x-ratelimit headers, whatever their case.
func TestHintOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers map[string][]string
		want    Hint
	}{
		{"api header", map[string][]string{"X-Ratelimit-User-Api": {"Limit:5,Remain:0,TimeLeft:250"}}, Hint{Limit: 5, TimeLeft: 250 * time.Millisecond}},
		{"user header lower case", map[string][]string{"x-ratelimit-user": {"Limit:100, Remain:0, TimeLeft:12"}}, Hint{Limit: 100, TimeLeft: 12 * time.Millisecond}},
		{"both: tighter limit, longer wait", map[string][]string{
			"X-Ratelimit-User":     {"Limit:100,Remain:0,TimeLeft:10"},
			"X-Ratelimit-User-Api": {"Limit:5,Remain:0,TimeLeft:300"},
		}, Hint{Limit: 5, TimeLeft: 300 * time.Millisecond}},
		{"garbage ignored", map[string][]string{"X-Ratelimit-User-Api": {"Limit:x,TimeLeft:-5,junk"}}, Hint{}},
		{"other headers ignored", map[string][]string{"Retry": {"Limit:5"}}, Hint{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := sdkerrors.NewServerError(http.StatusBadRequest, `{"Code":"Throttling.Api","Message":"x","RequestId":"r"}`, "").(*sdkerrors.ServerError)
			se.RespHeaders = tc.headers
			if got := hintOf(se); got != tc.want {
				t.Errorf("hint = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := hintOf(http.ErrHandlerTimeout); got != (Hint{}) {
		t.Errorf("hint of a non-server error = %+v", got)
	}
}

// metricValue reads a gauge or counter from the legacy registry; -1 when
// the series does not exist.
func metricValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok, err := ccmmetrics.Value(name, labels)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return -1
	}
	return v
}

// TestThrottleMetrics: the current rates and the refusals are exported.
func TestThrottleMetrics(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1700000000, 0)}
	th := newThrottle(clk, 20, 100, 40)
	const action = "MetricsTestAction"
	th.Succeeded(ECS, action)
	if v := metricValue(t, "alicloud_api_client_rate_limit", map[string]string{"product": "ecs", "action": action}); v != 20 {
		t.Fatalf("rate gauge before throttling = %v, want 20", v)
	}
	th.Throttled(ECS, action, "Throttling.Api", Hint{})
	if v := metricValue(t, "alicloud_api_client_rate_limit", map[string]string{"product": "ecs", "action": action}); v != 10 {
		t.Errorf("action rate gauge = %v, want 10", v)
	}
	if v := metricValue(t, "alicloud_api_client_rate_limit", map[string]string{"product": "ecs", "action": productScope}); v != 100 {
		t.Errorf("product rate gauge = %v, want 100 (an action's throttle leaves the product alone)", v)
	}
	if v := metricValue(t, "alicloud_api_throttled_total", map[string]string{"product": "ecs", "action": action, "code": "Throttling.Api"}); v != 1 {
		t.Errorf("throttled_total = %v, want 1", v)
	}
}
