package clb_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
)

func node(name string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "a"}},
		Spec:       corev1.NodeSpec{ProviderID: "cn-hangzhou.i-" + name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func slice(eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-x", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		Ports:      []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints:  eps,
	}
}

func ep(ip, nodeName string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(nodeName), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
}

// TestDesiredModel builds the desired model from a Service, its Nodes and
// EndpointSlices: which Nodes (or pods) are members, their weights, and
// the group and listener names.
func TestDesiredModel(t *testing.T) {
	nodes := []*corev1.Node{
		node("n1"), node("n2"), node("n3"),
		node("cp", func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/control-plane"] = "" }),
		node("excluded", func(n *corev1.Node) { n.Labels[service.LabelExcludeFromLB] = "true" }),
		node("ccm-excluded", func(n *corev1.Node) { n.Labels["service.alibabacloud.com/exclude-node"] = "true" }),
		node("draining", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: service.TaintToBeDeleted}} }),
		node("notready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }),
		node("cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		node("poolb", func(n *corev1.Node) { n.Labels["pool"] = "b" }),
		node("noid", func(n *corev1.Node) { n.Spec.ProviderID = "" }),
	}
	slices := []*discoveryv1.EndpointSlice{slice(ep("10.0.0.1", "n1", true), ep("10.0.0.2", "n1", true), ep("10.0.0.3", "n2", true), ep("10.0.0.4", "n3", false))}
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		local   bool
		members map[string]int // server id → weight
	}{
		{name: "cluster: eligible nodes, default weight", members: map[string]int{"i-n1": 100, "i-n2": 100, "i-n3": 100, "i-cordoned": 100, "i-poolb": 100}},
		{name: "remove-unscheduled-backend", ann: map[string]string{annotations.Key("remove-unscheduled-backend"): "on"},
			members: map[string]int{"i-n1": 100, "i-n2": 100, "i-n3": 100, "i-poolb": 100}},
		{name: "backend-label", ann: map[string]string{annotations.Key("backend-label"): "pool=b"}, members: map[string]int{"i-poolb": 100}},
		{name: "default-weight", ann: map[string]string{annotations.Key("default-weight"): "30", annotations.Key("backend-label"): "pool=a"},
			members: map[string]int{"i-n1": 30, "i-n2": 30, "i-n3": 30, "i-cordoned": 30}},
		{name: "local: nodes with ready endpoints, weighted by count", local: true, members: map[string]int{"i-n1": 2, "i-n2": 1}},
		{name: "local with a total weight", local: true, ann: map[string]string{annotations.Key("weight"): "60"}, members: map[string]int{"i-n1": 40, "i-n2": 20}},
		{name: "eni: ready pod IPs on the target port", ann: map[string]string{annotations.BackendTypeKey: "eni"},
			members: map[string]int{"eni-10.0.0.1": 100, "eni-10.0.0.2": 100, "eni-10.0.0.3": 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "11111111-2222-3333-4444-555555555555", Annotations: tc.ann},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
					{Name: "http", Port: 80, NodePort: 30080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
				}},
			}
			if tc.local {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
			s, err := annotations.Parse(svc, annotations.Defaults{})
			if err != nil {
				t.Fatal(err)
			}
			req := &service.Request{Service: svc, Settings: s, ClusterID: "c1", Identity: service.IdentityOf(svc, "c1"), Backends: service.ComputeBackends(svc, s, nodes, slices)}
			enis := map[string]string{"10.0.0.1": "eni-10.0.0.1", "10.0.0.2": "eni-10.0.0.2", "10.0.0.3": "eni-10.0.0.3"}
			m := clb.BuildModel(withENIs(req, enis))
			if len(m.Groups) != 1 || len(m.Listeners) != 1 {
				t.Fatalf("%d groups %d listeners", len(m.Groups), len(m.Listeners))
			}
			g := m.Groups[0]
			wantName := "k8s/30080/web/default/c1"
			if s.Backend.Type == annotations.BackendENI {
				wantName = "k8s/8080/web/default/c1"
			}
			if g.Name != wantName || m.Listeners[0].Description != "k8s/80/web/default/c1" {
				t.Errorf("group %q listener %q", g.Name, m.Listeners[0].Description)
			}
			got := map[string]int{}
			for _, b := range g.Backends {
				got[b.ServerID] = b.Weight
				if b.Description != g.Name {
					t.Errorf("member description %q, want the group name", b.Description)
				}
			}
			if !reflect.DeepEqual(got, tc.members) {
				t.Errorf("members %v, want %v", got, tc.members)
			}
		})
	}
}

