package service

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

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

// expandSlice is what the cache holds of a slice, as an EndpointSlice:
// every field the controller can read, set as compactSlice kept it.
func expandSlice(c *cachedSlice) *discoveryv1.EndpointSlice {
	out := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{
		Name: c.Name, Namespace: c.Namespace, UID: c.UID, ResourceVersion: c.ResourceVersion, DeletionTimestamp: c.DeletionTimestamp.DeepCopy(),
	}, AddressType: c.addressType}
	if c.service != "" {
		out.Labels = map[string]string{discoveryv1.LabelServiceName: c.service}
	}
	for _, p := range c.ports {
		ep := discoveryv1.EndpointPort{Name: ptr.To(p.name)}
		if p.port != 0 {
			ep.Port = ptr.To(p.port)
		}
		out.Ports = append(out.Ports, ep)
	}
	for _, e := range c.endpoints {
		ep := discoveryv1.Endpoint{Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e.ready()), Terminating: ptr.To(e.terminating())}}
		if a, ok := c.address(&e); ok {
			ep.Addresses = []string{a}
		}
		if n, ok := e.nodeName(); ok {
			ep.NodeName = ptr.To(n)
		}
		if p, ok := c.pod(&e); ok {
			ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: p.namespace, Name: p.name, UID: p.uid}
		}
		out.Endpoints = append(out.Endpoints, ep)
	}
	return out
}

func TestSlimSlice(t *testing.T) {
	full := fullSlice()
	orig := full.DeepCopy()
	out, err := compactSliceTransform(full)
	if err != nil {
		t.Fatal(err)
	}
	slim := out.(*cachedSlice)
	if !reflect.DeepEqual(full, orig) {
		t.Error("the transform changed its input")
	}
	if slim.Name != "web-abc" || slim.Namespace != "default" || slim.UID != "u1" || slim.ResourceVersion != "42" {
		t.Errorf("identity lost: %+v", slim.sliceMeta)
	}
	if slim.service != "web" || slim.addressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("service %q, address type %q", slim.service, slim.addressType)
	}
	if want := (sliceMeta{Name: "web-abc", Namespace: "default", UID: "u1", ResourceVersion: "42"}); slim.sliceMeta != want {
		t.Errorf("metadata kept: %+v, want %+v", slim.sliceMeta, want)
	}
	if want := []slicePort{{name: "http", port: 8080}}; !reflect.DeepEqual(slim.ports, want) {
		t.Errorf("ports %+v, want %+v", slim.ports, want)
	}
	// Every endpoint as written, less what no reader uses (hostname, zone,
	// hints, serving, the targetRef's resourceVersion).
	want := make([]discoveryv1.Endpoint, len(full.Endpoints))
	for i, e := range full.Endpoints {
		want[i] = discoveryv1.Endpoint{
			Addresses:  e.Addresses,
			Conditions: discoveryv1.EndpointConditions{Ready: e.Conditions.Ready, Terminating: e.Conditions.Terminating},
			NodeName:   e.NodeName,
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: e.TargetRef.Namespace, Name: e.TargetRef.Name, UID: e.TargetRef.UID},
		}
	}
	if got := expandSlice(slim).Endpoints; !reflect.DeepEqual(got, want) {
		t.Errorf("endpoints\n%+v\nwant\n%+v", got, want)
	}
	if p, _ := slim.pod(&slim.endpoints[3]); slim.endpoints[3].ready() || p.name != "pod-10.0.0.4" || p.namespace != "default" || p.uid != "uid-10.0.0.4" {
		t.Errorf("not-ready endpoint: ready %v, pod %+v", slim.endpoints[3].ready(), p)
	}
	// Nothing is shared with the decoded slice, so it is freed whole.
	if unsafe.StringData(slim.Name) == unsafe.StringData(full.Name) || unsafe.StringData(slim.service) == unsafe.StringData(full.Labels[discoveryv1.LabelServiceName]) {
		t.Error("the cached slice shares the decoded slice's strings")
	}
	for i := range slim.endpoints {
		a, _ := slim.address(&slim.endpoints[i])
		p, _ := slim.pod(&slim.endpoints[i])
		if unsafe.StringData(a) == unsafe.StringData(full.Endpoints[i].Addresses[0]) || unsafe.StringData(p.name) == unsafe.StringData(full.Endpoints[i].TargetRef.Name) {
			t.Errorf("endpoint %d shares the decoded slice's strings", i)
		}
	}
	// The point of the type: one 24-byte struct per endpoint.
	if n := unsafe.Sizeof(sliceEndpoint{}); n > 24 {
		t.Errorf("a cached endpoint is %d bytes", n)
	}
	// A transform may see its own output again (relist): same result.
	if again, _ := compactSliceTransform(slim); again != any(slim) {
		t.Errorf("not idempotent:\n%+v\n%+v", again, slim)
	}
	if again := compactSlice(expandSlice(slim)); !reflect.DeepEqual(again, slim) {
		t.Errorf("a round trip through an EndpointSlice changes it:\n%+v\n%+v", again, slim)
	}
	// Tombstones pass through.
	tomb := cache.DeletedFinalStateUnknown{Key: "default/web-abc", Obj: full}
	if got, _ := compactSliceTransform(tomb); !reflect.DeepEqual(got, tomb) {
		t.Errorf("tombstone changed: %+v", got)
	}
	// An endpoint without targetRef, nodeName or conditions, and one whose
	// targetRef names no pod.
	bare := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{
		{Addresses: []string{"10.0.0.9"}},
		{Addresses: []string{"10.0.0.8"}, TargetRef: &corev1.ObjectReference{Kind: "Node", Name: "n1"}, Conditions: discoveryv1.EndpointConditions{Terminating: ptr.To(true)}},
		{},
	}}
	c := compactSlice(bare)
	for i, e := range c.endpoints {
		_, hasNode := e.nodeName()
		_, isPod := c.pod(&e)
		a, hasAddr := c.address(&e)
		if !e.ready() || hasNode || isPod || e.terminating() != (i == 1) || hasAddr != (i < 2) || (i < 2 && a != bare.Endpoints[i].Addresses[0]) {
			t.Errorf("bare endpoint %d: %+v", i, e)
		}
	}
}

