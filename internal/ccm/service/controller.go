package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	// CertificateGrants are cloud-config certificateGrants (grant.go).
	CertificateGrants CertificateGrants
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
	opts = opts.withDefaults()
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
	if err := c.watch(svcInf.Informer(), nodeInf.Informer(), sliceInf.Informer()); err != nil {
		return nil, err
	}
	gauged.Store(c)
	return c, nil
}

// withDefaults fills the unset fields of o with their defaults.
func (o Options) withDefaults() Options {
	o.Workers = OrDefault(o.Workers, DefaultWorkers)
	o.ResyncPeriod = OrDefault(o.ResyncPeriod, DefaultResyncPeriod)
	o.VerifyPeriod = OrDefault(o.VerifyPeriod, DefaultVerifyPeriod)
	o.ConfiguringRetry = OrDefault(o.ConfiguringRetry, DefaultConfiguringRetry)
	if o.MaxConfiguringRetry < o.ConfiguringRetry {
		o.MaxConfiguringRetry = max(DefaultMaxConfiguringRetry, o.ConfiguringRetry)
	}
	o.RetryBudget = OrDefault(o.RetryBudget, DefaultRetryBudget)
	o.SyncTimeout = OrDefault(o.SyncTimeout, DefaultSyncTimeout)
	o.BaseBackoff = OrDefault(o.BaseBackoff, DefaultBaseBackoff)
	o.MaxBackoff = OrDefault(o.MaxBackoff, DefaultMaxBackoff)
	// Negative node batch settings mean "off", so only zero is unset.
	if o.NodeBatchWindow == 0 {
		o.NodeBatchWindow = DefaultNodeBatchWindow
	}
	if o.NodeBatchMaxWait == 0 {
		o.NodeBatchMaxWait = DefaultNodeBatchMaxWait
	}
	o.SyncRate = OrDefault(o.SyncRate, DefaultSyncRate)
	o.SyncBurst = OrDefault(o.SyncBurst, DefaultSyncBurst)
	return o
}

// OrDefault is v, or def when v is unset (zero or negative): the rule of
// every count and period option of the controller and its providers.
func OrDefault[T int | float64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// watch registers the controller's event handlers on the Service, Node
// and EndpointSlice informers.
func (c *Controller) watch(svcInf, nodeInf, sliceInf cache.SharedIndexInformer) error {
	if _, err := svcInf.AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.indexService(nil, obj); c.enqueueService(obj); c.borrowersChanged(nil, obj) },
		UpdateFunc: c.serviceUpdated,
		DeleteFunc: func(obj any) { c.unindexService(obj); c.enqueueService(obj); c.borrowersChanged(obj, nil) },
	}, c.opts.ResyncPeriod); err != nil {
		return fmt.Errorf("service controller: watch Services: %w", err)
	}
	if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
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
		return fmt.Errorf("service controller: watch Nodes: %w", err)
	}
	if _, err := sliceInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.sliceChanged(nil, obj) },
		UpdateFunc: c.sliceChanged,
		DeleteFunc: func(obj any) { c.sliceChanged(obj, nil) },
	}); err != nil {
		return fmt.Errorf("service controller: watch EndpointSlices: %w", err)
	}
	return nil
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

func (c *Controller) defaultsFor(p Provider) annotations.Defaults {
	d := c.opts.Defaults
	d.Owner = p.Descriptor().Owner
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
		pctx := klog.NewContext(ctx, klog.FromContext(ctx).WithValues("service", key, "kind", p.Descriptor().Kind))
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
	logger := klog.FromContext(ctx).WithValues("service", key, "kind", p.Descriptor().Kind)
	return c.syncOwned(klog.NewContext(ctx, logger), key, p, svc)
}

// syncOwned reconciles svc with p, the provider that serves it: its
// annotations are parsed (invalid ones freeze the load balancer's settings
// but not its backends), then the hash gate chooses between the
// backend-only pass and a full sync.
func (c *Controller) syncOwned(ctx context.Context, key string, p Provider, svc *corev1.Service) error {
	logger := klog.FromContext(ctx)
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
		hasFinalizer(svc, p.Descriptor().Finalizer) && len(svc.Status.LoadBalancer.Ingress) > 0
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
