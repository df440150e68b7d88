package gateway

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Throttle scopes.
const (
	// ThrottleScopeAPI limits the calls of one action (all callers share
	// the bucket) and answers Throttling.Api.
	ThrottleScopeAPI = "api"
	// ThrottleScopeUser limits the calls of one account (each account has
	// its own bucket) and answers Throttling.User.
	ThrottleScopeUser = "user"
)

// ThrottleRule is a token-bucket QPS limit.
type ThrottleRule struct {
	// ID is assigned by the gateway when the rule is added.
	ID string `json:"id"`
	// Scope is "api" (per action) or "user" (per account).
	Scope string `json:"scope"`
	// Product restricts the rule to one product ("" = every product).
	Product string `json:"product,omitempty"`
	// Action restricts the rule to one action ("" = each action of the
	// product gets its own bucket for scope api; every action counts for
	// scope user).
	Action string `json:"action,omitempty"`
	// AccountID restricts a user rule to one account ("" = every account,
	// each with its own bucket).
	AccountID string `json:"accountId,omitempty"`
	// QPS is the sustained rate.
	QPS float64 `json:"qps"`
	// Burst is the bucket size (default: QPS rounded up, at least 1).
	Burst int `json:"burst,omitempty"`
}

type bucket struct {
	tokens float64
	last   time.Time
}

// take removes a token, or reports how long until one is available.
func (b *bucket) take(now time.Time, qps float64, burst int) (bool, time.Duration) {
	if b.last.IsZero() {
		b.tokens = float64(burst)
	} else if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(float64(burst), b.tokens+el*qps)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / qps * float64(time.Second))
}

type throttleEntry struct {
	rule    ThrottleRule
	buckets map[string]*bucket
}

// throttler applies ThrottleRules.
type throttler struct {
	ruleList[*throttleEntry]
}

func (e *throttleEntry) ruleID() string { return e.rule.ID }

func (t *throttler) add(r ThrottleRule) (ThrottleRule, error) {
	r.Scope = strings.ToLower(r.Scope)
	r.Product = strings.ToLower(r.Product)
	if r.Scope != ThrottleScopeAPI && r.Scope != ThrottleScopeUser {
		return r, fmt.Errorf("scope must be %q or %q, got %q", ThrottleScopeAPI, ThrottleScopeUser, r.Scope)
	}
	if r.QPS <= 0 || math.IsInf(r.QPS, 0) || math.IsNaN(r.QPS) {
		return r, fmt.Errorf("qps must be a positive number, got %v", r.QPS)
	}
	if r.Burst < 0 {
		return r, fmt.Errorf("burst must not be negative")
	}
	if r.Burst == 0 {
		r.Burst = int(math.Max(1, math.Ceil(r.QPS)))
	}
	if r.Scope == ThrottleScopeAPI && r.AccountID != "" {
		return r, fmt.Errorf("accountId applies to scope user only")
	}
	r.ID = "thr-" + store.RandomString(8)
	t.append(&throttleEntry{rule: r, buckets: map[string]*bucket{}})
	return r, nil
}

func (t *throttler) list() []ThrottleRule {
	return listRules(&t.ruleList, func(e *throttleEntry) ThrottleRule { return e.rule })
}

// allow checks the user rules first, then the api rules, as the real
// gateway reports user flow control ahead of API flow control.
func (t *throttler) allow(product, action, account string, now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.rules) == 0 {
		return nil
	}
	for _, scope := range []string{ThrottleScopeUser, ThrottleScopeAPI} {
		for _, e := range t.rules {
			r := e.rule
			if r.Scope != scope || (r.Product != "" && r.Product != product) || (r.Action != "" && r.Action != action) {
				continue
			}
			key := product + "/" + action
			if scope == ThrottleScopeUser {
				if r.AccountID != "" && r.AccountID != account {
					continue
				}
				key = account
			}
			b := e.buckets[key]
			if b == nil {
				b = &bucket{}
				e.buckets[key] = b
			}
			if ok, wait := b.take(now, r.QPS, r.Burst); !ok {
				return throttled(scope, r, wait)
			}
		}
	}
	return nil
}

func throttled(scope string, r ThrottleRule, wait time.Duration) *api.Error {
	ms := wait.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	hint := "Limit:" + strconv.FormatFloat(r.QPS, 'f', -1, 64) + ",Remain:0,TimeLeft:" + strconv.FormatInt(ms, 10)
	if scope == ThrottleScopeUser {
		e := api.Errorf(http.StatusBadRequest, "Throttling.User", "Request was denied due to user flow control.")
		e.Headers = map[string]string{"x-ratelimit-user": hint}
		return e
	}
	e := api.Errorf(http.StatusBadRequest, "Throttling.Api", "Request was denied due to api flow control.")
	e.Headers = map[string]string{"x-ratelimit-user-api": hint}
	return e
}
