package gateway

import (
	"slices"
	"sync"
)

// ruleList is a rule list of the control API (faults, throttles), which
// removes a rule by id or clears all under the list's lock.
type ruleList[T interface{ ruleID() string }] struct {
	mu    sync.Mutex
	rules []T
}

func (l *ruleList[T]) remove(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.IndexFunc(l.rules, func(r T) bool { return r.ruleID() == id })
	if i < 0 {
		return false
	}
	l.rules = slices.Delete(l.rules, i, i+1)
	return true
}

func (l *ruleList[T]) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = nil
}

func (l *ruleList[T]) append(r T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = append(l.rules, r)
}

// listRules copies the rules out under the list's lock, as the control
// API shows them.
func listRules[T interface{ ruleID() string }, R any](l *ruleList[T], view func(T) R) []R {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]R, 0, len(l.rules))
	for _, r := range l.rules {
		out = append(out, view(r))
	}
	return out
}
