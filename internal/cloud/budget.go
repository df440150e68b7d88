package cloud

import (
	"context"
	"sync"
)

// budgetKey keys the *retryBudget of a context.
type budgetKey struct{}

// retryBudget is a number of retries shared by the Do calls of one context;
// a budget made under another one also spends its parent's, so an inner
// budget cannot lift the outer bound.
type retryBudget struct {
	parent *retryBudget
	left   int // guarded by budgetMu
}

// budgetMu guards every budget: retries are rare and a chain must be
// checked and spent at once.
var budgetMu sync.Mutex

// WithRetryBudget returns a context under which all Do calls share n
// retries in total (first attempts are free); once they are spent, Do
// returns a retryable error at once rather than backing off. Nested
// budgets spend their parents' too. Without a budget, each call retries up
// to Options.MaxAttempts-1 times.
func WithRetryBudget(ctx context.Context, n int) context.Context {
	if n < 0 {
		n = 0
	}
	parent, _ := ctx.Value(budgetKey{}).(*retryBudget)
	return context.WithValue(ctx, budgetKey{}, &retryBudget{parent: parent, left: n})
}

// RetryBudgetLeft returns how many retries are left in ctx's budget (the
// smallest along nested budgets); ok is false when ctx has no budget.
func RetryBudgetLeft(ctx context.Context) (left int, ok bool) {
	b, _ := ctx.Value(budgetKey{}).(*retryBudget)
	if b == nil {
		return 0, false
	}
	budgetMu.Lock()
	defer budgetMu.Unlock()
	left = b.left
	for p := b.parent; p != nil; p = p.parent {
		left = min(left, p.left)
	}
	return left, true
}

// budgetFrom returns ctx's budget, nil when it has none.
func budgetFrom(ctx context.Context) *retryBudget {
	b, _ := ctx.Value(budgetKey{}).(*retryBudget)
	return b
}

// take spends one retry of b and its parents; it reports false, spending
// nothing, when any of them is empty. A nil budget always allows.
func (b *retryBudget) take() bool {
	if b == nil {
		return true
	}
	budgetMu.Lock()
	defer budgetMu.Unlock()
	for p := b; p != nil; p = p.parent {
		if p.left <= 0 {
			return false
		}
	}
	for p := b; p != nil; p = p.parent {
		p.left--
	}
	return true
}
