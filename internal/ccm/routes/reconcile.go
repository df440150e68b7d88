package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Event reasons on Nodes; CreatedRoute, CreateRouteFailed and SyncRouteFailed are the existing CCM's.
const (
	// EventCreatedRoute (Normal): an entry for the Node was created.
	EventCreatedRoute = "CreatedRoute"
	// EventDeletedRoute (Normal): a stale entry of the Node was deleted.
	EventDeletedRoute = "DeletedRoute"
	// EventCreateRouteFailed (Warning): the cloud refused the Node's entry; the message has its error code.
	EventCreateRouteFailed = "CreateRouteFailed"
	// EventSyncRouteFailed (Warning): a stale entry of the Node could not be deleted.
	EventSyncRouteFailed = "SyncRouteFailed"
	// EventAdoptedRoute (Normal): an unmarked entry serving the Node (the
	// existing CCM's) is used as its route, without a write; sent once per
	// entry per process. Also sent when an entry this cluster had handed
	// off is marked as the Node's again.
	EventAdoptedRoute = "AdoptedRoute"
	// EventReleasedRoute (Normal): an entry this cluster created for the
	// Node, now excluded, was handed off: it is no longer managed and is
	// kept when the Node is deleted.
	EventReleasedRoute = "ReleasedRoute"
	// EventRouteConflict flags an entry this cluster did not create that
	// overlaps the Node's podCIDR; it is reported, never deleted.
	EventRouteConflict = "RouteConflict"
)

// NetworkUnavailable reasons, as the existing CCM writes them.
const (
	// ReasonRouteCreated goes with status False: the Node's routes exist in every table.
	ReasonRouteCreated = "RouteCreated"
	// ReasonNoRouteCreated goes with status True: some table lacks the Node's route.
	ReasonNoRouteCreated = "NoRouteCreated"
)

// deferredRecheck is how soon a pass comes back for adopted entries that
// were too busy (Pending) to be marked, rather than at the resync.
const deferredRecheck = 5 * time.Second

// outcome is what a pass achieved.
type outcome struct {
	// have are the wanted routes that exist after the pass.
	have map[routeKey]bool
	// retry are failures worth another pass soon (not quota ones, which
	// wait for the resync since only an operator can lift them).
	retry []error
	// unreleased are the Nodes with an entry whose hand-off failed.
	unreleased map[string]bool
	// undeleted are the deleted Nodes (departed.key) with an unmarked
	// entry whose deletion failed.
	undeleted map[string]bool
}

// reconcile is one pass over every route table.
func (c *Controller) reconcile(ctx context.Context) (err error) {
	start := time.Now()
	logger := klog.FromContext(ctx)
	defer func() {
		reconcileLatency.Observe(time.Since(start).Seconds())
		observeLegacy(verbReconcile, time.Since(start))
		result := "success"
		if err != nil {
			result = "error"
		}
		reconciles.WithLabelValues(result).Inc()
	}()
	tables, err := c.RouteTables(ctx)
	if err != nil {
		return err
	}
	all, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list Nodes: %w", err)
	}
	byName := map[string]*corev1.Node{}
	for _, n := range all {
		byName[n.Name] = n
	}
	ns, skips := nodesToTargets(all, c.clusterCIDRs, c.cloud.Region())
	ns = c.ipv6Targets(ctx, ns, byName)
	gone := c.withGoneNodes(&ns, byName)
	for _, s := range skips {
		logger.V(4).Info("Node gets no route", "node", s.Node, "reason", s.Reason)
	}
	var errs []error
	var listed []string
	entries := map[string][]entry{}
	for _, t := range tables {
		es, err := c.listEntries(ctx, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		listed = append(listed, t)
		entries[t] = es
	}
	pl := diff(c.opts.ClusterID, c.clusterCIDRs, listed, ns, entries)
	if len(pl.Unverified) > 0 {
		// Plan again with the answer: only unmarked routes via instances
		// of no Node cost a DescribeInstances, and at most one a resync.
		if ns.Vanished = c.vanishedAmong(ctx, pl.Unverified); len(ns.Vanished) > 0 {
			pl = diff(c.opts.ClusterID, c.clusterCIDRs, listed, ns, entries)
		}
	}
	c.reportConflicts(logger, listed, pl.Conflicts, byName)
	c.announceAdopted(logger, len(listed) == len(tables), pl.Adopted, byName)
	out := c.apply(ctx, listed, pl, byName)
	errs = append(errs, out.retry...)
	if len(pl.Deferred) > 0 {
		for _, m := range pl.Deferred {
			e := m.Entry
			logger.V(2).Info("Route to mark is busy; marking it later", "routeTable", e.Table, "entry", e.ID, "destination", e.Dst,
				"status", e.Status, "description", m.Description, "after", deferredRecheck)
			if m.Release {
				out.unreleased[m.Node] = true
			}
		}
		c.queue.AddAfter(c.key, deferredRecheck)
	}
	// A table that could not be listed leaves every Node's state unknown.
	if len(listed) == len(tables) {
		errs = append(errs, c.updateConditions(ctx, tables, ns, out.have, byName)...)
		c.forgetGone(gone, out.unreleased, out.undeleted)
	}
	logger.V(2).Info("Route pass done", "tables", len(tables), "routes", len(ns.Targets)*len(tables),
		"created", len(pl.Creates), "deleted", len(pl.Deletes), "marked", len(pl.Marks), "adopted", len(pl.Adopted),
		"conflicts", len(pl.Conflicts), "duration", time.Since(start))
	return errors.Join(errs...)
}

