package routes

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// applier carries one pass's writes: what they achieved and the Nodes
// their events go to.
type applier struct {
	c      *Controller
	logger klog.Logger
	byName map[string]*corev1.Node
	out    outcome
	// deleteFailed are the destinations whose stale entry is still there.
	deleteFailed map[routeKey]bool
}

// apply deletes stale entries, then creates missing ones, table by table,
// in batches, then marks adopted entries; failures are handled per entry so
// one Node's problem never holds back the others. A cancelled context ends
// it at the first failed call.
func (c *Controller) apply(ctx context.Context, tables []string, pl plan, byName map[string]*corev1.Node) outcome {
	a := &applier{
		c: c, logger: klog.FromContext(ctx), byName: byName, deleteFailed: map[routeKey]bool{},
		out: outcome{have: map[routeKey]bool{}, unreleased: map[string]bool{}, undeleted: map[string]bool{}},
	}
	for k := range pl.Present {
		a.out.have[k] = true
	}
	for _, table := range tables {
		if !a.deleteStale(ctx, table, pl.Deletes) {
			return a.out
		}
	}
	for _, table := range tables {
		if !a.createMissing(ctx, table, pl.Creates) {
			return a.out
		}
	}
	// Marks come last: the re-marked routes already forward, so the Nodes'
	// missing routes must not wait behind one call per marked entry.
	for _, table := range tables {
		if !a.markAll(ctx, table, pl.Marks) {
			return a.out
		}
	}
	return a.out
}

// cancelled records err and reports true when the context is done, which
// ends the pass.
func (a *applier) cancelled(ctx context.Context, err error) bool {
	if err != nil && ctx.Err() != nil {
		a.out.retry = append(a.out.retry, err)
		return true
	}
	return false
}

// deleteStale deletes the table's stale entries in batches; false when
// the pass must end.
func (a *applier) deleteStale(ctx context.Context, table string, all []deletion) bool {
	var dels []deletion
	for _, d := range all {
		if d.Entry.Table == table {
			dels = append(dels, d)
		}
	}
	for _, batch := range cloud.Chunks(dels, a.c.opts.BatchSize) {
		began := time.Now()
		failed, err := a.c.deleteBatch(ctx, table, batch)
		took := time.Since(began)
		if a.cancelled(ctx, err) {
			return false
		}
		for _, d := range batch {
			f, bad := failure(err, failed, d.Entry.ID, normalize(d.Entry.Dst))
			if bad && f.Code == codeNotFound {
				bad = false
			}
			if bad {
				a.deleteRefused(table, d, f)
				continue
			}
			entriesDeleted.WithLabelValues(table).Inc()
			observeLegacy(verbDelete, took)
			a.logger.Info("Deleted route", "routeTable", table, "entry", d.Entry.ID, "destination", d.Entry.Dst, "nextHop", d.Entry.HopID,
				"node", d.Node, "reason", d.Why)
			if d.Node != "" {
				a.c.recorder.Eventf(nodeRef(a.byName, d.Node), corev1.EventTypeNormal, EventDeletedRoute,
					"Deleted route %s via %s from route table %s", d.Entry.Dst, d.Entry.HopID, table)
			}
		}
	}
	return true
}

// deleteRefused records a stale entry the cloud did not delete.
func (a *applier) deleteRefused(table string, d deletion, f entryFailure) {
	a.deleteFailed[routeKey{table, normalize(d.Entry.Dst)}] = true
	if d.Departed != "" {
		a.out.undeleted[d.Departed] = true
	}
	entryFailures.WithLabelValues("delete", codeLabel(f.Code)).Inc()
	a.out.retry = append(a.out.retry, fmt.Errorf("delete route %s (%s) from route table %s: %s: %s", d.Entry.ID, d.Entry.Dst, table, f.Code, f.Message))
	if d.Node != "" && !cloud.Classify(f.Code, 400).Retryable() {
		a.c.recorder.Eventf(nodeRef(a.byName, d.Node), corev1.EventTypeWarning, EventSyncRouteFailed,
			"Could not delete route %s via %s from route table %s: %s: %s", d.Entry.Dst, d.Entry.HopID, table, f.Code, f.Message)
	}
}

// createMissing creates the table's missing entries in batches; false
// when the pass must end.
func (a *applier) createMissing(ctx context.Context, table string, all []creation) bool {
	var crs []creation
	for _, cr := range all {
		// While the stale entry holding the destination is still there,
		// a create would only come back as a Duplicate.
		if cr.Table == table && !a.deleteFailed[routeKey{table, cr.Target.CIDR.String()}] {
			crs = append(crs, cr)
		}
	}
	for _, batch := range cloud.Chunks(crs, a.c.opts.BatchSize) {
		began := time.Now()
		failed, err := a.c.createBatch(ctx, table, batch)
		took := time.Since(began)
		if a.cancelled(ctx, err) {
			return false
		}
		for _, cr := range batch {
			dst := cr.Target.CIDR.String()
			f, bad := failure(err, failed, dst)
			if bad && f.Code != codeDuplicate {
				a.createRefused(table, cr, f, err)
				continue
			}
			a.out.have[routeKey{table, dst}] = true
			if !bad {
				entriesCreated.WithLabelValues(table).Inc()
				observeLegacy(verbCreate, took)
				a.logger.Info("Created route", "routeTable", table, "destination", dst, "nextHop", cr.Target.Instance, "node", cr.Target.Node)
				a.c.recorder.Eventf(nodeRef(a.byName, cr.Target.Node), corev1.EventTypeNormal, EventCreatedRoute,
					"Created route %s via %s in route table %s", dst, cr.Target.Instance, table)
			}
		}
	}
	return true
}

