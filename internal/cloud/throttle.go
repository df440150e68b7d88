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

// Adaptive throttling. The cloud's flow control is per action ("api"
// scope: each action of each product has its own quota) and per account
// and product ("user" scope), and its quotas are not published per
// account, so a fixed client rate is either too slow for a raised quota or
// too fast for a small one. Each action has its own limiter and each
// product a shared one; a call waits for both.
//
// An action starts at Options.QPS (--cloud-api-qps). A Throttling.Api
// answer lowers only the action: to the Limit its x-ratelimit header
// advertises (or raises it there, when the refusal was of a burst), which
// then caps the action for limitTTL, so that it is paced at the cloud's
// quota instead of probing past it every few seconds; with no Limit, by
// half. Its TimeLeft holds the limiter. Seconds without
// throttling in which callers queued on the limiter raise it: fast back
// towards the rate where it was last throttled, gently (a hundredth of
// that rate a second) near it, and past it by steps that double, up to
// Options.ProductQPS; an action never throttled probes above --cloud-api-qps
// the same way, so a cloud with larger quotas is used fully and a smaller
// one answers with its Limit after a few refusals.
//
// The product's limiter starts at, and never exceeds, Options.ProductQPS
// (--cloud-api-product-qps): it does not cap the sum of actions that each
// run within their own quota, and slows down only when the cloud throttles
// the account's product scope (Throttling.User, Throttling), by the same
// rules.

// DefaultProductQPS is the default ceiling of a product's shared limiter
// and of each action (--cloud-api-product-qps). The published new-account
// quotas of the actions the CCM calls are at most 50 calls/s (CLB reads,
// 3000 a minute) and 1.5-5/s for writes, and a load-balancer burst runs
// about five actions of one product at once: 100/s lets each run at its
// own quota, or at --cloud-api-qps, together, and still bounds a runaway
// loop well below what an account's product scope is likely to allow.
const DefaultProductQPS = 100

// Tuning of the adaptive limiter.
const (
	// decreaseScope multiplies the rate of the throttled scope when the
	// answer advertises no Limit.
	decreaseScope = 0.5
	// decreaseAtLimit multiplies the rate of a scope throttled at or below
	// the Limit the cloud advertises: the quota is shared with another
	// caller, or arrivals bunched up; a fifth off drains either.
	decreaseAtLimit = 0.8
	// decreaseGap is the least time between two decreases of a limiter:
	// the throttles of calls already in flight report the same overload.
	decreaseGap = time.Second
	// increaseGap is the time without a change before each increase.
	increaseGap = time.Second
	// busyWindow: a limiter is raised only if a call had to wait for it
	// this recently; a limiter nobody waits for learns nothing by rising.
	busyWindow = 2 * time.Second
	// recoverBand: below (1-recoverBand) of the rate where the scope was
	// last throttled, each increase takes half of the remaining gap.
	recoverBand = 0.1
	// gentleStep is the increase per second, as a fraction of the rate
	// where the scope was last throttled, within recoverBand of it: the
	// steady state sits just under the quota, so throttles stay rare.
	gentleStep = 0.01
	// probeStep is the first increase past that rate (or past the starting
	// rate when never throttled), as a fraction of it; each further
	// increase doubles, so a quota several times larger is found in a few
	// seconds.
	probeStep = 0.05
	// limitTTL is how long an advertised Limit caps its scope. Quotas
	// change rarely (Quota Center raises them on request); after this the
	// limiter probes above the old Limit once and learns the new one.
	limitTTL = 10 * time.Minute
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
	product, action string // metric labels
	lim             *rate.Limiter
	// gen counts the decreases; a waiter whose slot was booked before one
	// books again at the lowered rate.
	gen uint64
	// rate is the current rate; start is the starting rate and the
	// reference until the first throttle; ceiling is the highest rate.
	rate, start, ceiling float64
	// throttledAt is the rate at which the scope was last throttled (the
	// advertised Limit when it was lower); 0 before any throttle.
	throttledAt float64
	// limit is the advertised Limit in force until limitUntil.
	limit      float64
	limitUntil time.Time
	// probes counts the increases since the rate reached throttledAt (or
	// start); each one doubles the step.
	probes int
	// lastDown and lastChange are the last decrease and change; holdUntil
	// is when a TimeLeft hint ends; busyAt is when a call last had to wait.
	lastDown, lastChange, holdUntil, busyAt time.Time
}

