// Package routes is the CCM's VPC route controller: it keeps one Custom
// route entry per Node (podCIDR → the Node's ECS instance) in every route
// table of the cluster. Unlike the generic cloud-provider route controller
// it writes in batches (CreateRouteEntries / DeleteRouteEntries) from a
// single worker, because the VPC API answers concurrent route writes in one
// VPC with TaskConflict. Unmarked entries it adopts from the existing CCM
// are used as they are, without a write; they are deleted with their Node
// (from its delete event) or, after a restart, once their next-hop instance
// no longer exists.
package routes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/config"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
)

// Defaults of Options.
const (
	// DefaultResyncPeriod is the CCM's --route-reconciliation-period default.
	DefaultResyncPeriod = 5 * time.Minute
	// MaxBatchSize is the most entries CreateRouteEntries and
	// DeleteRouteEntries take in one call.
	MaxBatchSize = 50
	// DefaultEventAggregation is how long a pass waits after a Node event.
	DefaultEventAggregation = time.Second
)

// ControllerName is the name the controller is enabled by in --controllers.
const ControllerName = "route"

// Options configure a Controller.
type Options struct {
	// KubeClient patches Node status.
	KubeClient kubernetes.Interface
	// NodeInformer is the shared informer factory's Node informer; New adds
	// its handlers, the caller starts the factory.
	NodeInformer coreinformers.NodeInformer
	// Recorder records events on Nodes.
	Recorder record.EventRecorder
	// Cloud makes the route controller's cloud calls (cloud.VPCRoutes).
	Cloud Cloud
	// VpcID is the cluster's VPC; needed when RouteTableIDs is empty.
	VpcID string
	// RouteTableIDs are the tables to program (cloud-config routeTableIDs);
	// empty means the VPC's only route table.
	RouteTableIDs []string
	// ClusterCIDR is --cluster-cidr: one or two comma-separated CIDRs.
	// Routes outside it are never touched; only IPv4 ones are programmed.
	ClusterCIDR string
	// ClusterID marks the entries this cluster owns (default "clusterid").
	ClusterID string
	// ResyncPeriod is how often every route is checked even without Node
	// events (default DefaultResyncPeriod).
	ResyncPeriod time.Duration
	// BatchSize is the most entries per write call (default and maximum
	// MaxBatchSize).
	BatchSize int
	// EventAggregation is how long a pass waits after a Node event, so
	// that Nodes added together share one pass and one write per table
	// (default DefaultEventAggregation).
	EventAggregation time.Duration
}

// Controller reconciles the VPC route tables with the Nodes' podCIDRs.
type Controller struct {
	opts         Options
	cloud        Cloud
	kube         kubernetes.Interface
	nodes        corelisters.NodeLister
	nodesSynced  cache.InformerSynced
	recorder     record.EventRecorder
	clusterCIDRs []netip.Prefix
	// queue holds one key, so bursts of Node events coalesce into one pass
	// and passes never overlap.
	queue workqueue.TypedRateLimitingInterface[string]
	key   string

	tablesMu sync.Mutex
	tables   []string

	// written remembers the NetworkUnavailable status this controller last
	// wrote per Node, so that only someone else's change triggers a pass.
	written sync.Map

	// v6 caches whether the VPC has IPv6 and which Nodes were told their
	// IPv6 podCIDR gets no route.
	v6 ipv6State

	// goneMu guards known, goneExcluded and departed.
	goneMu sync.Mutex
	// known are the Nodes whose add event was handled and delete event was
	// not: the informer drops a Node from the lister before it calls the
	// delete handler, and only that handler can say whether it was excluded.
	known map[string]bool
	// goneExcluded are the excluded Nodes deleted before a pass handed off
	// their entries (label and deletion in one aggregation window), by
	// name, with their providerID: the lister no longer has them, and
	// without this the pass would delete their marked entries as stale.
	goneExcluded map[string]string
	// departed are the other deleted Nodes, by departed.key, until a pass
	// has deleted their unmarked entries: nothing else in the cloud says
	// whose those entries were.
	departed map[string]departed

	// instances caches which next-hop instances of unmarked entries exist.
	instances existence

	// announced are the unmarked entries already reported as adopted, by
	// id, so that the event is sent once per entry, not every pass. Only
	// the pass, never concurrent with itself, uses it.
	announced map[string]bool
}

