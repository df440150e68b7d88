package service

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/providerid"
)

// backendsResolver is the one place that answers which addresses are a
// Service's backends, for CLB and NLB alike: which Nodes are eligible
// (nodeExclusion, targets.go), which endpoints count (ready ones, and the
// not-ready ones admitted by their readiness gate: readiness.go), the
// pods on virtual Nodes (virtual.go), and the proof of every pod address
// and of the ENI that holds it (ResolveENIs, trust.go). The controller asks
// it at two points of a sync: candidates, from the informer caches alone,
// before the hash gate; prove, once the load balancer is bound, before the
// provider is called (in the full sync and in the backend-only pass). What
// prove leaves in the Request is final: the providers register it as it is.
type backendsResolver struct {
	kube       kubernetes.Interface
	nodes      corelisters.NodeLister
	sliceIndex cache.Indexer
	// enis finds the ENIs of pod addresses; nil: no eni backend is
	// registered.
	enis      ENILookup
	clusterID string
	// gates remembers the pods known not to carry a Service's readiness
	// gate (admitGated).
	gates gateCache
	// notes records the resolver's Warnings at the controller's rate.
	notes noter
}

// noter records a repeated Warning once per change or resync interval
// (warnOnce), and forgets it once its cause is gone (clearNote).
type noter interface {
	warnOnce(svc *corev1.Service, key, reason, message string)
	clearNote(key, reason string)
}

// candidates builds the Request of a sync from the informer caches alone
// (and, for pods with a readiness gate, the pods themselves: admitGated):
// the eligible Nodes and the endpoints that count, not yet proven. It
// makes no cloud call, so the hash gate can use it.
func (r *backendsResolver) candidates(ctx context.Context, svc *corev1.Service, settings *annotations.Settings) (*Request, error) {
	nodeList, err := r.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	all := r.slicesOf(svc)
	pods := newPodView(r.kube, svc.Namespace)
	slices, gated := r.admitGated(ctx, svc, settings, all, pods)
	return &Request{
		foreign: foreignPods(svc, settings, all), pods: pods,
		Service: svc, Settings: settings, ClusterID: r.clusterID, Identity: IdentityOf(svc, r.clusterID),
		Backends:       computeBackends(svc, settings, nodeList, slices),
		LoadBalancerID: svc.Labels[naming.LabelLoadBalancerID],
		gated:          gated,
	}, nil
}

// slicesOf returns the Service's EndpointSlices from the cache's index
// (sliceByService), not a scan of its namespace.
func (r *backendsResolver) slicesOf(svc *corev1.Service) []*cachedSlice {
	objs, err := r.sliceIndex.ByIndex(sliceByService, svc.Namespace+"/"+svc.Name)
	if err != nil || len(objs) == 0 {
		return nil
	}
	out := make([]*cachedSlice, 0, len(objs))
	for _, obj := range objs {
		if sl := sliceOf(obj); sl != nil {
			out = append(out, sl)
		}
	}
	return out
}

// admitGated lets the not-ready endpoints of pods that carry the Service's
// readiness gate into the backends (eni backends only): such a pod cannot
// become Ready before it is registered, so waiting for Ready would wait
// forever. Admitted are pods whose gate is not yet True (they are returned
// as pending, for markRegistered) and pods whose gate is True and whose
// containers are ready (Ready is about to follow; dropping them meanwhile
// would make the backend flap). A gated pod whose containers are not ready
// after its gate was set stays out, like any not-ready pod, and so do
// terminating endpoints.
//
// Pods come from the sync's one listing of the Service's namespace (pods),
// which the backends resolver then uses as well, rather than from a
// cluster-wide pod informer: caching every pod of the cluster costs memory
// in proportion to the cluster. Only the pods of not-ready endpoints are
// looked at, and a pod found without the gate is not looked at again
// (gateCache: spec.readinessGates cannot change), so a Service whose
// not-ready endpoints are all known ungated needs no listing. Whether an
// admitted pod is Running and holds its address is the resolver's check.
func (r *backendsResolver) admitGated(ctx context.Context, svc *corev1.Service, s *annotations.Settings, slices []*cachedSlice, pods *podView) ([]*cachedSlice, []gatedPod) {
	key := cache.MetaObjectToName(svc).String()
	if s == nil || s.Backend.Type != annotations.BackendENI {
		r.gates.set(key, nil)
		return slices, nil
	}
	gate := ReadinessGate(svc.Name)
	known := r.gates.get(key)
	ungated := map[types.UID]bool{}
	var pending []gatedPod
	out := slices
	copied := false
	for si, sl := range slices {
		var mine *cachedSlice
		for ei := range sl.endpoints {
			e := &sl.endpoints[ei]
			if e.ready() || e.terminating() {
				continue // only these read the pod (its UID is formatted on read)
			}
			ref, isPod := sl.pod(e)
			addr, hasAddr := sl.address(e)
			if !hasAddr || !isPod || ref.name == "" {
				continue
			}
			if ref.uid != "" && known[ref.uid] {
				ungated[ref.uid] = true
				continue
			}
			if ref.namespace != "" && ref.namespace != svc.Namespace {
				// Whoever writes the Service's EndpointSlices must not
				// reach another namespace's pods: their gates are never
				// read nor set from here.
				continue
			}
			ns := svc.Namespace
			pod, err := pods.pod(ctx, ref.name)
			if err != nil {
				// The resolver fails the sync on the same listing error.
				klog.FromContext(ctx).V(2).Info("Cannot read a not-ready endpoint's pod for its readiness gate", "pod", klog.KRef(ns, ref.name), "err", err)
				continue
			}
			if pod == nil {
				continue
			}
			if ref.uid != "" && pod.UID != ref.uid {
				continue // a new pod of the same name: the slice is behind
			}
			if !holds(pod, addr) {
				continue // a hand-written endpoint claiming the pod
			}
			if !hasReadinessGate(pod, gate) {
				ungated[pod.UID] = true
				continue
			}
			gateTrue := podCondition(pod, gate) == corev1.ConditionTrue
			if pod.DeletionTimestamp != nil || gateTrue && podCondition(pod, corev1.ContainersReady) != corev1.ConditionTrue {
				continue
			}
			if mine == nil {
				if !copied {
					out = append([]*cachedSlice(nil), slices...)
					copied = true
				}
				mine = sl.deepCopy()
				out[si] = mine
			}
			mine.endpoints[ei].flags &^= epNotReady
			if !gateTrue {
				pending = append(pending, gatedPod{namespace: ns, name: pod.Name, uid: pod.UID, ip: addr})
			}
		}
	}
	r.gates.set(key, ungated)
	sort.Slice(pending, func(i, j int) bool { return pending[i].ip < pending[j].ip })
	return out, pending
}

