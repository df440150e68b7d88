package service

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// The backends resolver: the one place that decides which eni backends a
// Service may register, for CLB and NLB alike. Whoever can edit a
// namespace can write EndpointSlices with any address and any targetRef,
// so an endpoint is a claim, not proof. A pod IP is registered only when
// the cloud shows it held by an ENI attached to the ECS instance of one of
// this cluster's Nodes (Terway pod ENIs are), or by the ENI of a pod's own
// ECI container group on a virtual Node of this cluster; when its endpoint
// names a pod, that pod is in the Service's namespace, Running, not being
// deleted, and holds the address now (read by this sync: podView); a
// Node's own address only through a host-network pod on that Node so
// named; and an endpoint that names no pod may not carry the address of
// another namespace's pod or of a Node. Anything else (a database VM's
// address, another namespace's pod, a completed pod's old address, a
// kubelet) is left out with a Warning, and the provider never sees it.

// EventBackendRejected is the Warning naming the endpoints the resolver
// refused to register.
const EventBackendRejected = "BackendRejected"

// ENI is what the resolver needs to know of one network interface.
type ENI struct {
	// ID is the network interface id.
	ID string
	// InstanceID is the ECS instance it is attached to ("" when none, or an
	// ECI container group's id).
	InstanceID string
	// IPs are its private IPv4 addresses.
	IPs []string
}

// ENILookup finds the ENIs holding private IPs in the cluster's VPC.
type ENILookup interface {
	// ENIsOf returns the ENIs holding any of ips.
	ENIsOf(ctx context.Context, ips []string) ([]ENI, error)
}

// CloudENIs is the ENILookup of a VPC through ECS DescribeNetworkInterfaces,
// 100 addresses a call.
type CloudENIs struct {
	// Client is the cloud client.
	Client *cloud.Client
	// VpcID is the cluster's VPC.
	VpcID string
}

