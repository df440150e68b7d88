package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	cloudapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/providerid"
)

// Labels the existing CCM sets on Nodes and we keep setting.
const (
	LabelChargeType   = "node.alibabacloud.com/instance-charge-type"
	LabelSpotStrategy = "node.alibabacloud.com/spot-strategy"
	LabelNodePoolID   = "node.alibabacloud.com/nodepool-id"
	// TagNodePoolID is the ECS tag carrying the node pool id.
	TagNodePoolID = "ack.alibabacloud.com/nodepool-id"
	// annotationProvidedNodeIP is set by kubelet --node-ip.
	annotationProvidedNodeIP = "alpha.kubernetes.io/provided-node-ip"
)

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
	// byID confirms misses of the VPC-scoped index by id (nil: the index
	// answers alone).
	byID IDLookup

	mu       sync.RWMutex
	recorder record.EventRecorder
	init     InitOptions
	// initStarts are the first lookups of uninitialized Nodes, by name,
	// for the initialization latency.
	initStarts map[string]time.Time
	// seen is when this process first saw each uninitialized Node, by UID
	// (the Node informer's delivery, else the first lookup): its instance
	// existed by then, so a listing begun later proves a miss.
	seen map[types.UID]time.Time
	// nodes is the Node informer's store (nil: none watched), and
	// versionWaits the lookups waiting for it to hold a write, by Node.
	nodes        cache.Store
	versionWaits map[string]*versionWait

	outsideMu sync.Mutex
	// outside caches instances found by id outside the index (another
	// VPC), for Index.MaxAge, so periodic checks of such a Node do not
	// call once each.
	outside map[string]outsideHit
	// checkedENIs are primary ENIs known to have their source/destination
	// check off, so a retried initialization does not read them again.
	checkedENIs sync.Map
	// eniChecks is the listing of the VPC's primary ENIs' checks that
	// serves Nodes initialized together.
	eniChecks *sharedListing[map[string]bool]

	// ipv6 is the IPv6DualStack feature gate: Nodes get their primary
	// ENI's IPv6 addresses as InternalIPs.
	ipv6 atomic.Bool
}

type outsideHit struct {
	in *Instance
	at time.Time
}

var _ cloudprovider.InstancesV2 = (*Instances)(nil)