// TestListenerSettings maps annotations to listener parameters: what the
// user set is compared; defaults are only for creation.
func TestListenerSettings(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{
			annotations.Key("protocol-port"):             "https:443,http:80",
			annotations.Key("cert-id"):                   "cert-1",
			annotations.Key("forward-port"):              "80:443",
			annotations.Key("health-check-connect-port"): "-520",
			annotations.Key("idle-timeout"):              "20",
			annotations.LegacyKey("acl-status"):          "on",
			annotations.Key("acl-id"):                    "acl-1",
			annotations.Key("acl-type"):                  "white",
		}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP},
			{Name: "https", Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP},
		}},
	}
	s, err := annotations.Parse(svc, annotations.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	m := clb.BuildModel(&service.Request{Service: svc, Settings: s, ClusterID: "c1", Identity: service.IdentityOf(svc, "c1"), Backends: map[int32][]service.Target{}})
	if len(m.Listeners) != 2 || m.Listeners[0].Protocol != "https" || len(m.Groups) != 1 || m.Groups[0].ServicePort != 443 {
		t.Fatalf("listeners %+v groups %+v: want https first and no group for the forwarding port", m.Listeners, m.Groups)
	}
	https, http := m.Listeners[0], m.Listeners[1]
	want := map[string]string{"ServerCertificateId": "cert-1", "IdleTimeout": "20", "AclStatus": "on", "AclId": "acl-1", "AclType": "white"}
	if !reflect.DeepEqual(https.Set, want) {
		t.Errorf("https settings %v, want %v", https.Set, want)
	}
	if https.CreateDefaults["StickySession"] != "off" || https.CreateDefaults["HealthCheck"] != "off" || https.CreateDefaults["Scheduler"] != "rr" {
		t.Errorf("https creation defaults %v", https.CreateDefaults)
	}
	if http.Set["ListenerForward"] != "on" || http.Set["ForwardPort"] != "443" || http.ServicePort != 0 {
		t.Errorf("http %+v", http)
	}
}

// TestBuildModelSamePortTwoProtocols: 53/TCP and 53/UDP are two listeners;
// on one nodePort they share one vServer group (its name has no protocol),
// on two nodePorts each has its own group with members on its own nodePort,
// even though the Request's backends, keyed by port number, hold only one
// of them.
func TestBuildModelSamePortTwoProtocols(t *testing.T) {
	tcpKey, udpKey := clb.KeyOf(53, false), clb.KeyOf(53, true)
	for _, tc := range []struct {
		name       string
		nodePorts  [2]int32
		ann        map[string]string
		groups     map[clb.PortKey]string // key → group name
		memberPort map[clb.PortKey]int32
		listeners  map[string]clb.PortKey // protocol → group key
	}{
		{name: "one nodePort: one shared group", nodePorts: [2]int32{30053, 30053},
			groups:     map[clb.PortKey]string{tcpKey: "k8s/30053/dns/default/c1"},
			memberPort: map[clb.PortKey]int32{tcpKey: 30053},
			listeners:  map[string]clb.PortKey{"tcp": tcpKey, "udp": tcpKey}},
		{name: "two nodePorts: a group each", nodePorts: [2]int32{30053, 30054},
			groups:     map[clb.PortKey]string{tcpKey: "k8s/30053/dns/default/c1", udpKey: "k8s/30054/dns/default/c1"},
			memberPort: map[clb.PortKey]int32{tcpKey: 30053, udpKey: 30054},
			listeners:  map[string]clb.PortKey{"tcp": tcpKey, "udp": udpKey}},
		{name: "eni: one target port, one shared group", nodePorts: [2]int32{30053, 30054}, ann: map[string]string{annotations.BackendTypeKey: "eni"},
			groups:     map[clb.PortKey]string{tcpKey: "k8s/5353/dns/default/c1"},
			memberPort: map[clb.PortKey]int32{tcpKey: 5353},
			listeners:  map[string]clb.PortKey{"tcp": tcpKey, "udp": tcpKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "default", UID: "11111111-2222-3333-4444-555555555555", Annotations: tc.ann},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
					{Name: "dns-tcp", Port: 53, NodePort: tc.nodePorts[0], TargetPort: intstr.FromInt32(5353), Protocol: corev1.ProtocolTCP},
					{Name: "dns-udp", Port: 53, NodePort: tc.nodePorts[1], TargetPort: intstr.FromInt32(5353), Protocol: corev1.ProtocolUDP},
				}},
			}
			s, err := annotations.Parse(svc, annotations.Defaults{})
			if err != nil {
				t.Fatal(err)
			}
			// What ComputeBackends gives: one entry for port 53, the last port's.
			backends := map[int32][]service.Target{53: {{InstanceID: "i-1", Port: tc.nodePorts[1], Weight: 100}}}
			if s.Backend.Type == annotations.BackendENI {
				backends = map[int32][]service.Target{53: {{IP: "10.0.0.1", Port: 5353, Weight: 100}}}
			}
			m := clb.BuildModel(withENIs(&service.Request{Service: svc, Settings: s, ClusterID: "c1", Identity: service.IdentityOf(svc, "c1"), Backends: backends}, map[string]string{"10.0.0.1": "eni-1"}))
			groups := map[clb.PortKey]string{}
			for _, g := range m.Groups {
				groups[g.ServicePort] = g.Name
				if len(g.Backends) != 1 || g.Backends[0].Port != tc.memberPort[g.ServicePort] {
					t.Errorf("group %s members %+v, want one on port %d", g.Name, g.Backends, tc.memberPort[g.ServicePort])
				}
			}
			listeners := map[string]clb.PortKey{}
			for _, l := range m.Listeners {
				listeners[l.Protocol] = l.ServicePort
				if l.Description != "k8s/53/dns/default/c1" {
					t.Errorf("listener %s description %q", l.Protocol, l.Description)
				}
			}
			if !reflect.DeepEqual(groups, tc.groups) || !reflect.DeepEqual(listeners, tc.listeners) {
				t.Errorf("groups %v listeners %v, want %v %v", groups, listeners, tc.groups, tc.listeners)
			}
		})
	}
}