// ENIsOf implements ENILookup.
func (l CloudENIs) ENIsOf(ctx context.Context, ips []string) ([]ENI, error) {
	var out []ENI
	for _, part := range cloud.Chunks(ips, 100) {
		req := ecs.CreateDescribeNetworkInterfacesRequest()
		req.VpcId = l.VpcID
		req.PrivateIpAddress = &part
		req.PageSize = requests.NewInteger(100)
		resp, err := cloud.Do(ctx, l.Client, cloud.ECS, "DescribeNetworkInterfaces", func(c *cloud.Clients) (*ecs.DescribeNetworkInterfacesResponse, error) {
			return c.ECS.DescribeNetworkInterfaces(req)
		})
		if err != nil {
			return nil, fmt.Errorf("find the ENIs of pod IPs: %w", err)
		}
		for _, n := range resp.NetworkInterfaceSets.NetworkInterfaceSet {
			e := ENI{ID: n.NetworkInterfaceId, InstanceID: n.InstanceId, IPs: []string{n.PrivateIpAddress}}
			for _, s := range n.PrivateIpSets.PrivateIpSet {
				if s.PrivateIpAddress != n.PrivateIpAddress {
					e.IPs = append(e.IPs, s.PrivateIpAddress)
				}
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// AnnotationECIInstance is the annotation a virtual-kubelet Node's
// provider puts on each pod it runs as an ECI container group, naming the
// group ("eci-..."), once the pod is scheduled
// (https://www.alibabacloud.com/help/en/eci/user-guide/pod-annotations-1,
// "annotations added after pods are scheduled": k8s.aliyun.com/eci-instance-id).
const AnnotationECIInstance = "k8s.aliyun.com/eci-instance-id"

// eciPrefix starts the id of every ECI container group; an ENI of an ECS
// instance (i-...) is never a virtual Node pod's own.
const eciPrefix = "eci-"

// MaxUntargetedEndpoints is how many distinct addresses of endpoints
// without a targetRef one Service may have registered. Such endpoints are
// hand-written (selector-less Services); each costs a lookup of who holds
// it, and more could not be registered anyway: a CLB takes 200 backend
// servers by default (an NLB server group 400). The addresses beyond it,
// in address order, are left out with a Warning naming the count and the
// cap.
const MaxUntargetedEndpoints = 200

// EventUntargetedCapped is the Warning of a Service with more endpoints
// without a targetRef than MaxUntargetedEndpoints.
const EventUntargetedCapped = "TooManyUntargetedEndpoints"

// podFact is what the resolver needs of a pod named by an endpoint, as the
// pod is now (read by this sync, never remembered).
type podFact struct {
	ips         []string
	node        string
	phase       corev1.PodPhase
	deleting    bool
	hostNetwork bool
	// eci is the pod's ECI container group (AnnotationECIInstance).
	eci string
}

// factOf is the podFact of p.
func factOf(p *corev1.Pod) podFact {
	return podFact{ips: podAddresses(p), node: p.Spec.NodeName, phase: p.Status.Phase, deleting: p.DeletionTimestamp != nil,
		hostNetwork: p.Spec.HostNetwork, eci: p.Annotations[AnnotationECIInstance]}
}

// Cluster is the cluster side of the resolver: which instances and which
// virtual Nodes are this cluster's, and whose the Nodes' addresses are.
type Cluster struct {
	// Instances are the ECS instance ids of the cluster's Nodes.
	Instances map[string]bool
	// Virtual are the names of its virtual-kubelet Nodes.
	Virtual map[string]bool
	// NodeAddrs maps every address of every Node (InternalIP, ExternalIP,
	// ...) to the Node's name.
	NodeAddrs map[string]string
}

// capUntargeted keeps in req.Backends the targets without a targetRef
// whose address is among the first max distinct ones in address order,
// and returns how many distinct such addresses there were.
func capUntargeted(req *Request, max int) int {
	seen := map[string]bool{}
	var ips []string
	for _, ts := range req.Backends {
		for _, t := range ts {
			if t.Pod == nil && t.IP != "" && !seen[t.IP] {
				seen[t.IP] = true
				ips = append(ips, t.IP)
			}
		}
	}
	if len(ips) <= max {
		return len(ips)
	}
	slices.Sort(ips)
	over := map[string]string{}
	for _, ip := range ips[max:] {
		over[ip] = ""
	}
	for port, ts := range req.Backends {
		req.Backends[port] = slices.DeleteFunc(ts, func(t Target) bool { _, drop := over[t.IP]; return drop && t.Pod == nil })
	}
	return len(ips)
}

// foreignHolders finds which of req's eni targets without a targetRef
// are the address of a pod in another namespace: such an endpoint names
// no pod, so without this a namespace could put another team's pod behind
// its own load balancer by writing its address. One listing of the
// cluster's pods per sync answers for every address (podView).
func foreignHolders(ctx context.Context, view *podView, req *Request) (map[string]string, error) {
	out := map[string]string{}
	for _, ts := range req.Backends {
		for _, t := range ts {
			if t.Pod != nil || t.IP == "" {
				continue
			}
			if _, done := out[t.IP]; done {
				continue
			}
			p, err := view.holderElsewhere(ctx, t.IP)
			if err != nil {
				return nil, err
			}
			if p != nil {
				out[t.IP] = p.Namespace + "/" + p.Name
			}
		}
	}
	return out, nil
}

// dropTargets removes the targets whose address is in ips from req.
func dropTargets(req *Request, ips map[string]string) {
	if len(ips) == 0 {
		return
	}
	for port, ts := range req.Backends {
		req.Backends[port] = slices.DeleteFunc(ts, func(t Target) bool { _, drop := ips[t.IP]; return drop })
	}
}

// podFactsFor returns, by namespace/name, the facts of the pods of the
// Service's namespace that req's eni targets name, as they are now (one
// listing of the namespace per sync, podView). A pod that is gone, or
// replaced by a new one of the same name, is missing from the result (its
// targets are refused). A failed listing fails the sync.
func podFactsFor(ctx context.Context, view *podView, req *Request) (map[string]podFact, error) {
	out := map[string]podFact{}
	for _, ts := range req.Backends {
		for _, t := range ts {
			r := t.Pod
			if r == nil || r.Namespace != req.Service.Namespace || r.Name == "" {
				continue
			}
			name := r.Namespace + "/" + r.Name
			if _, done := out[name]; done {
				continue
			}
			pod, err := view.pod(ctx, r.Name)
			if err != nil {
				return nil, err
			}
			if pod == nil || r.UID != "" && pod.UID != r.UID {
				continue // gone, or a new pod of the same name: the slice is behind
			}
			out[name] = factOf(pod)
		}
	}
	return out, nil
}

// ResolveENIs applies the resolver's rules to req's eni targets: enis maps
// each registrable pod IP to its ENI; rejected says why each refused
// target was refused; unresolved are IPs no ENI holds (yet). pods are the
// facts of the pods the targets name, by namespace/name, as they are now
// (a named pod missing from it is gone and is refused).
//
// A target that names a pod is registered only when the pod is in the
// Service's namespace, Running and not being deleted, and holds the
// address now; a pod on a virtual Node only on the ENI of its own ECI
// container group. A Node's address is registered only through a
// host-network pod so named that runs on that Node, never through an
// endpoint that names no pod. With ecs backends (req.Settings says so) an
// eni target must name a pod that runs on the virtual Node its endpoint
// names: an endpoint's nodeName is only a claim.
func ResolveENIs(ctx context.Context, lookup ENILookup, cl *Cluster, pods map[string]podFact, req *Request) (enis map[string]string, rejected, unresolved []string, err error) {
	ns := req.Service.Namespace
	virtualOnly := req.Settings != nil && req.Settings.Backend.Type != annotations.BackendENI
	why := map[string]string{}
	// eci maps the address of a pod on a virtual Node to the ECI container
	// group whose ENI must hold it, and its pod.
	eci := map[string][2]string{}
	seen := map[string]bool{}
	var ips []string
	for _, ts := range req.Backends {
		for _, t := range ts {
			if t.IP == "" || seen[t.IP] {
				continue
			}
			seen[t.IP] = true
			reason, own := claimRefused(t, cl, pods, ns, virtualOnly)
			if reason != "" {
				why[t.IP] = reason
				continue
			}
			if own[0] != "" {
				eci[t.IP] = own
			}
			ips = append(ips, t.IP)
		}
	}
	enis = map[string]string{}
	if len(ips) > 0 {
		slices.Sort(ips)
		found, err := lookup.ENIsOf(ctx, ips)
		if err != nil {
			return nil, nil, nil, err
		}
		unresolved = provenHolders(ips, found, cl, eci, enis, why)
	}
	for _, w := range why {
		rejected = append(rejected, w)
	}
	slices.Sort(rejected)
	return enis, rejected, unresolved, nil
}

// claimRefused says why target t's claim on its address is refused (""
// when it stands) and, for a pod on a virtual Node, the ECI container
// group whose ENI must hold the address and the pod's name.
func claimRefused(t Target, cl *Cluster, pods map[string]podFact, ns string, virtualOnly bool) (string, [2]string) {
	node, nodeAddr := cl.NodeAddrs[t.IP]
	if virtualOnly && t.Pod == nil {
		return fmt.Sprintf("%s names no pod, and only pods on virtual Nodes are registered by address with ecs backends", t.IP), [2]string{}
	}
	if t.Pod == nil && nodeAddr {
		return fmt.Sprintf("%s has no targetRef and is an address of Node %s: a Node's address is registered only for a running host-network pod of this namespace on that Node that the endpoint names", t.IP, node), [2]string{}
	}
	r := t.Pod
	if r == nil {
		return "", [2]string{}
	}
	name := r.Namespace + "/" + r.Name
	if r.Namespace != ns {
		return fmt.Sprintf("%s names pod %s in another namespace", t.IP, name), [2]string{}
	}
	f, ok := pods[name]
	switch {
	case !ok || !slices.Contains(f.ips, t.IP):
		return fmt.Sprintf("%s is not an address of pod %s", t.IP, name), [2]string{}
	case f.deleting:
		return fmt.Sprintf("%s is the address of pod %s, which is being deleted", t.IP, name), [2]string{}
	case f.phase != corev1.PodRunning:
		return fmt.Sprintf("%s was the address of pod %s, which is %s, not Running: the address may be another pod's now", t.IP, name, phaseName(f.phase)), [2]string{}
	case nodeAddr && (!f.hostNetwork || f.node != node):
		return fmt.Sprintf("%s is an address of Node %s, and pod %s is not a host-network pod on that Node", t.IP, node, name), [2]string{}
	case virtualOnly && !cl.Virtual[f.node]:
		return fmt.Sprintf("%s is the address of pod %s, which is on no virtual Node of this cluster", t.IP, name), [2]string{}
	case virtualOnly && f.node != t.NodeName:
		// The endpoint's Node was found eligible, not the pod's.
		return fmt.Sprintf("%s is the address of pod %s, which runs on %s, not on %s as its endpoint says", t.IP, name, f.node, t.NodeName), [2]string{}
	case cl.Virtual[f.node] && !strings.HasPrefix(f.eci, eciPrefix):
		return fmt.Sprintf("%s is the address of pod %s on virtual Node %s, which names no ECI container group (annotation %s)", t.IP, name, f.node, AnnotationECIInstance), [2]string{}
	case cl.Virtual[f.node]:
		return "", [2]string{f.eci, name}
	}
	return "", [2]string{}
}

// provenHolders checks who holds each of ips (found, the cloud's answer):
// the ENI of the pod's own ECI container group for a pod on a virtual Node
// (eci), else an ENI of one of the cluster's instances. It records the
// proven ones in enis and the refused ones in why, and returns the
// addresses no ENI holds (yet).
func provenHolders(ips []string, found []ENI, cl *Cluster, eci map[string][2]string, enis, why map[string]string) (unresolved []string) {
	holder := map[string]ENI{}
	for _, e := range found {
		for _, ip := range e.IPs {
			holder[ip] = e
		}
	}
	for _, ip := range ips {
		e, ok := holder[ip]
		own, virtual := eci[ip]
		switch {
		case !ok:
			unresolved = append(unresolved, ip)
		case virtual && e.InstanceID == own[0]:
			enis[ip] = e.ID
		case virtual:
			why[ip] = fmt.Sprintf("%s is held by %s of %s, not by ECI container group %s of pod %s", ip, e.ID, orNothing(e.InstanceID), own[0], own[1])
		case cl.Instances[e.InstanceID]:
			enis[ip] = e.ID
		case e.InstanceID == "":
			why[ip] = fmt.Sprintf("%s is held by %s, which is attached to no Node of this cluster", ip, e.ID)
		default:
			why[ip] = fmt.Sprintf("%s is held by %s of instance %s, which is no Node of this cluster", ip, e.ID, e.InstanceID)
		}
	}
	return unresolved
}

// phaseName is a pod phase for a message ("" is a pod not started yet).
func phaseName(p corev1.PodPhase) string {
	if p == "" {
		return "not started"
	}
	return string(p)
}

// orNothing names an ENI's instance for a message.
func orNothing(instance string) string {
	if instance == "" {
		return "no instance"
	}
	return instance
}

// foreignPods lists the not-ready endpoints of eni Services whose targetRef
// names a pod in another namespace: a readiness gate must never be read or
// set there, and the user is told why the endpoint stays out. (Ready ones
// reach ResolveENIs as targets and are refused there.)
func foreignPods(svc *corev1.Service, s *annotations.Settings, sls []*cachedSlice) []string {
	if s == nil || s.Backend.Type != annotations.BackendENI {
		return nil
	}
	var out []string
	for _, sl := range sls {
		for i := range sl.endpoints {
			e := &sl.endpoints[i]
			if e.ready() {
				continue
			}
			r, isPod := sl.pod(e)
			addr, ok := sl.address(e)
			if !isPod || r.namespace == "" || r.namespace == svc.Namespace || !ok {
				continue
			}
			out = append(out, fmt.Sprintf("%s names pod %s/%s in another namespace", addr, r.namespace, r.name))
		}
	}
	slices.Sort(out)
	return out
}

// hasPodTargets reports whether any target is a pod address (with ecs
// backends: a pod on a virtual Node).
func hasPodTargets(backends map[int32][]Target) bool {
	for _, ts := range backends {
		for _, t := range ts {
			if t.IP != "" {
				return true
			}
		}
	}
	return false
}
