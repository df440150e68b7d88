package service

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// fullSlice is an EndpointSlice as the EndpointSlice controller writes it,
// with every field the transform drops set.
func fullSlice() *discoveryv1.EndpointSlice {
	ep := func(ip, node string, ready bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)},
			Hostname:   ptr.To("h-" + ip),
			NodeName:   ptr.To(node),
			Zone:       ptr.To("cn-hangzhou-h"),
			Hints:      &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "cn-hangzhou-h"}}},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pod-" + ip, UID: types.UID("uid-" + ip), ResourceVersion: "7"},
		}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-abc", GenerateName: "web-", Namespace: "default", UID: "u1", ResourceVersion: "42", Generation: 3,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io", "app": "web",
			},
			Annotations:     map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "2026-11-25T00:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Service", Name: "web", UID: "s1"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP), AppProtocol: ptr.To("http")}},
		Endpoints: []discoveryv1.Endpoint{
			ep("10.0.0.1", "n1", true), ep("10.0.0.2", "n1", true), ep("10.0.0.3", "n2", true), ep("10.0.0.4", "n2", false),
		},
	}
}

func TestSlimSlice(t *testing.T) {
	full := fullSlice()
	orig := full.DeepCopy()
	out, err := slimSliceTransform(full)
	if err != nil {
		t.Fatal(err)
	}
	slim := out.(*discoveryv1.EndpointSlice)
	if !reflect.DeepEqual(full, orig) {
		t.Error("the transform changed its input")
	}
	if slim.Name != "web-abc" || slim.Namespace != "default" || slim.UID != "u1" || slim.ResourceVersion != "42" {
		t.Errorf("identity lost: %+v", slim.ObjectMeta)
	}
	if want := map[string]string{discoveryv1.LabelServiceName: "web"}; !reflect.DeepEqual(slim.Labels, want) {
		t.Errorf("labels %v, want %v", slim.Labels, want)
	}
	if slim.Annotations != nil || slim.OwnerReferences != nil || slim.ManagedFields != nil || slim.GenerateName != "" {
		t.Errorf("metadata kept: %+v", slim.ObjectMeta)
	}
	if p := slim.Ports[0]; p.AppProtocol != nil || *p.Port != 8080 || *p.Name != "http" {
		t.Errorf("port %+v", p)
	}
	for i, e := range slim.Endpoints {
		if e.Hostname != nil || e.Zone != nil || e.Hints != nil || e.Conditions.Serving != nil {
			t.Errorf("endpoint %d keeps an unread field: %+v", i, e)
		}
		if e.TargetRef == nil || e.TargetRef.ResourceVersion != "" {
			t.Errorf("endpoint %d: targetRef %+v; every pod reference is kept, without its resourceVersion", i, e.TargetRef)
		}
	}
	if r := slim.Endpoints[3].TargetRef; r.Kind != "Pod" || r.Name != "pod-10.0.0.4" || r.Namespace != "default" || r.UID != "uid-10.0.0.4" || r.ResourceVersion != "" {
		t.Errorf("not-ready endpoint's targetRef %+v", r)
	}
	// A transform may see its own output again (relist): same result.
	again, _ := slimSliceTransform(slim)
	if !reflect.DeepEqual(again, slim) {
		t.Errorf("not idempotent:\n%+v\n%+v", again, slim)
	}
	// Tombstones pass through.
	tomb := cache.DeletedFinalStateUnknown{Key: "default/web-abc", Obj: full}
	if got, _ := slimSliceTransform(tomb); !reflect.DeepEqual(got, tomb) {
		t.Errorf("tombstone changed: %+v", got)
	}
}

// TestSlimSliceKeepsWhatTheControllerReads: everything the controller
// derives from EndpointSlices comes out the same from slim ones.
func TestSlimSliceKeepsWhatTheControllerReads(t *testing.T) {
	nodes := []*corev1.Node{node("n1", "i-1"), node("n2", "i-2"), node("n3", "i-3")}
	full := []*discoveryv1.EndpointSlice{fullSlice()}
	slim := []*discoveryv1.EndpointSlice{slimSlice(full[0])}
	for _, tc := range []struct {
		name    string
		local   bool
		backend annotations.BackendType
	}{
		{"ecs, Cluster", false, annotations.BackendECS},
		{"ecs, Local (weights by endpoints)", true, annotations.BackendECS},
		{"eni (pod IPs on the target port)", false, annotations.BackendENI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080}}}}
			if tc.local {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
			s := &annotations.Settings{}
			s.Backend.Type = tc.backend
			want, got := ComputeBackends(svc, s, nodes, full), ComputeBackends(svc, s, nodes, slim)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("from slim slices %+v, from full ones %+v", got, want)
			}
			if len(want[80]) == 0 {
				t.Fatal("no backends: the case tests nothing")
			}
		})
	}
	if a, b := localCounts(full), localCounts(slim); !reflect.DeepEqual(a, b) {
		t.Errorf("localCounts: slim %v, full %v", b, a)
	}
}

func node(name, instance string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{ProviderID: "cn-hangzhou." + instance},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}