// New validates opts and wires the Node event handlers.
func New(opts Options) (*Controller, error) {
	switch {
	case opts.KubeClient == nil:
		return nil, errors.New("route controller: a kube client is required")
	case opts.NodeInformer == nil:
		return nil, errors.New("route controller: a Node informer is required")
	case opts.Recorder == nil:
		return nil, errors.New("route controller: an event recorder is required")
	case opts.Cloud == nil:
		return nil, errors.New("route controller: a cloud client is required")
	case opts.VpcID == "" && len(opts.RouteTableIDs) == 0:
		return nil, errors.New("route controller: the VPC id is required to find its route table when routeTableIDs is not set")
	}
	cidrs, err := parseClusterCIDR(opts.ClusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("route controller: %w", err)
	}
	if opts.ClusterID == "" {
		opts.ClusterID = config.DefaultClusterID
	}
	if opts.ResyncPeriod < 0 {
		return nil, fmt.Errorf("route controller: negative resync period %s", opts.ResyncPeriod)
	}
	if opts.ResyncPeriod == 0 {
		opts.ResyncPeriod = DefaultResyncPeriod
	}
	if opts.BatchSize < 0 || opts.BatchSize > MaxBatchSize {
		return nil, fmt.Errorf("route controller: batch size %d is outside 1..%d", opts.BatchSize, MaxBatchSize)
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = MaxBatchSize
	}
	if opts.EventAggregation < 0 {
		return nil, fmt.Errorf("route controller: negative event aggregation %s", opts.EventAggregation)
	}
	if opts.EventAggregation == 0 {
		opts.EventAggregation = DefaultEventAggregation
	}
	var tables []string
	for _, t := range opts.RouteTableIDs {
		if t = strings.TrimSpace(t); t != "" {
			tables = append(tables, t)
		}
	}
	key := opts.VpcID
	if key == "" {
		key = strings.Join(tables, ",")
	}
	c := &Controller{
		opts: opts, cloud: opts.Cloud, kube: opts.KubeClient, recorder: opts.Recorder, clusterCIDRs: cidrs,
		nodes: opts.NodeInformer.Lister(), nodesSynced: opts.NodeInformer.Informer().HasSynced,
		tables: tables, key: key, known: map[string]bool{}, goneExcluded: map[string]string{},
		departed: map[string]departed{}, announced: map[string]bool{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName}),
	}
	if _, err := opts.NodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		// The Nodes of the initial listing are covered by the first pass,
		// which Run starts once the cache has them: queueing another for
		// them would list every table twice on each start.
		AddFunc: func(obj any, initial bool) {
			if n, ok := obj.(*corev1.Node); ok {
				c.goneMu.Lock()
				c.known[n.Name] = true
				c.goneMu.Unlock()
			}
			if !initial {
				c.nodeEvent()
			}
		},
		UpdateFunc: c.nodeUpdated,
		DeleteFunc: c.nodeDeleted,
	}); err != nil {
		return nil, fmt.Errorf("route controller: watch Nodes: %w", err)
	}
	return c, nil
}

// parseClusterCIDR parses --cluster-cidr; at least one CIDR must be IPv4,
// the family every VPC routes; an IPv6 one is routed where the VPC has
// IPv6.
func parseClusterCIDR(s string) ([]netip.Prefix, error) {
	var v4, v6 []netip.Prefix
	parts := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("the cluster CIDR (--cluster-cidr) is required")
	}
	if len(parts) > 2 {
		return nil, fmt.Errorf("cluster CIDR %q: at most two CIDRs (one per IP family)", s)
	}
	for _, part := range parts {
		p, err := netip.ParsePrefix(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("cluster CIDR %q: %w", s, err)
		}
		if p.Addr().Is4() {
			v4 = append(v4, p.Masked())
		} else {
			v6 = append(v6, p.Masked())
		}
	}
	if len(v4) == 0 {
		return nil, fmt.Errorf("cluster CIDR %q has no IPv4 CIDR; a dual-stack cluster needs one", s)
	}
	if len(v4) > 1 || len(v6) > 1 {
		return nil, fmt.Errorf("cluster CIDR %q: at most one CIDR per IP family", s)
	}
	return append(v4, v6...), nil
}

// nodeUpdated starts a pass only for changes that move a route: compare
// the OLD object with the NEW one (the existing CCM compared the old one
// with itself and so missed podCIDR changes).
func (c *Controller) nodeUpdated(oldObj, newObj any) {
	o, ok1 := oldObj.(*corev1.Node)
	n, ok2 := newObj.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	if routeRelevantChange(o, n) {
		c.nodeEvent()
		return
	}
	// Someone else rewrote NetworkUnavailable (e.g. node initialization
	// resets it to True): put back what the routes say.
	oc, nc := networkCondition(o), networkCondition(n)
	if nc != nil && (oc == nil || oc.Status != nc.Status || oc.Reason != nc.Reason) {
		if w, ok := c.written.Load(n.Name); !ok || w.(string) != string(nc.Status)+"/"+nc.Reason {
			c.nodeEvent()
		}
	}
}

func (c *Controller) nodeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		c.written.Delete(n.Name)
		c.goneMu.Lock()
		delete(c.known, n.Name)
		if nodes.Excluded(n) {
			c.goneExcluded[n.Name] = n.Spec.ProviderID
		} else if d, ok := newDeparted(n); ok {
			c.departed[d.key()] = d
		}
		c.goneMu.Unlock()
	}
	c.nodeEvent()
}

