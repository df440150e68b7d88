package service

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

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
)

// Defaults of Options.
const (
	DefaultWorkers          = 5
	DefaultResyncPeriod     = 5 * time.Minute
	DefaultConfiguringRetry = 2 * time.Second
	DefaultBaseBackoff      = time.Second
	DefaultMaxBackoff       = 5 * time.Minute
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
	// ConfiguringRetry is the fixed requeue delay while the cloud is busy
	// configuring (default 2s).
	ConfiguringRetry time.Duration
	// BaseBackoff and MaxBackoff bound the per-Service exponential backoff
	// after failures (defaults 1s and 5m).
	BaseBackoff, MaxBackoff time.Duration
}

// Controller reconciles Services of type LoadBalancer with the cloud.
type Controller struct {
	opts      Options
	kube      kubernetes.Interface
	recorder  record.EventRecorder
	services  corelisters.ServiceLister
	nodes     corelisters.NodeLister
	slices    discoverylisters.EndpointSliceLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	providers []Provider

	// invalid remembers the hash of Services whose annotations were
	// reported invalid, so the Warning is not repeated on every resync.
	invalid sync.Map
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
	if opts.ConfiguringRetry <= 0 {
		opts.ConfiguringRetry = DefaultConfiguringRetry
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = DefaultBaseBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	opts.ClusterID = naming.ClusterID(opts.ClusterID)
	registerMetrics()
	svcInf := opts.Informers.Core().V1().Services()
	nodeInf := opts.Informers.Core().V1().Nodes()
	sliceInf := opts.Informers.Discovery().V1().EndpointSlices()
	c := &Controller{
		opts: opts, kube: opts.KubeClient, recorder: opts.Recorder, providers: opts.Providers,
		services: svcInf.Lister(), nodes: nodeInf.Lister(), slices: sliceInf.Lister(),
		synced: []cache.InformerSynced{svcInf.Informer().HasSynced, nodeInf.Informer().HasSynced, sliceInf.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.BaseBackoff, opts.MaxBackoff),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: newBucket()},
			),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName}),
	}
	if _, err := svcInf.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueService(obj) },
		UpdateFunc: c.serviceUpdated,
		DeleteFunc: func(obj any) { c.enqueueService(obj) },
	}, opts.ResyncPeriod); err != nil {
		return nil, fmt.Errorf("service controller: watch Services: %w", err)
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.nodeChanged(nil, obj) },
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
	err := c.sync(ctx, key)
	var retry *RetryError
	switch {
	case err == nil:
		c.queue.Forget(key)
	case errors.As(err, &retry) || cloud.ClassOf(err) == cloud.ClassConflict:
		klog.V(2).InfoS("Cloud still configuring; requeueing", "service", key, "after", c.opts.ConfiguringRetry, "err", err)
		c.queue.AddAfter(key, c.opts.ConfiguringRetry)
	default:
		klog.ErrorS(err, "Failed to sync Service", "service", key, "retries", c.queue.NumRequeues(key))
		c.queue.AddRateLimited(key)
	}
	return true
}

// providerFor returns the provider that owns svc now, else the one whose
// finalizer it carries (a Service being cleaned up), else nil.
func (c *Controller) providerFor(svc *corev1.Service) (Provider, bool) {
	owner := annotations.Class(svc, c.opts.Defaults.LoadBalancerTypeAnnotation)
	for _, p := range c.providers {
		if owner == p.Owner() && owner != annotations.OwnerNone {
			return p, true
		}
	}
	for _, p := range c.providers {
		if hasFinalizer(svc, p.Finalizer()) {
			return p, false
		}
	}
	return nil, false
}

func (c *Controller) interesting(svc *corev1.Service) bool {
	p, _ := c.providerFor(svc)
	return p != nil
}

func (c *Controller) enqueueService(obj any) { c.enqueueFor(obj, "service") }

// enqueueFor queues the Service; why is logged to explain each sync.
func (c *Controller) enqueueFor(obj any, why string) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	svc, ok := obj.(*corev1.Service)
	if !ok || !c.interesting(svc) {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(svc)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	klog.V(4).InfoS("Queueing Service", "service", key, "why", why)
	c.queue.Add(key)
}

