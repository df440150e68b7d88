package service

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultNodeBatchWindow is how quiet Node changes must be before the
// Services they move are queued. Nodes a node pool adds or removes
// together become eligible (initialized, Ready) spread over seconds, often
// one a second; queued at the first change, a Service synced before the
// last one is synced again, and each of its groups written again.
const DefaultNodeBatchWindow = 2 * time.Second

// DefaultNodeBatchMaxWait bounds how long a batch stays open while Node
// changes keep coming less than a window apart, so that steady churn
// (a flapping Node among many) never holds a change back for long.
const DefaultNodeBatchMaxWait = 15 * time.Second

// nodeBatch gathers the Services that Node changes move and queues them
// all at once when no change has come for a window, or when the batch has
// been open for maxWait, whichever is first: Nodes joining or leaving a
// second apart reach each backend group in one write, a lone change waits
// one window, and no change waits longer than maxWait.
type nodeBatch struct {
	window, maxWait time.Duration
	clock           clock.WithDelayedExecution
	add             func(key string)

	mu sync.Mutex
	// pending are the keys of the open batch; nil when none is open.
	pending map[string]struct{}
	// opened is when the open batch's first change came.
	opened time.Time
	// timer closes the open batch; each change replaces it. gen tells a
	// replaced timer that fired anyway from the current one.
	timer clock.Timer
	gen   uint64
}

// queue adds key to the open batch, opening one if none is, and moves the
// batch's close to a window from now (maxWait after it opened at the
// latest); without a window the key is queued at once.
func (b *nodeBatch) queue(key string) {
	if b.window <= 0 {
		b.add(key)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if b.pending == nil {
		b.pending = map[string]struct{}{}
		b.opened = now
	}
	b.pending[key] = struct{}{}
	wait := b.window
	if b.maxWait > 0 {
		wait = min(wait, b.opened.Add(b.maxWait).Sub(now))
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	b.gen++
	gen := b.gen
	// The timer's function takes no clock call: a fake clock runs it
	// holding its own lock.
	b.timer = b.clock.AfterFunc(max(wait, 0), func() { b.flush(gen) })
}

// flush closes the open batch and queues its keys, unless a later change
// replaced the timer that called it.
func (b *nodeBatch) flush(gen uint64) {
	b.mu.Lock()
	if gen != b.gen {
		b.mu.Unlock()
		return
	}
	keys := b.pending
	b.pending = nil
	b.timer = nil
	b.mu.Unlock()
	for k := range keys {
		b.add(k)
	}
}
