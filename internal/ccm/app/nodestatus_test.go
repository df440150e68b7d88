package app_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudapi "k8s.io/cloud-provider/api"
)

// TestNodeStatusKeptThroughInitialization: the CCM's Node cache drops most
// of a Node's status (service.slimNode), and the upstream node controller
// initializes a Node by an Update of its cached copy and patches its
// addresses from it; the status fields the cache dropped are still the
// kubelet's afterwards.
func TestNodeStatusKeptThroughInitialization(t *testing.T) {
	in := addInstances(t, 1)[0]
	cs := kube(t)
	name := nodeName("status")
	status := corev1.NodeStatus{
		Capacity:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
		Allocatable:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3800m"), corev1.ResourcePods: resource.MustParse("110")},
		NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.36.0", OSImage: "Alibaba Cloud Linux 3", Architecture: "amd64", OperatingSystem: "linux"},
		Images:          []corev1.ContainerImage{{Names: []string{"registry.example/app:v1"}, SizeBytes: 1 << 20}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.NodeSpec{
			ProviderID: cloud.Region() + "." + in.id,
			Taints:     []corev1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: status,
	}
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	var got *corev1.Node
	poll(t, 20*time.Second, "node initialized with its addresses", func(ctx context.Context) (bool, error) {
		var err error
		got, err = getNode(ctx, cs, name)
		if err != nil {
			return false, err
		}
		return !hasTaint(got, cloudapi.TaintExternalCloudProvider) && got.Labels[corev1.LabelTopologyZone] == in.zone && len(got.Status.Addresses) > 0, nil
	})
	if !reflect.DeepEqual(got.Status.NodeInfo, status.NodeInfo) || !reflect.DeepEqual(got.Status.Images, status.Images) ||
		!reflect.DeepEqual(got.Status.DaemonEndpoints, status.DaemonEndpoints) ||
		!got.Status.Capacity.Cpu().Equal(*status.Capacity.Cpu()) || !got.Status.Allocatable.Cpu().Equal(*status.Allocatable.Cpu()) {
		t.Errorf("status after initialization %+v, want the kubelet's %+v", got.Status, status)
	}
}
