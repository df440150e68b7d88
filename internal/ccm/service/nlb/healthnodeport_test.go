package nlb_test

import (
	"strconv"
	"strings"
	"testing"

	sdknlb "github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const hcnp = 32123

// TestKubeProxyHealthCheckNLB: a Local Service's TCP server group is
// checked by HTTP GET /healthz on its healthCheckNodePort unless an
// annotation chooses the check or turns it off; Cluster and UDP groups
// keep their own check; the second pass writes nothing.
func TestKubeProxyHealthCheckNLB(t *testing.T) {
	local, cluster := corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster
	cases := []struct {
		name   string
		policy corev1.ServiceExternalTrafficPolicy
		ann    map[string]string
		// want is the TCP group's check as "type port url codes".
		want string
	}{
		{name: "local", policy: local, want: "HTTP 32123 /healthz http_2xx"},
		{name: "cluster", policy: cluster, want: "TCP 0  "},
		{name: "off", policy: local, ann: map[string]string{"kube-proxy-health-check": "off"}, want: "TCP 0  "},
		{name: "explicit", policy: local, ann: map[string]string{"health-check-type": "http", "health-check-uri": "/ready"}, want: "HTTP 0 /ready http_2xx"},
		{name: "tuned", policy: local, ann: map[string]string{"health-check-interval": "5"}, want: "HTTP 32123 /healthz http_2xx"},
	}
	f := newFixture(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.t = t
			s := svc("hc-"+tc.name, tc.ann)
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)})
			s.Spec.ExternalTrafficPolicy = tc.policy
			if tc.policy == local {
				s.Spec.HealthCheckNodePort = hcnp
			}
			req := request(t, s, instances[:2], nil)
			f.ensure(req)
			checks := map[string]string{}
			for _, g := range f.groupsOf(s) {
				checks[g.Protocol] = checkString(g.HealthCheck)
			}
			t.Logf("%s: %v", tc.name, checks)
			if checks["TCP"] != tc.want {
				t.Fatalf("TCP group check %q, want %q", checks["TCP"], tc.want)
			}
			// An explicit check applies to every group, as before.
			if _, explicit := tc.ann["health-check-type"]; !explicit && !strings.HasPrefix(checks["UDP"], "UDP 0 ") {
				t.Fatalf("UDP group check %q, want its own UDP check", checks["UDP"])
			}
			m := f.mark()
			f.ensure(request(t, s, instances[:2], nil))
			if _, writes, by := f.callsSince(m); writes != 0 {
				t.Fatalf("second pass writes %v", by)
			}
		})
	}
}

// TestKubeProxyHealthCheckNLBAdopted: a Local group made with its own TCP
// check gets the kube-proxy check in one update, then no write.
func TestKubeProxyHealthCheckNLBAdopted(t *testing.T) {
	f := newFixture(t)
	s := svc("hc-adopt", map[string]string{"kube-proxy-health-check": "off"})
	s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = corev1.ServiceExternalTrafficPolicyLocal, hcnp
	f.ensure(request(t, s, instances[:2], nil))
	delete(s.Annotations, "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-kube-proxy-health-check")
	for pass, want := range []int{1, 0} {
		m := f.mark()
		f.ensure(request(t, s, instances[:2], nil))
		if _, _, by := f.callsSince(m); by["UpdateServerGroupAttribute"] != want || len(by) > want {
			t.Fatalf("pass %d: writes %v, want %d UpdateServerGroupAttribute", pass, by, want)
		}
	}
	if got := checkString(f.groupsOf(s)[0].HealthCheck); got != "HTTP 32123 /healthz http_2xx" {
		t.Fatalf("check %q", got)
	}
}

func checkString(h sdknlb.HealthCheck) string {
	return h.HealthCheckType + " " + strconv.Itoa(h.HealthCheckConnectPort) + " " + h.HealthCheckUrl + " " + strings.Join(h.HealthCheckHttpCode, ",")
}

// TestKubeProxyHealthCheckNLBFollowsListening: a Node whose kube-proxy
// says no local endpoint (the emulator: nothing listens on the
// healthCheckNodePort of its instance) is Unhealthy while its nodePort
// still listens; the other Node is not listed.
func TestKubeProxyHealthCheckNLBFollowsListening(t *testing.T) {
	f := newFixture(t)
	s := svc("hc-listen", nil)
	s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = corev1.ServiceExternalTrafficPolicyLocal, hcnp
	res := f.ensure(request(t, s, instances[:2], nil))
	if !f.env.Emulator.SetListeningPorts(instances[0], []int{30080}) {
		t.Fatal("no instance")
	}
	ls := f.listeners(res.LoadBalancerID)
	if len(ls) != 1 {
		t.Fatalf("%d listeners", len(ls))
	}
	r := sdknlb.CreateGetListenerHealthStatusRequest()
	r.ListenerId = ls[0].ListenerId
	resp, err := f.sdk.GetListenerHealthStatus(r)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, l := range resp.ListenerHealthStatus {
		for _, g := range l.ServerGroupInfos {
			for _, sv := range g.NonNormalServers {
				bad = append(bad, sv.ServerId+"/"+sv.Status)
			}
		}
	}
	if len(bad) != 1 || bad[0] != instances[0]+"/Unhealthy" {
		t.Fatalf("non-normal servers %v, want %s Unhealthy only", bad, instances[0])
	}
}

// TestKubeProxyHealthCheckNLBReset: a Service that leaves Local gets the
// TCP check of each server's port back in one update; then no write.
func TestKubeProxyHealthCheckNLBReset(t *testing.T) {
	f := newFixture(t)
	s := svc("hc-reset", nil)
	s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = corev1.ServiceExternalTrafficPolicyLocal, hcnp
	f.ensure(request(t, s, instances[:2], nil))
	s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = corev1.ServiceExternalTrafficPolicyCluster, 0
	for pass, want := range []int{1, 0} {
		m := f.mark()
		f.ensure(request(t, s, instances[:2], nil))
		if _, _, by := f.callsSince(m); by["UpdateServerGroupAttribute"] != want || len(by) > want {
			t.Fatalf("pass %d: writes %v, want %d UpdateServerGroupAttribute", pass, by, want)
		}
	}
	if got := checkString(f.groupsOf(s)[0].HealthCheck); !strings.HasPrefix(got, "TCP 0 ") {
		t.Fatalf("check %q, want TCP on the server port", got)
	}
}
