package nodes

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

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

// Instances implements cloudprovider.InstancesV2.
type Instances struct {
	index  *Index
	region string
}

var _ cloudprovider.InstancesV2 = (*Instances)(nil)

// NewInstances returns InstancesV2 over an index of the cluster VPC's instances.
func NewInstances(index *Index, region string) *Instances {
	return &Instances{index: index, region: region}
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
	ip := n.Annotations[annotationProvidedNodeIP]
	if ip == "" {
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				ip = a.Address
				break
			}
		}
	}
	if ip == "" {
		return nil, errNoAddress
	}
	return s.index.ByPrivateIP(ctx, ip)
}

// InstanceExists reports whether the Node's instance exists. Excluded
// Nodes always exist, so they are never deleted.
func (s *Instances) InstanceExists(ctx context.Context, n *v1.Node) (bool, error) {
	if Excluded(n) {
		return true, nil
	}
	in, err := s.find(ctx, n)
	if err != nil {
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
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if in == nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, cloudprovider.InstanceNotFound)
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
