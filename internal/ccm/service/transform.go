package service

import (
	"k8s.io/apimachinery/pkg/api/meta"
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
//     process watches, become cachedSlice (cachedslice.go): the
//     service-name label (slicesOf selects on it), the ports and, per
//     endpoint, the first address, the ready and terminating conditions,
//     the Node name and the pod reference (the backends resolver and
//     readiness gates read it). The informer's typed lister cannot be
//     used on that cache: the controller reads it through sliceOf.

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
		{"EndpointSlice", slices, compactSliceTransform},
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
