package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// ControllerName is the name the controller is enabled by in --controllers.
const ControllerName = "service"

// Event reasons.
const (
	EventEnsuring        = "EnsuringLoadBalancer"
	EventEnsured         = "EnsuredLoadBalancer"
	EventSyncFailed      = "SyncLoadBalancerFailed"
	EventDeleted         = "DeletedLoadBalancer"
	EventDeleteFailed    = "CleanLoadBalancerFailed"
	EventInvalid         = "InvalidAnnotation"
	EventUnavailable     = "UnAvailableLoadBalancer"
	EventPreserved       = "PreservedOnDelete"
	EventFinalizerFailed = "FailedAddFinalizer"
	EventStatusFailed    = "FailedUpdateStatus"
	// EventOwnershipAmbiguous: the Service asks for a load balancer kind we
	// do not serve, or opts out while bound; nothing is written.
	EventOwnershipAmbiguous = "LoadBalancerKindAmbiguous"
)

// Defaults of Options.
const (
	DefaultWorkers      = 5
	DefaultResyncPeriod = 5 * time.Minute
	// DefaultVerifyPeriod is how often the periodic re-check of an
	// unchanged Service runs a full sync instead of the backend-only pass.
	DefaultVerifyPeriod     = 30 * time.Minute
	DefaultConfiguringRetry = 2 * time.Second
	// DefaultMaxConfiguringRetry caps the backoff while the cloud is busy.
	DefaultMaxConfiguringRetry = time.Minute
	DefaultBaseBackoff         = time.Second
	DefaultMaxBackoff          = 5 * time.Minute
	// DefaultRetryBudget is the number of cloud call retries one reconcile
	// may spend in all.
	DefaultRetryBudget = 8
	// DefaultSyncTimeout bounds one reconcile, cloud calls included.
	DefaultSyncTimeout = 3 * time.Minute
)

// Options configure a Controller.
type Options struct {
	// KubeClient writes finalizers, labels and status.
	KubeClient kubernetes.Interface
	// Informers is the shared factory; New registers the Service, Node and
	// EndpointSlice informers, the caller starts it.
	Informers informers.SharedInformerFactory
	// Recorder records events on Services.
	Recorder record.EventRecorder
	// Providers are the load balancer kinds served (CLB; NLB later).
	Providers []Provider
	// ClusterID names listeners and groups (default "clusterid").
	ClusterID string
	// Defaults are the cluster-wide annotation defaults.
	Defaults annotations.Defaults
	// Workers is the number of Services reconciled at once (default 5).
	Workers int
	// ResyncPeriod re-checks every Service this often, so that drift in
	// the cloud is found without a Service change (default 5m).
	ResyncPeriod time.Duration
	// VerifyPeriod is how often a Service the hash gate would pass gets a
	// full sync anyway (default 30m), so that load balancer attributes and
	// listener settings changed in the console are put back without a
	// Service change; in between, the periodic re-check is the cheaper
	// backend-only pass.
	VerifyPeriod time.Duration
	// ConfiguringRetry is the first requeue delay while the cloud is busy
	// configuring (default 2s); it doubles on each busy answer up to
	// MaxConfiguringRetry (default 1m).
	ConfiguringRetry, MaxConfiguringRetry time.Duration
	// RetryBudget is the number of cloud call retries one reconcile may
	// spend in all (default 8).
	RetryBudget int
	// SyncTimeout bounds one reconcile (default 3m).
	SyncTimeout time.Duration
	// BaseBackoff and MaxBackoff bound the per-Service exponential backoff
	// after failures (defaults 1s and 5m).
	BaseBackoff, MaxBackoff time.Duration
	// ENIs finds the ENIs of eni backends for the backends resolver
	// (backendsResolver); without it no eni backend is registered.
	ENIs ENILookup
	// ReusePolicy is cloud-config loadBalancerReuse (ReuseAny by default).
	ReusePolicy string
	// NodeBatchWindow is how quiet Node changes must be before the
	// Services they move are queued (DefaultNodeBatchWindow by default;
	// negative: queued at once); NodeBatchMaxWait bounds how long a
	// batch stays open (DefaultNodeBatchMaxWait by default; negative: no
	// bound).
	NodeBatchWindow, NodeBatchMaxWait time.Duration
	// SyncRate and SyncBurst bound how often one Service syncs (defaults
	// DefaultSyncRate a second after a burst of DefaultSyncBurst), so that
	// a namespace churning its Services cannot starve the others
	// (fairqueue.go).
	SyncRate  float64
	SyncBurst int
}

