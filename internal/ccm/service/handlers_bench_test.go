package service

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// The handler benchmarks measure what one informer event costs the
// Service controller's event handlers at 1,000 and 10,000 Services, the
// cluster shaped as the benchmark's W4 (internal/bench): one Node per five
// Services, ten endpoints per Service on consecutive Nodes (so about 50
// Services have endpoints on each Node), one-port CLB Services already
// bound (finalizer on). The informers list the objects from a fake
// clientset and deliver them to the handlers as at a start; each
// benchmark then calls one handler directly with an old and a new object,
// alternating between two versions so that every call is a real change.
// Pure unit benchmarks: no API server, no cloud, no workers.
//
//	go test -short -run '^$' -bench 'Handler' -benchmem ./internal/ccm/service/

// benchSizes are the Service counts each handler benchmark runs at.
var benchSizes = []int{1000, 10000}

// benchProvider is a provider the handlers can decide ownership with; the
// handlers never call the cloud.
type benchProvider struct{ Provider }

func (benchProvider) Kind() string             { return "CLB" }
func (benchProvider) Owner() annotations.Owner { return annotations.OwnerCLB }
func (benchProvider) Finalizer() string        { return naming.FinalizerCLB }
func (b benchProvider) Descriptor() Descriptor {
	return Descriptor{Kind: b.Kind(), Owner: b.Owner(), Finalizer: b.Finalizer()}
}

// handlerBench is a controller whose informer caches hold a W4-shaped
// cluster.
type handlerBench struct {
	c        *Controller
	services []*corev1.Service
	nodes    []*corev1.Node
	slices   []*discoveryv1.EndpointSlice
	stop     context.CancelFunc
}

const benchNS = "bench"

func benchNodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// newHandlerBench builds the cluster with services Services of the given
// traffic policy and starts the informers; it returns once the Service
// handler has queued every Service of the initial listing.
func newHandlerBench(b *testing.B, services int, policy corev1.ServiceExternalTrafficPolicy) *handlerBench {
	b.Helper()
	nodes := services / 5
	h := &handlerBench{}
	var objs []runtime.Object
	for i := 0; i < nodes; i++ {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: benchNodeName(i), ResourceVersion: "1", Labels: map[string]string{
				"kubernetes.io/hostname": benchNodeName(i), "topology.kubernetes.io/zone": "cn-hangzhou-k",
			}},
			Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("cn-hangzhou.i-%016d", i)},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			}},
		}
		h.nodes = append(h.nodes, n)
		objs = append(objs, n)
	}
	for i := 0; i < services; i++ {
		name := fmt.Sprintf("svc-%05d", i)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: benchNS, UID: types.UID("uid-" + name), ResourceVersion: "1",
				Finalizers: []string{naming.FinalizerCLB},
				Annotations: map[string]string{
					annotations.Key("health-check-flag"): "on",
				},
			},
			Spec: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeLoadBalancer,
				ExternalTrafficPolicy: policy,
				Ports: []corev1.ServicePort{{Name: "p80", Port: 80, Protocol: corev1.ProtocolTCP,
					TargetPort: intstr.FromInt32(8080), NodePort: int32(30000 + i%2000)}},
			},
		}
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-eps", Namespace: benchNS, ResourceVersion: "1",
				Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p80"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
		for j := 0; j < 10; j++ {
			k := i*10 + j
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 128+(k>>16)&15, (k>>8)&255, k&255)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
				NodeName:   ptr.To(benchNodeName(k % nodes)),
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: benchNS, Name: fmt.Sprintf("%s-%d", name, j)},
			})
		}
		h.services = append(h.services, svc)
		h.slices = append(h.slices, sl)
		objs = append(objs, svc, sl)
	}
	cs := fake.NewSimpleClientset(objs...) // the field-managed NewClientset is far slower to fill with 20,000 objects, and nothing here applies
	factory := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(Options{
		KubeClient: cs, Informers: factory, Recorder: record.NewFakeRecorder(1000),
		Providers: []Provider{benchProvider{}}, NodeBatchWindow: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	h.c = c
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	factory.Start(ctx.Done())
	for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			b.Fatal("informer caches did not sync")
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for c.queue.Len() < services {
		if time.Now().After(deadline) {
			b.Fatalf("the Service handler queued %d of %d Services", c.queue.Len(), services)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Let the EndpointSlice handler finish the initial listing too.
	time.Sleep(time.Second)
	return h
}

// benchEach runs fn at each size with its own cluster.
func benchEach(b *testing.B, policy corev1.ServiceExternalTrafficPolicy, fn func(b *testing.B, h *handlerBench)) {
	for _, n := range benchSizes {
		h := newHandlerBench(b, n, policy)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			fn(b, h)
		})
		h.stop()
	}
}

// nodePair returns two versions of Node i: as cached, and with mutate
// applied (a new resourceVersion).
func (h *handlerBench) nodePair(i int, mutate func(*corev1.Node)) (*corev1.Node, *corev1.Node) {
	o := h.nodes[i]
	n := o.DeepCopy()
	n.ResourceVersion = "2"
	mutate(n)
	return o, n
}

// BenchmarkHandlerNodeLabels: a Node label that no Service selects on
// changes (a label churn the handler must ignore). Cluster traffic policy.
func BenchmarkHandlerNodeLabels(b *testing.B) {
	benchEach(b, corev1.ServiceExternalTrafficPolicyCluster, func(b *testing.B, h *handlerBench) {
		o, n := h.nodePair(len(h.nodes)/2, func(n *corev1.Node) { n.Labels["example.com/rollout"] = "2" })
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%2 == 0 {
				h.c.nodeChanged(o, n)
			} else {
				h.c.nodeChanged(n, o)
			}
		}
	})
}

