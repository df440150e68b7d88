package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// Pod readiness gates of eni backends, as the existing CCM names them: a
// pod that lists ReadinessGate(<service>) in spec.readinessGates becomes
// Ready only once its IP is a backend of that Service's load balancer.
const (
	// ReadinessGatePrefix is followed by the Service's name.
	ReadinessGatePrefix = "service.readiness.alibabacloud.com/"
	// ReasonServerRegistered is the reason of a gate condition set True.
	ReasonServerRegistered = "ServerRegistered"
	// MessageServerRegistered is the message of a gate condition set True.
	MessageServerRegistered = "The backend has been added to the server group"
	// EventReadinessGateFailed is the Warning recorded on the Service when
	// a pod's gate condition could not be written.
	EventReadinessGateFailed = "FailedUpdateReadinessGate"
)

// ReadinessGate is the pod condition type that gates a pod's readiness on
// its registration in the load balancer of the Service named svc.
func ReadinessGate(svc string) corev1.PodConditionType {
	return corev1.PodConditionType(ReadinessGatePrefix + svc)
}

// gatedPod is a pod waiting for its readiness gate: registered by this
// sync, its gate condition is set True once the sync succeeded.
type gatedPod struct {
	namespace, name string
	uid             types.UID
	ip              string
}

// gateCache remembers, per Service, the pods known not to carry its gate.
// spec.readinessGates cannot change after a pod is created, so a pod is
// read once, not on every sync while it stays not ready; each sync keeps
// only the pods still in the Service's EndpointSlices.
type gateCache struct {
	m sync.Map // Service key → map[types.UID]bool
}

func (g *gateCache) get(key string) map[types.UID]bool {
	if v, ok := g.m.Load(key); ok {
		return v.(map[types.UID]bool)
	}
	return nil
}

func (g *gateCache) set(key string, ungated map[types.UID]bool) {
	if len(ungated) == 0 {
		g.m.Delete(key)
		return
	}
	g.m.Store(key, ungated)
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
func (c *Controller) admitGated(ctx context.Context, svc *corev1.Service, s *annotations.Settings, slices []*discoveryv1.EndpointSlice, pods *podView) ([]*discoveryv1.EndpointSlice, []gatedPod) {
	key := cache.MetaObjectToName(svc).String()
	if s == nil || s.Backend.Type != annotations.BackendENI {
		c.gates.set(key, nil)
		return slices, nil
	}
	gate := ReadinessGate(svc.Name)
	known := c.gates.get(key)
	ungated := map[types.UID]bool{}
	var pending []gatedPod
	out := slices
	copied := false
	for si, sl := range slices {
		var mine *discoveryv1.EndpointSlice
		for ei, e := range sl.Endpoints {
			ref := e.TargetRef
			if endpointReady(e) || ptr.Deref(e.Conditions.Terminating, false) || len(e.Addresses) == 0 ||
				ref == nil || ref.Kind != "Pod" || ref.Name == "" {
				continue
			}
			if ref.UID != "" && known[ref.UID] {
				ungated[ref.UID] = true
				continue
			}
			if ref.Namespace != "" && ref.Namespace != svc.Namespace {
				// Whoever writes the Service's EndpointSlices must not
				// reach another namespace's pods: their gates are never
				// read nor set from here.
				continue
			}
			ns := svc.Namespace
			pod, err := pods.pod(ctx, ref.Name)
			if err != nil {
				// The resolver fails the sync on the same listing error.
				klog.FromContext(ctx).V(2).Info("Cannot read a not-ready endpoint's pod for its readiness gate", "pod", klog.KRef(ns, ref.Name), "err", err)
				continue
			}
			if pod == nil {
				continue
			}
			if ref.UID != "" && pod.UID != ref.UID {
				continue // a new pod of the same name: the slice is behind
			}
			if !holds(pod, e.Addresses[0]) {
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
					out = append([]*discoveryv1.EndpointSlice(nil), slices...)
					copied = true
				}
				mine = sl.DeepCopy()
				out[si] = mine
			}
			mine.Endpoints[ei].Conditions.Ready = ptr.To(true)
			if !gateTrue {
				pending = append(pending, gatedPod{namespace: ns, name: pod.Name, uid: pod.UID, ip: e.Addresses[0]})
			}
		}
	}
	c.gates.set(key, ungated)
	sort.Slice(pending, func(i, j int) bool { return pending[i].ip < pending[j].ip })
	return out, pending
}

// markRegistered sets the readiness gate condition True on the pending
// pods whose IP the successful sync registered, each with one status
// patch; pods the backends resolver kept out (no ENI holds the IP yet, or
// refused) wait for a later sync. A failed patch is a Warning on the Service and
// fails the sync, so that it is retried.
func (c *Controller) markRegistered(ctx context.Context, svc *corev1.Service, req *Request) error {
	if len(req.gated) == 0 {
		return nil
	}
	registered := map[string]bool{}
	for _, ts := range req.Backends {
		for _, t := range ts {
			if t.IP != "" {
				registered[t.IP] = true
			}
		}
	}
	gate := ReadinessGate(svc.Name)
	logger := klog.FromContext(ctx)
	var errs []error
	for _, p := range req.gated {
		if !registered[p.ip] {
			logger.V(2).Info("Pod not registered in the load balancer yet; its readiness gate waits", "pod", klog.KRef(p.namespace, p.name), "ip", p.ip)
			continue
		}
		patch, _ := json.Marshal(map[string]any{
			// The uid makes the patch fail rather than mark a new pod of
			// the same name.
			"metadata": map[string]any{"uid": p.uid},
			"status": map[string]any{"conditions": []map[string]any{{
				"type": gate, "status": corev1.ConditionTrue, "reason": ReasonServerRegistered,
				"message": MessageServerRegistered, "lastTransitionTime": metav1.NewTime(time.Now()),
			}}},
		})
		_, err := c.kube.CoreV1().Pods(p.namespace).Patch(ctx, p.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			c.recorder.Eventf(svc, corev1.EventTypeWarning, EventReadinessGateFailed, "Setting readiness gate %s of pod %s: %v", gate, p.name, err)
			errs = append(errs, fmt.Errorf("set readiness gate %s of pod %s/%s: %w", gate, p.namespace, p.name, err))
			continue
		}
		logger.V(2).Info("Pod registered in the load balancer; readiness gate set", "pod", klog.KRef(p.namespace, p.name), "ip", p.ip, "gate", gate)
	}
	return errors.Join(errs...)
}

// holds reports whether ip is one of the pod's addresses.
func holds(pod *corev1.Pod, ip string) bool {
	for _, p := range pod.Status.PodIPs {
		if p.IP == ip {
			return true
		}
	}
	return pod.Status.PodIP == ip && ip != ""
}

func hasReadinessGate(pod *corev1.Pod, gate corev1.PodConditionType) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == gate {
			return true
		}
	}
	return false
}

func podCondition(pod *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}
