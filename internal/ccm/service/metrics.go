package service

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
)

// Operation verbs of the metrics, as the existing CCM names them so its
// dashboards keep working.
const (
	VerbCreation = "Creation"
	VerbUpdate   = "Update"
	VerbDeletion = "Deletion"
)

// Names of the Service gauges, computed at each scrape from the informer
// cache, so that deleted Services drop out without bookkeeping.
const (
	MetricPending = "alicloud_service_pending"
	MetricFailing = "alicloud_service_failing"
	MetricInvalid = "alicloud_service_invalid"
)

var (
	latency = ccmmetrics.NewHistogramVec(ccmmetrics.Opts{
		Name:   "ccm_slb_latencies_duration_milliseconds",
		Help:   "Latency of one Service load balancer reconcile in milliseconds, by load balancer type (CLBType, NLBType) and verb (Creation, Update, Deletion). The existing CCM's name.",
		Legacy: true,
	}, ccmmetrics.LegacyBuckets, "type", "verb")
	results = ccmmetrics.NewCounterVec(ccmmetrics.Opts{
		Name:   "ccm_slb_operation_result",
		Help:   "Service load balancer reconciles by load balancer type, verb and status (Success or Fail). The existing CCM's name.",
		Legacy: true,
	}, "type", "verb", "status")
	syncDuration = ccmmetrics.NewHistogramVec(ccmmetrics.Opts{
		Subsystem: "service",
		Name:      "sync_duration_seconds",
		Help:      "Latency of one Service load balancer reconcile, by load balancer type (clb, nlb) and verb (create, update, delete).",
	}, ccmmetrics.SecondsBuckets, "type", "verb")
	syncs = ccmmetrics.NewCounterVec(ccmmetrics.Opts{
		Subsystem: "service",
		Name:      "syncs_total",
		Help:      "Service load balancer reconciles by load balancer type (clb, nlb), verb (create, update, delete) and result (success, error).",
	}, "type", "verb", "result")

	pendingDesc = metrics.NewDesc(MetricPending,
		"LoadBalancer Services served by this CCM that have no address in their status yet, by load balancer type (clb, nlb).",
		[]string{"type"}, nil, metrics.ALPHA, "")
	failingDesc = metrics.NewDesc(MetricFailing,
		"LoadBalancer Services whose last sync failed, by load balancer type (clb, nlb).",
		[]string{"type"}, nil, metrics.ALPHA, "")
	invalidDesc = metrics.NewDesc(MetricInvalid,
		"LoadBalancer Services whose annotations are invalid (their load balancer settings are frozen until fixed), by load balancer type (clb, nlb).",
		[]string{"type"}, nil, metrics.ALPHA, "")

	// gauged is the controller the gauges report on: the process runs one.
	gauged atomic.Pointer[Controller]
)

func init() {
	ccmmetrics.RegisterCollector(&serviceGauges{}, MetricPending, MetricFailing, MetricInvalid)
}

// observe records one reconcile; kind is CLB or NLB, labelled CLBType or
// NLBType as the existing CCM does.
func observe(kind, verb string, start time.Time, err error) {
	d := time.Since(start)
	status, result := "Success", "success"
	if err != nil {
		status, result = "Fail", "error"
	}
	latency.WithLabelValues(kind+"Type", verb).Observe(ccmmetrics.Milliseconds(d))
	results.WithLabelValues(kind+"Type", verb, status).Inc()
	t, v := strings.ToLower(kind), conventionalVerb[verb]
	syncDuration.WithLabelValues(t, v).Observe(d.Seconds())
	syncs.WithLabelValues(t, v, result).Inc()
}

var conventionalVerb = map[string]string{VerbCreation: "create", VerbUpdate: "update", VerbDeletion: "delete"}

// health is what the gauges need to remember of a Service's last sync;
// uid tells a recreated Service of the same name from the old one.
type health struct {
	uid              types.UID
	failing, invalid bool
}

// healthBook holds the health of the Services synced so far, by key.
type healthBook struct {
	mu sync.Mutex
	m  map[string]health
}

func (b *healthBook) update(key string, uid types.UID, f func(*health)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]health{}
	}
	h := b.m[key]
	if h.uid != uid {
		h = health{uid: uid}
	}
	f(&h)
	if !h.failing && !h.invalid {
		delete(b.m, key)
		return
	}
	b.m[key] = h
}

func (b *healthBook) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, key)
}

func (b *healthBook) get(key string, uid types.UID) health {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h, ok := b.m[key]; ok && h.uid == uid {
		return h
	}
	return health{}
}

// recordOutcome remembers whether the sync of key failed. A sync that only
// waits for the cloud to finish configuring is not a failure.
func (c *Controller) recordOutcome(key string, failed bool) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return
	}
	svc, err := c.services.Services(ns).Get(name)
	if err != nil {
		c.health.forget(key)
		return
	}
	c.health.update(key, svc.UID, func(h *health) { h.failing = failed })
}

// recordInvalid remembers whether svc's annotations are invalid.
func (c *Controller) recordInvalid(key string, svc *corev1.Service, invalid bool) {
	c.health.update(key, svc.UID, func(h *health) { h.invalid = invalid })
}

// serviceGauges computes the gauges at scrape time over the Services the
// informer holds now.
type serviceGauges struct {
	metrics.BaseStableCollector
}

// DescribeWithStability implements metrics.StableCollector.
func (*serviceGauges) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- pendingDesc
	ch <- failingDesc
	ch <- invalidDesc
}

// CollectWithStability implements metrics.StableCollector.
func (*serviceGauges) CollectWithStability(ch chan<- metrics.Metric) {
	c := gauged.Load()
	if c == nil {
		return
	}
	counts := c.gaugeCounts()
	for _, p := range c.providers {
		t := strings.ToLower(p.Descriptor().Kind)
		n := counts[t]
		ch <- metrics.NewLazyConstMetric(pendingDesc, metrics.GaugeValue, float64(n.pending), t)
		ch <- metrics.NewLazyConstMetric(failingDesc, metrics.GaugeValue, float64(n.failing), t)
		ch <- metrics.NewLazyConstMetric(invalidDesc, metrics.GaugeValue, float64(n.invalid), t)
	}
}

type gaugeCount struct{ pending, failing, invalid int }

// gaugeCounts counts, by load balancer type, the Services this controller
// serves: pending ones have no address yet and are not being deleted.
func (c *Controller) gaugeCounts() map[string]gaugeCount {
	out := map[string]gaugeCount{}
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		return out
	}
	for _, svc := range svcs {
		p := c.owner(svc)
		if p == nil {
			continue
		}
		t := strings.ToLower(p.Descriptor().Kind)
		n := out[t]
		if svc.DeletionTimestamp == nil && len(svc.Status.LoadBalancer.Ingress) == 0 {
			n.pending++
		}
		h := c.health.get(cache.MetaObjectToName(svc).String(), svc.UID)
		if h.failing {
			n.failing++
		}
		if h.invalid {
			n.invalid++
		}
		out[t] = n
	}
	return out
}
