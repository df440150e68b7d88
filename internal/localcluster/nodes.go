package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
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

// CreateHostNetworkPod creates a host-network pod on a kwok Node and
// returns it once kwok has given it nodeIP, the Node's InternalIP. kwok
// takes a host-network pod's IP from its own copy of the Node, and falls
// back to its --node-ip (127.0.0.1) while that copy lags the Node's
// addresses (seen right after the CCM initialized the Node); such a pod is
// deleted and created again, as its IP is never revised.
func CreateHostNetworkPod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, nodeIP string) (*corev1.Pod, error) {
	pods := cs.CoreV1().Pods(pod.Namespace)
	var last string
	for attempt := 0; attempt < 5; attempt++ {
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		var got *corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			got = p
			return p.Status.PodIP != "", nil
		})
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s got no IP: %w", pod.Namespace, pod.Name, err)
		}
		if got.Status.PodIP == nodeIP {
			return got, nil
		}
		last = got.Status.PodIP
		if err := deletePodAndWait(ctx, cs, got); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("pod %s/%s: kwok gave it %s five times, not its Node's %s", pod.Namespace, pod.Name, last, nodeIP)
}

// deletePodAndWait deletes a pod at once and returns when it is gone.
func deletePodAndWait(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) error {
	pods := cs.CoreV1().Pods(p.Namespace)
	if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("pod %s/%s still there after its deletion: %w", p.Namespace, p.Name, err)
	}
	time.Sleep(time.Second) // let kwok's copy of the Node catch up
	return nil
}
