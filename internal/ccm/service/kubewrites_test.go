package service_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// serviceWrites records every version of one Service a watch sees, in
// order: each MODIFIED event is one write to the API server.
type serviceWrites struct {
	mu       sync.Mutex
	versions []*corev1.Service
}

func watchWrites(t *testing.T, name string) *serviceWrites {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := kube(t).CoreV1().Services(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	out := &serviceWrites{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if s, ok := ev.Object.(*corev1.Service); ok && ev.Type == watch.Modified {
				out.mu.Lock()
				out.versions = append(out.versions, s)
				out.mu.Unlock()
			}
		}
	}()
	return out
}

// await waits for a version that satisfies cond after the first from and
// returns how many writes there are up to it.
func (w *serviceWrites) await(t *testing.T, what string, from int, cond func(*corev1.Service) bool) int {
	t.Helper()
	n := 0
	poll(t, 30*time.Second, what, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := from; i < len(w.versions); i++ {
			if cond(w.versions[i]) {
				n = i + 1
				return true, nil
			}
		}
		return false, nil
	})
	return n
}

// TestKubeWritesPerSync counts the CCM's writes to a Service: its
// creation costs two (the finalizer before anything is created in the
// cloud, then labels and status in one patch of the status subresource),
// a converged Service's backend pass none, a full sync that changes only
// the hash label one, and the release when the Service stops being a
// LoadBalancer one (status, labels and finalizer together).
func TestKubeWritesPerSync(t *testing.T) {
	const name = "kube-writes"
	w := watchWrites(t, name)
	createService(t, svcSpec{name: name, ports: []int32{80}})
	defer deleteService(t, name)
	addressed := func(s *corev1.Service) bool {
		return len(s.Status.LoadBalancer.Ingress) > 0 && lbID(s) != "" && s.Labels[naming.LabelHash] == naming.Hash(s)
	}
	created := w.await(t, "address, labels and finalizer", 0, addressed)
	if created != 2 {
		t.Errorf("creation: %d writes, want 2 (finalizer; labels and status)", created)
	}
	lb := lbID(waitIngress(t, name, time.Second))

	// A backend pass of a converged Service (a foreign label asks for
	// one) writes nothing; the full sync after it rewrites the hash.
	seq := lastSeq()
	touch(t, name)
	poll(t, 30*time.Second, "the backend pass", func(context.Context) (bool, error) {
		for _, r := range cloud.Requests(gateway.RequestFilter{Product: "slb", Action: "DescribeVServerGroups", AfterSeq: seq}) {
			if slices.Contains(slices.Collect(maps.Values(r.Params)), lb) {
				return true, nil
			}
		}
		return false, nil
	})
	touched := w.await(t, "the touch", created, func(s *corev1.Service) bool { return s.Labels["test-touch"] != "" })
	resync(t, name, "slb", "DescribeLoadBalancerListeners", lb)
	synced := w.await(t, "the full sync's hash", touched, func(s *corev1.Service) bool {
		return s.Annotations[resyncAnnotation] != "" && s.Labels[naming.LabelHash] == naming.Hash(s)
	})
	// The touch, the annotation, the hash: nothing for the backend pass.
	if got := synced - created; got != 3 {
		t.Errorf("backend pass and full sync: %d writes after the creation's, want 3 (the test's touch and annotation, the hash label)", got)
	}

	updateService(t, name, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP })
	changed := w.await(t, "the type change", synced, func(s *corev1.Service) bool { return s.Spec.Type == corev1.ServiceTypeClusterIP })
	released := w.await(t, "the release", changed, func(s *corev1.Service) bool {
		return len(s.Finalizers) == 0 && lbID(s) == "" && len(s.Status.LoadBalancer.Ingress) == 0
	})
	if got := released - changed; got != 1 {
		t.Errorf("release: %d writes, want 1 (status, labels and finalizer together)", got)
	}
	if _, ok := describeLB(t, lb); ok {
		t.Errorf("load balancer %s still exists", lb)
	}
}
