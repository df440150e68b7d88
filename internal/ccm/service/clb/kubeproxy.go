package clb

import (
	"strconv"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// kubeProxyCheck points a listener's health check at kube-proxy's
// /healthz on the Service's healthCheckNodePort (annotations decide when,
// HealthCheck.KubeProxyPort). TCP listeners take an HTTP check
// (HealthCheckType http) and HTTP/HTTPS listeners are HTTP-checked anyway
// (SetLoadBalancerTCPListenerAttribute / SetLoadBalancerHTTPListenerAttribute:
// HealthCheckConnectPort, HealthCheckURI, HealthCheckHttpCode,
// https://help.aliyun.com/zh/slb/classic-load-balancer/developer-reference/api-slb-2014-05-15-setloadbalancertcplistenerattribute).
// CLB UDP listeners cannot run an HTTP check, and a forwarding HTTP
// listener has no backends: both keep their check. So does a listener
// with pod members (pods on virtual Nodes), which have no kube-proxy: the
// check is listener-wide and would fail on them.
func kubeProxyCheck(set map[string]string, p annotations.Port, port int32, targets []service.Target) {
	if port <= 0 || service.HasPodTargets(targets) {
		return
	}
	switch p.Protocol {
	case annotations.ProtocolTCP:
		set["HealthCheckType"] = "http"
	case annotations.ProtocolHTTP, annotations.ProtocolHTTPS:
		if p.ForwardTo != 0 {
			return
		}
		set["HealthCheck"] = "on"
	default:
		return
	}
	set["HealthCheckConnectPort"] = strconv.Itoa(int(port))
	set["HealthCheckURI"] = annotations.KubeProxyHealthPath
	set["HealthCheckHttpCode"] = "http_2xx"
}