// Controller reconciles Services of type LoadBalancer with the cloud.
type Controller struct {
	opts      Options
	kube      kubernetes.Interface
	recorder  record.EventRecorder
	services  corelisters.ServiceLister
	nodes     corelisters.NodeLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	providers []Provider

	// notes remember repeated Warnings (invalid annotations, refusals) so
	// they are recorded once per change or resync interval, not per sync.
	notes sync.Map
	// proven caches, per Service UID, the load balancer id this process
	// proved the Service's from the cloud, so the hash-gated pass need not
	// read the load balancer again.
	proven sync.Map
	// verified holds, per Service UID, when its load balancer was last
	// fully synced (Ensure), for VerifyPeriod.
	verified sync.Map
	// listings are the providers' start-up listings (*startupListing by
	// Kind), which prove converged Services without a read each.
	listings sync.Map
	// conflicts backs off Services whose cloud resources are busy.
	conflicts workqueue.TypedRateLimiter[string]
	// health feeds the failing and invalid Service gauges.
	health healthBook
	// backends is the backends resolver (backends.go).
	backends backendsResolver
	// nodeBatch queues the Services Node changes move, a window at a time.
	nodeBatch *nodeBatch
	// borrowers indexes Services by the load balancers they claim
	// (borrowIndex), to find who shares a borrowed one.
	borrowers cache.Indexer
	// syncRate bounds each Service's sync rate.
	syncRate *syncLimiter
	// runCtx is Run's context, which work shared by all syncs (the
	// start-up listing) runs on; nil before Run.
	runCtx context.Context
	// index holds what the Node and EndpointSlice handlers read of each
	// Service, parsed once per version (serviceindex.go).
	index *serviceIndex
	// sliceIndex is the EndpointSlice cache with its sliceIndexers.
	sliceIndex cache.Indexer
}

// New validates opts and registers the event handlers.
func New(opts Options) (*Controller, error) {
	switch {
	case opts.KubeClient == nil:
		return nil, errors.New("service controller: a kube client is required")
	case opts.Informers == nil:
		return nil, errors.New("service controller: an informer factory is required")
	case opts.Recorder == nil:
		return nil, errors.New("service controller: an event recorder is required")
	case len(opts.Providers) == 0:
		return nil, errors.New("service controller: at least one load balancer provider is required")
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = DefaultResyncPeriod
	}
	if opts.VerifyPeriod <= 0 {
		opts.VerifyPeriod = DefaultVerifyPeriod
	}
	if opts.ConfiguringRetry <= 0 {
		opts.ConfiguringRetry = DefaultConfiguringRetry
	}
	if opts.MaxConfiguringRetry < opts.ConfiguringRetry {
		opts.MaxConfiguringRetry = max(DefaultMaxConfiguringRetry, opts.ConfiguringRetry)
	}
	if opts.RetryBudget <= 0 {
		opts.RetryBudget = DefaultRetryBudget
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = DefaultBaseBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.NodeBatchWindow == 0 {
		opts.NodeBatchWindow = DefaultNodeBatchWindow
	}
	if opts.NodeBatchMaxWait == 0 {
		opts.NodeBatchMaxWait = DefaultNodeBatchMaxWait
	}
	if opts.SyncRate <= 0 {
		opts.SyncRate = DefaultSyncRate
	}
	if opts.SyncBurst <= 0 {
		opts.SyncBurst = DefaultSyncBurst
	}
	opts.ClusterID = naming.ClusterID(opts.ClusterID)
	svcInf := opts.Informers.Core().V1().Services()
	nodeInf := opts.Informers.Core().V1().Nodes()
	sliceInf := opts.Informers.Discovery().V1().EndpointSlices()
	setTransforms(svcInf.Informer(), nodeInf.Informer(), sliceInf.Informer())
	if err := svcInf.Informer().AddIndexers(cache.Indexers{borrowIndex: borrowClaims}); err != nil {
		return nil, fmt.Errorf("service controller: index Services by load balancer: %w", err)
	}
	if err := sliceInf.Informer().AddIndexers(sliceIndexers); err != nil {
		return nil, fmt.Errorf("service controller: index EndpointSlices: %w", err)
	}
	c := &Controller{
		opts: opts, kube: opts.KubeClient, recorder: opts.Recorder, providers: opts.Providers,
		services: svcInf.Lister(), nodes: nodeInf.Lister(),
		synced: []cache.InformerSynced{svcInf.Informer().HasSynced, nodeInf.Informer().HasSynced, sliceInf.Informer().HasSynced},
		queue: newServiceQueue(workqueue.NewTypedMaxOfRateLimiter(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.BaseBackoff, opts.MaxBackoff),
			&workqueue.TypedBucketRateLimiter[string]{Limiter: newBucket()},
		)),
		conflicts: workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.ConfiguringRetry, opts.MaxConfiguringRetry),
		borrowers: svcInf.Informer().GetIndexer(),
		syncRate:  newSyncLimiter(opts.SyncRate, opts.SyncBurst),
	}
	c.index, c.sliceIndex = newServiceIndex(), sliceInf.Informer().GetIndexer()
	c.backends = backendsResolver{kube: opts.KubeClient, nodes: c.nodes, sliceIndex: c.sliceIndex, enis: opts.ENIs, clusterID: opts.ClusterID, notes: c}
	c.nodeBatch = &nodeBatch{window: opts.NodeBatchWindow, maxWait: opts.NodeBatchMaxWait, clock: clock.RealClock{}, add: c.queue.Add}
	if _, err := svcInf.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.indexService(nil, obj); c.enqueueService(obj); c.borrowersChanged(nil, obj) },
		UpdateFunc: c.serviceUpdated,
		DeleteFunc: func(obj any) { c.unindexService(obj); c.enqueueService(obj); c.borrowersChanged(obj, nil) },
	}, opts.ResyncPeriod); err != nil {
		return nil, fmt.Errorf("service controller: watch Services: %w", err)
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			// The Nodes of the first listing are no change: every Service
			// is queued by its own first listing and reads the synced Node
			// cache then. Batched, they would queue every Service again a
			// window later, a second backend pass each after a restart.
			if !initial {
				c.nodeChanged(nil, obj)
			}
		},
		UpdateFunc: c.nodeChanged,
		DeleteFunc: func(obj any) { c.nodeChanged(obj, nil) },
	}); err != nil {
		return nil, fmt.Errorf("service controller: watch Nodes: %w", err)
	}
	if _, err := sliceInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.sliceChanged(nil, obj) },
		UpdateFunc: c.sliceChanged,
		DeleteFunc: func(obj any) { c.sliceChanged(obj, nil) },
	}); err != nil {
		return nil, fmt.Errorf("service controller: watch EndpointSlices: %w", err)
	}
	gauged.Store(c)
	return c, nil
}

