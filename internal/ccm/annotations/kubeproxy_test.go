package annotations

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKubeProxyHealthDecision(t *testing.T) {
	local := corev1.ServiceExternalTrafficPolicyLocal
	cluster := corev1.ServiceExternalTrafficPolicyCluster
	cases := []struct {
		name   string
		policy corev1.ServiceExternalTrafficPolicy
		hcnp   int32
		ann    map[string]string
		want   int32
	}{
		{name: "local with port", policy: local, hcnp: 32000, want: 32000},
		{name: "legacy prefix off switch", policy: local, hcnp: 32000, ann: map[string]string{LegacyKey("kube-proxy-health-check"): "off"}},
		{name: "turned off", policy: local, hcnp: 32000, ann: map[string]string{Key("kube-proxy-health-check"): "off"}},
		{name: "explicitly on", policy: local, hcnp: 32000, ann: map[string]string{Key("kube-proxy-health-check"): "on"}, want: 32000},
		{name: "cluster policy", policy: cluster, hcnp: 32000},
		{name: "no port yet", policy: local},
		{name: "type annotation wins", policy: local, hcnp: 32000, ann: map[string]string{Key("health-check-type"): "tcp"}},
		{name: "connect-port annotation wins", policy: local, hcnp: 32000, ann: map[string]string{Key("health-check-connect-port"): "8080"}},
		{name: "uri annotation wins", policy: local, hcnp: 32000, ann: map[string]string{Key("health-check-uri"): "/ready"}},
		{name: "httpcode annotation wins", policy: local, hcnp: 32000, ann: map[string]string{Key("health-check-httpcode"): "http_3xx"}},
		{name: "flag annotation wins", policy: local, hcnp: 32000, ann: map[string]string{Key("health-check-flag"): "off"}},
		{name: "an invalid choice still wins", policy: local, hcnp: 32000, ann: map[string]string{Key("health-check-type"): "icmp"}},
		{name: "thresholds only tune it", policy: local, hcnp: 32000, ann: map[string]string{Key("healthy-threshold"): "4", Key("health-check-interval"): "3"}, want: 32000},
		{name: "eni backends", policy: local, hcnp: 32000, ann: map[string]string{BackendTypeKey: "eni"}},
	}
	for _, owner := range []Owner{OwnerCLB, OwnerNLB} {
		for _, tc := range cases {
			t.Run(owner.String()+"/"+tc.name, func(t *testing.T) {
				svc := &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: tc.ann},
					Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: tc.policy, HealthCheckNodePort: tc.hcnp,
						Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}},
				}
				s, _ := Parse(svc, Defaults{Owner: owner})
				if got := s.Listener.HealthCheck.KubeProxyPort; got != tc.want {
					t.Fatalf("KubeProxyPort = %d, want %d", got, tc.want)
				}
			})
		}
	}
}

// TestHealthCheckChosen: the annotations that choose the check mark it
// chosen (a kube-proxy check is then neither set nor undone); tuning
// ones and the off switch do not.
func TestHealthCheckChosen(t *testing.T) {
	for ann, want := range map[string]bool{
		"health-check-uri": true, "health-check-connect-port": true, "health-check-flag": true,
		"healthy-threshold": false, "kube-proxy-health-check": false,
	} {
		v := map[string]string{"health-check-uri": "/x", "health-check-connect-port": "80", "health-check-flag": "on", "healthy-threshold": "3", "kube-proxy-health-check": "off"}[ann]
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{Key(ann): v}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}}}}
		s, err := Parse(svc, Defaults{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Listener.HealthCheck.Chosen != want {
			t.Errorf("%s: Chosen %v, want %v", ann, s.Listener.HealthCheck.Chosen, want)
		}
	}
}
