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
