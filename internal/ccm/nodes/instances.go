package nodes

import (
	"context"
	"errors"
	"fmt"

	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/providerid"
)

// Labels the existing CCM sets on Nodes and we keep setting.
const (
	LabelChargeType   = "node.alibabacloud.com/instance-charge-type"
	LabelSpotStrategy = "node.alibabacloud.com/spot-strategy"
	LabelNodePoolID   = "node.alibabacloud.com/nodepool-id"
	// TagNodePoolID is the ECS tag carrying the node pool id.
	TagNodePoolID = "ack.alibabacloud.com/nodepool-id"
	// LabelExcludeNode keeps a Node out of every controller.
	LabelExcludeNode = "service.alibabacloud.com/exclude-node"
	// LabelExcludeNodeDeprecated is the older spelling of LabelExcludeNode.
	LabelExcludeNodeDeprecated = "service.beta.kubernetes.io/exclude-node"
	// annotationProvidedNodeIP is set by kubelet --node-ip.
	annotationProvidedNodeIP = "alpha.kubernetes.io/provided-node-ip"
)

// Excluded reports whether a Node opted out of the CCM by label or is a
// hybrid node that is not an ECS instance.
func Excluded(n *v1.Node) bool {
	if _, ok := n.Labels[LabelExcludeNode]; ok {
		return true
	}
	if _, ok := n.Labels[LabelExcludeNodeDeprecated]; ok {
		return true
	}
	return len(n.Spec.ProviderID) >= len("ack-hybrid://") && n.Spec.ProviderID[:len("ack-hybrid://")] == "ack-hybrid://"
}

// Event reasons on Nodes (the existing CCM's names where it has one).
const (
	ReasonInitialized = "InitializedNode"
	ReasonAddFailed   = "AddNodeFailed"
	ReasonSyncFailed  = "SyncNodeFailed"
)

// Instances implements cloudprovider.InstancesV2.
type Instances struct {
	index  *Index
	region string

	mu       sync.RWMutex
	recorder record.EventRecorder
}

var _ cloudprovider.InstancesV2 = (*Instances)(nil)

// NewInstances returns InstancesV2 over an index of the cluster VPC's instances.
func NewInstances(index *Index, region string) *Instances {
	return &Instances{index: index, region: region}
}

// SetRecorder makes lookups report their outcome as events on the Node;
// the upstream controllers only log failures.
func (s *Instances) SetRecorder(r record.EventRecorder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recorder = r
}

func (s *Instances) event(n *v1.Node, typ, reason, format string, args ...any) {
	s.mu.RLock()
	r := s.recorder
	s.mu.RUnlock()
	if r == nil {
		return
	}
	// Events must reference the Node by name and UID to be listed with it.
	ref := &v1.ObjectReference{Kind: "Node", Name: n.Name, UID: n.UID}
	r.Eventf(ref, typ, reason, format, args...)
}

func uninitialized(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == cloudapi.TaintExternalCloudProvider {
			return true
		}
	}
	return false
}

// errNoAddress means the Node carries nothing to find its instance by.
var errNoAddress = errors.New("node has neither a providerID nor an InternalIP to find its ECS instance by")

// find returns the Node's instance, nil when it does not exist.
func (s *Instances) find(ctx context.Context, n *v1.Node) (*Instance, error) {
	if n.Spec.ProviderID != "" {
		_, id, err := providerid.Parse(n.Spec.ProviderID)
		if err != nil {
			return nil, err
		}
		return s.index.ByID(ctx, id)
	}
	ip := nodeIP(n)
	if ip == "" {
		return nil, errNoAddress
	}
	return s.index.ByPrivateIP(ctx, ip)
}

