package service

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Operation verbs of the metrics, as the existing CCM names them so its
// dashboards keep working.
const (
	VerbCreation = "Creation"
	VerbUpdate   = "Update"
	VerbDeletion = "Deletion"
)

var (
	latency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "ccm_slb_latencies_duration_milliseconds",
		Help:           "Latency of one Service load balancer reconcile in milliseconds, by load balancer type and operation.",
		Buckets:        []float64{50, 100, 250, 500, 1000, 2000, 3000, 5000, 10000, 20000, 30000, 60000, 120000},
		StabilityLevel: metrics.ALPHA,
	}, []string{"type", "verb"})
	results = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "ccm_slb_operation_result",
		Help:           "Service load balancer reconciles by load balancer type, operation and result (Success or Fail).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"type", "verb", "status"})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(latency, results) })
}

// observe records one reconcile; kind is CLBType/NLBType as the existing
// CCM labels them.
func observe(kind, verb string, start time.Time, err error) {
	status := "Success"
	if err != nil {
		status = "Fail"
	}
	latency.WithLabelValues(kind+"Type", verb).Observe(float64(time.Since(start).Milliseconds()))
	results.WithLabelValues(kind+"Type", verb, status).Inc()
}