// Run starts the workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	klog.InfoS("Starting service controller", "workers", c.opts.Workers, "clusterID", c.opts.ClusterID)
	if !cache.WaitForNamedCacheSync(ControllerName, ctx.Done(), c.synced...) {
		return
	}
	c.runCtx = ctx
	for i := 0; i < c.opts.Workers; i++ {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	klog.InfoS("Stopping service controller")
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

// processNext handles one key. The queue never hands the same key to two
// workers at once, so one Service is never reconciled concurrently.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if wait := c.syncRate.wait(key, time.Now()); wait > 0 {
		klog.V(4).InfoS("Service syncing faster than its rate; deferred", "service", key, "after", wait)
		c.queue.AddAfter(key, wait)
		return true
	}
	// One retry budget and one deadline per reconcile: a cloud that keeps
	// failing ends the sync, and the queue's backoff takes over, instead of
	// retries stacked per call.
	sctx, cancel := context.WithTimeout(cloud.WithRetryBudget(ctx, c.opts.RetryBudget), c.opts.SyncTimeout)
	defer cancel()
	err := c.sync(sctx, key)
	switch {
	case err == nil:
		c.recordOutcome(key, false)
		c.queue.Forget(key)
		c.conflicts.Forget(key)
	case waiting(err):
		// Busy resources usually clear in seconds, but one that stays busy
		// (a stuck job) must not be polled every few seconds forever.
		after := c.conflicts.When(key)
		klog.V(2).InfoS("Cloud still configuring; requeueing", "service", key, "after", after, "err", err)
		c.queue.AddAfter(key, after)
	default:
		c.recordOutcome(key, true)
		klog.ErrorS(err, "Failed to sync Service", "service", key, "retries", c.queue.NumRequeues(key))
		c.queue.AddRateLimited(key)
	}
	return true
}

// owner returns the provider that should serve svc now: the one of its
// class, when it wants a load balancer; nil otherwise.
func (c *Controller) owner(svc *corev1.Service) Provider {
	p, _ := c.decide(svc)
	return p
}

// decide is owner with the ownership rule that keeps a bound Service
// where it is: a Service carrying one provider's finalizer stays with that
// provider unless the Service itself asks for another kind (its
// loadBalancerClass, or the type annotation under the gate). So a default
// that changes (the LoadBalancerTypeAnnotation gate turned off) never
// moves or deletes a load balancer. ambiguous explains a Service that asks
// for what we cannot serve or whose opt-out contradicts its binding: it
// gets a Warning and no cloud write until it is fixed or deleted.
func (c *Controller) decide(svc *corev1.Service) (p Provider, ambiguous string) {
	if !annotations.WantsLoadBalancer(svc) {
		return nil, ""
	}
	d := annotations.Decide(svc, c.opts.Defaults.LoadBalancerTypeAnnotation)
	var bound Provider
	for _, bp := range c.providers {
		if hasFinalizer(svc, bp.Finalizer()) {
			if bound != nil {
				bound = nil // two bindings: the class decides, as before
				break
			}
			bound = bp
		}
	}
	if d.Unserved != "" {
		msg := fmt.Sprintf("annotation %s=%q names a load balancer kind this controller does not serve", annotations.LoadBalancerTypeKey, d.Unserved)
		if strings.EqualFold(d.Unserved, "nlb") {
			msg += " without the LoadBalancerTypeAnnotation feature gate (cloud-config featureGates); use spec.loadBalancerClass " + annotations.NLBClass + " or turn the gate on"
		}
		if bound == nil {
			if strings.EqualFold(d.Unserved, "nlb") {
				return nil, msg
			}
			return nil, "" // another controller's Service
		}
		if strings.EqualFold(d.Unserved, bound.Kind()) {
			// The annotation agrees with the binding (an NLB made while
			// the gate was on): keep serving it.
			return bound, ""
		}
		return nil, msg + fmt.Sprintf("; the Service keeps its %s load balancer unchanged until the annotation is fixed or the Service is deleted", bound.Kind())
	}
	for _, cand := range c.providers {
		if d.Owner == cand.Owner() {
			p = cand
		}
	}
	if bound == nil || p == bound || d.Explicit {
		return p, ""
	}
	if p == nil {
		return nil, fmt.Sprintf("the Service opts out of this controller (annotation %s or %s) but is bound to a %s load balancer; it is kept unchanged until the annotation is removed or the Service is deleted",
			annotations.ClassKey, annotations.TunnelTypeKey, bound.Kind())
	}
	// Only a default points elsewhere: stay.
	return bound, ""
}

