package service_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// TestTransformedCaches: the CCM caches slim EndpointSlices and Services
// and Nodes without managedFields, yet a Local Service's backends still
// follow its endpoints, and nothing the caches dropped is written back:
// the EndpointSlice is never written, and the Service keeps its
// managedFields, labels and annotations after the CCM's finalizer, label
// and status writes.
func TestTransformedCaches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := "slim"
	svc := newService(svcSpec{name: name, ports: []int32{80}, local: true})
	svc.Spec.Selector = nil // the test writes the endpoints
	svc.Labels = map[string]string{"team": "web"}
	svc.Annotations = map[string]string{"example.com/owner": "web-team"}
	if _, err := kube(t).CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{FieldManager: "slim-test"}); err != nil {
		t.Fatal(err)
	}
	defer deleteService(t, name)

	ep := func(i int, node string, ready bool) discoveryv1.Endpoint {
		ip := "10.244.200." + itoa(int32(10+i))
		return discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)},
			Hostname:   ptr.To("pod-" + itoa(int32(i))),
			NodeName:   ptr.To(node),
			Zone:       ptr.To("cn-hangzhou-h"),
			Hints:      &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "cn-hangzhou-h"}}},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "pod-" + itoa(int32(i)), UID: types.UID("uid-" + itoa(int32(i)))},
		}
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-eps", Namespace: ns,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "slim-test", "team": "web",
			},
			Annotations: map[string]string{"example.com/note": "kept"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p80"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP), AppProtocol: ptr.To("http")}},
		Endpoints:   []discoveryv1.Endpoint{ep(0, nodeNames[0], true), ep(1, nodeNames[0], true), ep(2, nodeNames[1], true)},
	}
	slices := kube(t).DiscoveryV1().EndpointSlices(ns)
	created, err := slices.Create(ctx, slice, metav1.CreateOptions{FieldManager: "slim-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer slices.Delete(ctx, slice.Name, metav1.DeleteOptions{})

	got := waitIngress(t, name, 30*time.Second)
	id := lbID(got)
	group := naming.For(got, clusterID).CLBVGroup(itoa(got.Spec.Ports[0].NodePort))
	// Local: the Nodes with endpoints, weighted by their number.
	want := map[string]int{instances[nodeNames[0]]: 2, instances[nodeNames[1]]: 1}
	poll(t, 30*time.Second, "Local members from the slim slice", func(ctx context.Context) (bool, error) {
		return reflect.DeepEqual(groupMembers(t, id)[group], want), nil
	})

	// An endpoint turning not ready reaches the group through the slim cache.
	cur, err := slices.Get(ctx, slice.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Endpoints[1] = ep(1, nodeNames[0], false)
	updated, err := slices.Update(ctx, cur, metav1.UpdateOptions{FieldManager: "slim-test"})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]int{instances[nodeNames[0]]: 1, instances[nodeNames[1]]: 1}
	poll(t, 30*time.Second, "Local members after an endpoint turned not ready", func(ctx context.Context) (bool, error) {
		return reflect.DeepEqual(groupMembers(t, id)[group], want), nil
	})

	// Nothing wrote the slice: same version, every field as written.
	final, err := slices.Get(ctx, slice.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if final.ResourceVersion != updated.ResourceVersion || created.ResourceVersion == updated.ResourceVersion {
		t.Errorf("EndpointSlice written by someone else: versions created %s, updated %s, now %s",
			created.ResourceVersion, updated.ResourceVersion, final.ResourceVersion)
	}
	if !reflect.DeepEqual(final.Endpoints, updated.Endpoints) || final.Annotations["example.com/note"] != "kept" ||
		final.Labels["team"] != "web" || final.Ports[0].AppProtocol == nil {
		t.Errorf("EndpointSlice lost fields: %+v", final)
	}

	// The Service was written by the CCM (finalizer, labels, status) and
	// kept what its cache does not hold.
	s, err := kube(t).CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]bool{}
	for _, m := range s.ManagedFields {
		managers[m.Manager] = true
	}
	if !managers["slim-test"] || len(s.ManagedFields) < 2 {
		t.Errorf("Service managedFields %v: the creator's entry must stay beside the CCM's", managers)
	}
	if s.Labels["team"] != "web" || s.Annotations["example.com/owner"] != "web-team" || lbID(s) == "" || len(s.Finalizers) == 0 {
		t.Errorf("Service metadata after the CCM's writes: labels %v, annotations %v, finalizers %v", s.Labels, s.Annotations, s.Finalizers)
	}
}
