package nlb

import (
	"maps"
	"strconv"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// kubeProxyCheck returns the group settings with the health check pointed
// at kube-proxy's /healthz on the Service's healthCheckNodePort
// (annotations decide when, HealthCheck.KubeProxyPort): an HTTP check
// (CreateServerGroup / UpdateServerGroupAttribute HealthCheckConfig:
// HealthCheckType HTTP, HealthCheckConnectPort, HealthCheckUrl,
// HealthCheckHttpCode,
// https://help.aliyun.com/zh/slb/network-load-balancer/developer-reference/api-nlb-2022-04-30-createservergroup).
// Only TCP groups (TCP and TCPSSL listeners) take it: UDP groups keep
// their check, as CLB UDP listeners do, and so do groups with pod members
// (pods on virtual Nodes have no kube-proxy). set is not changed.
func kubeProxyCheck(set map[string]string, groupProto string, port int32, targets []service.Target) map[string]string {
	if port <= 0 || groupProto != "TCP" {
		return set
	}
	for _, t := range targets {
		if t.IP != "" {
			return set // a pod address: no kube-proxy answers for it
		}
	}
	out := maps.Clone(set)
	const hc = "HealthCheckConfig."
	out[hc+"HealthCheckEnabled"] = boolStr(true)
	out[hc+"HealthCheckType"] = "HTTP"
	out[hc+"HealthCheckConnectPort"] = strconv.Itoa(int(port))
	out[hc+"HealthCheckUrl"] = annotations.KubeProxyHealthPath
	out[hc+"HealthCheckHttpCode"] = "http_2xx"
	return out
}

// kubeProxyShaped reports whether a group's current check is the one
// kubeProxyCheck sets: an HTTP check of /healthz on a fixed port.
func kubeProxyShaped(have map[string]string) bool {
	const hc = "HealthCheckConfig."
	return have[hc+"HealthCheckType"] == "HTTP" && have[hc+"HealthCheckUrl"] == annotations.KubeProxyHealthPath &&
		have[hc+"HealthCheckConnectPort"] != "" && have[hc+"HealthCheckConnectPort"] != "0"
}

// groupWants is what a group is compared with: its settings, plus, when a
// kube-proxy check left by an earlier pass no longer applies (the Service
// left Local, or turned it off), the TCP check of each server's own port
// it had before: kube-proxy stops answering on a released
// healthCheckNodePort, and a check left there would fail every server.
func groupWants(d Group, have map[string]string) map[string]string {
	if !d.ResetKubeProxy || !kubeProxyShaped(have) {
		return d.Set
	}
	const hc = "HealthCheckConfig."
	out := maps.Clone(d.Set)
	out[hc+"HealthCheckType"] = "TCP"
	out[hc+"HealthCheckConnectPort"] = "0"
	return out
}
