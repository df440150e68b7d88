package service

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// newBucket bounds the overall requeue rate so that a mass failure does not
// hammer the cloud (10 per second, bursts of 100).
func newBucket() *rate.Limiter { return rate.NewLimiter(rate.Limit(10), 100) }

func hasFinalizer(svc *corev1.Service, f string) bool {
	for _, x := range svc.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

// addFinalizer patches the finalizer in before any cloud resource exists,
// so a Service deleted meanwhile still gets its resources cleaned up.
func (c *Controller) addFinalizer(ctx context.Context, svc *corev1.Service, f string) error {
	if hasFinalizer(svc, f) {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": []string{f}}})
	out, err := c.kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("add finalizer %s to Service %s/%s: %w", f, svc.Namespace, svc.Name, err)
	}
	svc.Finalizers = out.Finalizers
	return nil
}

// writeBack is what a sync writes back to its Service.
type writeBack struct {
	// labels are set; "" removes one.
	labels map[string]string
	// status, when set, writes ingress as status.loadBalancer.
	status  bool
	ingress []corev1.LoadBalancerIngress
	// dropFinalizer is a finalizer to remove ("" none).
	dropFinalizer string
}

// write applies w in as few API writes as it can: none when nothing
// differs (a converged Service costs the API server nothing), one patch of
// the Service when only metadata differs, and one patch of its status
// subresource, metadata included, when the status differs. The status
// subresource of a Service takes metadata changes along; should an API
// server drop them, they are written by a second patch of the Service.
func (c *Controller) write(ctx context.Context, svc *corev1.Service, w writeBack) error {
	labels := labelChanges(svc, w.labels)
	cur, ingress := svc.Status.LoadBalancer.Ingress, w.ingress
	status := w.status && !(len(cur) == 0 && len(ingress) == 0 || sameIngress(cur, ingress))
	drop := w.dropFinalizer != "" && hasFinalizer(svc, w.dropFinalizer)
	if len(labels) == 0 && !status && !drop {
		return nil
	}
	meta := map[string]any{}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if drop {
		meta["$deleteFromPrimitiveList/finalizers"] = []string{w.dropFinalizer}
	}
	body := map[string]any{}
	if len(meta) > 0 {
		body["metadata"] = meta
	}
	var sub []string
	if status {
		if ingress == nil {
			ingress = []corev1.LoadBalancerIngress{}
		}
		body["status"] = map[string]any{"loadBalancer": map[string]any{"ingress": ingress}}
		sub = []string{"status"}
	}
	out, err := c.patch(ctx, svc, body, sub...)
	if err != nil {
		return fmt.Errorf("write labels, status or finalizers of Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if status && len(meta) > 0 && !metaApplied(out, labels, w.dropFinalizer, drop) {
		klog.FromContext(ctx).V(2).Info("The status subresource did not take the metadata along; patching it apart", "service", svc.Namespace+"/"+svc.Name)
		if out, err = c.patch(ctx, svc, map[string]any{"metadata": meta}); err != nil {
			return fmt.Errorf("write labels or finalizers of Service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
	}
	svc.Labels, svc.Finalizers = out.Labels, out.Finalizers
	if status {
		svc.Status.LoadBalancer.Ingress = ingress
	}
	return nil
}

// patch sends a strategic merge patch of the Service (or of its
// subresource).
func (c *Controller) patch(ctx context.Context, svc *corev1.Service, body map[string]any, subresource ...string) (*corev1.Service, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return c.kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, subresource...)
}

// labelChanges are the labels of want that differ from svc's, nil for a
// label to remove.
func labelChanges(svc *corev1.Service, want map[string]string) map[string]any {
	changes := map[string]any{}
	for k, v := range want {
		cur, ok := svc.Labels[k]
		switch {
		case v == "" && ok:
			changes[k] = nil
		case v != "" && cur != v:
			changes[k] = v
		}
	}
	return changes
}

// metaApplied reports whether out carries the label changes and, when
// dropped, no longer the finalizer.
func metaApplied(out *corev1.Service, labels map[string]any, finalizer string, dropped bool) bool {
	for k, v := range labels {
		cur, ok := out.Labels[k]
		if v == nil && ok || v != nil && cur != v {
			return false
		}
	}
	return !dropped || !hasFinalizer(out, finalizer)
}

// sameIngress compares a status with the one a provider wants. The API
// server defaults ipMode (VIP) on every IP entry and providers leave it
// unset, so an unset ipMode matches any.
func sameIngress(cur, want []corev1.LoadBalancerIngress) bool {
	if len(cur) != len(want) {
		return false
	}
	for i := range cur {
		c := cur[i]
		if want[i].IPMode == nil {
			c.IPMode = nil
		}
		if !reflect.DeepEqual(c, want[i]) {
			return false
		}
	}
	return true
}
