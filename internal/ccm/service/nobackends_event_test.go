package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// unavailable sums the counts of the Service's UnAvailableLoadBalancer
// events (the recorder folds repeats into one event's count).
func unavailable(t *testing.T, name string) int32 {
	t.Helper()
	var n int32
	for _, e := range events(t, name) {
		if e.Reason == "UnAvailableLoadBalancer" {
			n += e.Count
		}
	}
	return n
}

// TestNoBackendsEventOnBackendPass: a Local Service whose endpoints all
// turn unready gets the UnAvailableLoadBalancer Warning from the
// backend-only pass the EndpointSlice change triggers (no Service change,
// no full sync); a further backend pass while still empty does not repeat
// it; endpoints that come back and go again are reported again.
func TestNoBackendsEventOnBackendPass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const name = "no-backends"
	slices := kube(t).DiscoveryV1().EndpointSlices(ns)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-pods", Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "svc-test",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p80"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	setEndpoints := func(ready ...bool) {
		t.Helper()
		var eps []discoveryv1.Endpoint
		for i, r := range ready {
			eps = append(eps, discoveryv1.Endpoint{
				Addresses: []string{fmt.Sprintf("10.244.%d.%d", 100+i, 10+len(ready))}, NodeName: ptr.To(nodeNames[i]),
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(r)},
			})
		}
		patch, _ := json.Marshal(map[string]any{"endpoints": eps})
		if _, err := slices.Patch(ctx, slice.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := slices.Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer slices.Delete(ctx, slice.Name, metav1.DeleteOptions{})
	setEndpoints(true)
	svc := newService(svcSpec{name: name, ports: []int32{80}, local: true})
	svc.Spec.Selector = nil // endpoints are published by the test
	if _, err := kube(t).CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer deleteService(t, name)
	id := lbID(waitIngress(t, name, 30*time.Second))
	backends := func() int {
		n := 0
		for _, m := range groupMembers(t, id) {
			n += len(m)
		}
		return n
	}
	poll(t, 20*time.Second, "the Node with the ready endpoint as backend", func(ctx context.Context) (bool, error) {
		return backends() == 1, nil
	})
	base := unavailable(t, name)
	// A full sync records EnsuredLoadBalancer; the backend pass only
	// updates the backends-hash label.
	ensuring := func() int32 {
		var n int32
		for _, e := range events(t, name) {
			if e.Reason == "EnsuredLoadBalancer" {
				n += e.Count
			}
		}
		return n
	}
	// Events are recorded asynchronously: wait for the creation's own
	// before taking the baseline, or it is counted as a later full sync.
	poll(t, 10*time.Second, "the creation's EnsuredLoadBalancer event", func(ctx context.Context) (bool, error) {
		return ensuring() >= 1, nil
	})
	fullSyncs := ensuring()

	setEndpoints(false)
	poll(t, 20*time.Second, "no backends and one UnAvailableLoadBalancer", func(ctx context.Context) (bool, error) {
		return backends() == 0 && unavailable(t, name) == base+1, nil
	})
	// Still empty: another backend pass (seen as its group read) warns no more.
	seq := lastSeq()
	setEndpoints(false, false)
	poll(t, 20*time.Second, "another backend pass", func(ctx context.Context) (bool, error) {
		for _, r := range cloud.Requests(gateway.RequestFilter{Product: "slb", AfterSeq: seq}) {
			if r.Action == "DescribeVServerGroupAttribute" {
				return true, nil
			}
		}
		return false, nil
	})
	time.Sleep(time.Second) // the event would be recorded right after the pass
	if n := unavailable(t, name); n != base+1 {
		t.Errorf("UnAvailableLoadBalancer count %d after a second empty pass, want %d", n, base+1)
	}
	// Back, then gone again: reported again at once.
	setEndpoints(true, false)
	poll(t, 20*time.Second, "backend back", func(ctx context.Context) (bool, error) { return backends() == 1, nil })
	setEndpoints(false, false)
	poll(t, 20*time.Second, "a second UnAvailableLoadBalancer", func(ctx context.Context) (bool, error) {
		return backends() == 0 && unavailable(t, name) == base+2, nil
	})
	if n := ensuring(); n != fullSyncs {
		t.Errorf("%d full syncs during the endpoint changes: these were not backend-only passes", n-fullSyncs)
	}
}
