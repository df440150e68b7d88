package annotations_test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

const (
	pre    = annotations.Prefix
	legacy = annotations.LegacyPrefix
)

// service builds a LoadBalancer Service with ports 80/TCP, 443/TCP and
// 53/UDP and the given annotations.
func service(ann map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "1b9a9c4e-2f1d-4c56-9e5b-7a1a0c3d2e4f", Annotations: ann},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080, TargetPort: intstr.FromInt32(8080)},
				{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, NodePort: 30443, TargetPort: intstr.FromString("web-tls")},
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, NodePort: 30053, TargetPort: intstr.FromInt32(53)},
			},
		},
	}
}

// nlbService is service with loadBalancerClass alibabacloud.com/nlb.
func nlbService(ann map[string]string) *corev1.Service {
	svc := service(ann)
	class := annotations.NLBClass
	svc.Spec.LoadBalancerClass = &class
	return svc
}

// zones is a valid zone-maps value.
const zones = "cn-hangzhou-h:vsw-aaa,cn-hangzhou-i:vsw-bbb"

func ptr[T any](v T) *T { return &v }
