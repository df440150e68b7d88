package service

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// What the informer caches keep. At thousands of Services and tens of
// thousands of endpoints the caches are most of the CCM's heap (the
// scale benchmark's W4), so each keeps only what the CCM reads:
//
//   - Services lose only managedFields: they are written back by patches
//     built from what changed, so nothing else may be missing from them.
//   - Nodes lose managedFields and the status fields no controller of
//     the process reads (slimNode). Their metadata and spec stay whole:
//     the upstream cloud node controller initializes a Node by an Update
//     of its cached copy (k8s.io/cloud-provider
//     controllers/node/node_controller.go syncNode), where an absent
//     managedFields leaves the server's unchanged, and so does an absent
//     status, which a Node Update never writes (kube-apiserver
//     pkg/registry/core/node/strategy.go PrepareForUpdate: newNode.Status =
//     oldNode.Status).
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
		{"Node", nodes, slimNode},
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

// slimNode drops from a Node what no controller of the process reads:
// managedFields and every status field but the conditions (Ready for the
// backends and the upstream lifecycle controller, NetworkUnavailable for
// routes) and the addresses (the upstream node controller compares them
// with the cloud's). Ours read labels, taints, spec, conditions and
// addresses; the upstream cloud node and node lifecycle controllers
// (k8s.io/cloud-provider controllers/node, controllers/nodelifecycle)
// read no other status field, and write status only by
// nodeutil.PatchNodeStatus, a two-way patch between a cached Node and its
// modified copy, in which what both lack is not written. Real Nodes carry
// their image list (several kB), capacity, allocatable and system info
// in status.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return dropManagedFields(obj)
	}
	n.ManagedFields = nil
	n.Status = corev1.NodeStatus{Conditions: n.Status.Conditions, Addresses: n.Status.Addresses}
	return n, nil
}