// stale returns the providers whose finalizer svc carries but which no
// longer serve it (class switched, type changed, Service deleted): each
// must release what it made before the finalizer goes.
func (c *Controller) stale(svc *corev1.Service, owner Provider) []Provider {
	var out []Provider
	for _, p := range c.providers {
		if p != owner && hasFinalizer(svc, p.Finalizer()) {
			out = append(out, p)
		}
	}
	return out
}

func (c *Controller) interesting(svc *corev1.Service) bool {
	owner, ambiguous := c.decide(svc)
	return owner != nil || ambiguous != "" || len(c.stale(svc, owner)) > 0
}

func (c *Controller) enqueueService(obj any) { c.enqueueFor(obj, "service") }

// enqueueFor queues the Service; why is logged to explain each sync.
func (c *Controller) enqueueFor(obj any, why string) {
	if key, ok := c.keyOf(obj, why); ok {
		c.queue.Add(key)
	}
}

// keyOf is the queue key of a Service worth a sync, logged with why.
func (c *Controller) keyOf(obj any, why string) (string, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	svc, ok := obj.(*corev1.Service)
	if !ok || !c.interesting(svc) {
		return "", false
	}
	key, err := cache.MetaNamespaceKeyFunc(svc)
	if err != nil {
		utilruntime.HandleError(err)
		return "", false
	}
	klog.V(4).InfoS("Queueing Service", "service", key, "why", why)
	return key, true
}

// serviceUpdated ignores the updates our own label, finalizer and status
// writes cause; any spec, annotation or deletion change, a periodic resync,
// or a hash label that no longer matches enqueues the Service.
func (c *Controller) serviceUpdated(oldObj, newObj any) {
	c.indexService(oldObj, newObj)
	o, ok1 := oldObj.(*corev1.Service)
	n, ok2 := newObj.(*corev1.Service)
	if !ok1 || !ok2 {
		return
	}
	c.borrowersChanged(o, n)
	relevant := o.ResourceVersion == n.ResourceVersion || // periodic resync
		!reflect.DeepEqual(o.Spec, n.Spec) ||
		!reflect.DeepEqual(o.Annotations, n.Annotations) ||
		!reflect.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp) ||
		!reflect.DeepEqual(foreignLabels(o), foreignLabels(n)) ||
		o.Labels[naming.LabelHash] != n.Labels[naming.LabelHash] && n.Labels[naming.LabelHash] != naming.Hash(n) ||
		o.Labels[naming.LabelLoadBalancerID] != n.Labels[naming.LabelLoadBalancerID] && n.Labels[naming.LabelLoadBalancerID] == ""
	if relevant && (c.interesting(o) || c.interesting(n)) {
		c.enqueueFor(n, "service update")
	}
}

// foreignLabels are the labels other than the ones we write; a change to
// them (a user's touch) is a cheap way to ask for a re-check.
func foreignLabels(svc *corev1.Service) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Labels {
		if !slices.Contains(OwnedLabels, k) {
			out[k] = v
		}
	}
	return out
}

// nodeChanged enqueues only the Services whose backends the change moves:
// an ecs-backed Service when the Node's eligibility for it flips (or the
// Node comes or goes while eligible); a Local one only when the Node runs
// its endpoints; a virtual Node only when it runs the Service's endpoints
// (its pods are the backends). Label churn and heartbeats that change
// nothing are ignored. The Services are queued a batch window later
// (nodeBatch), with those the other Node changes of the window move.
//
// Eligibility is decided once per group of Services with the same
// backend selection settings (nodeClass), and the Services that depend on
// the Node through their endpoints are found by the slices on it, so the
// work is in proportion to the Services the change can move, not to all.
func (c *Controller) nodeChanged(oldObj, newObj any) {
	o := asNode(oldObj)
	n := asNode(newObj)
	if o != nil && n != nil && !nodeBackendFieldsChanged(o, n) {
		return
	}
	name := ""
	if n != nil {
		name = n.Name
	} else if o != nil {
		name = o.Name
	}
	providerMoved := o != nil && n != nil && o.Spec.ProviderID != n.Spec.ProviderID
	var keys []string
	// moved holds the classes whose backends the change moves, true for
	// those it moves only through the pods on the Node.
	moved := map[string]bool{}
	byEndpoints := false
	c.index.mu.RLock()
	for _, cl := range c.index.classes {
		was, is := backendRole(o, cl.settings), backendRole(n, cl.settings)
		if was == is && !providerMoved {
			continue
		}
		// A virtual Node matters only through the pods it runs.
		endpointsOnly := was != roleECS && is != roleECS
		moved[cl.key] = endpointsOnly
		byEndpoints = byEndpoints || endpointsOnly || cl.local > 0
		if !endpointsOnly {
			for key := range cl.cluster {
				keys = append(keys, key)
			}
		}
	}
	if byEndpoints {
		for key := range c.servicesWithEndpointsOn(name) {
			v := c.index.views[key]
			if v == nil || v.class == nil {
				continue
			}
			if endpointsOnly, ok := moved[v.class.key]; ok && (v.local || endpointsOnly) {
				keys = append(keys, key)
			}
		}
	}
	c.index.mu.RUnlock()
	if len(keys) == 0 {
		return
	}
	why := "node " + name
	for _, key := range keys {
		klog.V(4).InfoS("Queueing Service", "service", key, "why", why)
		c.nodeBatch.queue(key)
	}
}