// TestSlimSliceKeepsWhatTheControllerReads: the backends derived from the
// cached slices are what the slices as written make them: the same as
// from the cache's expansion back to an EndpointSlice, and as expected.
func TestSlimSliceKeepsWhatTheControllerReads(t *testing.T) {
	nodes := []*corev1.Node{node("n1", "i-1"), node("n2", "i-2"), node("n3", "i-3")}
	full := []*discoveryv1.EndpointSlice{fullSlice()}
	slim := []*discoveryv1.EndpointSlice{expandSlice(compactSlice(full[0]))}
	for _, tc := range []struct {
		name    string
		local   bool
		backend annotations.BackendType
		want    []string // node:port:weight or ip:port:pod
	}{
		{"ecs, Cluster", false, annotations.BackendECS, []string{"n1:30080:100", "n2:30080:100", "n3:30080:100"}},
		{"ecs, Local (weights by endpoints)", true, annotations.BackendECS, []string{"n1:30080:2", "n2:30080:1"}},
		{"eni (pod IPs on the target port)", false, annotations.BackendENI, []string{"10.0.0.1:8080:default/pod-10.0.0.1", "10.0.0.2:8080:default/pod-10.0.0.2", "10.0.0.3:8080:default/pod-10.0.0.3"}},
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
			var short []string
			for _, tg := range want[80] {
				if tg.IP != "" {
					short = append(short, fmt.Sprintf("%s:%d:%s/%s", tg.IP, tg.Port, tg.Pod.Namespace, tg.Pod.Name))
				} else {
					short = append(short, fmt.Sprintf("%s:%d:%d", tg.NodeName, tg.Port, tg.Weight))
				}
			}
			if !reflect.DeepEqual(short, tc.want) {
				t.Errorf("targets %v, want %v", short, tc.want)
			}
		})
	}
	a, b := localCounts(compactSlices(full)), localCounts(compactSlices(slim))
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(a, map[string]int{"n1": 2, "n2": 1}) {
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
