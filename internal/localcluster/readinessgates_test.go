package localcluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestKwokHonoursReadinessGates: kwok runs a pod with a readiness gate but
// keeps it not Ready until a controller sets the gate's condition True, and
// takes Ready away when the condition goes False, as the kubelet does; a pod
// without gates is Ready at once, as before.
func TestKwokHonoursReadinessGates(t *testing.T) {
	t.Parallel()
	cs := clientset(t)
	ctx := context.Background()
	ns := namespace(t, cs, "gates")
	node := "gates-node"
	n := kwokNode(node)
	// Its pods are bound by name; without the type label the scheduler
	// keeps other tests' kwok Deployments off it.
	delete(n.Labels, "type")
	if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const gate = "example.com/registered"
	pod := func(name string, gates ...corev1.PodConditionType) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{
				NodeName:   node,
				Containers: []corev1.Container{{Name: "c", Image: "nginx"}},
			},
		}
		for _, g := range gates {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
		}
		return p
	}
	for _, p := range []*corev1.Pod{pod("plain"), pod("gated", gate)} {
		// The namespace's default ServiceAccount appears a moment later.
		poll(t, 20*time.Second, "create pod "+p.Name, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			return err == nil, err
		})
	}
	cond := func(p *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
		for _, c := range p.Status.Conditions {
			if c.Type == typ {
				return c.Status
			}
		}
		return ""
	}
	expect := func(what, name string, want map[corev1.PodConditionType]corev1.ConditionStatus) {
		t.Helper()
		poll(t, 30*time.Second, what, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
				return false, fmt.Errorf("pod %s: phase %s, IP %q", name, p.Status.Phase, p.Status.PodIP)
			}
			for typ, st := range want {
				if got := cond(p, typ); got != st {
					return false, fmt.Errorf("pod %s: %s=%q, want %q", name, typ, got, st)
				}
			}
			return true, nil
		})
	}
	expect("the pod without gates Ready", "plain", map[corev1.PodConditionType]corev1.ConditionStatus{corev1.PodReady: corev1.ConditionTrue})
	notReady := map[corev1.PodConditionType]corev1.ConditionStatus{
		corev1.ContainersReady: corev1.ConditionTrue, corev1.PodReady: corev1.ConditionFalse, gate: "",
	}
	expect("the gated pod running but not Ready", "gated", notReady)
	// Nothing flips it on its own.
	time.Sleep(2 * time.Second)
	expect("the gated pod still not Ready", "gated", notReady)

	setGate := func(status corev1.ConditionStatus) {
		t.Helper()
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
			"type": gate, "status": status, "lastTransitionTime": metav1.Now(),
		}}}})
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, "gated", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	setGate(corev1.ConditionTrue)
	expect("the gated pod Ready once its gate is True", "gated", map[corev1.PodConditionType]corev1.ConditionStatus{
		corev1.PodReady: corev1.ConditionTrue, gate: corev1.ConditionTrue,
	})
	setGate(corev1.ConditionFalse)
	expect("the gated pod not Ready once its gate is False", "gated", map[corev1.PodConditionType]corev1.ConditionStatus{
		corev1.PodReady: corev1.ConditionFalse, gate: corev1.ConditionFalse,
	})
}
