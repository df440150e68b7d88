package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Duration is a time.Duration that reads and writes as a Go duration
// string ("500ms", "2s") in JSON, so control API bodies stay readable.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON accepts a duration string, or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("parse duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("a duration must be a string like \"500ms\" or a number of milliseconds")
	}
	*d = Duration(time.Duration(ms * float64(time.Millisecond)))
	return nil
}

// FaultError is the error response a fault rule injects.
type FaultError struct {
	// Code is the API error code, e.g. ServiceUnavailable or Conflict.Lock.
	Code string `json:"code"`
	// Status is the HTTP status (default: 500 for InternalError, 503 for
	// ServiceUnavailable, else 400).
	Status int `json:"status,omitempty"`
	// Message is the error message (a generic one when empty).
	Message string `json:"message,omitempty"`
}

// FaultRule injects an error, latency or a dropped connection into matching
// calls before their handler runs, so an injected error never changes state;
// only a drop with After lets the call apply first (a lost response).
type FaultRule struct {
	// ID is assigned by the gateway when the rule is added.
	ID string `json:"id"`
	// Product matches a product name (ecs, vpc, slb, nlb; "" = any).
	Product string `json:"product,omitempty"`
	// Action matches an action name ("" = any).
	Action string `json:"action,omitempty"`
	// Probability fires the rule on this fraction of matching calls
	// (0 or absent = every call).
	Probability float64 `json:"probability,omitempty"`
	// Params, when set, matches only calls whose parameters include each
	// of these names with exactly this value (e.g. one LoadBalancerId), so
	// that a fault can aim at one resource while others go on.
	Params map[string]string `json:"params,omitempty"`
	// Count fires the rule this many times, then removes it (0 = forever).
	Count int `json:"count,omitempty"`
	// Error makes the call fail with this error.
	Error *FaultError `json:"error,omitempty"`
	// Latency delays the call by this long before it is served.
	Latency Duration `json:"latency,omitempty"`
	// Drop closes the connection without a response.
	Drop bool `json:"drop,omitempty"`
	// After, with Drop, drops the response after the handler applied the call.
	// The state changes and the request log records the call with the
	// response it would have sent, but the client sees the connection close:
	// the "lost response" that makes a blind replay of a create duplicate it.
	After bool `json:"after,omitempty"`
	// FailJob (NLB only) lets the call succeed and answer its JobId, but
	// the job ends Failed and its change is rolled back (a failed create
	// leaves a CreateFailed load balancer, or no server group).
	FailJob bool `json:"failJob,omitempty"`
	// Fired counts how often the rule fired.
	Fired int `json:"fired"`
}

// faultOutcome is what the matching rules decided for one call.
type faultOutcome struct {
	latency time.Duration
	err     *api.Error
	drop    bool
	// dropAfter drops the connection after the handler ran instead of before.
	dropAfter bool
	// failJob asks the product to fail the job the call starts.
	failJob bool
	ruleID  string
}

type faultSet struct {
	ruleList[*FaultRule]
	// actions maps each served product's name to its action names; rules
	// naming anything else are refused.
	actions map[string]map[string]bool
}

// newFaultSet returns an empty fault set for the given products.
func newFaultSet(products []api.Product) *faultSet {
	f := &faultSet{actions: map[string]map[string]bool{}}
	for _, p := range products {
		acts := map[string]bool{}
		for name := range p.Actions {
			acts[name] = true
		}
		f.actions[p.Name] = acts
	}
	return f
}

// checkTarget refuses a rule whose product is not served or whose action is
// not an action of its product (of any product when product is empty).
func (f *faultSet) checkTarget(product, action string) error {
	names := slices.Sorted(maps.Keys(f.actions))
	if product != "" {
		acts, ok := f.actions[product]
		if !ok {
			return fmt.Errorf("product %q is not served by the emulator; accepted: %s (or empty for any)", product, strings.Join(names, ", "))
		}
		if action != "" && !acts[action] {
			return fmt.Errorf("action %q is not an action of %s", action, product)
		}
		return nil
	}
	if action == "" {
		return nil
	}
	for _, acts := range f.actions {
		if acts[action] {
			return nil
		}
	}
	return fmt.Errorf("action %q is not an action of any product (%s)", action, strings.Join(names, ", "))
}