// serviceUpdated ignores the updates our own label, finalizer and status
// writes cause; any spec, annotation or deletion change, a periodic resync,
// or a hash label that no longer matches enqueues the Service.
func (c *Controller) serviceUpdated(oldObj, newObj any) {
	o, ok1 := oldObj.(*corev1.Service)
	n, ok2 := newObj.(*corev1.Service)
	if !ok1 || !ok2 {
		return
	}
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

// foreignLabels are the labels other than the two we write; a change to
// them (a user's touch) is a cheap way to ask for a re-check.
func foreignLabels(svc *corev1.Service) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Labels {
		if k != naming.LabelHash && k != naming.LabelLoadBalancerID {
			out[k] = v
		}
	}
	return out
}

// nodeChanged enqueues only the Services whose backends the change moves:
// an ecs-backed Service when the Node's eligibility for it flips (or the
// Node comes or goes while eligible); a Local one only when the Node runs
// its endpoints. Label churn and heartbeats that change nothing are ignored.
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
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		return
	}
	for _, svc := range svcs {
		p, owned := c.providerFor(svc)
		if p == nil || !owned || !annotations.WantsLoadBalancer(svc) {
			continue
		}
		s, err := annotations.Parse(svc, c.defaultsFor(p))
		if err != nil || s.Backend.Type == annotations.BackendENI {
			continue
		}
		was := o != nil && nodeExclusion(o, s) == ""
		is := n != nil && nodeExclusion(n, s) == ""
		if was == is && (o == nil || n == nil || o.Spec.ProviderID == n.Spec.ProviderID) {
			continue
		}
		if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && !c.hasEndpointsOn(svc, name) {
			continue
		}
		c.enqueueFor(svc, "node "+name)
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

func (c *Controller) hasEndpointsOn(svc *corev1.Service, node string) bool {
	for _, sl := range c.slicesOf(svc) {
		for _, e := range sl.Endpoints {
			if e.NodeName != nil && *e.NodeName == node {
				return true
			}
		}
	}
	return false
}

func (c *Controller) slicesOf(svc *corev1.Service) []*discoveryv1.EndpointSlice {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})
	out, err := c.slices.EndpointSlices(svc.Namespace).List(sel)
	if err != nil {
		return nil
	}
	return out
}

// sliceChanged enqueues the Service of an EndpointSlice when its backends
// depend on endpoints (Local traffic policy or eni backends).
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
	p, owned := c.providerFor(svc)
	if p == nil || !owned {
		return
	}
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		s, err := annotations.Parse(svc, c.defaultsFor(p))
		if err != nil || s.Backend.Type != annotations.BackendENI {
			return
		}
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
		return nil
	}
	if err != nil {
		return err
	}
	svc := cached.DeepCopy()
	p, owned := c.providerFor(svc)
	if p == nil {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("service", key, "kind", p.Kind())
	ctx = klog.NewContext(ctx, logger)
	if !owned || !annotations.WantsLoadBalancer(svc) {
		if !hasFinalizer(svc, p.Finalizer()) {
			return nil
		}
		return c.cleanup(ctx, p, svc)
	}

	settings, perr := annotations.Parse(svc, c.defaultsFor(p))
	if perr != nil {
		var inv *annotations.InvalidError
		if errors.As(perr, &inv) {
			h := naming.Hash(svc)
			if prev, ok := c.invalid.Load(key); !ok || prev != h {
				c.recorder.Event(svc, corev1.EventTypeWarning, EventInvalid, inv.Error())
				c.invalid.Store(key, h)
			}
			logger.Info("Not syncing a Service with invalid annotations", "problems", inv.Error())
			return nil
		}
		return perr
	}
	c.invalid.Delete(key)

	nodeList, err := c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	req := &Request{
		Service: svc, Settings: settings, ClusterID: c.opts.ClusterID,
		Backends:       ComputeBackends(svc, settings, nodeList, c.slicesOf(svc)),
		LoadBalancerID: svc.Labels[naming.LabelLoadBalancerID],
	}
	hash := naming.Hash(svc)
	gated := svc.Labels[naming.LabelHash] == hash && req.LoadBalancerID != "" &&
		hasFinalizer(svc, p.Finalizer()) && len(svc.Status.LoadBalancer.Ingress) > 0
	if gated {
		start := time.Now()
		res, err := p.SyncBackends(ctx, req)
		if !errors.Is(err, ErrFullSyncNeeded) {
			observe(p.Kind(), VerbUpdate, start, err)
			if err != nil {
				c.failed(svc, err)
				return err
			}
			c.warn(svc, res)
			if res != nil && res.Ingress != nil {
				// A status that can change without the Service changing
				// (EIPs bound to the load balancer) is refreshed here.
				return c.patchStatus(ctx, svc, res.Ingress)
			}
			return nil
		}
		logger.Info("Load balancer drifted; running a full sync", "loadBalancer", req.LoadBalancerID)
	}
	return c.ensure(ctx, p, svc, req, hash)
}

