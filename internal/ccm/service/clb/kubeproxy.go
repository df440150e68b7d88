package clb

import (
	"strconv"
	"strings"

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

// kubeProxyReset returns the settings that undo a kube-proxy check left by
// an earlier pass on a listener where it no longer applies (the Service
// left Local, or turned it off), when no annotation chooses the check:
// kube-proxy stops answering on a released healthCheckNodePort, and a check
// left there would fail every backend. TCP listeners go back to a TCP check
// of the backend port (CLB takes no "unset" connect port), HTTP/HTTPS
// listeners to our creation default, no check. nil when nothing to undo.
func kubeProxyReset(s *annotations.Settings, p annotations.Port, set map[string]string) map[string]string {
	if _, kp := set["HealthCheckConnectPort"]; kp || s.Listener.HealthCheck.Chosen {
		return nil
	}
	backendPort := strconv.Itoa(int(p.NodePort))
	if s.Backend.Type == annotations.BackendENI {
		backendPort = p.TargetPort.String()
	}
	switch {
	case p.Protocol == annotations.ProtocolTCP:
		return map[string]string{"HealthCheckType": "tcp", "HealthCheckConnectPort": backendPort}
	case (p.Protocol == annotations.ProtocolHTTP || p.Protocol == annotations.ProtocolHTTPS) && p.ForwardTo == 0:
		return map[string]string{"HealthCheck": "off"}
	}
	return nil
}

// kubeProxyShaped reports whether a listener's current check is the one
// kubeProxyCheck sets.
func kubeProxyShaped(proto string, have map[string]string) bool {
	if have["HealthCheckURI"] != annotations.KubeProxyHealthPath || have["HealthCheckConnectPort"] == "" || have["HealthCheckConnectPort"] == "0" {
		return false
	}
	if proto == "tcp" {
		return strings.EqualFold(have["HealthCheckType"], "http")
	}
	return strings.EqualFold(have["HealthCheck"], "on")
}