func asNode(obj any) *corev1.Node {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	n, _ := obj.(*corev1.Node)
	return n
}

// nodeBackendFieldsChanged compares what backend eligibility depends on;
// heartbeats alone never enqueue anything.
func nodeBackendFieldsChanged(o, n *corev1.Node) bool {
	return !reflect.DeepEqual(o.Labels, n.Labels) || o.Spec.Unschedulable != n.Spec.Unschedulable ||
		o.Spec.ProviderID != n.Spec.ProviderID || !reflect.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
		nodeReady(o) != nodeReady(n) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

// sliceChanged enqueues the Service of an EndpointSlice when its backends
// depend on endpoints (Local traffic policy, eni backends, or endpoints
// on virtual Nodes).
func (c *Controller) sliceChanged(oldObj, newObj any) {
	get := func(obj any) *discoveryv1.EndpointSlice {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		s, _ := obj.(*discoveryv1.EndpointSlice)
		return s
	}
	o, n := get(oldObj), get(newObj)
	sl := n
	if sl == nil {
		sl = o
	}
	if sl == nil {
		return
	}
	if o != nil && n != nil && reflect.DeepEqual(o.Endpoints, n.Endpoints) && reflect.DeepEqual(o.Ports, n.Ports) {
		return
	}
	name := sl.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return
	}
	svc, err := c.services.Services(sl.Namespace).Get(name)
	if err != nil {
		return
	}
	v := c.viewOf(sl.Namespace+"/"+name, svc)
	if !v.owned {
		return
	}
	if !v.local && (!v.backends || (!v.eni && !c.onVirtualNode(o, n))) {
		return
	}
	c.enqueueFor(svc, "endpoints")
}

func (c *Controller) defaultsFor(p Provider) annotations.Defaults {
	d := c.opts.Defaults
	d.Owner = p.Owner()
	return d
}

// sync reconciles one Service.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Our finalizer made us see the deletion; nothing is left to do.
		c.forget(key, "")
		return nil
	}
	if err != nil {
		return err
	}
	svc := cached.DeepCopy()
	owner, ambiguous := c.decide(svc)
	if ambiguous != "" {
		c.warnOnce(svc, key, EventOwnershipAmbiguous, ambiguous)
		klog.FromContext(ctx).Info("Not syncing a Service whose load balancer kind is ambiguous", "service", key, "reason", ambiguous)
		return nil
	}
	c.notes.Delete(noteKey(key, EventOwnershipAmbiguous))
	// Every provider that made something for the Service but no longer
	// serves it releases it first, so no finalizer is stranded and the new
	// load balancer never coexists with a forgotten old one.
	for _, p := range c.stale(svc, owner) {
		pctx := klog.NewContext(ctx, klog.FromContext(ctx).WithValues("service", key, "kind", p.Kind()))
		if err := c.cleanup(pctx, p, svc); err != nil {
			return err
		}
		if owner != nil {
			// Ensure the new one from the state the cleanup left.
			c.queue.Add(key)
			return nil
		}
	}
	if owner == nil {
		c.forget(key, svc.UID)
		return nil
	}
	p := owner
	logger := klog.FromContext(ctx).WithValues("service", key, "kind", p.Kind())
	ctx = klog.NewContext(ctx, logger)

	settings, perr := annotations.Parse(svc, c.defaultsFor(p))
	if settings != nil {
		// Read but not applied: say so once per change or resync interval
		// rather than let the Service look configured.
		if na := settings.NotApplied(); len(na) > 0 {
			c.warnOnce(svc, key, annotations.EventNotApplied, strings.Join(na, "; "))
		} else {
			c.notes.Delete(noteKey(key, annotations.EventNotApplied))
		}
	}
	if perr != nil {
		var inv *annotations.InvalidError
		if !errors.As(perr, &inv) {
			return perr
		}
		c.recordInvalid(key, svc, true)
		c.warnOnce(svc, key, EventInvalid, inv.Error())
		if !inv.BackendsUsable() {
			logger.Info("Not syncing a Service with invalid annotations", "problems", inv.Error())
			return nil
		}
		// The load balancer's settings stay frozen until the annotations
		// are fixed, but its backends keep following the nodes and
		// endpoints: a node that leaves must leave the load balancer.
		return c.syncFrozen(ctx, p, svc, settings)
	}
	c.notes.Delete(noteKey(key, EventInvalid))
	c.recordInvalid(key, svc, false)

	req, err := c.backends.candidates(ctx, svc, settings)
	if err != nil {
		return err
	}
	hash := naming.Hash(svc)
	gated := svc.Labels[naming.LabelHash] == hash && req.LoadBalancerID != "" &&
		hasFinalizer(svc, p.Finalizer()) && len(svc.Status.LoadBalancer.Ingress) > 0
	if gated && c.verifyDue(svc.UID) {
		// Drift the backend pass cannot see (attributes, listener
		// settings) is found by a full sync once per VerifyPeriod.
		logger.V(2).Info("Verifying the load balancer with a full sync", "loadBalancer", req.LoadBalancerID, "period", c.opts.VerifyPeriod)
		return c.ensure(ctx, p, svc, req, hash, true)
	}
	if gated {
		// Pods waiting for their readiness gate need a sync that proves
		// them registered.
		if len(req.gated) == 0 && c.convergedAtStart(ctx, p, svc, req) {
			return nil
		}
		err := c.syncBackends(ctx, p, svc, req, false)
		if !errors.Is(err, ErrFullSyncNeeded) {
			return err
		}
		logger.Info("Load balancer drifted or not proven; running a full sync", "loadBalancer", req.LoadBalancerID)
	}
	return c.ensure(ctx, p, svc, req, hash, false)
}