// nodeIP is the kubelet's --node-ip, else the first InternalIP.
func nodeIP(n *v1.Node) string {
	if ip := n.Annotations[annotationProvidedNodeIP]; ip != "" {
		return ip
	}
	for _, a := range n.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// Warm fills the instance cache with one listing, so that a check of the
// cloud at start also serves the first Node lookups.
func (s *Instances) Warm(ctx context.Context) error { return s.index.Warm(ctx) }

// InstanceExists reports whether the Node's instance exists. Excluded
// Nodes always exist, so they are never deleted.
func (s *Instances) InstanceExists(ctx context.Context, n *v1.Node) (bool, error) {
	if Excluded(n) {
		return true, nil
	}
	in, err := s.find(ctx, n)
	if err == nil && in == nil {
		// A miss deletes the Node: confirm it against a listing begun
		// after the miss, so an instance created after the cached listing
		// (a Node that just registered) is never taken for a gone one.
		in, err = s.find(s.index.Fresh(ctx), n)
	}
	if err != nil {
		s.event(n, v1.EventTypeWarning, ReasonSyncFailed, "Checking the ECS instance failed: %v", err)
		return false, fmt.Errorf("node %s: %w", n.Name, err)
	}
	return in != nil, nil
}

// InstanceShutdown reports whether the Node's instance is stopped.
func (s *Instances) InstanceShutdown(ctx context.Context, n *v1.Node) (bool, error) {
	if Excluded(n) {
		return false, nil
	}
	in, err := s.find(ctx, n)
	if err != nil {
		s.event(n, v1.EventTypeWarning, ReasonSyncFailed, "Checking the ECS instance failed: %v", err)
		return false, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if in == nil {
		return false, fmt.Errorf("node %s: %w", n.Name, cloudprovider.InstanceNotFound)
	}
	return in.Status == "Stopped" || in.Status == "Stopping", nil
}

// InstanceMetadata returns what the cloud-node controller writes on the
// Node. Excluded Nodes get nil, which makes the controller skip them.
func (s *Instances) InstanceMetadata(ctx context.Context, n *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	if Excluded(n) {
		return nil, nil
	}
	in, err := s.find(ctx, n)
	if err != nil {
		s.event(n, v1.EventTypeWarning, ReasonAddFailed, "Looking up the ECS instance failed: %v", err)
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if in == nil {
		s.event(n, v1.EventTypeWarning, ReasonAddFailed, "No ECS instance in VPC %s matches providerID %q or InternalIP %q", s.index.vpcID, n.Spec.ProviderID, nodeIP(n))
		return nil, fmt.Errorf("node %s: %w", n.Name, cloudprovider.InstanceNotFound)
	}
	if uninitialized(n) {
		s.event(n, v1.EventTypeNormal, ReasonInitialized, "Initializing from ECS instance %s (%s in %s)", in.ID, in.Type, in.Zone)
	}
	region := in.Region
	if region == "" {
		region = s.region
	}
	md := &cloudprovider.InstanceMetadata{
		ProviderID:       providerid.Format(region, in.ID),
		InstanceType:     in.Type,
		Zone:             in.Zone,
		Region:           region,
		AdditionalLabels: map[string]string{},
	}
	for _, ip := range in.PrivateIPs {
		md.NodeAddresses = append(md.NodeAddresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	for _, ip := range in.PublicIPs {
		md.NodeAddresses = append(md.NodeAddresses, v1.NodeAddress{Type: v1.NodeExternalIP, Address: ip})
	}
	hostname := n.Name
	for _, a := range n.Status.Addresses {
		if a.Type == v1.NodeHostName {
			hostname = a.Address
		}
	}
	md.NodeAddresses = append(md.NodeAddresses, v1.NodeAddress{Type: v1.NodeHostName, Address: hostname})
	if in.ChargeType != "" {
		md.AdditionalLabels[LabelChargeType] = in.ChargeType
	}
	if in.SpotStrategy != "" {
		md.AdditionalLabels[LabelSpotStrategy] = in.SpotStrategy
	}
	if np := in.Tags[TagNodePoolID]; np != "" {
		md.AdditionalLabels[LabelNodePoolID] = np
	}
	return md, nil
}
