package service

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// Pods on virtual-kubelet Nodes (ECI) have no ECS instance behind them to
// register, so with ecs backends the existing CCM registers each of them
// by its own ENI (pod IP, target port) next to the ECS Nodes; without
// that a Local Service whose pods all run on virtual Nodes would have no
// backends at all. These targets carry an IP and no InstanceID, and the
// backends resolver proves them like eni targets, with one more rule: the
// pod an endpoint names must run on the virtual Node the endpoint names.

// ValueVirtualKubelet is the value of LabelVirtualKubelet on virtual Nodes.
const ValueVirtualKubelet = "virtual-kubelet"

// IsVirtual reports whether n is a virtual-kubelet Node.
func IsVirtual(n *corev1.Node) bool {
	return n != nil && n.Labels[LabelVirtualKubelet] == ValueVirtualKubelet
}

// Roles a Node plays for the backends of one ecs Service (backendRole).
const (
	roleNone    = ""
	roleECS     = "ecs"
	roleVirtual = "virtual"
)

// backendRole is what Node n contributes to the backends of an ecs Service
// with settings s: itself (roleECS), the pods it runs (roleVirtual), or
// nothing. A nil Node contributes nothing.
func backendRole(n *corev1.Node, s *annotations.Settings) string {
	switch {
	case n == nil:
		return roleNone
	case IsVirtual(n):
		// The virtual Node's readiness, providerID and the
		// exclude-from-load-balancers labels do not count, as in the
		// existing CCM: it is the pods that are registered, not the Node,
		// and a virtual-kubelet's heartbeat says nothing about them.
		if commonExclusion(n, s) == "" {
			return roleVirtual
		}
		return roleNone
	case nodeExclusion(n, s) == "":
		return roleECS
	}
	return roleNone
}

// virtualSlices keeps, of slices, only the endpoints on the virtual Nodes
// whose pods may be backends of a Service with settings s (shallow copies;
// nil when there are none).
func virtualSlices(s *annotations.Settings, nodeList []*corev1.Node, slices []*cachedSlice) []*cachedSlice {
	eligible := map[string]bool{}
	for _, n := range nodeList {
		if backendRole(n, s) == roleVirtual {
			eligible[n.Name] = true
		}
	}
	if len(eligible) == 0 {
		return nil
	}
	var out []*cachedSlice
	for _, sl := range slices {
		var eps []sliceEndpoint
		for _, e := range sl.endpoints {
			if node, ok := e.nodeName(); ok && eligible[node] {
				eps = append(eps, e)
			}
		}
		if len(eps) > 0 {
			cp := *sl
			cp.endpoints = eps
			out = append(out, &cp)
		}
	}
	return out
}

// virtualTargets returns, per Service port, the pods on eligible virtual
// Nodes as eni targets (weights left for the caller), and how many
// distinct pods they are.
func virtualTargets(svc *corev1.Service, s *annotations.Settings, nodeList []*corev1.Node, slices []*cachedSlice) (map[int32][]Target, int) {
	vs := virtualSlices(s, nodeList, slices)
	if len(vs) == 0 {
		return nil, 0
	}
	pods := 0
	for _, c := range localCounts(vs) {
		pods += c
	}
	out := map[int32][]Target{}
	for _, sp := range svc.Spec.Ports {
		out[sp.Port] = podTargets(sp, s, vs)
	}
	return out, pods
}

// onVirtualNode reports whether any endpoint of the slices runs on a
// virtual Node: an ecs Service with Cluster traffic policy depends on
// those endpoints (and on no other).
func (c *Controller) onVirtualNode(slices ...*cachedSlice) bool {
	for _, sl := range slices {
		if sl == nil {
			continue
		}
		for i := range sl.endpoints {
			name, ok := sl.endpoints[i].nodeName()
			if !ok {
				continue
			}
			if n, err := c.nodes.Get(name); err == nil && IsVirtual(n) {
				return true
			}
		}
	}
	return false
}
