package service

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// walkNodeChange is what the Node handler decided by walking every
// Service in the cache and parsing its settings, before the index: the
// oracle nodeChanged must agree with.
func walkNodeChange(c *Controller, o, n *corev1.Node) []string {
	if o != nil && n != nil && !nodeBackendFieldsChanged(o, n) {
		return nil
	}
	name := ""
	if n != nil {
		name = n.Name
	} else if o != nil {
		name = o.Name
	}
	svcs, _ := c.services.List(labels.Everything())
	all := c.sliceIndex.List()
	var out []string
	for _, svc := range svcs {
		p := c.owner(svc)
		if p == nil {
			continue
		}
		s, ok := c.backendSettings(svc, p)
		if !ok || s.Backend.Type == annotations.BackendENI {
			continue
		}
		was, is := backendRole(o, s), backendRole(n, s)
		if was == is && (o == nil || n == nil || o.Spec.ProviderID == n.Spec.ProviderID) {
			continue
		}
		endpointsOnly := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal || (was != roleECS && is != roleECS)
		if endpointsOnly && !scanEndpointsOn(all, svc, name) {
			continue
		}
		out = append(out, svc.Namespace+"/"+svc.Name)
	}
	slices.Sort(out)
	return out
}

// scanEndpointsOn looks for an endpoint of svc on node through every slice.
func scanEndpointsOn(all []any, svc *corev1.Service, node string) bool {
	for _, obj := range all {
		sl := obj.(*cachedSlice)
		if sl.Namespace != svc.Namespace || sl.service != svc.Name {
			continue
		}
		for _, e := range sl.endpoints {
			if n, ok := e.nodeName(); ok && n == node {
				return true
			}
		}
	}
	return false
}

