package service

import (
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// Which changes queue a Service: the informer handlers of Services, Nodes
// and EndpointSlices, each queueing only the Services its change moves.

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
	o, n := sliceOf(oldObj), sliceOf(newObj)
	sl := n
	if sl == nil {
		sl = o
	}
	if sl == nil {
		return
	}
	if o != nil && n != nil && o.sameBackendsAs(n) {
		return
	}
	name := sl.service
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
