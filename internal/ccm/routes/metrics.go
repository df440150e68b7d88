package routes

import (
	"time"

	"k8s.io/component-base/metrics"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
)

var (
	reconciles = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "route",
		Name:           "reconciles_total",
		Help:           "Route controller passes by result (success, error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	reconcileLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      "alicloud",
		Subsystem:      "route",
		Name:           "reconcile_duration_seconds",
		Help:           "Duration of one route controller pass over every route table.",
		Buckets:        []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
		StabilityLevel: metrics.ALPHA,
	})
	entriesCreated = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "route",
		Name:           "entries_created_total",
		Help:           "Route entries created by the route controller, by route table.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"route_table"})
	entriesDeleted = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "route",
		Name:           "entries_deleted_total",
		Help:           "Route entries deleted by the route controller, by route table.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"route_table"})
	entriesAdopted = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "route",
		Name:           "entries_adopted_total",
		Help:           "Unmarked route entries (the existing CCM's) used as a Node's route without a write, once per entry per process, and handed-off entries marked as a Node's again, by route table.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"route_table"})
	entriesReleased = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "route",
		Name:           "entries_released_total",
		Help:           "Route entries of excluded Nodes handed off (no longer managed, kept once the Node is gone) by the route controller, by route table.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"route_table"})
	entryFailures = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "alicloud",
		Subsystem:      "route",
		Name:           "entry_failures_total",
		Help:           "Route entries the cloud refused, by operation (create, delete, adopt, release) and error code.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"op", "code"})
	// legacyLatency is the existing CCM's route latency metric, by its
	// verbs: create and delete (each route entry, observed with the
	// duration of the batch call that wrote it) and reconcile (a pass).
	legacyLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "ccm_route_latencies_duration_milliseconds",
		Help:           "Route latency in milliseconds by verb (create, delete: one route entry, the duration of its batch call; reconcile: one pass over every route table). The existing CCM's name.",
		Buckets:        ccmmetrics.LegacyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"verb"})
	conflicts = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      "alicloud",
		Subsystem:      "route",
		Name:           "conflicting_entries",
		Help:           "Custom entries inside the cluster CIDR not created by this cluster, seen by the last pass, by route table.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"route_table"})
)

func init() {
	ccmmetrics.MustRegister(reconciles, legacyLatency, reconcileLatency, entriesCreated, entriesDeleted, entriesAdopted, entriesReleased, entryFailures, conflicts)
}

// Verbs of ccm_route_latencies_duration_milliseconds, the existing CCM's.
const (
	verbCreate    = "create"
	verbDelete    = "delete"
	verbReconcile = "reconcile"
)

func observeLegacy(verb string, d time.Duration) {
	legacyLatency.WithLabelValues(verb).Observe(ccmmetrics.Milliseconds(d))
}
