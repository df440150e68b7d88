package service

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// sliceMeta is the metadata the EndpointSlice cache keeps of a slice: what
// the informer keys, versions and deletes it by (name, namespace, UID,
// resourceVersion, deletionTimestamp). A full metav1.ObjectMeta is 248
// bytes of struct before any of its fields is set; this is 72, which puts
// a cachedSlice in the 176-byte size class instead of the 352-byte one
// (~18 bytes per endpoint at W4's 10 endpoints a slice).
//
// It implements metav1.Object, so meta.Accessor (the store's key
// functions, its resourceVersion bookkeeping, the shared informer's
// resync check, klog.KObj) reads a cachedSlice as it read the full
// metadata. The other fields read as unset and setting them does nothing,
// the convention k8s.io/apimachinery pkg/api/meta documents for metadata
// an object does not support (meta.go, type Common): the transform drops
// them, and nothing writes a cached object.
type sliceMeta struct {
	Name, Namespace   string
	UID               types.UID
	ResourceVersion   string
	DeletionTimestamp *metav1.Time
}

var _ metav1.Object = &sliceMeta{}

// GetNamespace is the slice's namespace.
func (m *sliceMeta) GetNamespace() string { return m.Namespace }

// SetNamespace sets the slice's namespace.
func (m *sliceMeta) SetNamespace(ns string) { m.Namespace = ns }

// GetName is the slice's name.
func (m *sliceMeta) GetName() string { return m.Name }

// SetName sets the slice's name.
func (m *sliceMeta) SetName(name string) { m.Name = name }

// GetUID is the slice's UID.
func (m *sliceMeta) GetUID() types.UID { return m.UID }

// SetUID sets the slice's UID.
func (m *sliceMeta) SetUID(uid types.UID) { m.UID = uid }

// GetResourceVersion is the slice's resourceVersion.
func (m *sliceMeta) GetResourceVersion() string { return m.ResourceVersion }

// SetResourceVersion sets the slice's resourceVersion.
func (m *sliceMeta) SetResourceVersion(v string) { m.ResourceVersion = v }

// GetDeletionTimestamp is the slice's deletionTimestamp (nil: unset).
func (m *sliceMeta) GetDeletionTimestamp() *metav1.Time { return m.DeletionTimestamp }

// SetDeletionTimestamp sets the slice's deletionTimestamp.
func (m *sliceMeta) SetDeletionTimestamp(t *metav1.Time) { m.DeletionTimestamp = t }

// GetGenerateName reads as unset: not kept.
func (m *sliceMeta) GetGenerateName() string { return "" }

// SetGenerateName does nothing: not kept.
func (m *sliceMeta) SetGenerateName(string) {}

// GetGeneration reads as unset: not kept.
func (m *sliceMeta) GetGeneration() int64 { return 0 }

// SetGeneration does nothing: not kept.
func (m *sliceMeta) SetGeneration(int64) {}

// GetSelfLink reads as unset: not kept.
func (m *sliceMeta) GetSelfLink() string { return "" }

// SetSelfLink does nothing: not kept.
func (m *sliceMeta) SetSelfLink(string) {}

// GetCreationTimestamp reads as unset: not kept.
func (m *sliceMeta) GetCreationTimestamp() metav1.Time { return metav1.Time{} }

// SetCreationTimestamp does nothing: not kept.
func (m *sliceMeta) SetCreationTimestamp(metav1.Time) {}

// GetDeletionGracePeriodSeconds reads as unset: not kept.
func (m *sliceMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds does nothing: not kept.
func (m *sliceMeta) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels reads as unset: only the service-name label is kept, as
// cachedSlice.service.
func (m *sliceMeta) GetLabels() map[string]string { return nil }

// SetLabels does nothing: not kept.
func (m *sliceMeta) SetLabels(map[string]string) {}

// GetAnnotations reads as unset: not kept.
func (m *sliceMeta) GetAnnotations() map[string]string { return nil }

// SetAnnotations does nothing: not kept.
func (m *sliceMeta) SetAnnotations(map[string]string) {}

// GetFinalizers reads as unset: not kept.
func (m *sliceMeta) GetFinalizers() []string { return nil }

// SetFinalizers does nothing: not kept.
func (m *sliceMeta) SetFinalizers([]string) {}

// GetOwnerReferences reads as unset: not kept.
func (m *sliceMeta) GetOwnerReferences() []metav1.OwnerReference { return nil }

// SetOwnerReferences does nothing: not kept.
func (m *sliceMeta) SetOwnerReferences([]metav1.OwnerReference) {}

// GetManagedFields reads as unset: not kept.
func (m *sliceMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields does nothing: not kept.
func (m *sliceMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}
