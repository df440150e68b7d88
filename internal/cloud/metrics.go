package cloud

import (
	"time"

	"k8s.io/component-base/metrics"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
)

var (
	requests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "api",
		Name:           "requests_total",
		Help:           "Alibaba Cloud API calls by product, action and result code (OK on success).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"product", "action", "code"})
	latency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "alicloud",
		Subsystem:      "api",
		Name:           "request_duration_seconds",
		Help:           "Latency of one Alibaba Cloud API attempt by product and action.",
		Buckets:        []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20},
		StabilityLevel: metrics.ALPHA,
	}, []string{"product", "action"})
	retries = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "api",
		Name:           "retries_total",
		Help:           "Retried Alibaba Cloud API attempts by product, action and error class.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"product", "action", "class"})
	budgetExhausted = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "api",
		Name:           "retry_budget_exhausted_total",
		Help:           "Alibaba Cloud API calls that failed without a retry because their reconcile's retry budget was spent, by product and action.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"product", "action"})
	notReplayed = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "api",
		Name:           "not_replayed_total",
		Help:           "Alibaba Cloud API writes not retried because their outcome was unknown and a replay could apply them twice, by product and action.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"product", "action"})
	rateGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      "alicloud",
		Subsystem:      "api",
		Name:           "client_rate_limit",
		Help:           "Current adaptive client-side call rate per second by product and action (action * is the product's shared limiter).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"product", "action"})
	throttledTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "api",
		Name:           "throttled_total",
		Help:           "Alibaba Cloud API attempts refused by flow control, by product, action and code.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"product", "action", "code"})
)

func init() {
	ccmmetrics.MustRegister(requests, latency, retries, budgetExhausted, notReplayed, rateGauge, throttledTotal)
}

func observe(product Product, action, code string, d time.Duration) {
	requests.WithLabelValues(string(product), action, code).Inc()
	latency.WithLabelValues(string(product), action).Observe(d.Seconds())
}