// NewInstances returns InstancesV2 over an index of the cluster VPC's
// instances; byID (may be nil) finds, by providerID, instances the index
// does not hold.
func NewInstances(index *Index, region string, byID IDLookup) *Instances {
	s := &Instances{index: index, region: region, byID: byID, outside: map[string]outsideHit{}}
	s.eniChecks = newSharedListing(index, "primary ENIs of VPC "+index.vpcID, s.listENIChecks)
	return s
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

// find returns the Node's instance, nil when it does not exist. A Node
// with a providerID the VPC's listing lacks is looked up by id without the
// VPC filter, as the existing CCM looks up providerIDs: its instance may be
// in another VPC, and a miss there is authoritative.
func (s *Instances) find(ctx context.Context, n *v1.Node) (*Instance, error) {
	if n.Spec.ProviderID != "" {
		region, id, err := providerid.Parse(n.Spec.ProviderID)
		if err != nil {
			return nil, err
		}
		in, err := s.index.ByID(ctx, id)
		if err != nil || in != nil || s.byID == nil {
			return in, err
		}
		return s.findOutside(ctx, n, region, id)
	}
	ip := nodeIP(n)
	if ip == "" {
		return nil, errNoAddress
	}
	return s.index.ByPrivateIP(ctx, ip)
}

// nodeIP is the kubelet's --node-ip (the first of a dual-stack pair),
// else the first InternalIP.
func nodeIP(n *v1.Node) string {
	if ip, _, _ := strings.Cut(n.Annotations[annotationProvidedNodeIP], ","); strings.TrimSpace(ip) != "" {
		return strings.TrimSpace(ip)
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
	if err == nil && in == nil && (n.Spec.ProviderID == "" || s.byID == nil) {
		// A miss deletes the Node: confirm it against a listing begun
		// after the miss, so an instance created after the cached listing
		// (a Node that just registered) is never taken for a gone one. A
		// providerID miss was already confirmed by id, across VPCs.
		in, err = s.find(s.index.Fresh(ctx), n)
	}
	countLookup("exists", in != nil, err)
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
	countLookup("shutdown", in != nil, err)
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
// Node. An excluded Node still tainted gets nil, which makes the controller
// skip its initialization; an initialized one gets metadata without
// addresses, which makes the periodic address update skip it (that path
// dereferences the metadata: nil there panics the process).
func (s *Instances) InstanceMetadata(ctx context.Context, n *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	if Excluded(n) {
		if uninitialized(n) {
			return nil, nil
		}
		return &cloudprovider.InstanceMetadata{}, nil
	}
	if uninitialized(n) {
		s.initStarted(n.Name, time.Now())
		// A kubelet registers its Node after its instance exists, so a
		// listing begun before this process first saw the Node cannot
		// prove the instance missing: such a miss waits for a newer
		// listing. Taken as final, it made the upstream controller retry
		// with a growing backoff and delayed initializations by seconds.
		ctx = s.index.Since(ctx, s.firstSeen(n))
	}
	in, err := s.find(ctx, n)
	countLookup("metadata", in != nil, err)
	if err != nil {
		s.event(n, v1.EventTypeWarning, ReasonAddFailed, "Looking up the ECS instance failed: %v", err)
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if in == nil {
		if uninitialized(n) {
			uninitializedNotFound.Inc()
		}
		s.event(n, v1.EventTypeWarning, ReasonAddFailed, "No ECS instance in VPC %s matches providerID %q or InternalIP %q", s.index.vpcID, n.Spec.ProviderID, nodeIP(n))
		return nil, fmt.Errorf("node %s: %w", n.Name, cloudprovider.InstanceNotFound)
	}
	if uninitialized(n) {
		if err := s.prepare(ctx, n, in); err != nil {
			// The upstream controller keeps the taint when this fails, so
			// the Node gets no pods until it succeeds.
			s.event(n, v1.EventTypeWarning, ReasonAddFailed, "Preparing ECS instance %s failed: %v", in.ID, err)
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
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
	if s.dualStack() {
		for _, ip := range in.IPv6s {
			md.NodeAddresses = append(md.NodeAddresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
		}
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
	md.AdditionalLabels = additionalLabels(in)
	return md, nil
}

// additionalLabels are the existing CCM's labels beyond upstream's.
func additionalLabels(in *Instance) map[string]string {
	out := map[string]string{}
	if in.ChargeType != "" {
		out[LabelChargeType] = in.ChargeType
	}
	if in.SpotStrategy != "" {
		out[LabelSpotStrategy] = in.SpotStrategy
	}
	if np := in.Tags[TagNodePoolID]; np != "" {
		out[LabelNodePoolID] = np
	}
	return out
}

// findOutside looks an instance up by id without the VPC filter; hits are
// cached for the index's MaxAge, misses never.
func (s *Instances) findOutside(ctx context.Context, n *v1.Node, region, id string) (*Instance, error) {
	s.outsideMu.Lock()
	hit, ok := s.outside[id]
	s.outsideMu.Unlock()
	if ok && time.Since(hit.at) < s.index.MaxAge {
		cp := *hit.in
		return &cp, nil
	}
	in, err := s.byID.InstanceByID(ctx, region, id)
	s.outsideMu.Lock()
	defer s.outsideMu.Unlock()
	if err != nil || in == nil {
		delete(s.outside, id)
		return nil, err
	}
	if !ok {
		klog.InfoS("Node's instance is not in the cluster VPC's listing; found by id", "node", klog.KObj(n), "instance", id,
			"instanceVPC", in.VpcID, "clusterVPC", s.index.vpcID, "status", in.Status)
	}
	s.outside[id] = outsideHit{in: in, at: time.Now()}
	cp := *in
	return &cp, nil
}
