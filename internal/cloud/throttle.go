package cloud

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
)

// Adaptive throttling. The cloud's flow control is per account and
// product ("user" scope) and per action ("api" scope), and its quotas are
// not published per account, so a fixed client rate is either too slow for
// a large cluster or too fast for a small quota. Each product has a shared
// limiter and each action its own; a call waits for both. A Throttling
// answer halves the rate of the scope the cloud named (the action for
// Throttling.Api, the whole product otherwise) and trims the other, never
// below the cloud's advertised Limit when it sends one, and holds the
// limiter for the TimeLeft the cloud advertises; every second of calls
// without throttling adds a twentieth of the ceiling back. Options.QPS is
// both the starting rate and the ceiling: the controller never goes faster
// than --cloud-api-qps.

// Tuning of the adaptive limiter.
const (
	// decreaseScope multiplies the rate of the scope the cloud throttled.
	decreaseScope = 0.5
	// decreaseOther multiplies the rate of the other scope: the product
	// when one action was throttled, the action when the product was.
	decreaseOther = 0.8
	// decreaseGap is the least time between two decreases of a limiter:
	// the throttles of calls already in flight report the same overload.
	decreaseGap = time.Second
	// increaseGap is the time without throttling before each additive
	// increase.
	increaseGap = time.Second
	// increaseSteps is how many increases take the rate from the floor
	// back to the ceiling.
	increaseSteps = 20
	// maxHold bounds a TimeLeft hint, so a garbled header cannot stall a
	// product.
	maxHold = 30 * time.Second
)

// clock is the time source of the limiter; tests use a fake one.
type clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// aimdLimiter is one adaptive token bucket.
type aimdLimiter struct {
	lim *rate.Limiter
	// rate is the current rate; lastChange is when it last went down or
	// up; holdUntil is when a TimeLeft hint ends.
	rate       float64
	lastDown   time.Time
	lastChange time.Time
	holdUntil  time.Time
}

// Throttle is the process's adaptive rate limiter for cloud calls: a
// shared limiter per product and one per product and action. It is safe
// for concurrent use.
type Throttle struct {
	clock   clock
	ceiling float64
	floor   float64
	burst   int

	mu       sync.Mutex
	products map[Product]*aimdLimiter
	actions  map[string]*aimdLimiter
}

// NewThrottle returns a Throttle whose limiters start at, and never exceed,
// qps calls per second with the given burst.
func NewThrottle(qps float64, burst int) *Throttle {
	return newThrottle(realClock{}, qps, burst)
}

func newThrottle(c clock, qps float64, burst int) *Throttle {
	if burst < 1 {
		burst = 1
	}
	return &Throttle{
		clock: c, ceiling: qps, floor: math.Min(qps, math.Max(qps/100, 0.2)), burst: burst,
		products: map[Product]*aimdLimiter{}, actions: map[string]*aimdLimiter{},
	}
}

func actionKey(p Product, action string) string { return string(p) + "/" + action }

// limiters returns the product's and the action's limiters; t.mu is held.
func (t *Throttle) limiters(p Product, action string) (prod, act *aimdLimiter) {
	now := t.clock.Now()
	mk := func() *aimdLimiter {
		return &aimdLimiter{lim: rate.NewLimiter(rate.Limit(t.ceiling), t.burst), rate: t.ceiling, lastChange: now}
	}
	prod = t.products[p]
	if prod == nil {
		prod = mk()
		t.products[p] = prod
		rateGauge.WithLabelValues(string(p), productScope).Set(t.ceiling)
	}
	if action == "" {
		return prod, nil
	}
	k := actionKey(p, action)
	act = t.actions[k]
	if act == nil {
		act = mk()
		t.actions[k] = act
		rateGauge.WithLabelValues(string(p), action).Set(t.ceiling)
	}
	return prod, act
}

// productScope is the action label of a product's shared limiter.
const productScope = "*"

// delay reserves one call of the action and returns how long it must wait
// from now: the later of both limiters and of any TimeLeft hold.
func (t *Throttle) delay(p Product, action string) (time.Duration, func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	prod, act := t.limiters(p, action)
	var d time.Duration
	var cancels []func()
	for _, l := range []*aimdLimiter{prod, act} {
		r := l.lim.ReserveN(now, 1)
		if !r.OK() {
			// Burst below one: cannot happen (burst >= 1); wait a period.
			d = max(d, time.Duration(float64(time.Second)/l.rate))
			continue
		}
		cancels = append(cancels, func() { r.CancelAt(t.clock.Now()) })
		d = max(d, r.DelayFrom(now))
		if l.holdUntil.After(now) {
			d = max(d, l.holdUntil.Sub(now))
		}
	}
	return d, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, c := range cancels {
			c()
		}
	}
}

