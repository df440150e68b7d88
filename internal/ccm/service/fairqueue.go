package service

import (
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
)

// Fairness between namespaces. Whoever edits one namespace can make its
// Services sync as often as they like (every EndpointSlice or annotation
// change queues one), and every sync spends the controller's workers, its
// Kubernetes client's rate and the cloud's quota that all Services share.
// Two rules keep one namespace from starving the others:
//
//   - the queue hands out keys round-robin over namespaces (fairQueue):
//     however many keys one namespace has queued, a key of another
//     namespace waits for at most one key of each namespace ahead of it.
//     With one namespace queued it is the usual FIFO, so nothing changes
//     for a cluster whose Services all live in one namespace;
//   - each Service syncs at most SyncRate times a second after a burst of
//     SyncBurst (syncLimiter): a Service whose sync is due earlier is
//     queued again for when its bucket has a token. Ordinary Services
//     never meet it (a Service syncs a few times a minute at most).

// Defaults of the per-Service sync rate.
const (
	// DefaultSyncRate is how many syncs a second one Service may make once
	// its burst is spent.
	DefaultSyncRate = 1.0
	// DefaultSyncBurst is how many syncs one Service may make at once.
	DefaultSyncBurst = 10
)

// fairQueue is a workqueue.Queue that pops keys ("namespace/name")
// round-robin over their namespaces, FIFO within one. The workqueue calls
// it from one goroutine at a time.
type fairQueue struct {
	byNS  map[string][]string
	order []string // namespaces with keys, in turn order
	n     int
}

func newFairQueue() *fairQueue { return &fairQueue{byNS: map[string][]string{}} }

func namespaceOf(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

// Touch implements workqueue.Queue: a key queued again keeps its place.
func (q *fairQueue) Touch(string) {}

// Push implements workqueue.Queue.
func (q *fairQueue) Push(key string) {
	ns := namespaceOf(key)
	if len(q.byNS[ns]) == 0 {
		q.order = append(q.order, ns)
	}
	q.byNS[ns] = append(q.byNS[ns], key)
	q.n++
}

// Len implements workqueue.Queue.
func (q *fairQueue) Len() int { return q.n }

// Pop implements workqueue.Queue: the first key of the namespace whose
// turn it is; the namespace goes to the end of the turn order if it has
// more.
func (q *fairQueue) Pop() string {
	ns := q.order[0]
	q.order = q.order[1:]
	keys := q.byNS[ns]
	key := keys[0]
	if len(keys) == 1 {
		delete(q.byNS, ns)
	} else {
		q.byNS[ns] = keys[1:]
		q.order = append(q.order, ns)
	}
	q.n--
	return key
}

var _ workqueue.Queue[string] = (*fairQueue)(nil)

// newServiceQueue is the controller's rate-limited queue over a fairQueue.
func newServiceQueue(limiter workqueue.TypedRateLimiter[string]) workqueue.TypedRateLimitingInterface[string] {
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: ControllerName, Queue: newFairQueue()})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: ControllerName, Queue: base})
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName, DelayingQueue: delaying})
}

// syncLimiter is a token bucket per Service key.
type syncLimiter struct {
	rate  rate.Limit
	burst int
	mu    sync.Mutex
	m     map[string]*rate.Limiter
}

func newSyncLimiter(r float64, burst int) *syncLimiter {
	return &syncLimiter{rate: rate.Limit(r), burst: burst, m: map[string]*rate.Limiter{}}
}

// wait takes a token for a sync of key now and returns 0, or returns how
// long until the key's bucket has one (taking nothing).
func (l *syncLimiter) wait(key string, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[key]
	if !ok {
		b = rate.NewLimiter(l.rate, l.burst)
		l.m[key] = b
	}
	if b.AllowN(now, 1) {
		return 0
	}
	missing := 1 - b.TokensAt(now)
	return max(time.Millisecond, time.Duration(missing/float64(l.rate)*float64(time.Second)))
}

// forget drops key's bucket (the Service is gone).
func (l *syncLimiter) forget(key string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	delete(l.m, key)
	l.mu.Unlock()
}
