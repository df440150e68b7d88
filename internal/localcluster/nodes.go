package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudapi "k8s.io/cloud-provider/api"
)

// KubeletNode describes a Node as a kubelet started with
// --cloud-provider=external and --node-ip registers it.
type KubeletNode struct {
	// Name is the Node name (the kubelet's --hostname-override).
	Name string
	// InternalIP is the kubelet's --node-ip.
	InternalIP string
	// Labels are extra labels.
	Labels map[string]string
	// Kwok makes kwok keep the Node Ready (the annotation kwok.x-k8s.io/node=fake).
	Kwok bool
	// Ready registers the Node Ready, as a kubelet whose node is ready at
	// once; otherwise it has no Ready condition until kwok reports one, and
	// the lifecycle controller meanwhile treats it as NotReady (it deletes
	// a NotReady Node whose instance does not exist).
	Ready bool
}

// RegisterKubeletNode creates the Node with the uninitialized taint, no
// providerID and the provided-node-ip annotation, then reports its
// addresses in status, as kubelet does.
func RegisterKubeletNode(ctx context.Context, cs kubernetes.Interface, k KubeletNode) (*corev1.Node, error) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        k.Name,
			Labels:      map[string]string{"kubernetes.io/hostname": k.Name, "kubernetes.io/os": "linux"},
			Annotations: map[string]string{cloudapi.AnnotationAlphaProvidedIPAddr: k.InternalIP},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
			Key: cloudapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule,
		}}},
	}
	for key, v := range k.Labels {
		n.Labels[key] = v
	}
	if k.Kwok {
		n.Annotations[KwokNodeAnnotation] = KwokNodeValue
	}
	if k.Ready {
		// Kept on create, as a kubelet's registration keeps its status.
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
		}}
	}
	created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("register node %s: %w", k.Name, err)
	}
	created.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: k.InternalIP},
		{Type: corev1.NodeHostName, Address: k.Name},
	}
	updated, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		// kwok may have written status first; the annotation still carries the IP.
		return created, nil
	}
	return updated, nil
}

// KwokPod is a pod bound to node that kwok runs (a fake container on port
// 8080, tolerating every taint), labelled labels: the EndpointSlice
// controller lists it once kwok reports it ready.
func KwokPod(namespace, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Containers:  []corev1.Container{{Name: "c", Image: "fake", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
}