// Throttle is the process's adaptive rate limiter for cloud calls: one
// limiter per product and action and a shared one per product. It is safe
// for concurrent use.
type Throttle struct {
	clock clock
	// qps is the starting rate of an action; productQPS the starting rate
	// of a product and the ceiling of both; floor the lowest rate.
	qps, productQPS, floor float64
	burst                  int
	limitTTL               time.Duration

	mu       sync.Mutex
	products map[Product]*aimdLimiter
	actions  map[string]*aimdLimiter
}

// NewThrottle returns a Throttle whose action limiters start at qps calls
// per second and whose product limiters start at productQPS, which is also
// the highest rate of both (productQPS below qps is raised to qps); burst
// is the token-bucket size at the starting rate.
func NewThrottle(qps, productQPS float64, burst int) *Throttle {
	return newThrottle(realClock{}, qps, productQPS, burst)
}

func newThrottle(c clock, qps, productQPS float64, burst int) *Throttle {
	if burst < 1 {
		burst = 1
	}
	return &Throttle{
		clock: c, qps: qps, productQPS: math.Max(qps, productQPS), floor: math.Min(qps, math.Max(qps/100, 0.2)),
		burst: burst, limitTTL: limitTTL,
		products: map[Product]*aimdLimiter{}, actions: map[string]*aimdLimiter{},
	}
}

// Config returns the starting rate of an action, the starting and highest
// rate of a product (the highest of an action too), and the burst.
func (t *Throttle) Config() (qps, productQPS float64, burst int) {
	return t.qps, t.productQPS, t.burst
}

func actionKey(p Product, action string) string { return string(p) + "/" + action }

// productScope is the action label of a product's shared limiter.
const productScope = "*"

func (t *Throttle) newLimiter(product, action string, start float64, now time.Time) *aimdLimiter {
	l := &aimdLimiter{product: product, action: action, rate: start, start: start, ceiling: t.productQPS, lastChange: now}
	l.lim = rate.NewLimiter(rate.Limit(start), t.burstOf(l))
	rateGauge.WithLabelValues(product, action).Set(start)
	return l
}

// limiters returns the product's and the action's limiters; t.mu is held.
func (t *Throttle) limiters(p Product, action string) (prod, act *aimdLimiter) {
	now := t.clock.Now()
	prod = t.products[p]
	if prod == nil {
		prod = t.newLimiter(string(p), productScope, t.productQPS, now)
		t.products[p] = prod
	}
	if action == "" {
		return prod, nil
	}
	k := actionKey(p, action)
	act = t.actions[k]
	if act == nil {
		act = t.newLimiter(string(p), action, t.qps, now)
		t.actions[k] = act
	}
	return prod, act
}

// burstOf is l's bucket size at its rate: the configured burst at the
// starting rate, in proportion below it (a lowered rate is not followed by
// a full burst), and at most half an advertised Limit, so that the calls
// of a burst fit the cloud's own bucket (about one second of quota) with
// room left for calls that arrive bunched up.
func (t *Throttle) burstOf(l *aimdLimiter) int {
	b := math.Ceil(float64(t.burst) * l.rate / l.start)
	if l.limit > 0 {
		b = math.Min(b, math.Floor(l.limit/2))
	}
	return int(math.Max(1, math.Min(b, float64(t.burst))))
}

