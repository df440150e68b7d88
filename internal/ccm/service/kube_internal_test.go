package service

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestSameIngress(t *testing.T) {
	vip := ptr.To(corev1.LoadBalancerIPModeVIP)
	proxy := ptr.To(corev1.LoadBalancerIPModeProxy)
	for _, tc := range []struct {
		name      string
		cur, want []corev1.LoadBalancerIngress
		same      bool
	}{
		{"both empty", nil, nil, true},
		{"ipMode defaulted by the API server", []corev1.LoadBalancerIngress{{IP: "1.2.3.4", IPMode: vip}}, []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}, true},
		{"ipMode the provider asks for differs", []corev1.LoadBalancerIngress{{IP: "1.2.3.4", IPMode: vip}}, []corev1.LoadBalancerIngress{{IP: "1.2.3.4", IPMode: proxy}}, false},
		{"other address", []corev1.LoadBalancerIngress{{IP: "1.2.3.4", IPMode: vip}}, []corev1.LoadBalancerIngress{{IP: "1.2.3.5"}}, false},
		{"an EIP more", []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}, []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}, {IP: "1.2.3.5"}}, false},
		{"hostname instead of the address", []corev1.LoadBalancerIngress{{IP: "1.2.3.4", IPMode: vip}}, []corev1.LoadBalancerIngress{{Hostname: "a.example.com"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameIngress(tc.cur, tc.want); got != tc.same {
				t.Errorf("sameIngress = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestDropManagedFields(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	out, err := dropManagedFields(svc)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Service)
	if got.ManagedFields != nil || got.Labels["a"] != "b" || got.Name != "s" {
		t.Errorf("transformed %+v", got.ObjectMeta)
	}
	// A tombstone is not an object with metadata: passed through as is.
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: svc}
	if out, err := dropManagedFields(tomb); err != nil || out != any(tomb) {
		t.Errorf("tombstone: %v, %v", out, err)
	}
}
