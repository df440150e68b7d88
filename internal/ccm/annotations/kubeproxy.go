package annotations

import corev1 "k8s.io/api/core/v1"

// KubeProxyHealthPath is the path kube-proxy serves on a Service's
// healthCheckNodePort: 200 on a Node with a ready local endpoint of the
// Service, 503 otherwise
// (https://kubernetes.io/docs/tasks/access-application-cluster/create-external-load-balancer/#preserving-the-client-source-ip).
const KubeProxyHealthPath = "/healthz"

// healthCheckChoices are the annotations that say what a health check
// probes or whether it runs: any of them present means the user chose the
// check, and kube-proxy's is not used. Thresholds, interval and timeouts
// only tune a check, so they apply on top of kube-proxy's.
var healthCheckChoices = []string{
	"health-check-flag", "health-check-switch", "health-check-type", "health-check-uri",
	"health-check-domain", "health-check-method", "health-check-httpcode", "health-check-connect-port",
}

// kubeProxyHealth decides, once for both providers, whether the listeners
// are checked through kube-proxy: with externalTrafficPolicy Local only a
// Node holding a ready endpoint serves the Service, and kube-proxy tells
// which on healthCheckNodePort, so the load balancer drops a Node as soon
// as its last local endpoint goes, before any pass of ours. Only Node
// backends (ecs) answer on that port; pod ENIs do not.
func (r *reader) kubeProxyHealth(s *Settings, svc *corev1.Service) {
	h := &s.Listener.HealthCheck
	for _, suffix := range healthCheckChoices {
		if s.IsSet(suffix) {
			h.Chosen = true
		}
	}
	on := r.onOff("kube-proxy-health-check")
	if h.Chosen || (on != nil && !*on) {
		return
	}
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || svc.Spec.HealthCheckNodePort <= 0 ||
		s.Backend.Type == BackendENI {
		return
	}
	h.KubeProxyPort = svc.Spec.HealthCheckNodePort
}