// ensure runs a full sync: finalizer first (so nothing created can leak),
// then the Provider, then labels and status.
func (c *Controller) ensure(ctx context.Context, p Provider, svc *corev1.Service, req *Request, hash string) error {
	verb := VerbUpdate
	if req.LoadBalancerID == "" {
		verb = VerbCreation
	}
	start := time.Now()
	c.recorder.Event(svc, corev1.EventTypeNormal, EventEnsuring, "Ensuring load balancer")
	if err := c.addFinalizer(ctx, svc, p.Finalizer()); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventFinalizerFailed, "Adding finalizer %s: %v", p.Finalizer(), err)
		observe(p.Kind(), verb, start, err)
		return err
	}
	if empty(req.Backends) {
		c.recorder.Event(svc, corev1.EventTypeWarning, EventUnavailable, "There are no available backends for the load balancer")
	}
	res, err := p.Ensure(ctx, req)
	if err != nil {
		observe(p.Kind(), verb, start, err)
		c.failed(svc, err)
		return err
	}
	c.warn(svc, res)
	if err := c.patchLabels(ctx, svc, map[string]string{naming.LabelHash: hash, naming.LabelLoadBalancerID: res.LoadBalancerID}); err != nil {
		observe(p.Kind(), verb, start, err)
		return err
	}
	if err := c.patchStatus(ctx, svc, res.Ingress); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventStatusFailed, "Updating status: %v", err)
		observe(p.Kind(), verb, start, err)
		return err
	}
	observe(p.Kind(), verb, start, nil)
	c.recorder.Eventf(svc, corev1.EventTypeNormal, EventEnsured, "Ensured load balancer %s", res.LoadBalancerID)
	klog.FromContext(ctx).V(2).Info("Ensured load balancer", "loadBalancer", res.LoadBalancerID, "took", time.Since(start))
	return nil
}

// cleanup removes the cloud resources, then the finalizer, labels and status.
func (c *Controller) cleanup(ctx context.Context, p Provider, svc *corev1.Service) error {
	start := time.Now()
	s, _ := annotations.Parse(svc, c.defaultsFor(p))
	req := &Request{Service: svc, Settings: s, ClusterID: c.opts.ClusterID, LoadBalancerID: svc.Labels[naming.LabelLoadBalancerID]}
	what, err := p.Delete(ctx, req)
	observe(p.Kind(), VerbDeletion, start, err)
	if err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventDeleteFailed, "Deleting load balancer: %s", describeErr(err))
		return err
	}
	if svc.DeletionTimestamp == nil {
		if err := c.patchStatus(ctx, svc, nil); err != nil {
			return err
		}
		if err := c.patchLabels(ctx, svc, map[string]string{naming.LabelHash: "", naming.LabelLoadBalancerID: ""}); err != nil {
			return err
		}
	}
	if err := c.removeFinalizer(ctx, svc, p.Finalizer()); err != nil {
		return err
	}
	reason := EventDeleted
	if s != nil && s.LoadBalancer.PreserveOnDelete {
		reason = EventPreserved
	}
	c.recorder.Event(svc, corev1.EventTypeNormal, reason, what)
	return nil
}

func (c *Controller) failed(svc *corev1.Service, err error) {
	c.recorder.Eventf(svc, corev1.EventTypeWarning, EventSyncFailed, "Error syncing load balancer: %s", describeErr(err))
}

func (c *Controller) warn(svc *corev1.Service, res *Result) {
	if res == nil {
		return
	}
	for _, w := range res.Warnings {
		c.recorder.Event(svc, corev1.EventTypeWarning, w.Reason, w.Message)
	}
}

// describeErr puts the cloud's code and message first, where users look.
func describeErr(err error) string {
	var ce *cloud.Error
	if errors.As(err, &ce) && ce.Code != "" {
		return fmt.Sprintf("[%s] %s (%s %s, RequestId %s): %v", ce.Code, ce.Message, ce.Product, ce.Action, ce.RequestID, err)
	}
	return err.Error()
}

func empty(b map[int32][]Target) bool {
	for _, t := range b {
		if len(t) > 0 {
			return false
		}
	}
	return true
}
