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

func (c *Controller) removeFinalizer(ctx context.Context, svc *corev1.Service, f string) error {
	if !hasFinalizer(svc, f) {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []string{f}}})
	_, err := c.kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("remove finalizer %s from Service %s/%s: %w", f, svc.Namespace, svc.Name, err)
	}
	return nil
}

// patchLabels sets (or, for "", removes) labels, writing only when
// something differs.
func (c *Controller) patchLabels(ctx context.Context, svc *corev1.Service, want map[string]string) error {
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
	if len(changes) == 0 {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": changes}})
	out, err := c.kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("label Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	svc.Labels = out.Labels
	return nil
}

// patchStatus writes status.loadBalancer only when it changed.
func (c *Controller) patchStatus(ctx context.Context, svc *corev1.Service, ingress []corev1.LoadBalancerIngress) error {
	cur := svc.Status.LoadBalancer.Ingress
	if len(cur) == 0 && len(ingress) == 0 || sameIngress(cur, ingress) {
		return nil
	}
	if ingress == nil {
		ingress = []corev1.LoadBalancerIngress{}
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": ingress}}})
	_, err := c.kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("update status of Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	svc.Status.LoadBalancer.Ingress = ingress
	return nil
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
