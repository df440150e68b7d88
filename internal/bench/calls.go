package bench

import (
	"sort"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// ActionCalls are the calls of one action in a measured interval.
type ActionCalls struct {
	// Product and Action name the API.
	Product string `json:"product"`
	Action  string `json:"action"`
	// Calls is every call that arrived, Errors those answered with an
	// error (throttled ones included), OK the difference.
	Calls  int `json:"calls"`
	Errors int `json:"errors"`
	OK     int `json:"ok"`
	// Write is true for mutating actions.
	Write bool `json:"write"`
	// QuotaQPS is the action's limit under the run's quota profile (0 =
	// unlimited), and BoundSeconds its successful calls ÷ that limit.
	QuotaQPS     float64 `json:"quotaQps,omitempty"`
	BoundSeconds float64 `json:"boundSeconds,omitempty"`
}

// snapshot is the emulator's per-action counters at one moment.
type snapshot map[string]gateway.Counter

func (e *env) snapshot() snapshot {
	out := snapshot{}
	for _, c := range e.cloud.Counters() {
		out[c.Product+"/"+c.Action] = c
	}
	return out
}

// isRead tells read-only actions by the emulator's own flag.
func (e *env) isRead(product, action string) bool {
	if ro, ok := e.cloud.Gateway.ActionReadOnly(product, action); ok {
		return ro
	}
	return strings.HasPrefix(action, "Describe") || strings.HasPrefix(action, "List") || strings.HasPrefix(action, "Get")
}

// callCounts returns the calls made since before by "product/action", for
// a timeline sample.
func (e *env) callCounts(before snapshot) map[string]int {
	out := map[string]int{}
	for key, c := range e.snapshot() {
		if d := c.Calls - before[key].Calls; d > 0 {
			out[key] = d
		}
	}
	return out
}

// callsSince returns the calls made since before, by product and action,
// with each action's quota bound under the environment's profile.
func (e *env) callsSince(before snapshot) []ActionCalls {
	var out []ActionCalls
	for key, c := range e.snapshot() {
		b := before[key]
		d := ActionCalls{Product: c.Product, Action: c.Action, Calls: c.Calls - b.Calls, Errors: c.Errors - b.Errors}
		if d.Calls == 0 {
			continue
		}
		d.OK = d.Calls - d.Errors
		d.Write = !e.isRead(c.Product, c.Action)
		if e.spec.quotaProfile != "" {
			if p, err := gateway.LookupQuotaProfile(e.spec.quotaProfile); err == nil {
				d.QuotaQPS = p.QPS(c.Product, c.Action, !d.Write, e.spec.scale(c.Product))
				if d.QuotaQPS > 0 {
					d.BoundSeconds = float64(d.OK) / d.QuotaQPS
				}
			}
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Product != out[j].Product {
			return out[i].Product < out[j].Product
		}
		return out[i].Action < out[j].Action
	})
	return out
}

// CallTotals sums calls of some products.
type CallTotals struct {
	Calls  int `json:"calls"`
	Writes int `json:"writes"`
	Reads  int `json:"reads"`
	Errors int `json:"errors"`
}

func totals(calls []ActionCalls, products ...string) CallTotals {
	var t CallTotals
	for _, c := range calls {
		if len(products) > 0 && !contains(products, c.Product) {
			continue
		}
		t.Calls += c.Calls
		t.Errors += c.Errors
		if c.Write {
			t.Writes += c.Calls
		} else {
			t.Reads += c.Calls
		}
	}
	return t
}

// busiest is the action with the largest quota bound among products.
func busiest(calls []ActionCalls, products ...string) (ActionCalls, bool) {
	var best ActionCalls
	found := false
	for _, c := range calls {
		if len(products) > 0 && !contains(products, c.Product) {
			continue
		}
		if c.BoundSeconds > best.BoundSeconds {
			best, found = c, true
		}
	}
	return best, found
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// okWrites counts the successful writes of a product.
func okWrites(calls []ActionCalls, product string) int {
	n := 0
	for _, c := range calls {
		if c.Product == product && c.Write {
			n += c.OK
		}
	}
	return n
}
