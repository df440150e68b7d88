package service_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// TestLocalTrafficPolicyWeights: Cluster → Local moves the backends to the
// Nodes running ready pods, weighted by their count; scaling the
// Deployment changes the weights.
func TestLocalTrafficPolicyWeights(t *testing.T) {
	name := "local"
	cs := kube(t)
	ctx := context.Background()
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					Containers:  []corev1.Container{{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{})
	createService(t, svcSpec{name: name, ports: []int32{80}})
	svc := waitIngress(t, name, 30*time.Second)
	id := lbID(svc)
	group := naming.For(svc, clusterID).CLBVGroup(itoa(svc.Spec.Ports[0].NodePort))
	if n := len(groupMembers(t, id)[group]); n != nodeCount {
		t.Fatalf("Cluster policy: %d members, want %d", n, nodeCount)
	}
	updateService(t, name, func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal })
	for _, replicas := range []int32{1, 25} {
		if replicas != 1 {
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}})
			if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var want, lastGot map[string]int
		defer func() {
			if t.Failed() {
				t.Logf("Local weights: want %v, group has %v", want, lastGot)
			}
		}()
		took := poll(t, 40*time.Second, "Local weights", func(ctx context.Context) (bool, error) {
			want = readyPodsPerInstance(t, name)
			total := 0
			for _, c := range want {
				total += c
			}
			if total != int(replicas) {
				return false, nil
			}
			// Pods on the pod host (excluded from load balancers) are
			// no backends.
			delete(want, "")
			got := groupMembers(t, id)[group]
			lastGot = got
			if len(got) != len(want) {
				return false, nil
			}
			for inst, c := range want {
				if got[inst] != c {
					return false, nil
				}
			}
			return true, nil
		})
		t.Logf("%d replicas: members %v (instance → weight = ready pods) after %v", replicas, want, took.Round(time.Millisecond))
		if replicas > nodeCount {
			heavier := false
			for _, c := range want {
				heavier = heavier || c > 1
			}
			if !heavier {
				t.Errorf("%d replicas on %d Nodes but no weight above 1: %v", replicas, nodeCount, want)
			}
		}
	}
	deleteService(t, name)
}

func readyPodsPerInstance(t *testing.T, app string) map[string]int {
	t.Helper()
	pods, err := kube(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out[instances[p.Spec.NodeName]]++
			}
		}
	}
	return out
}

// TestCordonWithRemoveUnscheduled: a cordoned Node leaves the backends of
// Services that ask for it, and only theirs; uncordoning brings it back.
func TestCordonWithRemoveUnscheduled(t *testing.T) {
	cs := kube(t)
	ctx := context.Background()
	createService(t, svcSpec{name: "cordon-remove", ports: []int32{80}, annotations: map[string]string{annotations.Key("remove-unscheduled-backend"): "on"}})
	createService(t, svcSpec{name: "cordon-keep", ports: []int32{80}})
	remove := waitIngress(t, "cordon-remove", 30*time.Second)
	keep := waitIngress(t, "cordon-keep", 30*time.Second)
	node := nodeNames[0]
	setUnschedulable := func(v bool) {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": v}})
		if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	members := func(svc *corev1.Service) map[string]int {
		return groupMembers(t, lbID(svc))[naming.For(svc, clusterID).CLBVGroup(itoa(svc.Spec.Ports[0].NodePort))]
	}
	setUnschedulable(true)
	defer setUnschedulable(false)
	poll(t, 20*time.Second, "cordoned node removed", func(ctx context.Context) (bool, error) {
		m := members(remove)
		_, present := m[instances[node]]
		return len(m) == nodeCount-1 && !present, nil
	})
	if m := members(keep); len(m) != nodeCount {
		t.Errorf("the Service without the annotation has %d members, want %d", len(m), nodeCount)
	}
	setUnschedulable(false)
	poll(t, 20*time.Second, "uncordoned node back", func(ctx context.Context) (bool, error) {
		return len(members(remove)) == nodeCount, nil
	})
	deleteService(t, "cordon-remove")
	deleteService(t, "cordon-keep")
}