// prove proves req's eni targets before a provider sees them:
// it sets the ENI of the registrable ones, removes every other target
// from req.Backends (refused ones with a Warning, ones no ENI holds yet as
// req.Unregistered) and re-spreads the weight annotation over what is
// left. With ecs backends only the pods on virtual Nodes are eni targets;
// the Node targets, the cluster's own Nodes, are left as they are, and so
// are their weights (the shares stay in proportion).
func (r *backendsResolver) prove(ctx context.Context, req *Request) error {
	if req.Settings == nil {
		return nil
	}
	if r.enis == nil {
		// No ENI can be proven: no pod address is registered.
		for port, ts := range req.Backends {
			req.Backends[port] = slices.DeleteFunc(ts, func(t Target) bool { return t.IP != "" })
		}
		return nil
	}
	eni := req.Settings.Backend.Type == annotations.BackendENI
	if !eni && !hasPodTargets(req.Backends) {
		return nil
	}
	cl, err := r.clusterFacts()
	if err != nil {
		return err
	}
	if req.pods == nil {
		req.pods = newPodView(r.kube, req.Service.Namespace)
	}
	key := cache.MetaObjectToName(req.Service).String()
	if n := capUntargeted(req, MaxUntargetedEndpoints); n > MaxUntargetedEndpoints {
		r.notes.warnOnce(req.Service, key, EventUntargetedCapped, fmt.Sprintf(
			"%d endpoints without a targetRef, more than the %d registered per Service: the %d addresses after the first %d in address order are not registered",
			n, MaxUntargetedEndpoints, n-MaxUntargetedEndpoints, MaxUntargetedEndpoints))
	} else {
		r.notes.clearNote(key, EventUntargetedCapped)
	}
	claimed, err := foreignHolders(ctx, req.pods, req)
	if err != nil {
		return err
	}
	dropTargets(req, claimed)
	facts, err := podFactsFor(ctx, req.pods, req)
	if err != nil {
		return err
	}
	enis, rejected, unresolved, err := ResolveENIs(ctx, r.enis, cl, facts, req)
	if err != nil {
		return err
	}
	for ip, pod := range claimed {
		rejected = append(rejected, fmt.Sprintf("%s has no targetRef and is the address of pod %s in another namespace", ip, pod))
	}
	sort.Strings(rejected)
	rejected = append(rejected, req.foreign...)
	req.Unregistered = unresolved
	for port, ts := range req.Backends {
		kept := ts[:0:0]
		for _, t := range ts {
			if id, ok := enis[t.IP]; ok {
				t.ENI = id
				kept = append(kept, t)
			} else if !eni && t.IP == "" {
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
		r.notes.warnOnce(req.Service, key, EventBackendRejected,
			"Not registering endpoints that are not this Service's pods on this cluster's Nodes: "+strings.Join(rejected, "; "))
	} else {
		r.notes.clearNote(key, EventBackendRejected)
	}
	return nil
}

// clusterFacts reads the Node cache.
func (r *backendsResolver) clusterFacts() (*Cluster, error) {
	list, err := r.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	out := &Cluster{Instances: map[string]bool{}, Virtual: map[string]bool{}, NodeAddrs: map[string]string{}}
	for _, n := range list {
		for _, a := range n.Status.Addresses {
			if net.ParseIP(a.Address) != nil {
				out.NodeAddrs[a.Address] = n.Name
			}
		}
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
