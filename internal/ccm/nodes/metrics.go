package nodes

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
)

// VerbRemoveTaint is the existing CCM's verb of
// ccm_node_latencies_duration_milliseconds: a Node's initialization, which
// ends when its uninitialized taint is removed.
const VerbRemoveTaint = "remove_taint"

var (
	legacyLatency = ccmmetrics.NewHistogramVec(ccmmetrics.Opts{Legacy: true, Name: "ccm_node_latencies_duration_milliseconds",
		Help: "Node latency in milliseconds by verb (remove_taint: from the first instance lookup of an uninitialized Node until its uninitialized taint is gone). The existing CCM's name."}, ccmmetrics.LegacyBuckets, "verb")
	initDuration = ccmmetrics.NewHistogram(ccmmetrics.Opts{Subsystem: "node", Name: "initialization_duration_seconds",
		Help: "Time from the first instance lookup of an uninitialized Node until its uninitialized taint is gone."}, ccmmetrics.SecondsBuckets)
	lookups = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "node", Name: "lookups_total",
		Help: "Instance lookups for Nodes by operation (metadata, exists, shutdown) and result (found, not_found, error)."}, "op", "result")
	uninitializedNotFound = ccmmetrics.NewCounter(ccmmetrics.Opts{Subsystem: "node", Name: "uninitialized_not_found_total",
		Help: "Instance-not-found answers to the cloud-node controller for uninitialized Nodes; each makes it retry the Node with a growing backoff."})
)

func countLookup(op string, found bool, err error) {
	result := "found"
	switch {
	case err != nil:
		result = "error"
	case !found:
		result = "not_found"
	}
	lookups.WithLabelValues(op, result).Inc()
}

// initStarted remembers when the first lookup of an uninitialized Node
// began; retries keep the first time, so the latency covers them.
func (s *Instances) initStarted(name string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initStarts == nil {
		s.initStarts = map[string]time.Time{}
	}
	if _, ok := s.initStarts[name]; !ok {
		s.initStarts[name] = at
	}
}

// firstSeen returns when this process first saw the uninitialized Node n,
// recording the present when the informer has not delivered it yet (the
// controller's handler may run before ours).
func (s *Instances) firstSeen(n *v1.Node) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.seen[n.UID]; ok {
		return at
	}
	at := s.index.now()
	s.seenLocked(n.UID, at)
	return at
}

func (s *Instances) seenLocked(uid types.UID, at time.Time) {
	if s.seen == nil {
		s.seen = map[types.UID]time.Time{}
	}
	if _, ok := s.seen[uid]; !ok {
		s.seen[uid] = at
	}
}

// observed records when the informer delivered an uninitialized Node.
func (s *Instances) observed(n *v1.Node, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seenLocked(n.UID, at)
}

// initDone observes the initialization of a Node whose start this process
// saw (the leader's cloud-node controller looked it up).
func (s *Instances) initDone(n *v1.Node, now time.Time) {
	s.mu.Lock()
	at, ok := s.initStarts[n.Name]
	delete(s.initStarts, n.Name)
	delete(s.seen, n.UID)
	s.mu.Unlock()
	if !ok {
		return
	}
	d := now.Sub(at)
	legacyLatency.WithLabelValues(VerbRemoveTaint).Observe(ccmmetrics.Milliseconds(d))
	initDuration.Observe(d.Seconds())
}

func (s *Instances) initForget(n *v1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.initStarts, n.Name)
	delete(s.seen, n.UID)
}

// WatchInitialization records when the Node informer first delivers each
// uninitialized Node (the time its lookups' misses must be proved after),
// lets initialization wait for it to deliver its own write (the upstream
// controller updates the Node from this informer's store next), and ends
// the initialization latency of each Node when the informer sees its
// uninitialized taint go; the upstream cloud-node controller removes it
// without telling the provider.
func (s *Instances) WatchInitialization(inf cache.SharedIndexInformer) error {
	s.mu.Lock()
	s.nodes, s.versionWaits = inf.GetStore(), map[string]*versionWait{}
	s.mu.Unlock()
	node := func(obj any) *v1.Node {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		n, _ := obj.(*v1.Node)
		return n
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n := node(obj); n != nil && uninitialized(n) {
				s.observed(n, s.index.now())
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, n := node(oldObj), node(newObj)
			if n != nil {
				s.delivered(n)
			}
			switch {
			case o != nil && n != nil && uninitialized(o) && !uninitialized(n):
				s.initDone(n, time.Now())
			case n != nil && uninitialized(n):
				s.observed(n, s.index.now())
			}
		},
		DeleteFunc: func(obj any) {
			if n := node(obj); n != nil {
				s.initForget(n)
			}
		},
	})
	return err
}
