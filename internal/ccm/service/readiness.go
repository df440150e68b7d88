package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
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