// delay reserves one call of the action and returns how long it must wait
// from now (the later of both limiters and of any TimeLeft hold), the
// limiters' generations, and a function that gives the reservation back.
// A call that would wait longer than maxWait (when positive) books
// nothing and returns ok false: a cancelled booking gives back less than
// its slot when later ones are queued behind it, so a caller that cannot
// wait must not book.
func (t *Throttle) delay(p Product, action string, maxWait time.Duration) (d time.Duration, gens [2]uint64, cancel func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	prod, act := t.limiters(p, action)
	ls := []*aimdLimiter{prod, act}
	if act == nil {
		ls = ls[:1]
	}
	if maxWait > 0 {
		var need time.Duration
		for _, l := range ls {
			if tok := l.lim.TokensAt(now); tok < 1 {
				need = max(need, time.Duration((1-tok)/l.rate*float64(time.Second)))
			}
			if l.holdUntil.After(now) {
				need = max(need, l.holdUntil.Sub(now))
			}
		}
		if need > maxWait {
			return need, gens, func() {}, false
		}
	}
	var cancels []func()
	for i, l := range ls {
		gens[i] = l.gen
		r := l.lim.ReserveN(now, 1)
		if !r.OK() {
			// Burst below one: cannot happen (burst >= 1); wait a period.
			d = max(d, time.Duration(float64(time.Second)/l.rate))
			continue
		}
		cancels = append(cancels, func() { r.CancelAt(t.clock.Now()) })
		if ld := r.DelayFrom(now); ld > 0 {
			l.busyAt = now
			d = max(d, ld)
		}
		if l.holdUntil.After(now) {
			d = max(d, l.holdUntil.Sub(now))
		}
	}
	return d, gens, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, c := range cancels {
			c()
		}
	}, true
}

// lowered reports whether a limiter of the action was lowered since gens.
func (t *Throttle) lowered(p Product, action string, gens [2]uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	prod, act := t.limiters(p, action)
	return prod.gen != gens[0] || (act != nil && act.gen != gens[1])
}

// Wait blocks until the action may be called or ctx is done. A call that
// waited while a limiter was lowered books again, so that calls queued at
// the old rate do not run into the quota the cloud just refused.
func (t *Throttle) Wait(ctx context.Context, p Product, action string) error {
	for {
		var maxWait time.Duration
		if dl, ok := ctx.Deadline(); ok {
			if maxWait = time.Until(dl); maxWait <= 0 {
				return context.DeadlineExceeded
			}
		}
		d, gens, cancel, ok := t.delay(p, action, maxWait)
		if !ok {
			return fmt.Errorf("rate limit wait of %v would pass the context deadline", d.Round(time.Millisecond))
		}
		if d <= 0 {
			return nil
		}
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			cancel()
			return ctx.Err()
		case <-timer.C:
		}
		if !t.lowered(p, action, gens) {
			return nil
		}
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

// Throttled lowers the limiter of the scope the cloud refused with code
// (Throttling.Api names the action's quota, any other Throttling code the
// account's quota for the product) and holds it for the hint's TimeLeft.
func (t *Throttle) Throttled(p Product, action, code string, h Hint) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	prod, act := t.limiters(p, action)
	scope := prod
	if code == "Throttling.Api" && act != nil {
		scope = act
	}
	throttledTotal.WithLabelValues(string(p), action, code).Inc()
	t.decrease(scope, now, h)
}

