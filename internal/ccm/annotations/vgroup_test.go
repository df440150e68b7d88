package annotations_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// TestVGroupPortNeedsID: vgroup-port without id is refused up front, for
// both kinds, as a problem that also stops backends (nothing is created);
// with id (or with an invalid id, reported instead) it is not.
func TestVGroupPortNeedsID(t *testing.T) {
	svc := func(class *string, ann map[string]string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class,
				Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
		}
	}
	nlb := annotations.NLBClass
	zones := annotations.Key("zone-maps")
	for _, c := range []struct {
		name  string
		class *string
		ann   map[string]string
		want  string
	}{
		{"CLB", nil, map[string]string{annotations.LegacyKey("vgroup-port"): "rsp-a:80"},
			`service.beta.kubernetes.io/alicloud-loadbalancer-vgroup-port: invalid value "rsp-a:80": accepted: only with service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id: the groups must belong to the load balancer the Service reuses`},
		{"NLB", &nlb, map[string]string{annotations.Key("vgroup-port"): "sgp-a:80", zones: "a:vsw-a,b:vsw-b"},
			`service.beta.kubernetes.io/alibaba-cloud-loadbalancer-vgroup-port: invalid value "sgp-a:80": accepted: only with service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id: the groups must belong to the load balancer the Service reuses`},
		{"CLB with id", nil, map[string]string{annotations.Key("vgroup-port"): "rsp-a:80", annotations.Key("id"): "lb-a"}, ""},
		{"NLB with id", &nlb, map[string]string{annotations.Key("vgroup-port"): "sgp-a:80", annotations.Key("id"): "nlb-a"}, ""},
		{"CLB with a bad id", nil, map[string]string{annotations.Key("vgroup-port"): "rsp-a:80", annotations.Key("id"): "nlb-a"},
			`service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id: invalid value "nlb-a": the id does not start with lb- (accepted: a load balancer id: lb-… (CLB) or nlb-… (NLB))`},
	} {
		_, err := annotations.Parse(svc(c.class, c.ann), annotations.Defaults{})
		var inv *annotations.InvalidError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "":
		case !errors.As(err, &inv) || len(inv.Problems) != 1 || inv.Problems[0].String() != c.want:
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		case inv.BackendsUsable():
			t.Errorf("%s: backends still synced", c.name)
		}
	}
}
