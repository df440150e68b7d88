package clb_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

const hcnp = 32123

// hcService is a one-port Service of proto (tcp, udp, http) with policy
// and the healthCheckNodePort the API server allocates for Local.
func hcService(name, proto string, policy corev1.ServiceExternalTrafficPolicy, ann map[string]string) *corev1.Service {
	s := aclService(name)
	for k, v := range ann {
		s.Annotations[k] = v
	}
	switch proto {
	case "udp":
		s.Spec.Ports[0].Protocol = corev1.ProtocolUDP
	case "http":
		s.Annotations[annotations.Key("protocol-port")] = "http:80"
	}
	s.Spec.ExternalTrafficPolicy = policy
	if policy == corev1.ServiceExternalTrafficPolicyLocal {
		s.Spec.HealthCheckNodePort = hcnp
	}
	return s
}

// checkOf is the health check of the load balancer's only listener, as
// DescribeLoadBalancerListeners reports it: type, connect port, URI, codes
// and whether it is on.
func (f *aclFixture) checkOf(lbID string) (typ string, port int, uri, codes, on string) {
	f.t.Helper()
	r := slb.CreateDescribeLoadBalancerListenersRequest()
	r.LoadBalancerId = &[]string{lbID}
	resp, err := f.sdk.DescribeLoadBalancerListeners(r)
	emulatortest.NoError(f.t, err)
	if len(resp.Listeners) != 1 {
		f.t.Fatalf("%d listeners", len(resp.Listeners))
	}
	l := resp.Listeners[0]
	switch strings.ToLower(l.ListenerProtocol) {
	case "tcp":
		c := l.TCPListenerConfig
		return c.HealthCheckType, c.HealthCheckConnectPort, c.HealthCheckURI, c.HealthCheckHttpCode, c.HealthCheckSwitch
	case "udp":
		c := l.UDPListenerConfig
		return c.HealthCheckType, c.HealthCheckConnectPort, c.HealthCheckURI, c.HealthCheckHttpCode, c.HealthCheckSwitch
	default:
		c := l.HTTPListenerConfig
		return c.HealthCheckType, c.HealthCheckConnectPort, c.HealthCheckURI, c.HealthCheckHttpCode, c.HealthCheck
	}
}

// TestKubeProxyHealthCheckCLB: a Local Service's TCP and HTTP listeners
// are checked by HTTP GET /healthz on its healthCheckNodePort, unless an
// annotation chooses the check or turns it off; Cluster and UDP keep the
// listener's own check; the second pass writes nothing.
func TestKubeProxyHealthCheckCLB(t *testing.T) {
	local, cluster := corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster
	cases := []struct {
		name, proto string
		policy      corev1.ServiceExternalTrafficPolicy
		ann         map[string]string
		// wantPort is the connect port expected (0: the backend port).
		wantPort int
		wantURI  string
	}{
		{name: "local-tcp", proto: "tcp", policy: local, wantPort: hcnp, wantURI: "/healthz"},
		{name: "local-http", proto: "http", policy: local, wantPort: hcnp, wantURI: "/healthz"},
		{name: "cluster-tcp", proto: "tcp", policy: cluster},
		{name: "local-udp", proto: "udp", policy: local},
		{name: "off", proto: "tcp", policy: local, ann: map[string]string{annotations.Key("kube-proxy-health-check"): "off"}},
		{name: "explicit", proto: "tcp", policy: local, ann: map[string]string{annotations.Key("health-check-type"): "http", annotations.Key("health-check-uri"): "/ready"}, wantURI: "/ready"},
		{name: "tuned", proto: "tcp", policy: local, ann: map[string]string{annotations.Key("healthy-threshold"): "4"}, wantPort: hcnp, wantURI: "/healthz"},
	}
	f := newACLFixture(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.t = t
			s := hcService("hc-"+tc.name, tc.proto, tc.policy, tc.ann)
			res, err := f.ensure(s, "")
			emulatortest.NoError(t, err)
			typ, port, uri, codes, on := f.checkOf(res.LoadBalancerID)
			t.Logf("%s: type %q port %d uri %q codes %q on %q", tc.name, typ, port, uri, codes, on)
			if port != tc.wantPort || uri != tc.wantURI {
				t.Fatalf("check on port %d uri %q, want %d %q", port, uri, tc.wantPort, tc.wantURI)
			}
			if tc.wantPort == hcnp {
				if tc.proto == "tcp" && typ != "http" || codes != "http_2xx" || on == "off" {
					t.Fatalf("check type %q codes %q on %q", typ, codes, on)
				}
			}
			m := f.mark()
			_, err = f.ensure(s, res.LoadBalancerID)
			emulatortest.NoError(t, err)
			if w := f.writesSince(m); len(w) != 0 {
				t.Fatalf("second pass writes %v", w)
			}
		})
	}
}

