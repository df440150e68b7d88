package service

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/providerid"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// The backends resolver: the one place that decides which eni backends a
// Service may register, for CLB and NLB alike. Whoever can edit a
// namespace can write EndpointSlices with any address and any targetRef,
// so an endpoint is a claim, not proof. A pod IP is registered only when
// the cloud shows it held by an ENI attached to the ECS instance of one of
// this cluster's Nodes (Terway pod ENIs are), or by the pod's own ENI on a
// virtual Node of this cluster (ECI); and when its endpoint names a pod,
// that pod is in the Service's namespace and holds the address. Anything
// else (a database VM's address, another namespace's pod) is left out with
// a Warning, and the provider never sees it.

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
	for _, part := range Chunks(ips, 100) {
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

// podFact is what the resolver needs of a pod named by an endpoint. A
// pod's IPs and Node do not change once set, so each pod is read once.
type podFact struct {
	ips  []string
	node string
}

// podFacts caches, per Service key, the facts of the pods its endpoints
// name; each resolution keeps only the pods still named.
type podFacts struct {
	m sync.Map // Service key → map[types.UID]podFact
}

// Cluster is the cluster side of the resolver: which instances and which
// virtual Nodes are this cluster's.
type Cluster struct {
	// Instances are the ECS instance ids of the cluster's Nodes.
	Instances map[string]bool
	// Virtual are the names of its virtual-kubelet Nodes.
	Virtual map[string]bool
}

// clusterFacts reads the Node cache.
func (c *Controller) clusterFacts() (*Cluster, error) {
	list, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	out := &Cluster{Instances: map[string]bool{}, Virtual: map[string]bool{}}
	for _, n := range list {
		if IsVirtual(n) {
			out.Virtual[n.Name] = true
			continue
		}
		if _, id, err := providerid.Parse(n.Spec.ProviderID); err == nil && id != "" {
			out.Instances[id] = true
		}
	}
	return out, nil
}

// resolveBackends proves req's eni targets before a provider sees them:
// it fills req.ENIs with the registrable ones, removes every other target
// from req.Backends (refused ones with a Warning, ones no ENI holds yet as
// req.Unregistered) and re-spreads the weight annotation over what is
// left. With ecs backends only the pods on virtual Nodes are eni targets;
// the Node targets, the cluster's own Nodes, are left as they are, and so
// are their weights (the shares stay in proportion).
func (c *Controller) resolveBackends(ctx context.Context, req *Request) error {
	if req.Settings == nil || c.opts.ENIs == nil {
		return nil
	}
	eni := req.Settings.Backend.Type == annotations.BackendENI
	if !eni && !hasPodTargets(req.Backends) {
		return nil
	}
	cl, err := c.clusterFacts()
	if err != nil {
		return err
	}
	claimed, err := foreignHolders(ctx, c.kube, req)
	if err != nil {
		return err
	}
	dropTargets(req, claimed)
	enis, rejected, unresolved, err := ResolveENIs(ctx, c.opts.ENIs, cl, c.podFactsFor(ctx, req), req)
	if err != nil {
		return err
	}
	for ip, pod := range claimed {
		rejected = append(rejected, fmt.Sprintf("%s has no targetRef and is the address of pod %s in another namespace", ip, pod))
	}
	sort.Strings(rejected)
	rejected = append(rejected, req.foreign...)
	req.ENIs, req.Unregistered = enis, unresolved
	for port, ts := range req.Backends {
		kept := ts[:0:0]
		for _, t := range ts {
			if _, ok := enis[t.IP]; ok || (!eni && t.IP == "") {
				kept = append(kept, t)
			}
		}
		if eni {
			for i := range kept {
				kept[i].Weight = weight(req.Settings, false, 1, len(kept), len(kept))
			}
		}
		req.Backends[port] = kept
	}
	if len(rejected) > 0 {
		c.warnOnce(req.Service, cache.MetaObjectToName(req.Service).String(), EventBackendRejected,
			"Not registering endpoints that are not this Service's pods on this cluster's Nodes: "+strings.Join(rejected, "; "))
	} else {
		c.notes.Delete(noteKey(cache.MetaObjectToName(req.Service).String(), EventBackendRejected))
	}
	return nil
}

// foreignHolders finds which of req's eni targets without a targetRef
// are the address of a pod in another namespace, by ip: such an endpoint
// names no pod, so without this a namespace could put another team's pod
// behind its own load balancer by writing its address. One filtered LIST
// per such address (selector-less Services with untargeted endpoints are
// rare); host-network pods are skipped, their address is their Node's.
// A failed LIST fails the sync: the address is not taken on trust.
func foreignHolders(ctx context.Context, kube kubernetes.Interface, req *Request) (map[string]string, error) {
	ns := req.Service.Namespace
	out := map[string]string{}
	seen := map[string]bool{}
	for _, ts := range req.Backends {
		for _, t := range ts {
			if t.Pod != nil || t.IP == "" || seen[t.IP] {
				continue
			}
			seen[t.IP] = true
			list, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
				FieldSelector:   fields.OneTermEqualSelector("status.podIP", t.IP).String(),
				ResourceVersion: "0", // the watch cache answers; no etcd read
			})
			if err != nil {
				return nil, fmt.Errorf("find the pod holding endpoint address %s: %w", t.IP, err)
			}
			for i := range list.Items {
				p := &list.Items[i]
				if p.Namespace == ns || p.Spec.HostNetwork || !holds(p, t.IP) {
					continue
				}
				out[t.IP] = p.Namespace + "/" + p.Name
				break
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

// podFactsFor reads the pods req's eni targets name (one GET per pod it
// has not read before) and returns their facts by namespace/name.
func (c *Controller) podFactsFor(ctx context.Context, req *Request) map[string]podFact {
	key := cache.MetaObjectToName(req.Service).String()
	var known map[types.UID]podFact
	if v, ok := c.pods.m.Load(key); ok {
		known = v.(map[types.UID]podFact)
	}
	keep := map[types.UID]podFact{}
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
			if f, ok := known[r.UID]; ok && r.UID != "" {
				keep[r.UID], out[name] = f, f
				continue
			}
			pod, err := c.kube.CoreV1().Pods(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
			if err != nil {
				if !apierrors.IsNotFound(err) {
					klog.FromContext(ctx).V(2).Info("Cannot read an endpoint's pod", "pod", klog.KRef(r.Namespace, r.Name), "err", err)
				}
				continue
			}
			if r.UID != "" && pod.UID != r.UID {
				continue // a new pod of the same name: the slice is behind
			}
			f := podFact{node: pod.Spec.NodeName}
			for _, ip := range pod.Status.PodIPs {
				f.ips = append(f.ips, ip.IP)
			}
			if len(f.ips) > 0 {
				keep[pod.UID] = f
			}
			out[name] = f
		}
	}
	if len(keep) == 0 {
		c.pods.m.Delete(key)
	} else {
		c.pods.m.Store(key, keep)
	}
	return out
}

// ResolveENIs applies the resolver's rules to req's eni targets: enis maps
// each registrable pod IP to its ENI; rejected says why each refused
// target was refused; unresolved are IPs no ENI holds (yet). pods are the
// facts of the pods the targets name, by namespace/name (a named pod
// missing from it could not be read and is refused). With ecs backends
// (req.Settings says so) an eni target must name a pod that runs on the
// virtual Node its endpoint names: an endpoint's nodeName is only a claim.
func ResolveENIs(ctx context.Context, lookup ENILookup, cl *Cluster, pods map[string]podFact, req *Request) (enis map[string]string, rejected, unresolved []string, err error) {
	ns := req.Service.Namespace
	virtualOnly := req.Settings != nil && req.Settings.Backend.Type != annotations.BackendENI
	why := map[string]string{}
	virtual := map[string]bool{}
	seen := map[string]bool{}
	var ips []string
	for _, ts := range req.Backends {
		for _, t := range ts {
			if t.IP == "" || seen[t.IP] {
				continue
			}
			seen[t.IP] = true
			if virtualOnly && t.Pod == nil {
				why[t.IP] = fmt.Sprintf("%s names no pod, and only pods on virtual Nodes are registered by address with ecs backends", t.IP)
				continue
			}
			if r := t.Pod; r != nil {
				if r.Namespace != ns {
					why[t.IP] = fmt.Sprintf("%s names pod %s/%s in another namespace", t.IP, r.Namespace, r.Name)
					continue
				}
				f, ok := pods[r.Namespace+"/"+r.Name]
				if !ok || !slices.Contains(f.ips, t.IP) {
					why[t.IP] = fmt.Sprintf("%s is not an address of pod %s/%s", t.IP, r.Namespace, r.Name)
					continue
				}
				switch {
				case virtualOnly && !cl.Virtual[f.node]:
					why[t.IP] = fmt.Sprintf("%s is the address of pod %s/%s, which is on no virtual Node of this cluster", t.IP, r.Namespace, r.Name)
					continue
				case virtualOnly && f.node != t.NodeName:
					// The endpoint's Node was found eligible, not the pod's.
					why[t.IP] = fmt.Sprintf("%s is the address of pod %s/%s, which runs on %s, not on %s as its endpoint says", t.IP, r.Namespace, r.Name, f.node, t.NodeName)
					continue
				case cl.Virtual[f.node]:
					virtual[t.IP] = true
				}
			}
			ips = append(ips, t.IP)
		}
	}
	enis = map[string]string{}
	if len(ips) > 0 {
		sort.Strings(ips)
		found, err := lookup.ENIsOf(ctx, ips)
		if err != nil {
			return nil, nil, nil, err
		}
		holder := map[string]ENI{}
		for _, e := range found {
			for _, ip := range e.IPs {
				holder[ip] = e
			}
		}
		for _, ip := range ips {
			e, ok := holder[ip]
			switch {
			case !ok:
				unresolved = append(unresolved, ip)
			case cl.Instances[e.InstanceID] || virtual[ip]:
				enis[ip] = e.ID
			case e.InstanceID == "":
				why[ip] = fmt.Sprintf("%s is held by %s, which is attached to no Node of this cluster", ip, e.ID)
			default:
				why[ip] = fmt.Sprintf("%s is held by %s of instance %s, which is no Node of this cluster", ip, e.ID, e.InstanceID)
			}
		}
	}
	for _, w := range why {
		rejected = append(rejected, w)
	}
	sort.Strings(rejected)
	return enis, rejected, unresolved, nil
}

// foreignPods lists the not-ready endpoints of eni Services whose targetRef
// names a pod in another namespace: a readiness gate must never be read or
// set there, and the user is told why the endpoint stays out. (Ready ones
// reach ResolveENIs as targets and are refused there.)
func foreignPods(svc *corev1.Service, s *annotations.Settings, slices []*discoveryv1.EndpointSlice) []string {
	if s == nil || s.Backend.Type != annotations.BackendENI {
		return nil
	}
	var out []string
	for _, sl := range slices {
		for _, e := range sl.Endpoints {
			r := e.TargetRef
			if endpointReady(e) || r == nil || r.Kind != "Pod" || r.Namespace == "" || r.Namespace == svc.Namespace || len(e.Addresses) == 0 {
				continue
			}
			out = append(out, fmt.Sprintf("%s names pod %s/%s in another namespace", e.Addresses[0], r.Namespace, r.Name))
		}
	}
	sort.Strings(out)
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