// goneNodes are the deleted Nodes a pass acts on, to be forgotten once it
// has.
type goneNodes struct {
	// excluded are deleted excluded Nodes, by name.
	excluded []string
	// departed are the other deleted Nodes, by departed.key.
	departed []string
}

// withGoneNodes adds to ns the Nodes the lister no longer has but whose
// entries are not stale yet: deleted excluded Nodes, whose entries are left
// alone and handed off like a live excluded Node's, and Nodes whose delete
// event is still on its way, left alone until that event brings the next
// pass; and the other deleted Nodes (Departed), whose unmarked entries go.
// An excluded Node listed again under the name decides for itself.
func (c *Controller) withGoneNodes(ns *nodeSet, byName map[string]*corev1.Node) goneNodes {
	c.goneMu.Lock()
	defer c.goneMu.Unlock()
	for name := range c.known {
		if _, live := byName[name]; !live {
			ns.ExcludedNodes[name] = true
		}
	}
	var g goneNodes
	for name, providerID := range c.goneExcluded {
		if _, live := byName[name]; live {
			delete(c.goneExcluded, name)
			continue
		}
		ns.leaveAlone(name, providerID)
		ns.Released[name] = true
		g.excluded = append(g.excluded, name)
	}
	for k, d := range c.departed {
		// Even under a name listed again: as for a marked entry, the
		// new Node keeps the entry only if it wants it (diff looks first).
		ns.Departed = append(ns.Departed, d)
		g.departed = append(g.departed, k)
	}
	return g
}

// forgetGone drops the deleted Nodes the pass has acted on; excluded ones
// in unreleased and departed ones in undeleted keep waiting for the next
// pass.
func (c *Controller) forgetGone(g goneNodes, unreleased, undeleted map[string]bool) {
	c.goneMu.Lock()
	defer c.goneMu.Unlock()
	for _, name := range g.excluded {
		if !unreleased[name] {
			delete(c.goneExcluded, name)
		}
	}
	for _, k := range g.departed {
		if !undeleted[k] {
			delete(c.departed, k)
		}
	}
}

// nodeEvent schedules a pass after the aggregation window; the queue
// dedups the key, so every event of the window lands in the same pass.
func (c *Controller) nodeEvent() { c.queue.AddAfter(c.key, c.opts.EventAggregation) }

// routeRelevantChange reports whether an update changes the Node's routes.
func routeRelevantChange(o, n *corev1.Node) bool {
	// A Node entering deletion needs no pass: its routes stay until it is gone.
	if o.Spec.ProviderID != n.Spec.ProviderID || nodes.Excluded(o) != nodes.Excluded(n) || uninitialized(o) != uninitialized(n) ||
		readyUnknown(o) != readyUnknown(n) {
		return true
	}
	op, np := podCIDRs(o), podCIDRs(n)
	if len(op) != len(np) {
		return true
	}
	for i := range op {
		if op[i] != np[i] {
			return true
		}
	}
	return false
}

// RouteTables returns the tables the controller programs: the configured
// ones, else the VPC's only table (looked up once; with several tables it
// fails with an error naming them).
func (c *Controller) RouteTables(ctx context.Context) ([]string, error) {
	c.tablesMu.Lock()
	defer c.tablesMu.Unlock()
	if len(c.tables) > 0 {
		return c.tables, nil
	}
	t, err := c.discoverTables(ctx)
	if err != nil {
		return nil, err
	}
	c.tables = t
	return t, nil
}

// Run reconciles until ctx is done. Routes of one VPC are written by one
// worker whatever workers says, since the VPC refuses concurrent route
// writes; workers is accepted for the controller-manager's interface.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting route controller", "vpc", c.opts.VpcID, "routeTables", c.opts.RouteTableIDs,
		"clusterCIDR", c.opts.ClusterCIDR, "resyncPeriod", c.opts.ResyncPeriod, "batchSize", c.opts.BatchSize, "workersRequested", workers)
	defer logger.Info("Shutting down route controller")
	if !cache.WaitForNamedCacheSync(ControllerName, ctx.Done(), c.nodesSynced) {
		return
	}
	// Run returns only once its goroutines have: a stopped controller (a
	// lost lease) must not start another pass behind its successor's back.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.processNext(ctx) {
			}
		}, time.Second)
	}()
	// The first tick is immediate: the initial full pass.
	go func() {
		defer wg.Done()
		wait.UntilWithContext(ctx, func(context.Context) { c.queue.Add(c.key) }, c.opts.ResyncPeriod)
	}()
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	err := c.reconcile(ctx)
	if err == nil {
		c.queue.Forget(key)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	klog.FromContext(ctx).Error(err, "Route reconcile incomplete; retrying", "retries", c.queue.NumRequeues(key))
	c.queue.AddRateLimited(key)
	return true
}