// drain empties the controller's queue and returns what it held.
func drain(c *Controller) []string {
	var out []string
	for c.queue.Len() > 0 {
		k, _ := c.queue.Get()
		c.queue.Done(k)
		c.queue.Forget(k)
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestNodeChangedMatchesWalk: for every kind of Node change on every kind
// of Node, the indexed Node handler queues exactly the Services the walk
// of every Service queued, also after Services change their backend
// settings, their traffic policy, or go away.
func TestNodeChangedMatchesWalk(t *testing.T) {
	const ns = "t"
	node := func(name string, virtual bool, pool string) *corev1.Node {
		n := vNode(name, virtual)
		n.ResourceVersion = "1"
		if pool != "" {
			n.Labels["pool"] = pool
		}
		return n
	}
	nodes := []*corev1.Node{
		node("n1", false, "a"), node("n2", false, "a"), node("n3", false, "b"), node("n4", false, ""),
		node("v1", true, "a"),
	}
	// n5 has not joined yet: not Ready, no providerID.
	n5 := node("n5", false, "a")
	n5.Spec.ProviderID = ""
	n5.Status.Conditions[0].Status = corev1.ConditionFalse
	nodes = append(nodes, n5)

	svc := func(name string, local bool, ann map[string]string, mutate ...func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "1", Annotations: map[string]string{}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
				Ports: []corev1.ServicePort{{Name: "p80", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080}}},
		}
		if local {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}
		for k, v := range ann {
			s.Annotations[annotations.Key(k)] = v
		}
		for _, m := range mutate {
			m(s)
		}
		return s
	}
	services := []*corev1.Service{
		svc("cl", false, nil),
		svc("loc", true, nil),
		svc("sel", false, map[string]string{"backend-label": "pool=a"}),
		svc("sel2", false, map[string]string{"backend-label": "pool=a"}),
		svc("locsel", true, map[string]string{"backend-label": "pool=a"}),
		svc("unsched", false, map[string]string{"remove-unscheduled-backend": "on"}),
		svc("eni", false, nil, func(s *corev1.Service) { s.Annotations[annotations.BackendTypeKey] = "eni" }),
		svc("other", false, nil, func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/other") }),
		svc("clusterip", false, nil, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }),
		svc("bad", false, map[string]string{"backend-label": "="}),
		svc("vclu", false, nil),
		svc("locnone", true, nil),
	}
	slice := func(svc string, on ...string) *discoveryv1.EndpointSlice {
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: svc + "-x", Namespace: ns, ResourceVersion: "1", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
		for i, n := range on {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.0.%d.%d", len(svc), i)}, NodeName: ptr.To(n),
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(i%2 == 0)}})
		}
		return sl
	}
	eps := []*discoveryv1.EndpointSlice{
		slice("cl", "n1"), slice("loc", "n1", "v1"), slice("locsel", "n2", "n3"), slice("vclu", "v1", "n3"),
		slice("sel", "n2"), slice("eni", "n1", "v1"), slice("bad", "n1"), slice("other", "n1"),
	}
	var objs []runtime.Object
	for _, o := range nodes {
		objs = append(objs, o)
	}
	for _, o := range services {
		objs = append(objs, o)
	}
	for _, o := range eps {
		objs = append(objs, o)
	}
	cs := fake.NewSimpleClientset(objs...) //nolint:staticcheck // no apply here; the plain tracker is enough
	factory := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(Options{KubeClient: cs, Informers: factory, Recorder: record.NewFakeRecorder(1000),
		Providers: []Provider{benchProvider{}}, NodeBatchWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	waitIndexed(t, c)

	mutations := map[string]func(*corev1.Node){
		"unrelated label":   func(n *corev1.Node) { n.Labels["example.com/x"] = "1" },
		"pool a":            func(n *corev1.Node) { n.Labels["pool"] = "a" },
		"pool b":            func(n *corev1.Node) { n.Labels["pool"] = "b" },
		"no pool":           func(n *corev1.Node) { delete(n.Labels, "pool") },
		"not ready":         func(n *corev1.Node) { setReady(n, corev1.ConditionFalse) },
		"ready":             func(n *corev1.Node) { setReady(n, corev1.ConditionTrue) },
		"unschedulable":     func(n *corev1.Node) { n.Spec.Unschedulable = true },
		"providerID":        func(n *corev1.Node) { n.Spec.ProviderID = "cn-hangzhou.i-new" + n.Name },
		"excluded":          func(n *corev1.Node) { n.Labels[LabelExcludeFromLB] = "true" },
		"to be deleted":     func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: TaintToBeDeleted}) },
		"control plane":     func(n *corev1.Node) { n.Labels[LabelRoleControlPlane] = "" },
		"becomes virtual":   func(n *corev1.Node) { n.Labels[LabelVirtualKubelet] = ValueVirtualKubelet },
		"no longer virtual": func(n *corev1.Node) { delete(n.Labels, LabelVirtualKubelet) },
		"deleting":          func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{Time: time.Now()} },
	}
	check := func(round string) {
		t.Helper()
		drain(c)
		cases, moving := 0, 0
		for _, base := range nodes {
			for what, m := range mutations {
				changed := base.DeepCopy()
				m(changed)
				for _, pair := range [][2]*corev1.Node{{base, changed}, {changed, base}} {
					want := walkNodeChange(c, pair[0], pair[1])
					if len(want) > 0 {
						moving++
					}
					c.nodeChanged(pair[0], pair[1])
					if got := drain(c); !slices.Equal(got, want) {
						t.Errorf("%s: %s %s (%s→): queued %v, the walk %v", round, base.Name, what, map[bool]string{true: "to", false: "from"}[pair[0] == base], got, want)
					}
					cases++
				}
			}
			for _, pair := range [][2]*corev1.Node{{nil, base}, {base, nil}} {
				want := walkNodeChange(c, pair[0], pair[1])
				c.nodeChanged(pair[0], pair[1])
				if got := drain(c); !slices.Equal(got, want) {
					t.Errorf("%s: %s added or deleted (%v): queued %v, the walk %v", round, base.Name, pair[0] == nil, got, want)
				}
				cases++
			}
			tomb := cache.DeletedFinalStateUnknown{Key: base.Name, Obj: base}
			want := walkNodeChange(c, base, nil)
			c.nodeChanged(tomb, nil)
			if got := drain(c); !slices.Equal(got, want) {
				t.Errorf("%s: %s deleted (tombstone): queued %v, the walk %v", round, base.Name, got, want)
			}
		}
		t.Logf("%s: %d Node changes agree with the walk, %d of them queue Services", round, cases, moving)
		if moving < cases/4 {
			t.Errorf("%s: only %d of %d Node changes move a Service; the table no longer tests much", round, moving, cases)
		}
	}
	check("as created")

	// Services change what makes a Node change matter, or go away.
	update := func(name string, m func(*corev1.Service)) {
		s, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m(s)
		s.ResourceVersion = "2"
		if _, err := cs.CoreV1().Services(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update("sel", func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal })
	update("cl", func(s *corev1.Service) { s.Annotations[annotations.Key("backend-label")] = "pool=b" })
	update("bad", func(s *corev1.Service) { s.Annotations[annotations.Key("backend-label")] = "pool=a" })
	update("eni", func(s *corev1.Service) { delete(s.Annotations, annotations.BackendTypeKey) })
	update("locsel", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
	// The controller's own writes: the view is kept, under the new version.
	update("sel2", func(s *corev1.Service) { s.Labels = map[string]string{"service.k8s.alibaba/loadbalancer-id": "lb-1"} })
	update("unsched", func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	})
	if err := cs.CoreV1().Services(ns).Delete(ctx, "loc", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The cache has every change when the Service deleted last is gone
	// from it (one watch, in order).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := c.services.Services(ns).Get("loc"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Service cache did not see the deletion")
		}
	}
	waitIndexed(t, c)
	check("after Service changes")
}

func setReady(n *corev1.Node, status corev1.ConditionStatus) {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
}

// waitIndexed waits until the index holds the cached version of every
// Service and nothing else.
func waitIndexed(t *testing.T, c *Controller) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		svcs, _ := c.services.List(labels.Everything())
		c.index.mu.RLock()
		ok := len(c.index.views) == len(svcs)
		for _, s := range svcs {
			if v := c.index.views[s.Namespace+"/"+s.Name]; v == nil || v.rv != s.ResourceVersion {
				ok = false
			}
		}
		c.index.mu.RUnlock()
		if ok {
			// The handler queues a Service right after indexing it.
			time.Sleep(100 * time.Millisecond)
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the Service handlers did not index the cached Services")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
