package cloud

import (
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
)

var (
	requests = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "api", Name: "requests_total",
		Help: "Alibaba Cloud API calls by product, action and result code (OK on success)."}, "product", "action", "code")
	latency = ccmmetrics.NewHistogramVec(ccmmetrics.Opts{Subsystem: "api", Name: "request_duration_seconds",
		Help: "Latency of one Alibaba Cloud API attempt by product and action."}, []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20}, "product", "action")
	retries = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "api", Name: "retries_total",
		Help: "Retried Alibaba Cloud API attempts by product, action and error class."}, "product", "action", "class")
	budgetExhausted = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "api", Name: "retry_budget_exhausted_total",
		Help: "Alibaba Cloud API calls that failed without a retry because their reconcile's retry budget was spent, by product and action."}, "product", "action")
	notReplayed = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "api", Name: "not_replayed_total",
		Help: "Alibaba Cloud API writes not retried because their outcome was unknown and a replay could apply them twice, by product and action."}, "product", "action")
	rateGauge = ccmmetrics.NewGaugeVec(ccmmetrics.Opts{Subsystem: "api", Name: "client_rate_limit",
		Help: "Current adaptive client-side call rate per second by product and action (action * is the product's shared limiter)."}, "product", "action")
	throttledTotal = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "api", Name: "throttled_total",
		Help: "Alibaba Cloud API attempts refused by flow control, by product, action and code."}, "product", "action", "code")
)

func observe(product Product, action, code string, d time.Duration) {
	requests.WithLabelValues(string(product), action, code).Inc()
	latency.WithLabelValues(string(product), action).Observe(d.Seconds())
}
