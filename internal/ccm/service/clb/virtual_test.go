package clb_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
)

// TestModelVirtualNodePods: with ecs backends, a Local Service's pods on a
// virtual Node are eni members on their target port, in the nodePort
// group next to the ECS Node; a pod whose ENI the resolver did not prove
// is left out.
func TestModelVirtualNodePods(t *testing.T) {
	vk := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vk", Labels: map[string]string{service.LabelVirtualKubelet: service.ValueVirtualKubelet}}}
	nodes := []*corev1.Node{node("n1"), vk}
	slices := []*discoveryv1.EndpointSlice{slice(ep("10.0.0.1", "n1", true), ep("10.9.0.1", "vk", true), ep("10.9.0.2", "vk", true))}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}
	s, err := annotations.Parse(svc, annotations.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	req := &service.Request{Service: svc, Settings: s, ClusterID: "c1", Identity: service.IdentityOf(svc, "c1"), Backends: service.ComputeBackends(svc, s, nodes, slices)}
	m := clb.BuildModel(withENIs(req, map[string]string{"10.9.0.1": "eni-eci1"}))
	if len(m.Groups) != 1 || m.Groups[0].Name != "k8s/30080/web/default/c1" {
		t.Fatalf("groups %+v", m.Groups)
	}
	d := m.Groups[0].Name
	want := []clb.Backend{
		{ServerID: "i-n1", Type: "ecs", Port: 30080, Weight: 1, Description: d},
		{ServerID: "eni-eci1", IP: "10.9.0.1", Type: "eni", Port: 8080, Weight: 1, Description: d},
	}
	if got := m.Groups[0].Backends; !reflect.DeepEqual(got, want) {
		t.Errorf("members\n got %+v\nwant %+v", got, want)
	}
}