// checkGrants applies the grant rules to what req's Service names besides
// its load balancer b (GrantChecker), under the cluster's reuse policy:
// reads only, before any write of the sync.
func (c *Controller) checkGrants(ctx context.Context, p Provider, req *Request, b *Binding, backendsOnly bool) error {
	g, ok := p.(GrantChecker)
	if !ok {
		return nil
	}
	r := *req
	r.Binding = b
	return g.CheckGrants(ctx, &r, c.opts.ReusePolicy, backendsOnly)
}

// reuseRules are p's reuse rules under the cluster's reuse policy.
func (c *Controller) reuseRules(p Provider) ReuseRules {
	r := p.ReuseRules()
	r.Policy = c.opts.ReusePolicy
	return r
}

// verifyDue reports whether the Service's load balancer was last fully
// synced VerifyPeriod ago. A Service first seen on a gated pass (after a
// restart) counts as synced at a random point of the last period, so the
// verifications of many Services spread out instead of all coming due at
// once.
func (c *Controller) verifyDue(uid types.UID) bool {
	now := time.Now()
	v, ok := c.verified.Load(uid)
	if !ok {
		c.verified.Store(uid, now.Add(-time.Duration(rand.Int64N(int64(c.opts.VerifyPeriod)))))
		return false
	}
	return now.Sub(v.(time.Time)) >= c.opts.VerifyPeriod
}

// backendSettings parses svc for the backend computation: ok when the
// settings backends depend on are valid, even if others are not.
func (c *Controller) backendSettings(svc *corev1.Service, p Provider) (*annotations.Settings, bool) {
	s, err := annotations.Parse(svc, c.defaultsFor(p))
	if err == nil {
		return s, true
	}
	var inv *annotations.InvalidError
	return s, errors.As(err, &inv) && inv.BackendsUsable()
}

// prove binds the load balancer named by the Service's label, from the
// proven cache when this process already proved it; nil when the label
// does not name a load balancer proven the Service's.
func (c *Controller) prove(ctx context.Context, p Provider, svc *corev1.Service, req *Request) (*Binding, error) {
	if v, ok := c.proven.Load(svc.UID); ok && v.(string) == req.LoadBalancerID {
		return &Binding{LB: &LoadBalancer{ID: req.LoadBalancerID}, Reused: req.Settings.Reused()}, nil
	}
	if !req.Settings.Reused() {
		// After a start, the listing's tags prove it as a read would.
		if lb := c.listed(ctx, p, req.LoadBalancerID); lb != nil && req.Identity().Owns(lb.Tags) {
			c.proven.Store(svc.UID, lb.ID)
			return &Binding{LB: lb}, nil
		}
	}
	b, warnings, err := Bind(ctx, p, c.reuseRules(p), req)
	if IsRefused(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.warn(svc, &Result{Warnings: warnings})
	if b.ID() != req.LoadBalancerID {
		return nil, nil
	}
	c.proven.Store(svc.UID, b.ID())
	return b, nil
}

// syncBackends is the hash-gated pass: only backends, on a load balancer
// proven the Service's. ErrFullSyncNeeded asks for a full sync.
func (c *Controller) syncBackends(ctx context.Context, p Provider, svc *corev1.Service, req *Request, frozen bool) error {
	start := time.Now()
	b, err := c.prove(ctx, p, svc, req)
	if err != nil {
		observe(p.Kind(), VerbUpdate, start, err)
		c.failed(svc, err)
		return err
	}
	if b == nil {
		return ErrFullSyncNeeded
	}
	if err := c.checkGrants(ctx, p, req, b, true); err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			// The binding was granted once and is not now: its members
			// are left as they are until the grant or the Service changes.
			c.warnOnce(svc, cache.MetaObjectToName(svc).String(), refused.Reason, refused.Message)
			return nil
		}
		observe(p.Kind(), VerbUpdate, start, err)
		c.failed(svc, err)
		return err
	}
	req.Binding = b
	c.share(svc, b)
	if err := c.backends.prove(ctx, req); err != nil {
		observe(p.Kind(), VerbUpdate, start, err)
		c.failed(svc, err)
		return err
	}
	res, err := p.SyncBackends(ctx, req)
	if errors.Is(err, ErrFullSyncNeeded) {
		return err
	}
	observe(p.Kind(), VerbUpdate, start, err)
	if err != nil {
		c.failed(svc, err)
		return err
	}
	c.warn(svc, res)
	c.noBackends(svc, req.Backends)
	w := writeBack{labels: map[string]string{naming.LabelBackendsHash: BackendsHash(b.ID(), req.Backends)}}
	if res != nil && res.Ingress != nil && !frozen {
		// A status that can change without the Service changing (EIPs
		// bound to the load balancer) is refreshed here; not while the
		// annotations are invalid, since the status settings may be among
		// the invalid ones.
		w.status, w.ingress = true, res.Ingress
	}
	if err := c.write(ctx, svc, w); err != nil {
		return err
	}
	return c.markRegistered(ctx, svc, req)
}

