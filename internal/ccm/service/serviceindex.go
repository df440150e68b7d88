package service

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// What a Node or EndpointSlice event costs the controller must not grow
// with the number of Services: at 10,000 Services a walk of every Service
// per Node change (its settings parsed each time) fell behind the watch,
// and the undelivered events piled up in client-go's buffers. So:
//
//   - each Service's settings are parsed once per resourceVersion into a
//     svcView, what the Node and EndpointSlice handlers read of them;
//   - the Services a Node change can move through the Node itself (ecs
//     backends, Cluster traffic policy) are grouped by the settings that
//     decide a Node's eligibility (nodeClass: backend-label selector and
//     remove-unscheduled), so a Node change evaluates each group once;
//   - the Services a Node change can move only through their endpoints on
//     it (Local traffic policy; virtual Nodes, whose pods are the
//     backends) are found through the EndpointSlices on that Node, an
//     index of the slice cache (sliceByNode);
//   - a Service's own slices are found by an index of the slice cache
//     (sliceByService) instead of a scan of its namespace.

// Indexes of the EndpointSlice cache, named so that no other user of the
// shared informer picks the same names.
const (
	// sliceByService indexes slices by "namespace/service-name".
	sliceByService = "service-controller/by-service"
	// sliceByNode indexes slices by the names of the Nodes their
	// endpoints run on.
	sliceByNode = "service-controller/by-node"
)

// sliceIndexers are the EndpointSlice cache's indexes.
var sliceIndexers = cache.Indexers{
	sliceByService: func(obj any) ([]string, error) {
		sl := sliceOf(obj)
		if sl == nil || sl.service == "" {
			return nil, nil
		}
		return []string{sl.Namespace + "/" + sl.service}, nil
	},
	sliceByNode: func(obj any) ([]string, error) {
		sl := sliceOf(obj)
		if sl == nil {
			return nil, nil
		}
		var out []string
		for i := range sl.endpoints {
			if name, ok := sl.endpoints[i].nodeName(); ok && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
		return out, nil
	},
}

// svcView is what the Node and EndpointSlice handlers read of one
// version of a Service, from one parse of its settings.
type svcView struct {
	// rv is the Service's resourceVersion the view was made from.
	rv string
	// owned: a provider serves the Service (Controller.owner).
	owned bool
	// backends: the settings the backend pass reads parse.
	backends bool
	// eni: eni backends (pods, not Nodes).
	eni bool
	// local: Local external traffic policy.
	local bool
	// class groups the Service with those whose Node eligibility is
	// decided by the same settings; nil when no Node change can move
	// its backends through the handler (not served, eni backends, or
	// backend settings that do not parse).
	class *nodeClass
}

// nodeClass is a group of Services whose backend eligibility of a Node
// (backendRole) is decided by the same settings.
type nodeClass struct {
	key string
	// settings holds only what backendRole reads.
	settings *annotations.Settings
	// cluster are the keys of the group's Services of Cluster traffic
	// policy; local counts those of Local policy, found through their
	// endpoints.
	cluster map[string]struct{}
	local   int
}

// serviceIndex holds the svcView of every Service the informer has
// delivered, and their nodeClasses. The Service handlers write it; the
// Node handler reads it.
type serviceIndex struct {
	mu      sync.RWMutex
	views   map[string]*svcView
	classes map[string]*nodeClass
}

func newServiceIndex() *serviceIndex {
	return &serviceIndex{views: map[string]*svcView{}, classes: map[string]*nodeClass{}}
}

// nodeClassKey identifies the settings backendRole reads.
func nodeClassKey(s *annotations.Settings) string {
	var b strings.Builder
	if s.Backend.RemoveUnscheduled {
		b.WriteString("u")
	}
	keys := make([]string, 0, len(s.Backend.Labels))
	for k := range s.Backend.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		// NUL appears in neither label keys nor values.
		b.WriteString("\x00" + k + "\x00" + s.Backend.Labels[k])
	}
	return b.String()
}