// Wait blocks until the action may be called or ctx is done.
func (t *Throttle) Wait(ctx context.Context, p Product, action string) error {
	d, cancel := t.delay(p, action)
	if d <= 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		cancel()
		return fmt.Errorf("rate limit wait of %v would pass the context deadline", d.Round(time.Millisecond))
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		cancel()
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Rate returns the current rate of the action's limiter, and of the
// product's shared one when action is "".
func (t *Throttle) Rate(p Product, action string) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	prod, act := t.limiters(p, action)
	if act == nil {
		return prod.rate
	}
	return act.rate
}

// Hint is what a throttling answer says about the cloud's quota.
type Hint struct {
	// Limit is the quota in calls per second (0 when not sent).
	Limit float64
	// TimeLeft is how long until the quota refills (0 when not sent).
	TimeLeft time.Duration
}

// Throttled lowers the rates after the cloud refused an action with code
// (Throttling.Api names the action's quota, any other Throttling code the
// account's quota for the product) and holds them for the hint's TimeLeft.
func (t *Throttle) Throttled(p Product, action, code string, h Hint) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	prod, act := t.limiters(p, action)
	scope, other := act, prod
	scopeLabel, otherLabel := action, productScope
	if code != "Throttling.Api" {
		scope, other = prod, act
		scopeLabel, otherLabel = productScope, action
	}
	throttledTotal.WithLabelValues(string(p), action, code).Inc()
	t.decrease(scope, now, decreaseScope, h.Limit, h.TimeLeft, string(p), scopeLabel)
	t.decrease(other, now, decreaseOther, 0, 0, string(p), otherLabel)
}

// decrease lowers l once per decreaseGap, to at most limit when the cloud
// named one; a hold extends whenever it is longer than the current one.
func (t *Throttle) decrease(l *aimdLimiter, now time.Time, factor, limit float64, hold time.Duration, product, action string) {
	if hold > 0 {
		if until := now.Add(min(hold, maxHold)); until.After(l.holdUntil) {
			l.holdUntil = until
		}
	}
	if !l.lastDown.IsZero() && now.Sub(l.lastDown) < decreaseGap {
		return
	}
	r := l.rate * factor
	if limit > 0 && limit < r {
		r = limit
	}
	t.set(l, math.Max(t.floor, r), now, product, action)
	l.lastDown = now
	klog.V(2).InfoS("Cloud throttled; lowering the client rate", "product", product, "action", action, "rate", l.rate)
}

// Succeeded raises the action's and the product's rates by one step when
// neither was changed for increaseGap.
func (t *Throttle) Succeeded(p Product, action string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	prod, act := t.limiters(p, action)
	step := math.Max((t.ceiling-t.floor)/increaseSteps, 0.05)
	if act.rate < t.ceiling && now.Sub(act.lastChange) >= increaseGap {
		t.set(act, math.Min(t.ceiling, act.rate+step), now, string(p), action)
	}
	if prod.rate < t.ceiling && now.Sub(prod.lastChange) >= increaseGap {
		t.set(prod, math.Min(t.ceiling, prod.rate+step), now, string(p), productScope)
	}
}

// set changes l's rate; its burst shrinks with it so that a lowered rate
// is not followed by a full burst at the ceiling.
func (t *Throttle) set(l *aimdLimiter, r float64, now time.Time, product, action string) {
	l.rate = r
	l.lastChange = now
	l.lim.SetLimitAt(now, rate.Limit(r))
	l.lim.SetBurstAt(now, max(1, min(t.burst, int(math.Ceil(float64(t.burst)*r/t.ceiling)))))
	rateGauge.WithLabelValues(product, action).Set(r)
}

// hintOf reads the x-ratelimit-* header of a throttling answer:
// "Limit:10,Remain:0,TimeLeft:250" (TimeLeft in milliseconds).
func hintOf(err error) Hint {
	var se *sdkerrors.ServerError
	if !errors.As(err, &se) {
		return Hint{}
	}
	var h Hint
	for k, vs := range se.RespHeaders {
		if !strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
			continue
		}
		for _, v := range vs {
			for _, part := range strings.Split(v, ",") {
				name, val, ok := strings.Cut(strings.TrimSpace(part), ":")
				if !ok {
					continue
				}
				f, perr := strconv.ParseFloat(strings.TrimSpace(val), 64)
				if perr != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
					continue
				}
				switch strings.ToLower(name) {
				case "limit":
					if h.Limit == 0 || f < h.Limit {
						h.Limit = f
					}
				case "timeleft":
					if d := time.Duration(f * float64(time.Millisecond)); d > h.TimeLeft {
						h.TimeLeft = d
					}
				}
			}
		}
	}
	return h
}
