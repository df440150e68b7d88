package service

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestSlimNode: the Node cache keeps metadata (but managedFields), spec,
// conditions and addresses whole and drops the rest of status.
func TestSlimNode(t *testing.T) {
	full := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "9",
			Labels:        map[string]string{"topology.kubernetes.io/zone": "cn-hangzhou-k"},
			Annotations:   map[string]string{"node.alpha.kubernetes.io/ttl": "0"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.NodeSpec{ProviderID: "cn-hangzhou.i-1", PodCIDR: "10.244.1.0/24",
			Taints: []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Allocatable:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3800m")},
			Phase:           corev1.NodeRunning,
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Message: "kubelet is posting ready status"}},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.1"}, {Type: corev1.NodeHostName, Address: "n1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.36.0", OSImage: "Alibaba Cloud Linux 3"},
			Images:          []corev1.ContainerImage{{Names: []string{"registry.example/app:v1"}, SizeBytes: 1 << 20}},
			VolumesInUse:    []corev1.UniqueVolumeName{"kubernetes.io/csi/disk^d-1"},
			VolumesAttached: []corev1.AttachedVolume{{Name: "kubernetes.io/csi/disk^d-1", DevicePath: "/dev/vdb"}},
			RuntimeHandlers: []corev1.NodeRuntimeHandler{{Name: "runc"}},
			Features:        &corev1.NodeFeatures{},
		},
	}
	orig := full.DeepCopy()
	out, err := slimNode(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	n := out.(*corev1.Node)
	wantMeta := orig.ObjectMeta
	wantMeta.ManagedFields = nil
	if !reflect.DeepEqual(n.ObjectMeta, wantMeta) || !reflect.DeepEqual(n.Spec, orig.Spec) {
		t.Errorf("metadata or spec changed:\n%+v\n%+v", n.ObjectMeta, n.Spec)
	}
	if want := (corev1.NodeStatus{Conditions: orig.Status.Conditions, Addresses: orig.Status.Addresses}); !reflect.DeepEqual(n.Status, want) {
		t.Errorf("status %+v, want %+v", n.Status, want)
	}
	if again, _ := slimNode(n.DeepCopy()); !reflect.DeepEqual(again, n) {
		t.Error("not idempotent")
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "n1", Obj: orig}
	if got, _ := slimNode(tomb); !reflect.DeepEqual(got, tomb) {
		t.Errorf("tombstone changed: %+v", got)
	}
}
