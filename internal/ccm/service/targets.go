package service

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/providerid"
)

// Node labels and taints that keep a Node out of load balancer backends
// (but not out of the cluster).
const (
	// LabelExcludeFromLB is the upstream exclusion label.
	LabelExcludeFromLB = "node.kubernetes.io/exclude-from-external-load-balancers"
	// LabelExcludeBalancer is its older alpha form.
	LabelExcludeBalancer = "alpha.service-controller.kubernetes.io/exclude-balancer"
	// LabelRoleMaster marks legacy control-plane Nodes.
	LabelRoleMaster = "node-role.kubernetes.io/master"
	// LabelRoleControlPlane marks control-plane Nodes.
	LabelRoleControlPlane = "node-role.kubernetes.io/control-plane"
	// TaintToBeDeleted is set by the cluster autoscaler on Nodes it drains.
	TaintToBeDeleted = "ToBeDeletedByClusterAutoscaler"
	// LabelVirtualKubelet marks virtual-kubelet Nodes (no ECS instance).
	LabelVirtualKubelet = "type"
)

// nodeExclusion says why a Node cannot be a backend of a Service with
// settings s ("" = it can), so decisions can be logged.
func nodeExclusion(n *corev1.Node, s *annotations.Settings) string {
	if IsVirtual(n) {
		return "virtual-kubelet" // its pods may be backends (virtualTargets)
	}
	if why := commonExclusion(n, s); why != "" {
		return why
	}
	if v, ok := n.Labels[LabelExcludeFromLB]; ok {
		if b, err := strconv.ParseBool(v); err != nil || b {
			return LabelExcludeFromLB
		}
	}
	if _, ok := n.Labels[LabelExcludeBalancer]; ok {
		return LabelExcludeBalancer
	}
	if !nodeReady(n) {
		return "not Ready"
	}
	if _, _, err := providerid.Parse(n.Spec.ProviderID); err != nil {
		return "no ECS providerID yet"
	}
	return ""
}

// commonExclusion says why neither a Node nor the pods it runs can be
// backends of a Service with settings s ("" = they can): what keeps ECS
// and virtual-kubelet Nodes out alike.
func commonExclusion(n *corev1.Node, s *annotations.Settings) string {
	switch {
	case n.DeletionTimestamp != nil:
		return "being deleted"
	case nodes.Excluded(n):
		return "excluded from the CCM"
	}
	for _, l := range []string{LabelRoleMaster, LabelRoleControlPlane} {
		if _, ok := n.Labels[l]; ok {
			return l
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == TaintToBeDeleted {
			return TaintToBeDeleted
		}
	}
	if s.Backend.RemoveUnscheduled && n.Spec.Unschedulable {
		return "unschedulable"
	}
	if len(s.Backend.Labels) > 0 && !s.BackendSelector().Matches(labels.Set(n.Labels)) {
		return "does not match backend-label"
	}
	return ""
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// localCounts returns the number of ready endpoints per Node name.
func localCounts(slices []*cachedSlice) map[string]int {
	seen := map[string]bool{}
	out := map[string]int{}
	for _, sl := range slices {
		for i := range sl.endpoints {
			e := &sl.endpoints[i]
			key, ok := sl.address(e)
			node, onNode := e.nodeName()
			if !e.ready() || !onNode || !ok {
				continue
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			out[node]++
		}
	}
	return out
}

// ComputeBackends decides the targets of every Service port: with ecs
// backends the eligible Nodes on the nodePort (with Local traffic policy
// only those running ready endpoints, weighted by their number) and the
// ready pods on virtual Nodes on their target port, each weighing as one
// endpoint; with eni backends the ready pod IPs on their target port.
func ComputeBackends(svc *corev1.Service, s *annotations.Settings, nodeList []*corev1.Node, slices []*discoveryv1.EndpointSlice) map[int32][]Target {
	return computeBackends(svc, s, nodeList, compactSlices(slices))
}

// computeBackends is ComputeBackends on the slices as the cache holds them.
func computeBackends(svc *corev1.Service, s *annotations.Settings, nodeList []*corev1.Node, slices []*cachedSlice) map[int32][]Target {
	out := map[int32][]Target{}
	if s.Backend.Type == annotations.BackendENI {
		for _, sp := range svc.Spec.Ports {
			out[sp.Port] = podTargets(sp, s, slices)
		}
		return out
	}
	local := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	counts := localCounts(slices)
	type cand struct {
		node     *corev1.Node
		instance string
		count    int
	}
	var cands []cand
	total := 0
	for _, n := range nodeList {
		if nodeExclusion(n, s) != "" {
			continue
		}
		c := 1
		if local {
			c = counts[n.Name]
			if c == 0 {
				continue
			}
		}
		_, id, _ := providerid.Parse(n.Spec.ProviderID)
		cands = append(cands, cand{node: n, instance: id, count: c})
		total += c
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].node.Name < cands[j].node.Name })
	virtual, pods := virtualTargets(svc, s, nodeList, slices)
	total += pods
	for _, sp := range svc.Spec.Ports {
		targets := make([]Target, 0, len(cands)+len(virtual[sp.Port]))
		for _, c := range cands {
			targets = append(targets, Target{
				NodeName: c.node.Name, InstanceID: c.instance, Port: sp.NodePort,
				Weight: weight(s, local, c.count, total, len(cands)+pods),
			})
		}
		for _, t := range virtual[sp.Port] {
			t.Weight = weight(s, local, 1, total, len(cands)+pods)
			targets = append(targets, t)
		}
		out[sp.Port] = targets
	}
	return out
}

// weight of one backend: the weight annotation is a total shared in
// proportion to endpoints (Local) or evenly; otherwise Local weighs a Node
// by its endpoint count and Cluster uses default-weight.
func weight(s *annotations.Settings, local bool, count, total, n int) int {
	if s.Backend.Weight != nil {
		w := *s.Backend.Weight
		if w == 0 || total == 0 {
			return 0
		}
		share := w * count / total
		if !local {
			share = w / n
		}
		return max(1, share)
	}
	if local {
		return min(100, max(1, count))
	}
	return annotations.Or(s.Backend.DefaultWeight, annotations.DefaultWeight)
}

// podTargets are the ready endpoints of one Service port (eni backends).
func podTargets(sp corev1.ServicePort, s *annotations.Settings, slices []*cachedSlice) []Target {
	var ips []Target
	seen := map[string]bool{}
	for _, sl := range slices {
		port := int32(0)
		for _, p := range sl.ports {
			if p.port != 0 && p.name == sp.Name {
				port = p.port
			}
		}
		if port == 0 {
			continue
		}
		for i := range sl.endpoints {
			e := &sl.endpoints[i]
			addr, ok := sl.address(e)
			if !e.ready() || !ok || seen[addr] {
				continue
			}
			seen[addr] = true
			t := Target{IP: addr, Port: port}
			t.NodeName, _ = e.nodeName()
			if p, ok := sl.pod(e); ok {
				t.Pod = podObjectRef(p, sl.Namespace)
			}
			ips = append(ips, t)
		}
	}
	sort.Slice(ips, func(i, j int) bool { return ips[i].IP < ips[j].IP })
	for i := range ips {
		ips[i].Weight = weight(s, false, 1, len(ips), len(ips))
	}
	return ips
}

func ptrName(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