func (f *faultSet) add(r FaultRule) (FaultRule, error) {
	r.Product = strings.ToLower(r.Product)
	if err := f.checkTarget(r.Product, r.Action); err != nil {
		return r, err
	}
	kinds := 0
	if r.Error != nil {
		kinds++
		if r.Error.Code == "" {
			return r, fmt.Errorf("error.code is required")
		}
		if r.Error.Status == 0 {
			switch r.Error.Code {
			case "InternalError":
				r.Error.Status = http.StatusInternalServerError
			case "ServiceUnavailable":
				r.Error.Status = http.StatusServiceUnavailable
			default:
				r.Error.Status = http.StatusBadRequest
			}
		}
		if r.Error.Status < 400 || r.Error.Status > 599 {
			return r, fmt.Errorf("error.status must be a 4xx or 5xx HTTP status, got %d", r.Error.Status)
		}
		if r.Error.Message == "" {
			r.Error.Message = "The request failed because of an injected fault (" + r.Error.Code + ")."
		}
	}
	if r.Latency > 0 {
		kinds++
	}
	if r.Latency < 0 {
		return r, fmt.Errorf("latency must not be negative")
	}
	if r.Drop {
		kinds++
	}
	if r.After && !r.Drop {
		return r, fmt.Errorf("after is only valid with drop")
	}
	if r.FailJob {
		kinds++
		if r.Product != "nlb" {
			return r, fmt.Errorf("failJob needs product nlb: only NLB calls start jobs that can fail")
		}
	}
	if kinds != 1 {
		return r, fmt.Errorf("a fault rule needs exactly one of error, latency, drop or failJob")
	}
	if r.Probability < 0 || r.Probability > 1 {
		return r, fmt.Errorf("probability must be between 0 and 1, got %v", r.Probability)
	}
	if r.Count < 0 {
		return r, fmt.Errorf("count must not be negative")
	}
	r.ID = "flt-" + store.RandomString(8)
	r.Fired = 0
	r.Params = maps.Clone(r.Params)
	cp := r
	f.append(&cp)
	return r, nil
}

func (f *faultSet) list() []FaultRule {
	return listRules(&f.ruleList, func(r *FaultRule) FaultRule {
		cp := *r
		cp.Params = maps.Clone(r.Params)
		if r.Error != nil {
			e := *r.Error
			cp.Error = &e
		}
		return cp
	})
}

func (r *FaultRule) ruleID() string { return r.ID }

// match evaluates the rules in order: latencies add up, and the first error
// or drop that fires ends the evaluation.
func (f *faultSet) match(product, action string, params map[string]string) faultOutcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out faultOutcome
	if len(f.rules) == 0 {
		return out
	}
	kept := f.rules[:0]
	done := false
	for _, r := range f.rules {
		fire := !done && (r.Product == "" || r.Product == product) && (r.Action == "" || r.Action == action) &&
			paramsMatch(r.Params, params) && (r.Probability == 0 || rand.Float64() < r.Probability)
		if fire {
			r.Fired++
			out.ruleID = r.ID
			switch {
			case r.Error != nil:
				out.err = api.Errorf(r.Error.Status, r.Error.Code, "%s", r.Error.Message)
				done = true
			case r.Drop:
				out.drop, out.dropAfter = true, r.After
				done = true
			case r.FailJob:
				out.failJob = true
			default:
				out.latency += time.Duration(r.Latency)
			}
		}
		if r.Count > 0 && r.Fired >= r.Count {
			continue
		}
		kept = append(kept, r)
	}
	for i := len(kept); i < len(f.rules); i++ {
		f.rules[i] = nil
	}
	f.rules = kept
	return out
}

// paramsMatch reports whether the call's params hold every pair of want.
func paramsMatch(want, params map[string]string) bool {
	for k, v := range want {
		if got, ok := params[k]; !ok || got != v {
			return false
		}
	}
	return true
}
