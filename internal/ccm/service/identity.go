package service

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// Identity is a Service's cloud identity in this cluster: the names and
// tags the CCM gives what it makes for the Service, and the test that a
// load balancer (or a group) was made for it. The controller computes it
// once per sync (IdentityOf) and hands it to the provider in the Request,
// so no rule derives it again.
type Identity struct {
	// ClusterID is the cluster id, defaulted (naming.ClusterID).
	ClusterID string
	// Name is the default load balancer name, also the value of the
	// default-name tag (naming.DefaultLBName).
	Name string
	// Ref names (and recognises) the Service's listeners and groups.
	Ref naming.Ref
	// Tags are the tags on what the CCM creates for the Service.
	Tags []naming.Tag
}

// IdentityOf computes svc's Identity in the cluster clusterID.
func IdentityOf(svc *corev1.Service, clusterID string) Identity {
	return Identity{
		ClusterID: naming.ClusterID(clusterID),
		Name:      naming.DefaultLBName(svc),
		Ref:       naming.For(svc, clusterID),
		Tags:      naming.DefaultTags(svc, clusterID),
	}
}

// Owns reports whether tags prove a load balancer was made for the
// Service in this cluster: the default-name tag names the Service's UID,
// and the cluster tag, when present, names this cluster (the existing
// CCM's older releases did not write it).
func (id Identity) Owns(tags map[string]string) bool {
	if tags[naming.TagKeyDefaultName] != id.Name {
		return false
	}
	c, ok := tags[naming.TagKeyCluster]
	return !ok || c == id.ClusterID
}

// IsSelf reports whether ref (parsed from a listener or group name) names
// the Service in this cluster.
func (id Identity) IsSelf(ref naming.Ref) bool {
	return ref.Name == id.Ref.Name && ref.Namespace == id.Ref.Namespace && ref.ClusterID == id.ClusterID
}

// CreationTags are the tags a load balancer is created with: the
// identity's, the additional ones the annotation asks for, and the record
// of which of those the CCM manages, so that a tag later dropped from the
// annotation is removed from the load balancer.
func (id Identity) CreationTags(additional []naming.Tag) []naming.Tag {
	tags := append(slices.Clone(id.Tags), additional...)
	if rec, ok := naming.ManagedRecord(additional); ok {
		tags = append(tags, rec)
	}
	return tags
}