// announceAdopted tells each Node once that an unmarked entry (the existing
// CCM's) is used as its route. With every table listed (complete), entries
// no longer adopted are forgotten, so that one adopted again is told again.
func (c *Controller) announceAdopted(logger klog.Logger, complete bool, adopted []adoption, byName map[string]*corev1.Node) {
	now := map[string]bool{}
	for _, a := range adopted {
		e := a.Entry
		now[e.ID] = true
		if c.announced[e.ID] {
			continue
		}
		c.announced[e.ID] = true
		entriesAdopted.WithLabelValues(e.Table).Inc()
		logger.Info("Using unmarked route as the Node's route, unchanged", "routeTable", e.Table, "entry", e.ID,
			"destination", e.Dst, "nextHop", e.HopID, "node", a.Node)
		c.recorder.Eventf(nodeRef(byName, a.Node), corev1.EventTypeNormal, EventAdoptedRoute,
			"Route %s via %s in route table %s (unmarked, as the existing CCM leaves them) is used as this Node's route, unchanged", e.Dst, e.HopID, e.Table)
	}
	if !complete {
		return
	}
	for id := range c.announced {
		if !now[id] {
			delete(c.announced, id)
		}
	}
}

// nodeRef returns the object to put a Node's events on, even once the Node
// is gone.
func nodeRef(byName map[string]*corev1.Node, name string) runtime.Object {
	if n, ok := byName[name]; ok {
		return n
	}
	return &corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

// apply deletes stale entries, then creates missing ones, table by table,
// in batches, then marks adopted entries; failures are handled per entry so
// one Node's problem never holds back the others.
func (c *Controller) apply(ctx context.Context, tables []string, pl plan, byName map[string]*corev1.Node) outcome {
	logger := klog.FromContext(ctx)
	out := outcome{have: map[routeKey]bool{}, unreleased: map[string]bool{}, undeleted: map[string]bool{}}
	for k := range pl.Present {
		out.have[k] = true
	}
	deleteFailed := map[routeKey]bool{}
	for _, table := range tables {
		var dels []deletion
		for _, d := range pl.Deletes {
			if d.Entry.Table == table {
				dels = append(dels, d)
			}
		}
		for _, batch := range chunk(dels, c.opts.BatchSize) {
			began := time.Now()
			failed, err := c.deleteBatch(ctx, table, batch)
			took := time.Since(began)
			if err != nil && ctx.Err() != nil {
				return outcome{have: out.have, retry: append(out.retry, err), unreleased: out.unreleased, undeleted: out.undeleted}
			}
			for _, d := range batch {
				f, bad := failure(err, failed, d.Entry.ID, normalize(d.Entry.Dst))
				if bad && f.Code == codeNotFound {
					bad = false
				}
				if !bad {
					entriesDeleted.WithLabelValues(table).Inc()
					observeLegacy(verbDelete, took)
					logger.Info("Deleted route", "routeTable", table, "entry", d.Entry.ID, "destination", d.Entry.Dst, "nextHop", d.Entry.HopID,
						"node", d.Node, "reason", d.Why)
					if d.Node != "" {
						c.recorder.Eventf(nodeRef(byName, d.Node), corev1.EventTypeNormal, EventDeletedRoute,
							"Deleted route %s via %s from route table %s", d.Entry.Dst, d.Entry.HopID, table)
					}
					continue
				}
				deleteFailed[routeKey{table, normalize(d.Entry.Dst)}] = true
				if d.Departed != "" {
					out.undeleted[d.Departed] = true
				}
				entryFailures.WithLabelValues("delete", codeLabel(f.Code)).Inc()
				out.retry = append(out.retry, fmt.Errorf("delete route %s (%s) from route table %s: %s: %s", d.Entry.ID, d.Entry.Dst, table, f.Code, f.Message))
				if d.Node != "" && !cloud.Classify(f.Code, 400).Retryable() {
					c.recorder.Eventf(nodeRef(byName, d.Node), corev1.EventTypeWarning, EventSyncRouteFailed,
						"Could not delete route %s via %s from route table %s: %s: %s", d.Entry.Dst, d.Entry.HopID, table, f.Code, f.Message)
				}
			}
		}
	}
	for _, table := range tables {
		var crs []creation
		for _, cr := range pl.Creates {
			// While the stale entry holding the destination is still there,
			// a create would only come back as a Duplicate.
			if cr.Table == table && !deleteFailed[routeKey{table, cr.Target.CIDR.String()}] {
				crs = append(crs, cr)
			}
		}
		for _, batch := range chunk(crs, c.opts.BatchSize) {
			began := time.Now()
			failed, err := c.createBatch(ctx, table, batch)
			took := time.Since(began)
			if err != nil && ctx.Err() != nil {
				return outcome{have: out.have, retry: append(out.retry, err), unreleased: out.unreleased, undeleted: out.undeleted}
			}
			for _, cr := range batch {
				dst := cr.Target.CIDR.String()
				f, bad := failure(err, failed, dst)
				if !bad || f.Code == codeDuplicate {
					out.have[routeKey{table, dst}] = true
					if !bad {
						entriesCreated.WithLabelValues(table).Inc()
						observeLegacy(verbCreate, took)
						logger.Info("Created route", "routeTable", table, "destination", dst, "nextHop", cr.Target.Instance, "node", cr.Target.Node)
						c.recorder.Eventf(nodeRef(byName, cr.Target.Node), corev1.EventTypeNormal, EventCreatedRoute,
							"Created route %s via %s in route table %s", dst, cr.Target.Instance, table)
					}
					continue
				}
				entryFailures.WithLabelValues("create", codeLabel(f.Code)).Inc()
				class := cloud.Classify(f.Code, 400)
				if err != nil {
					class = cloud.ClassOf(err)
				}
				logger.Info("Route not created", "routeTable", table, "destination", dst, "nextHop", cr.Target.Instance,
					"node", cr.Target.Node, "code", f.Code, "message", f.Message)
				if !class.Retryable() {
					c.recorder.Eventf(nodeRef(byName, cr.Target.Node), corev1.EventTypeWarning, EventCreateRouteFailed,
						"Could not create route %s via %s in route table %s: %s: %s", dst, cr.Target.Instance, table, f.Code, f.Message)
				}
				if class != cloud.ClassQuota {
					out.retry = append(out.retry, fmt.Errorf("create route %s via %s in route table %s: %s: %s", dst, cr.Target.Instance, table, f.Code, f.Message))
				}
			}
		}
	}
	// Marks come last: the re-marked routes already forward, so the Nodes'
	// missing routes must not wait behind one call per marked entry.
	for _, table := range tables {
		for _, m := range pl.Marks {
			if m.Entry.Table != table {
				continue
			}
			err := c.markEntry(ctx, m)
			if err != nil && ctx.Err() != nil {
				return outcome{have: out.have, retry: append(out.retry, err), unreleased: out.unreleased, undeleted: out.undeleted}
			}
			if err == nil {
				if m.Release {
					entriesReleased.WithLabelValues(table).Inc()
					logger.Info("Handed off an excluded Node's route; it is no longer managed and outlives the Node", "routeTable", table,
						"entry", m.Entry.ID, "destination", m.Entry.Dst, "nextHop", m.Entry.HopID, "node", m.Node, "description", m.Description)
					c.recorder.Eventf(nodeRef(byName, m.Node), corev1.EventTypeNormal, EventReleasedRoute,
						"Route %s via %s in route table %s is no longer managed (Node excluded) and is kept when the Node is deleted", m.Entry.Dst, m.Entry.HopID, table)
					continue
				}
				entriesAdopted.WithLabelValues(table).Inc()
				logger.Info("Marked handed-off route as this cluster's again", "routeTable", table, "entry", m.Entry.ID, "destination", m.Entry.Dst, "nextHop", m.Entry.HopID, "node", m.Node)
				c.recorder.Eventf(nodeRef(byName, m.Node), corev1.EventTypeNormal, EventAdoptedRoute,
					"Marked route %s via %s in route table %s as this cluster's", m.Entry.Dst, m.Entry.HopID, table)
				continue
			}
			code := cloud.CodeOf(err)
			if code == "" {
				code = "ClientError"
			}
			op := "adopt"
			if m.Release {
				op = "release"
				if cloud.ClassOf(err) != cloud.ClassNotFound {
					out.unreleased[m.Node] = true
				}
			}
			entryFailures.WithLabelValues(op, code).Inc()
			if cloud.ClassOf(err) == cloud.ClassNotFound && !m.Release {
				// Deleted meanwhile: the Node lacks its route until the next pass.
				delete(out.have, routeKey{table, normalize(m.Entry.Dst)})
			}
			logger.Info("Route not marked; retrying", "routeTable", table, "entry", m.Entry.ID, "destination", m.Entry.Dst, "node", m.Node,
				"description", m.Description, "code", code, "err", err)
			out.retry = append(out.retry, err)
		}
	}
	return out
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

// reportConflicts warns about entries this cluster will not touch.
func (c *Controller) reportConflicts(logger klog.Logger, tables []string, cs []conflict, byName map[string]*corev1.Node) {
	per := map[string]int{}
	for _, cf := range cs {
		per[cf.Entry.Table]++
		e := cf.Entry
		logger.Info("Route entry inside the cluster CIDR was not created by this cluster; leaving it in place",
			"routeTable", e.Table, "entry", e.ID, "destination", e.Dst, "nextHopType", e.HopType, "nextHop", e.HopID, "nodes", cf.Nodes)
		for _, n := range cf.Nodes {
			c.recorder.Eventf(nodeRef(byName, n), corev1.EventTypeWarning, EventRouteConflict,
				"Route table %s has entry %s (%s via %s %s), not created by this cluster, overlapping this Node's podCIDR; it is left in place",
				e.Table, e.ID, e.Dst, e.HopType, e.HopID)
		}
	}
	for _, t := range tables {
		conflicts.WithLabelValues(t).Set(float64(per[t]))
	}
}

// networkCondition returns a Node's NetworkUnavailable condition.
func networkCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeNetworkUnavailable {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// updateConditions sets NetworkUnavailable on every Node that wants routes:
// False once its routes exist in every table, True otherwise.
func (c *Controller) updateConditions(ctx context.Context, tables []string, ns nodeSet, have map[routeKey]bool, byName map[string]*corev1.Node) []error {
	ok := map[string]bool{}
	var order []string
	for _, t := range ns.Targets {
		if _, seen := ok[t.Node]; !seen {
			ok[t.Node] = true
			order = append(order, t.Node)
		}
		for _, table := range tables {
			if !have[routeKey{table, t.CIDR.String()}] {
				ok[t.Node] = false
			}
		}
	}
	var errs []error
	for _, name := range order {
		if n, found := byName[name]; found {
			if err := c.setNetworkCondition(ctx, n, ok[name]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// setNetworkCondition patches the Node's status only when the condition
// changes.
func (c *Controller) setNetworkCondition(ctx context.Context, n *corev1.Node, routed bool) error {
	cond := corev1.NodeCondition{
		Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, Reason: ReasonNoRouteCreated,
		Message: "The route controller has not created this Node's routes in every route table",
	}
	if routed {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, ReasonRouteCreated, "The route controller created this Node's routes"
	}
	if cur := networkCondition(n); cur != nil && cur.Status == cond.Status && cur.Reason == cond.Reason {
		c.written.Store(n.Name, string(cond.Status)+"/"+cond.Reason)
		return nil
	}
	now := metav1.Now()
	cond.LastTransitionTime, cond.LastHeartbeatTime = now, now
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{cond}}})
	if err != nil {
		return fmt.Errorf("encode the NetworkUnavailable patch of Node %s: %w", n.Name, err)
	}
	c.written.Store(n.Name, string(cond.Status)+"/"+cond.Reason)
	if _, err := c.kube.CoreV1().Nodes().PatchStatus(ctx, n.Name, patch); err != nil {
		c.written.Delete(n.Name)
		if apierrors.IsNotFound(err) {
			// Deleted meanwhile; its delete event brings the next pass.
			return nil
		}
		return fmt.Errorf("set NetworkUnavailable=%s on Node %s: %w", cond.Status, n.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Set NetworkUnavailable", "node", n.Name, "status", cond.Status, "reason", cond.Reason)
	return nil
}
