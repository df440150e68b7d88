package service

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// What the informer caches keep. At thousands of Services and tens of
// thousands of endpoints the caches are most of the CCM's heap (issue 11,
// W4), so each keeps only what the CCM reads:
//
//   - Services and Nodes lose only managedFields. Both are written back by
//     patches built from what changed (and Nodes, whose informer the
//     upstream node controllers share, by their Updates of cached copies,
//     where an absent managedFields leaves the server's unchanged), so
//     nothing else may be missing from them.
//   - EndpointSlices, which the CCM never writes and nothing else in the
//     process watches, become slimSlice: the service-name label (slicesOf
//     selects on it), the ports and, per endpoint, the addresses, the
//     ready and terminating conditions, the Node name and, for endpoints
//     that are not ready, the pod reference (readiness gates read it).
//
// A field added to what the controller reads from a slice must be added
// to slimSlice (TestSlimSliceKeepsWhatTheControllerReads fails otherwise).

// setTransforms installs the cache transforms. An informer another
// controller has already started keeps its objects whole, which costs
// memory but is correct.
func setTransforms(services, nodes, slices cache.SharedIndexInformer) {
	for _, t := range []struct {
		name string
		inf  cache.SharedIndexInformer
		fn   cache.TransformFunc
	}{
		{"Service", services, dropManagedFields},
		{"Node", nodes, dropManagedFields},
		{"EndpointSlice", slices, slimSliceTransform},
	} {
		if err := t.inf.SetTransform(t.fn); err != nil {
			klog.V(2).InfoS("Informer cache keeps whole objects", "kind", t.name, "err", err)
		}
	}
}

func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

func slimSliceTransform(obj any) (any, error) {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
		return slimSlice(s), nil
	}
	// Tombstones and other types pass unchanged.
	return obj, nil
}

// slimSlice is a new EndpointSlice with only the fields the controller
// reads. It is idempotent, as a transform must be (a relist may pass an
// object through it again), and shares no memory with s but strings.
func slimSlice(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	out := &discoveryv1.EndpointSlice{
		TypeMeta: s.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion,
			DeletionTimestamp: s.DeletionTimestamp,
		},
		AddressType: s.AddressType,
	}
	if name, ok := s.Labels[discoveryv1.LabelServiceName]; ok {
		out.Labels = map[string]string{discoveryv1.LabelServiceName: name}
	}
	if len(s.Ports) > 0 {
		out.Ports = make([]discoveryv1.EndpointPort, len(s.Ports))
		for i, p := range s.Ports {
			out.Ports[i] = discoveryv1.EndpointPort{Name: p.Name, Port: p.Port, Protocol: p.Protocol}
		}
	}
	if len(s.Endpoints) > 0 {
		out.Endpoints = make([]discoveryv1.Endpoint, len(s.Endpoints))
		for i, e := range s.Endpoints {
			se := discoveryv1.Endpoint{
				Addresses:  e.Addresses,
				Conditions: discoveryv1.EndpointConditions{Ready: e.Conditions.Ready, Terminating: e.Conditions.Terminating},
				NodeName:   e.NodeName,
			}
			if r := e.TargetRef; r != nil && r.Kind == "Pod" {
				// The backends resolver checks the pod an eni endpoint
				// names (its namespace, that it holds the address), and
				// readiness gates read it; other kinds name no pod.
				se.TargetRef = &corev1.ObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
			}
			out.Endpoints[i] = se
		}
	}
	return out
}