// BenchmarkHandlerNodeReadyLocal: a Node turns NotReady and Ready again
// with every Service of Local traffic policy: only the ~50 Services with
// endpoints on it are moved (queued).
func BenchmarkHandlerNodeReadyLocal(b *testing.B) {
	benchEach(b, corev1.ServiceExternalTrafficPolicyLocal, func(b *testing.B, h *handlerBench) {
		o, n := h.nodePair(len(h.nodes)/2, func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse })
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%2 == 0 {
				h.c.nodeChanged(o, n)
			} else {
				h.c.nodeChanged(n, o)
			}
		}
	})
}

// BenchmarkHandlerSliceUpdate: one endpoint of one Service turns not
// ready and ready again (W4's churn). policy=Cluster: the handler decides
// the Service does not depend on its endpoints; policy=Local: the Service
// is queued.
func BenchmarkHandlerSliceUpdate(b *testing.B) {
	for _, policy := range []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal} {
		b.Run("policy="+string(policy), func(b *testing.B) {
			benchEach(b, policy, func(b *testing.B, h *handlerBench) {
				full := h.slices[len(h.slices)/2].DeepCopy()
				// The handler is handed the slices as the cache holds them.
				o := compactSlice(full)
				full.ResourceVersion = "2"
				full.Endpoints[0].Conditions.Ready = ptr.To(false)
				n := compactSlice(full)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if i%2 == 0 {
						h.c.sliceChanged(o, n)
					} else {
						h.c.sliceChanged(n, o)
					}
				}
			})
		})
	}
}

// BenchmarkHandlerServiceUpdate: a Service's annotation changes back and
// forth, each version new to the handler (the Service is queued).
func BenchmarkHandlerServiceUpdate(b *testing.B) {
	benchEach(b, corev1.ServiceExternalTrafficPolicyCluster, func(b *testing.B, h *handlerBench) {
		svc := h.services[len(h.services)/2]
		versions := make([]*corev1.Service, 2)
		for v := range versions {
			s := svc.DeepCopy()
			s.Annotations[annotations.Key("health-check-flag")] = []string{"off", "on"}[v]
			s.ResourceVersion = fmt.Sprint(2 + v)
			versions[v] = s
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.c.serviceUpdated(versions[i%2], versions[(i+1)%2])
		}
	})
}

// BenchmarkHandlerSlicesOf: the cache read every sync makes for its
// Service's EndpointSlices.
func BenchmarkHandlerSlicesOf(b *testing.B) {
	benchEach(b, corev1.ServiceExternalTrafficPolicyCluster, func(b *testing.B, h *handlerBench) {
		svc := h.services[len(h.services)/2]
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if got := h.c.backends.slicesOf(svc); len(got) != 1 {
				b.Fatalf("%d slices for %s", len(got), svc.Name)
			}
		}
	})
}