// syncFrozen updates only the backends of a Service whose load balancer
// settings are invalid, on the load balancer it is already bound to.
func (c *Controller) syncFrozen(ctx context.Context, p Provider, svc *corev1.Service, settings *annotations.Settings) error {
	req, err := c.backends.candidates(ctx, svc, settings)
	if err != nil {
		return err
	}
	if req.LoadBalancerID == "" || !hasFinalizer(svc, p.Finalizer()) {
		return nil
	}
	err = c.syncBackends(ctx, p, svc, req, true)
	if errors.Is(err, ErrFullSyncNeeded) {
		klog.FromContext(ctx).Info("Load balancer needs a full sync, which waits for valid annotations", "loadBalancer", req.LoadBalancerID)
		return nil
	}
	return err
}

// ensure runs a full sync: the ownership rules, the finalizer (so nothing
// created can leak), the Provider, then labels and status. A periodic
// verification (verify) records no Normal events: it usually changes
// nothing, and the Warnings say what it found.
func (c *Controller) ensure(ctx context.Context, p Provider, svc *corev1.Service, req *Request, hash string, verify bool) error {
	key := cache.MetaObjectToName(svc).String()
	verb := VerbUpdate
	if req.LoadBalancerID == "" {
		verb = VerbCreation
	}
	start := time.Now()
	b, warnings, err := Bind(ctx, p, c.reuseRules(p), req)
	if err == nil {
		err = c.checkGrants(ctx, p, req, b, false)
	}
	c.warn(svc, &Result{Warnings: warnings})
	var refused *RefusedError
	if errors.As(err, &refused) {
		// Nothing is changed until the Service or the cloud changes; the
		// Warning is repeated at the resync interval.
		c.warnOnce(svc, key, refused.Reason, refused.Message)
		klog.FromContext(ctx).Info("Refused to sync the load balancer", "reason", refused.Reason, "message", refused.Message)
		return nil
	}
	if err != nil {
		observe(p.Kind(), verb, start, err)
		c.failed(svc, err)
		return err
	}
	for _, reason := range []string{EventReuseRefused, EventNotOwned, EventGroupNotGranted, EventCertificateNotGranted} {
		c.notes.Delete(noteKey(key, reason))
	}
	req.Binding = b
	req.LoadBalancerID = b.ID()
	c.share(svc, b)
	// No EnsuringLoadBalancer event up front: each event is an API write
	// under the same client rate as the Service's patches. A sync that
	// finishes says EnsuredLoadBalancer; one that waits for the cloud or
	// fails says so (failed).
	if err := c.addFinalizer(ctx, svc, p.Finalizer()); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventFinalizerFailed, "Adding finalizer %s: %v", p.Finalizer(), err)
		observe(p.Kind(), verb, start, err)
		return err
	}
	if err := c.backends.prove(ctx, req); err != nil {
		observe(p.Kind(), verb, start, err)
		c.failed(svc, err)
		return err
	}
	c.noBackends(svc, req.Backends)
	res, err := p.Ensure(ctx, req)
	if err != nil {
		observe(p.Kind(), verb, start, err)
		c.failed(svc, err)
		return err
	}
	c.proven.Store(svc.UID, res.LoadBalancerID)
	c.verified.Store(svc.UID, time.Now())
	c.warn(svc, res)
	labels := map[string]string{naming.LabelHash: hash, naming.LabelLoadBalancerID: res.LoadBalancerID,
		naming.LabelBackendsHash: BackendsHash(res.LoadBalancerID, req.Backends)}
	for k, v := range res.Labels {
		labels[k] = v
	}
	// Labels and status in one write.
	if err := c.write(ctx, svc, writeBack{labels: labels, status: true, ingress: res.Ingress}); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventStatusFailed, "Updating status: %v", err)
		observe(p.Kind(), verb, start, err)
		return err
	}
	observe(p.Kind(), verb, start, nil)
	if !verify {
		c.recorder.Eventf(svc, corev1.EventTypeNormal, EventEnsured, "Ensured load balancer %s", res.LoadBalancerID)
	}
	klog.FromContext(ctx).V(2).Info("Ensured load balancer", "loadBalancer", res.LoadBalancerID, "took", time.Since(start))
	return c.markRegistered(ctx, svc, req)
}