// view parses svc into its svcView.
func (c *Controller) view(svc *corev1.Service) *svcView {
	v := &svcView{rv: svc.ResourceVersion, local: svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal}
	p := c.owner(svc)
	if p == nil {
		return v
	}
	v.owned = true
	s, ok := c.backendSettings(svc, p)
	v.backends = ok
	v.eni = s != nil && s.Backend.Type == annotations.BackendENI
	if ok && !v.eni {
		v.class = &nodeClass{key: nodeClassKey(s)}
		v.class.settings = &annotations.Settings{Backend: annotations.Backend{Labels: s.Backend.Labels, RemoveUnscheduled: s.Backend.RemoveUnscheduled}}
	}
	return v
}

// viewOf is the svcView of svc: the indexed one when it was made from
// this version, else a new parse (the Service handler has not seen the
// version yet).
func (c *Controller) viewOf(key string, svc *corev1.Service) *svcView {
	c.index.mu.RLock()
	v := c.index.views[key]
	c.index.mu.RUnlock()
	if v != nil && v.rv == svc.ResourceVersion {
		return v
	}
	return c.view(svc)
}

// indexService records the version of the Service the informer delivered
// (newObj; oldObj the version it replaces, nil on an add). A version
// already indexed (a resync) is not parsed again, nor one that differs
// from the indexed one only in what a view does not read (status, labels:
// the controller's own writes).
func (c *Controller) indexService(oldObj, newObj any) {
	svc, ok := newObj.(*corev1.Service)
	if !ok {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(svc)
	if err != nil {
		return
	}
	x := c.index
	x.mu.RLock()
	old := x.views[key]
	x.mu.RUnlock()
	if old != nil && old.rv == svc.ResourceVersion {
		return
	}
	if prev, ok := oldObj.(*corev1.Service); ok && old != nil && old.rv == prev.ResourceVersion && sameView(prev, svc) {
		v := *old
		v.rv = svc.ResourceVersion
		x.mu.Lock()
		x.views[key] = &v
		x.mu.Unlock()
		return
	}
	v := c.view(svc)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.drop(key)
	x.views[key] = v
	if v.class == nil {
		return
	}
	cl := x.classes[v.class.key]
	if cl == nil {
		cl = v.class
		cl.cluster = map[string]struct{}{}
		x.classes[cl.key] = cl
	}
	v.class = cl
	if v.local {
		cl.local++
	} else {
		cl.cluster[key] = struct{}{}
	}
}

// sameView reports whether o and n make the same svcView: they agree on
// everything owner, backendSettings and the traffic policy read.
func sameView(o, n *corev1.Service) bool {
	return reflect.DeepEqual(o.Annotations, n.Annotations) && reflect.DeepEqual(o.Spec, n.Spec) &&
		slices.Equal(o.Finalizers, n.Finalizers) && (o.DeletionTimestamp == nil) == (n.DeletionTimestamp == nil)
}

// unindexService forgets a deleted Service.
func (c *Controller) unindexService(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.index.mu.Lock()
	defer c.index.mu.Unlock()
	c.index.drop(key)
}

// drop removes key's view and its place in its class; x.mu is held.
func (x *serviceIndex) drop(key string) {
	v := x.views[key]
	if v == nil {
		return
	}
	delete(x.views, key)
	cl := v.class
	if cl == nil {
		return
	}
	if v.local {
		cl.local--
	} else {
		delete(cl.cluster, key)
	}
	if cl.local == 0 && len(cl.cluster) == 0 {
		delete(x.classes, cl.key)
	}
}

// servicesWithEndpointsOn returns the keys of the Services with an
// endpoint (ready or not) on Node name.
func (c *Controller) servicesWithEndpointsOn(name string) map[string]struct{} {
	objs, err := c.sliceIndex.ByIndex(sliceByNode, name)
	if err != nil || len(objs) == 0 {
		return nil
	}
	out := make(map[string]struct{}, len(objs))
	for _, obj := range objs {
		if sl := sliceOf(obj); sl != nil && sl.service != "" {
			out[sl.Namespace+"/"+sl.service] = struct{}{}
		}
	}
	return out
}
