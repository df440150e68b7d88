package cloud

import (
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"k8s.io/component-base/metrics/legacyregistry"
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

// TestThrottleAIMD: a throttle lowers the scope the cloud named by half and
// the other scope a little, at most once per second, never below the
// advertised Limit or the floor; quiet seconds of success add a twentieth
// of the ceiling back, up to the ceiling and no further.
func TestThrottleAIMD(t *testing.T) {
	type step struct {
		after    time.Duration
		throttle string // a code, or "" for a success
		hint     Hint
		// wantAction and wantProduct are the rates after the step.
		wantAction, wantProduct float64
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"api throttle halves the action and trims the product", []step{
			{0, "Throttling.Api", Hint{}, 10, 16},
		}},
		{"user throttle halves the product and trims the action", []step{
			{0, "Throttling.User", Hint{}, 16, 10},
		}},
		{"plain Throttling is the account's quota", []step{
			{0, "Throttling", Hint{}, 16, 10},
		}},
		{"throttles within a second count once", []step{
			{0, "Throttling.Api", Hint{}, 10, 16},
			{100 * time.Millisecond, "Throttling.Api", Hint{}, 10, 16},
			{900 * time.Millisecond, "Throttling.Api", Hint{}, 5, 12.8},
		}},
		{"advertised limit caps the decrease", []step{
			{0, "Throttling.Api", Hint{Limit: 2}, 2, 16},
		}},
		{"floor holds", []step{
			{0, "Throttling.Api", Hint{Limit: 0.001}, 0.2, 16},
		}},
		{"success within a second of a change does not raise", []step{
			{0, "Throttling.Api", Hint{}, 10, 16},
			{500 * time.Millisecond, "", Hint{}, 10, 16},
		}},
		{"additive increase up to the ceiling", []step{
			{0, "Throttling.Api", Hint{}, 10, 16},
			{time.Second, "", Hint{}, 10.99, 16.99},
			{time.Second, "", Hint{}, 11.98, 17.98},
			{time.Second, "", Hint{}, 12.97, 18.97},
			{time.Second, "", Hint{}, 13.96, 19.96},
			{time.Second, "", Hint{}, 14.95, 20},
			{time.Second, "", Hint{}, 15.94, 20},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1700000000, 0)}
			th := newThrottle(clk, 20, 40)
			for i, s := range tc.steps {
				clk.step(s.after)
				if s.throttle != "" {
					th.Throttled(SLB, "DescribeLoadBalancers", s.throttle, s.hint)
				} else {
					th.Succeeded(SLB, "DescribeLoadBalancers")
				}
				if a, p := th.Rate(SLB, "DescribeLoadBalancers"), th.Rate(SLB, ""); !near(a, s.wantAction) || !near(p, s.wantProduct) {
					t.Fatalf("step %d: action rate %v, product rate %v; want %v, %v", i, a, p, s.wantAction, s.wantProduct)
				}
			}
			// Other actions and products keep their own action limiters.
			if r := th.Rate(SLB, "DescribeVServerGroups"); r != 20 {
				t.Errorf("another action's rate = %v, want the ceiling 20", r)
			}
			if r := th.Rate(ECS, ""); r != 20 {
				t.Errorf("another product's rate = %v, want the ceiling 20", r)
			}
		})
	}
}

// TestThrottleRecoversToCeiling: from the floor, about twenty quiet seconds
// bring the rate back to the ceiling, and it never goes above.
func TestThrottleRecoversToCeiling(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1700000000, 0)}
	th := newThrottle(clk, 20, 40)
	th.Throttled(NLB, "ListListeners", "Throttling.Api", Hint{Limit: 0.01})
	var seconds int
	for ; th.Rate(NLB, "ListListeners") < 20 && seconds < 100; seconds++ {
		clk.step(time.Second)
		th.Succeeded(NLB, "ListListeners")
	}
	if seconds < 15 || seconds > 25 {
		t.Errorf("took %d seconds back to the ceiling, want about 20", seconds)
	}
	for range 10 {
		clk.step(time.Second)
		th.Succeeded(NLB, "ListListeners")
	}
	if r := th.Rate(NLB, "ListListeners"); r != 20 {
		t.Errorf("rate %v after recovery, want 20", r)
	}
}

// TestThrottleDelay: reservations follow the lowered rate, and a TimeLeft
// hint holds the action until it ends.
func TestThrottleDelay(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1700000000, 0)}
	th := newThrottle(clk, 10, 1)
	d, _ := th.delay(VPC, "DescribeRouteEntryList")
	if d != 0 {
		t.Fatalf("first call waits %v, want 0", d)
	}
	d, _ = th.delay(VPC, "DescribeRouteEntryList")
	if d != 100*time.Millisecond {
		t.Fatalf("second call at 10 QPS, burst 1 waits %v, want 100ms", d)
	}
	clk.step(time.Second)
	th.Throttled(VPC, "DescribeRouteEntryList", "Throttling.Api", Hint{TimeLeft: 700 * time.Millisecond})
	d, _ = th.delay(VPC, "DescribeRouteEntryList")
	if d != 700*time.Millisecond {
		t.Fatalf("call during a 700ms hold waits %v", d)
	}
	clk.step(time.Second)
	d, cancel := th.delay(VPC, "DescribeRouteEntryList")
	if d != 0 {
		t.Fatalf("call after the hold waits %v, want 0", d)
	}
	cancel()
	d, _ = th.delay(VPC, "DescribeRouteEntryList")
	if d != 0 {
		t.Fatalf("a cancelled reservation was not given back: next call waits %v", d)
	}
	d, _ = th.delay(VPC, "DescribeRouteEntryList")
	if d != 200*time.Millisecond {
		t.Fatalf("at the halved 5 QPS the next call waits %v, want 200ms", d)
	}
	// The hold is bounded, whatever the header says.
	clk.step(time.Minute)
	th.Throttled(VPC, "DescribeRouteEntryList", "Throttling.Api", Hint{TimeLeft: time.Hour})
	d, _ = th.delay(VPC, "DescribeRouteEntryList")
	if d > maxHold {
		t.Fatalf("hold %v exceeds %v", d, maxHold)
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
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// TestThrottleMetrics: the current rates and the refusals are exported.
func TestThrottleMetrics(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1700000000, 0)}
	th := newThrottle(clk, 20, 40)
	const action = "MetricsTestAction"
	th.Succeeded(ECS, action)
	if v := metricValue(t, "alicloud_api_client_rate_limit", map[string]string{"product": "ecs", "action": action}); v != 20 {
		t.Fatalf("rate gauge before throttling = %v, want 20", v)
	}
	th.Throttled(ECS, action, "Throttling.Api", Hint{})
	if v := metricValue(t, "alicloud_api_client_rate_limit", map[string]string{"product": "ecs", "action": action}); v != 10 {
		t.Errorf("action rate gauge = %v, want 10", v)
	}
	if v := metricValue(t, "alicloud_api_client_rate_limit", map[string]string{"product": "ecs", "action": productScope}); v != 16 {
		t.Errorf("product rate gauge = %v, want 16", v)
	}
	if v := metricValue(t, "alicloud_api_throttled_total", map[string]string{"product": "ecs", "action": action, "code": "Throttling.Api"}); v != 1 {
		t.Errorf("throttled_total = %v, want 1", v)
	}
}