// cleanup removes the cloud resources p made for svc, then p's finalizer
// and, when the Service stays, its labels and status. It must always be
// able to complete: invalid annotations are read as far as they parse (an
// id or preserve annotation that does not parse is not acted on, and
// preserve-lb-on-delete counts as set whatever its value), and a label
// naming a load balancer that is not proven the Service's is ignored.
func (c *Controller) cleanup(ctx context.Context, p Provider, svc *corev1.Service) error {
	start := time.Now()
	s, _ := annotations.Parse(svc, c.defaultsFor(p))
	id := IdentityOf(svc, c.opts.ClusterID)
	req := &Request{Service: svc, Settings: s, ClusterID: c.opts.ClusterID, LoadBalancerID: svc.Labels[naming.LabelLoadBalancerID], identity: &id}
	b, warnings, err := ReleaseSet(ctx, p, req)
	if err != nil {
		observe(p.Kind(), VerbDeletion, start, err)
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventDeleteFailed, "Deleting load balancer: %s", cloud.StableMessage(err))
		return err
	}
	c.warn(svc, &Result{Warnings: warnings})
	req.Binding = b
	what, err := p.Delete(ctx, req)
	observe(p.Kind(), VerbDeletion, start, err)
	if err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventDeleteFailed, "Deleting load balancer: %s", cloud.StableMessage(err))
		return err
	}
	c.proven.Delete(svc.UID)
	c.verified.Delete(svc.UID)
	// The finalizer goes with the labels and the status in one write.
	w := writeBack{dropFinalizer: p.Finalizer()}
	if svc.DeletionTimestamp == nil {
		w.status, w.labels = true, map[string]string{}
		for _, k := range OwnedLabels {
			w.labels[k] = ""
		}
	}
	if err := c.write(ctx, svc, w); err != nil {
		return err
	}
	reason := EventDeleted
	if s.LoadBalancer.PreserveOnDelete {
		reason = EventPreserved
	}
	c.recorder.Event(svc, corev1.EventTypeNormal, reason, what)
	return nil
}

// note is when a repeated Warning was last recorded, and for which
// version of the Service.
type note struct {
	hash string
	at   time.Time
}

func noteKey(key, reason string) string { return key + "|" + reason }

// warnOnce records a Warning that would otherwise repeat on every sync:
// again when the Service changed, or once per resync interval.
func (c *Controller) warnOnce(svc *corev1.Service, key, reason, message string) {
	k := noteKey(key, reason)
	h := naming.Hash(svc) + "|" + message
	now := time.Now()
	if v, ok := c.notes.Load(k); ok {
		n := v.(note)
		if n.hash == h && now.Sub(n.at) < c.opts.ResyncPeriod/2 {
			return
		}
	}
	c.recorder.Event(svc, corev1.EventTypeWarning, reason, message)
	c.notes.Store(k, note{hash: h, at: now})
}

// clearNote forgets the Warning of reason, so that it is recorded at once
// when its cause comes back.
func (c *Controller) clearNote(key, reason string) { c.notes.Delete(noteKey(key, reason)) }

// noBackends warns that the load balancer has nothing to forward to, on
// full and backend-only passes alike, at the warnOnce rate; once backends
// are back the note is dropped, so the next time they all go is reported
// at once.
func (c *Controller) noBackends(svc *corev1.Service, backends map[int32][]Target) {
	key := cache.MetaObjectToName(svc).String()
	if !empty(backends) {
		c.notes.Delete(noteKey(key, EventUnavailable))
		return
	}
	c.warnOnce(svc, key, EventUnavailable, "There are no available backends for the load balancer")
}

// forget drops what the controller remembers of a Service.
func (c *Controller) forget(key string, uid types.UID) {
	for _, r := range []string{EventInvalid, EventReuseRefused, EventNotOwned, EventUnavailable, EventOwnershipAmbiguous, EventBackendRejected, EventUntargetedCapped, annotations.EventNotApplied} {
		c.notes.Delete(noteKey(key, r))
	}
	if uid != "" {
		c.proven.Delete(uid)
		c.verified.Delete(uid)
	}
	c.health.forget(key)
	c.backends.gates.set(key, nil)
	if uid == "" {
		// The Service is gone (not merely no longer ours).
		c.syncRate.forget(key)
	}
}

// failed reports a sync that did not finish. A cloud still configuring (a
// load balancer Provisioning, a busy listener) is progress, not a failure:
// a Normal event, so alerts on Warning events stay quiet for it.
func (c *Controller) failed(svc *corev1.Service, err error) {
	if waiting(err) {
		c.recorder.Eventf(svc, corev1.EventTypeNormal, EventEnsuring, "Waiting for the cloud: %s", cloud.StableMessage(err))
		return
	}
	c.recorder.Eventf(svc, corev1.EventTypeWarning, EventSyncFailed, "Error syncing load balancer: %s", cloud.StableMessage(err))
}

// waiting reports whether err only says the cloud is still working on it.
func waiting(err error) bool {
	var retry *RetryError
	return errors.As(err, &retry) || cloud.ClassOf(err) == cloud.ClassConflict
}

func (c *Controller) warn(svc *corev1.Service, res *Result) {
	if res == nil {
		return
	}
	for _, w := range res.Warnings {
		c.recorder.Event(svc, corev1.EventTypeWarning, w.Reason, w.Message)
	}
}

func empty(b map[int32][]Target) bool {
	for _, t := range b {
		if len(t) > 0 {
			return false
		}
	}
	return true
}