// createRefused records an entry the cloud did not create; callErr is the
// whole call's error, if any, which classifies it over the entry's code.
func (a *applier) createRefused(table string, cr creation, f entryFailure, callErr error) {
	dst := cr.Target.CIDR.String()
	entryFailures.WithLabelValues("create", codeLabel(f.Code)).Inc()
	class := cloud.Classify(f.Code, 400)
	if callErr != nil {
		class = cloud.ClassOf(callErr)
	}
	a.logger.Info("Route not created", "routeTable", table, "destination", dst, "nextHop", cr.Target.Instance,
		"node", cr.Target.Node, "code", f.Code, "message", f.Message)
	if !class.Retryable() {
		a.c.recorder.Eventf(nodeRef(a.byName, cr.Target.Node), corev1.EventTypeWarning, EventCreateRouteFailed,
			"Could not create route %s via %s in route table %s: %s: %s", dst, cr.Target.Instance, table, f.Code, f.Message)
	}
	if class != cloud.ClassQuota {
		a.out.retry = append(a.out.retry, fmt.Errorf("create route %s via %s in route table %s: %s: %s", dst, cr.Target.Instance, table, f.Code, f.Message))
	}
}

// markAll writes the table's markings one entry a call; false when the
// pass must end.
func (a *applier) markAll(ctx context.Context, table string, all []marking) bool {
	for _, m := range all {
		if m.Entry.Table != table {
			continue
		}
		err := a.c.markEntry(ctx, m)
		if a.cancelled(ctx, err) {
			return false
		}
		if err != nil {
			a.markRefused(table, m, err)
			continue
		}
		if m.Release {
			entriesReleased.WithLabelValues(table).Inc()
			a.logger.Info("Handed off an excluded Node's route; it is no longer managed and outlives the Node", "routeTable", table,
				"entry", m.Entry.ID, "destination", m.Entry.Dst, "nextHop", m.Entry.HopID, "node", m.Node, "description", m.Description)
			a.c.recorder.Eventf(nodeRef(a.byName, m.Node), corev1.EventTypeNormal, EventReleasedRoute,
				"Route %s via %s in route table %s is no longer managed (Node excluded) and is kept when the Node is deleted", m.Entry.Dst, m.Entry.HopID, table)
			continue
		}
		entriesAdopted.WithLabelValues(table).Inc()
		a.logger.Info("Marked handed-off route as this cluster's again", "routeTable", table, "entry", m.Entry.ID, "destination", m.Entry.Dst, "nextHop", m.Entry.HopID, "node", m.Node)
		a.c.recorder.Eventf(nodeRef(a.byName, m.Node), corev1.EventTypeNormal, EventAdoptedRoute,
			"Marked route %s via %s in route table %s as this cluster's", m.Entry.Dst, m.Entry.HopID, table)
	}
	return true
}

// markRefused records a marking the cloud did not write.
func (a *applier) markRefused(table string, m marking, err error) {
	code := cloud.CodeOf(err)
	if code == "" {
		code = "ClientError"
	}
	op := "adopt"
	if m.Release {
		op = "release"
		if cloud.ClassOf(err) != cloud.ClassNotFound {
			a.out.unreleased[m.Node] = true
		}
	}
	entryFailures.WithLabelValues(op, code).Inc()
	if cloud.ClassOf(err) == cloud.ClassNotFound && !m.Release {
		// Deleted meanwhile: the Node lacks its route until the next pass.
		delete(a.out.have, routeKey{table, normalize(m.Entry.Dst)})
	}
	a.logger.Info("Route not marked; retrying", "routeTable", table, "entry", m.Entry.ID, "destination", m.Entry.Dst, "node", m.Node,
		"description", m.Description, "code", code, "err", err)
	a.out.retry = append(a.out.retry, err)
}

// failure finds an entry's failure: the whole call's error, or the
// per-entry one under any of keys.
func failure(callErr error, failed map[string]entryFailure, keys ...string) (entryFailure, bool) {
	if callErr != nil {
		code := cloud.CodeOf(callErr)
		if code == "" {
			code = "ClientError"
		}
		return entryFailure{Code: code, Message: callErr.Error()}, true
	}
	for _, k := range keys {
		if f, ok := failed[k]; ok && k != "" {
			return f, true
		}
	}
	return entryFailure{}, false
}

// codeLabel bounds the metric's label values to real codes.
func codeLabel(code string) string {
	if code == "" {
		return "Unknown"
	}
	return code
}
