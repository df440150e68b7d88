package routes

import (
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
)

var (
	reconciles = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "route", Name: "reconciles_total",
		Help: "Route controller passes by result (success, error)."}, "result")
	reconcileLatency = ccmmetrics.NewHistogram(ccmmetrics.Opts{Subsystem: "route", Name: "reconcile_duration_seconds",
		Help: "Duration of one route controller pass over every route table."}, []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120})
	entriesCreated = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "route", Name: "entries_created_total",
		Help: "Route entries created by the route controller, by route table."}, "route_table")
	entriesDeleted = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "route", Name: "entries_deleted_total",
		Help: "Route entries deleted by the route controller, by route table."}, "route_table")
	entriesAdopted = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "route", Name: "entries_adopted_total",
		Help: "Unmarked route entries (the existing CCM's) used as a Node's route without a write, once per entry per process, and handed-off entries marked as a Node's again, by route table."}, "route_table")
	entriesReleased = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "route", Name: "entries_released_total",
		Help: "Route entries of excluded Nodes handed off (no longer managed, kept once the Node is gone) by the route controller, by route table."}, "route_table")
	entryFailures = ccmmetrics.NewCounterVec(ccmmetrics.Opts{Subsystem: "route", Name: "entry_failures_total",
		Help: "Route entries the cloud refused, by operation (create, delete, adopt, release) and error code."}, "op", "code")
	// legacyLatency is the existing CCM's route latency metric, by its
	// verbs: create and delete (each route entry, observed with the
	// duration of the batch call that wrote it) and reconcile (a pass).
	legacyLatency = ccmmetrics.NewHistogramVec(ccmmetrics.Opts{Legacy: true, Name: "ccm_route_latencies_duration_milliseconds",
		Help: "Route latency in milliseconds by verb (create, delete: one route entry, the duration of its batch call; reconcile: one pass over every route table). The existing CCM's name."}, ccmmetrics.LegacyBuckets, "verb")
	conflicts = ccmmetrics.NewGaugeVec(ccmmetrics.Opts{Subsystem: "route", Name: "conflicting_entries",
		Help: "Custom entries inside the cluster CIDR not created by this cluster, seen by the last pass, by route table."}, "route_table")
)

// Verbs of ccm_route_latencies_duration_milliseconds, the existing CCM's.
const (
	verbCreate    = "create"
	verbDelete    = "delete"
	verbReconcile = "reconcile"
)

func observeLegacy(verb string, d time.Duration) {
	legacyLatency.WithLabelValues(verb).Observe(ccmmetrics.Milliseconds(d))
}
