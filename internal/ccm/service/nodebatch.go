package service

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultNodeBatchWindow is how long the Services a Node change moves wait
// for the changes of other Nodes before they are queued. Nodes added or
// removed together become eligible (initialized, Ready) spread over a
// second or so; queued at the first change, a Service synced before the
// last one is synced again, and each of its groups written twice.
const DefaultNodeBatchWindow = 2 * time.Second

// nodeBatch gathers the Services that Node changes move during one window
// and then queues them all at once, so Nodes that join or leave within the
// window reach each backend group in one write. The window starts at the
// first change of a batch and is never extended: no change waits longer
// than the window.
type nodeBatch struct {
	window time.Duration
	clock  clock.WithDelayedExecution
	add    func(key string)

	mu sync.Mutex
	// pending are the keys of the open batch; nil when none is open.
	pending map[string]struct{}
}

// queue adds key to the open batch, opening one if none is; without a
// window the key is queued at once.
func (b *nodeBatch) queue(key string) {
	if b.window <= 0 {
		b.add(key)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = map[string]struct{}{}
		b.clock.AfterFunc(b.window, b.flush)
	}
	b.pending[key] = struct{}{}
}

// flush closes the open batch and queues its keys.
func (b *nodeBatch) flush() {
	b.mu.Lock()
	keys := b.pending
	b.pending = nil
	b.mu.Unlock()
	for k := range keys {
		b.add(k)
	}
}