// TestKubeProxyHealthCheckAdopted: a Local listener made before (with
// the listener's own TCP check) gets the kube-proxy check in one write,
// then none.
func TestKubeProxyHealthCheckAdopted(t *testing.T) {
	f := newACLFixture(t)
	s := hcService("hc-adopt", "tcp", corev1.ServiceExternalTrafficPolicyLocal, map[string]string{annotations.Key("kube-proxy-health-check"): "off"})
	res, err := f.ensure(s, "")
	emulatortest.NoError(t, err)
	delete(s.Annotations, annotations.Key("kube-proxy-health-check"))
	for pass, want := range []int{1, 0} {
		m := f.mark()
		_, err = f.ensure(s, res.LoadBalancerID)
		emulatortest.NoError(t, err)
		if w := f.writesSince(m); len(w) != want {
			t.Fatalf("pass %d: writes %v, want %d", pass, w, want)
		}
	}
	if _, port, uri, _, _ := f.checkOf(res.LoadBalancerID); port != hcnp || uri != "/healthz" {
		t.Fatalf("check on %d %q", port, uri)
	}
}

// TestKubeProxyHealthCheckFollowsListening: with the check on the
// healthCheckNodePort, a Node whose kube-proxy says no local endpoint
// (the emulator: nothing listens on that port of its instance) is
// abnormal while its nodePort still listens; the other stays normal.
func TestKubeProxyHealthCheckFollowsListening(t *testing.T) {
	f := newACLFixture(t)
	s := hcService("hc-listen", "tcp", corev1.ServiceExternalTrafficPolicyLocal, nil)
	res, err := f.ensure(s, "")
	emulatortest.NoError(t, err)
	if !f.env.Emulator.SetListeningPorts("i-acl1", []int{30080}) {
		t.Fatal("no instance i-acl1")
	}
	health := func() map[string]string {
		r := slb.CreateDescribeHealthStatusRequest()
		r.LoadBalancerId = res.LoadBalancerID
		resp, err := f.sdk.DescribeHealthStatus(r)
		emulatortest.NoError(t, err)
		out := map[string]string{}
		for _, b := range resp.BackendServers.BackendServer {
			out[b.ServerId+":"+strconv.Itoa(b.Port)] = b.ServerHealthStatus
		}
		return out
	}
	got := health()
	if got["i-acl1:30080"] != "abnormal" || got["i-acl2:30080"] != "normal" {
		t.Fatalf("health %v, want i-acl1 abnormal, i-acl2 normal", got)
	}
	f.env.Emulator.SetListeningPorts("i-acl1", []int{30080, hcnp})
	if got := health(); got["i-acl1:30080"] != "normal" {
		t.Fatalf("health %v after the port opened", got)
	}
}

// TestKubeProxyHealthCheckSkipsPodMembers: a listener whose group has
// pods on a virtual Node keeps its own check (they have no kube-proxy to
// answer on the healthCheckNodePort); without them it takes kube-proxy's.
func TestKubeProxyHealthCheckSkipsPodMembers(t *testing.T) {
	s := hcService("hc-vk", "tcp", corev1.ServiceExternalTrafficPolicyLocal, nil)
	settings, err := annotations.Parse(s, annotations.Defaults{})
	emulatortest.NoError(t, err)
	for _, tc := range []struct {
		name    string
		targets []service.Target
		want    string
	}{
		{name: "nodes only", targets: []service.Target{{InstanceID: "i-1", Port: 30080, Weight: 1}}, want: "32123"},
		{name: "with a pod", targets: []service.Target{{InstanceID: "i-1", Port: 30080, Weight: 1}, {IP: "10.9.0.1", ENI: "eni-1", Port: 8080, Weight: 1}}},
	} {
		m := clb.BuildModel(&service.Request{Service: s, Settings: settings, ClusterID: "c1", Identity: service.IdentityOf(s, "c1"), Backends: map[int32][]service.Target{80: tc.targets}})
		if got := m.Listeners[0].Set["HealthCheckConnectPort"]; got != tc.want {
			t.Errorf("%s: HealthCheckConnectPort %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestKubeProxyHealthCheckReset: a Service that leaves Local (or turns the
// check off) gets a TCP check of the backend port back in one write, since
// kube-proxy stops answering on a released healthCheckNodePort; then none.
func TestKubeProxyHealthCheckReset(t *testing.T) {
	for _, how := range []string{"cluster", "off"} {
		t.Run(how, func(t *testing.T) {
			f := newACLFixture(t)
			s := hcService("hc-reset-"+how, "tcp", corev1.ServiceExternalTrafficPolicyLocal, nil)
			res, err := f.ensure(s, "")
			emulatortest.NoError(t, err)
			if how == "cluster" {
				s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = corev1.ServiceExternalTrafficPolicyCluster, 0
			} else {
				s.Annotations[annotations.Key("kube-proxy-health-check")] = "off"
			}
			for pass, want := range []int{1, 0} {
				m := f.mark()
				_, err = f.ensure(s, res.LoadBalancerID)
				emulatortest.NoError(t, err)
				if w := f.writesSince(m); len(w) != want {
					t.Fatalf("pass %d: writes %v, want %d", pass, w, want)
				}
			}
			if typ, port, _, _, _ := f.checkOf(res.LoadBalancerID); typ != "tcp" || port != 30080 {
				t.Fatalf("check %s on %d, want tcp on the nodePort 30080", typ, port)
			}
		})
	}
}