// decrease lowers l after a throttle, once per decreaseGap: to an
// advertised Limit that is new, or that l is above (even within the gap);
// by decreaseAtLimit when throttled again at or below the Limit in force;
// by decreaseScope when the cloud advertised none. A new Limit also raises
// l to it: the cloud has said what it allows, and a burst above half of it
// (burstOf), not the rate, was refused. A Limit caps l for limitTTL; a hold
// extends whenever it is longer than the current one.
func (t *Throttle) decrease(l *aimdLimiter, now time.Time, h Hint) {
	if h.TimeLeft > 0 {
		if until := now.Add(min(h.TimeLeft, maxHold)); until.After(l.holdUntil) {
			l.holdUntil = until
		}
	}
	newLimit := false
	if h.Limit > 0 {
		lim := math.Max(t.floor, h.Limit)
		newLimit = lim != l.limit
		l.limit, l.limitUntil = lim, now.Add(t.limitTTL)
	}
	if !newLimit && !l.lastDown.IsZero() && now.Sub(l.lastDown) < decreaseGap && (l.limit == 0 || l.rate <= l.limit) {
		return
	}
	var r float64
	switch {
	case l.limit > 0 && (newLimit || l.rate > l.limit):
		r, l.throttledAt = l.limit, l.limit
	case h.Limit > 0:
		r, l.throttledAt = l.rate*decreaseAtLimit, l.rate
	default:
		r, l.throttledAt = l.rate*decreaseScope, l.rate
	}
	r = math.Min(l.ceiling, math.Max(t.floor, r))
	l.probes = 0
	l.lastDown = now
	l.gen++
	// A fresh, empty bucket: the cloud's is empty too, and the slots booked
	// at the old rate are dropped (their waiters book again, see Wait).
	t.set(l, r, now)
	l.lim = rate.NewLimiter(rate.Limit(l.rate), l.lim.Burst())
	l.lim.ReserveN(now, l.lim.Burst())
	klog.V(2).InfoS("Cloud throttled; pacing the client", "product", l.product, "action", l.action,
		"rate", l.rate, "advertisedLimit", l.limit, "hold", h.TimeLeft)
}

// Succeeded raises the action's and the product's limiters by one step
// after the cloud answered a call of the action without throttling it.
func (t *Throttle) Succeeded(p Product, action string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	prod, act := t.limiters(p, action)
	for _, l := range []*aimdLimiter{act, prod} {
		if l != nil {
			t.increase(l, now)
		}
	}
}

// increase raises l by one step when it was not changed for increaseGap
// and a call had to wait for it within busyWindow: by half the gap to the
// rate where it was last throttled while far below it, by gentleStep of
// that rate near it, and by probeStep doubling at each step past it; never
// above the advertised Limit while it holds, nor above the ceiling.
func (t *Throttle) increase(l *aimdLimiter, now time.Time) {
	if now.Sub(l.lastChange) < increaseGap || now.Sub(l.busyAt) > busyWindow {
		return
	}
	if l.limit > 0 && !now.Before(l.limitUntil) {
		klog.V(2).InfoS("Advertised cloud rate limit expired; probing above it", "product", l.product, "action", l.action, "limit", l.limit)
		l.limit = 0
	}
	ceiling := l.ceiling
	if l.limit > 0 {
		ceiling = math.Min(ceiling, l.limit)
	}
	if l.rate >= ceiling {
		return
	}
	ref := l.start
	if l.throttledAt > 0 {
		ref = l.throttledAt
	}
	var r float64
	switch {
	case l.rate < ref*(1-recoverBand):
		r = math.Min(ref, l.rate+math.Max((ref-l.rate)/2, ref*gentleStep))
	case l.rate < ref:
		r = math.Min(ref, l.rate+ref*gentleStep)
	default:
		r = l.rate + math.Min(l.rate, ref*probeStep*math.Pow(2, float64(l.probes)))
		l.probes++
	}
	t.set(l, math.Min(ceiling, r), now)
	klog.V(4).InfoS("No cloud throttling; raising the client rate", "product", l.product, "action", l.action, "rate", l.rate)
}

// set changes l's rate and its burst with it.
func (t *Throttle) set(l *aimdLimiter, r float64, now time.Time) {
	l.rate = r
	l.lastChange = now
	l.lim.SetLimitAt(now, rate.Limit(r))
	l.lim.SetBurstAt(now, t.burstOf(l))
	rateGauge.WithLabelValues(l.product, l.action).Set(r)
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
