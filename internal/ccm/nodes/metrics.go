package nodes

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
)

// VerbRemoveTaint is the existing CCM's verb of
// ccm_node_latencies_duration_milliseconds: a Node's initialization, which
// ends when its uninitialized taint is removed.
const VerbRemoveTaint = "remove_taint"

var (
	legacyLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "ccm_node_latencies_duration_milliseconds",
		Help:           "Node latency in milliseconds by verb (remove_taint: from the first instance lookup of an uninitialized Node until its uninitialized taint is gone). The existing CCM's name.",
		Buckets:        ccmmetrics.LegacyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"verb"})
	initDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      "alicloud",
		Subsystem:      "node",
		Name:           "initialization_duration_seconds",
		Help:           "Time from the first instance lookup of an uninitialized Node until its uninitialized taint is gone.",
		Buckets:        ccmmetrics.SecondsBuckets,
		StabilityLevel: metrics.ALPHA,
	})
	lookups = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "node",
		Name:           "lookups_total",
		Help:           "Instance lookups for Nodes by operation (metadata, exists, shutdown) and result (found, not_found, error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"op", "result"})
)

func init() {
	ccmmetrics.MustRegister(legacyLatency, initDuration, lookups)
}

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

// initDone observes the initialization of a Node whose start this process
// saw (the leader's cloud-node controller looked it up).
func (s *Instances) initDone(name string, now time.Time) {
	s.mu.Lock()
	at, ok := s.initStarts[name]
	delete(s.initStarts, name)
	s.mu.Unlock()
	if !ok {
		return
	}
	d := now.Sub(at)
	legacyLatency.WithLabelValues(VerbRemoveTaint).Observe(ccmmetrics.Milliseconds(d))
	initDuration.Observe(d.Seconds())
}

func (s *Instances) initForget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.initStarts, name)
}

// WatchInitialization ends the initialization latency of each Node when
// an informer sees its uninitialized taint go; the upstream cloud-node
// controller removes it without telling the provider.
func (s *Instances) WatchInitialization(inf cache.SharedIndexInformer) error {
	node := func(obj any) *v1.Node {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		n, _ := obj.(*v1.Node)
		return n
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, n := node(oldObj), node(newObj)
			if o != nil && n != nil && uninitialized(o) && !uninitialized(n) {
				s.initDone(n.Name, time.Now())
			}
		},
		DeleteFunc: func(obj any) {
			if n := node(obj); n != nil {
				s.initForget(n.Name)
			}
		},
	})
	return err
}
