package nlb

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

var ref = naming.Ref{ClusterID: "c1", Namespace: "ns", Name: "web"}

func ids(ls []CurrentListener) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.ID)
	}
	return strings.Join(out, ",")
}

func TestPlanListeners(t *testing.T) {
	ours80 := CurrentListener{ID: "lsn-80", Port: 80, Protocol: "TCP", Description: ref.NLBListener(80, "TCP"), Status: "Running", ServerGroupID: "sgp-80", Params: map[string]string{"IdleTimeout": "900"}}
	user80 := CurrentListener{ID: "lsn-user", Port: 80, Protocol: "TCP", Description: "mine", Status: "Running", ServerGroupID: "sgp-user"}
	other := CurrentListener{ID: "lsn-other", Port: 81, Protocol: "TCP", Description: naming.Ref{ClusterID: "c1", Namespace: "ns", Name: "api"}.NLBListener(81, "TCP")}
	want80 := Listener{ServicePort: 80, Port: 80, Protocol: "TCP", Description: ref.NLBListener(80, "TCP"), Set: map[string]string{}}
	groups := map[PortKey]string{80: "sgp-80", 443: "sgp-443"}
	takenOver := CurrentListener{ID: "lsn-user", Port: 80, Protocol: "TCP", Description: "mine", Status: "Running", ServerGroupID: "sgp-80", Params: map[string]string{"IdleTimeout": "60"}}
	with60 := Listener{ServicePort: 80, Port: 80, Protocol: "TCP", Description: ref.NLBListener(80, "TCP"), Set: map[string]string{"IdleTimeout": "60"}}
	for _, tc := range []struct {
		name                       string
		desired                    []Listener
		current                    []CurrentListener
		force                      bool
		del, create, update, start int
		conflicts                  int
		wantDeleted                string
		wantParams                 map[string]string
		wantGroupMove              bool
	}{
		{name: "create on an empty LB", desired: []Listener{want80}, create: 1},
		{name: "converged", desired: []Listener{want80}, current: []CurrentListener{ours80}},
		{name: "ours no longer wanted", current: []CurrentListener{ours80, user80, other}, del: 1, wantDeleted: "lsn-80"},
		{name: "someone else's are never deleted", current: []CurrentListener{user80, other}},
		{name: "user listener on our port is a conflict", desired: []Listener{want80}, current: []CurrentListener{user80}, conflicts: 1},
		{name: "force takes the user listener over: our description in the same update", desired: []Listener{with60}, current: []CurrentListener{user80, other}, force: true, update: 1, wantGroupMove: true,
			wantParams: map[string]string{"IdleTimeout": "60", "ListenerDescription": ref.NLBListener(80, "TCP")}},
		{name: "taken over earlier without our description: only the description", desired: []Listener{with60}, current: []CurrentListener{takenOver}, force: true, update: 1,
			wantParams: map[string]string{"ListenerDescription": ref.NLBListener(80, "TCP")}},
		{name: "without force nothing is taken over", desired: []Listener{with60}, current: []CurrentListener{takenOver}, conflicts: 1},
		{name: "another Service's listener is never taken over, even with force", desired: []Listener{{ServicePort: 81, Port: 81, Protocol: "TCP", Description: ref.NLBListener(81, "TCP"), Set: map[string]string{}}},
			current: []CurrentListener{other}, force: true, conflicts: 1},
		{name: "force never touches a user listener of another protocol", desired: []Listener{{ServicePort: 80, Port: 80, Protocol: "TCPSSL", Description: ref.NLBListener(80, "TCPSSL")}}, current: []CurrentListener{user80}, force: true, conflicts: 1},
		{name: "setting changed", desired: []Listener{{ServicePort: 80, Port: 80, Protocol: "TCP", Description: want80.Description, Set: map[string]string{"IdleTimeout": "60", "ProxyProtocolEnabled": "true"}}},
			current: []CurrentListener{{ID: "lsn-80", Port: 80, Protocol: "TCP", Description: want80.Description, Status: "Running", ServerGroupID: "sgp-80", Params: map[string]string{"IdleTimeout": "900", "ProxyProtocolEnabled": "true"}}},
			update:  1, wantParams: map[string]string{"IdleTimeout": "60"}},
		{name: "protocol change recreates ours", desired: []Listener{{ServicePort: 80, Port: 80, Protocol: "TCPSSL", Description: ref.NLBListener(80, "TCPSSL")}}, current: []CurrentListener{ours80}, del: 1, create: 1, wantDeleted: "lsn-80"},
		{name: "UDP does not compete with TCP", desired: []Listener{{ServicePort: 80, Port: 80, Protocol: "UDP", Description: ref.NLBListener(80, "UDP")}}, current: []CurrentListener{user80}, create: 1},
		{name: "stopped listener is started", desired: []Listener{want80}, current: []CurrentListener{{ID: "lsn-80", Port: 80, Protocol: "TCP", Description: want80.Description, Status: "Stopped", ServerGroupID: "sgp-80"}}, start: 1},
		{name: "range overlapping a user listener", desired: []Listener{{ServicePort: 443, StartPort: 70, EndPort: 90, Protocol: "TCP", Description: ref.NLBListenerRange(70, 90, "TCP")}}, current: []CurrentListener{user80}, conflicts: 1},
		{name: "range changed", desired: []Listener{{ServicePort: 443, StartPort: 70, EndPort: 95, Protocol: "TCP", Description: ref.NLBListenerRange(70, 95, "TCP")}},
			current: []CurrentListener{{ID: "lsn-r", StartPort: 70, EndPort: 90, Protocol: "TCP", Description: ref.NLBListenerRange(70, 90, "TCP"), Status: "Running"}}, del: 1, create: 1, wantDeleted: "lsn-r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanListeners(tc.desired, tc.current, ref, tc.force, groups)
			if len(p.Delete) != tc.del || len(p.Create) != tc.create || len(p.Update) != tc.update || len(p.Start) != tc.start || len(p.Conflicts) != tc.conflicts {
				t.Fatalf("plan %+v", p)
			}
			if tc.wantDeleted != "" && ids(p.Delete) != tc.wantDeleted {
				t.Errorf("deleted %s, want %s", ids(p.Delete), tc.wantDeleted)
			}
			if tc.update == 1 {
				u := p.Update[0]
				if !reflect.DeepEqual(u.Params, tc.wantParams) || u.ServerGroup != tc.wantGroupMove {
					t.Errorf("update %+v, want params %v and group move %t", u, tc.wantParams, tc.wantGroupMove)
				}
			}
			if p.Empty() != (tc.del+tc.create+tc.update+tc.start == 0) {
				t.Errorf("Empty() = %v", p.Empty())
			}
		})
	}
}

// TestPlanSamePortTwoProtocols: 53/TCP and 53/UDP have a group and a
// listener each, joined by their PortKeys, so each listener forwards to
// its own protocol's group.
func TestPlanSamePortTwoProtocols(t *testing.T) {
	tcpKey, udpKey := KeyOf(53, false), KeyOf(53, true)
	if tcpKey == udpKey {
		t.Fatalf("53/TCP and 53/UDP share key %d", tcpKey)
	}
	desiredGroups := []Group{
		{ServicePort: tcpKey, Name: ref.NLBServerGroup("30053", "TCP"), Protocol: "TCP", Type: GroupInstance},
		{ServicePort: udpKey, Name: ref.NLBServerGroup("30053", "UDP"), Protocol: "UDP", Type: GroupInstance},
	}
	desiredListeners := []Listener{
		{ServicePort: tcpKey, Port: 53, Protocol: "TCP", Description: ref.NLBListener(53, "TCP")},
		{ServicePort: udpKey, Port: 53, Protocol: "UDP", Description: ref.NLBListener(53, "UDP")},
	}
	tcpGroup := CurrentGroup{ID: "sgp-t", Name: desiredGroups[0].Name, Protocol: "TCP", Type: GroupInstance}
	udpGroup := CurrentGroup{ID: "sgp-u", Name: desiredGroups[1].Name, Protocol: "UDP", Type: GroupInstance}
	tcpListener := CurrentListener{ID: "lsn-t", Port: 53, Protocol: "TCP", Description: ref.NLBListener(53, "TCP"), Status: "Running", ServerGroupID: "sgp-t"}
	udpListener := CurrentListener{ID: "lsn-u", Port: 53, Protocol: "UDP", Description: ref.NLBListener(53, "UDP"), Status: "Running", ServerGroupID: "sgp-u"}
	for _, tc := range []struct {
		name       string
		groups     []CurrentGroup
		listeners  []CurrentListener
		ids        map[PortKey]string
		createG    int
		createL    []string
		moveGroups []string // listener ids re-pointed
	}{
		{name: "nothing exists", createG: 2, ids: map[PortKey]string{}, createL: []string{"TCP", "UDP"}},
		{name: "converged", groups: []CurrentGroup{tcpGroup, udpGroup}, listeners: []CurrentListener{tcpListener, udpListener},
			ids: map[PortKey]string{tcpKey: "sgp-t", udpKey: "sgp-u"}},
		{name: "the TCP listener on the UDP group (as before PortKeys) moves", groups: []CurrentGroup{tcpGroup, udpGroup},
			listeners: []CurrentListener{{ID: "lsn-t", Port: 53, Protocol: "TCP", Description: ref.NLBListener(53, "TCP"), Status: "Running", ServerGroupID: "sgp-u"}, udpListener},
			ids:       map[PortKey]string{tcpKey: "sgp-t", udpKey: "sgp-u"}, moveGroups: []string{"lsn-t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gp := PlanGroups(desiredGroups, tc.groups, nil, ref)
			if len(gp.Create) != tc.createG || len(gp.Update)+len(gp.Delete) != 0 || !reflect.DeepEqual(gp.IDs, tc.ids) {
				t.Fatalf("group plan %+v, want %d creates and ids %v", gp, tc.createG, tc.ids)
			}
			lp := PlanListeners(desiredListeners, tc.listeners, ref, false, gp.IDs)
			var created, moved []string
			for _, l := range lp.Create {
				created = append(created, l.Protocol)
			}
			for _, u := range lp.Update {
				if u.ServerGroup {
					moved = append(moved, u.ID)
				}
			}
			if !reflect.DeepEqual(created, tc.createL) || !reflect.DeepEqual(moved, tc.moveGroups) || len(lp.Delete)+len(lp.Conflicts) != 0 {
				t.Errorf("listener plan %+v: created %v moved %v, want %v %v", lp, created, moved, tc.createL, tc.moveGroups)
			}
		})
	}
}

func TestPlanGroups(t *testing.T) {
	name := ref.NLBServerGroup("30080", "TCP")
	desired := Group{ServicePort: 80, Name: name, Protocol: "TCP", Type: GroupInstance, Set: map[string]string{"Scheduler": "Sch"}}
	cur := CurrentGroup{ID: "sgp-1", Name: name, Protocol: "TCP", Type: "Instance", Params: map[string]string{"Scheduler": "Sch"}}
	for _, tc := range []struct {
		name                string
		desired             []Group
		owned               []CurrentGroup
		bound               map[string]CurrentGroup
		create, update, del int
		missing             int
		wantID              string
	}{
		{name: "create", desired: []Group{desired}, create: 1},
		{name: "converged", desired: []Group{desired}, owned: []CurrentGroup{cur}, wantID: "sgp-1"},
		{name: "scheduler drifted", desired: []Group{desired}, owned: []CurrentGroup{{ID: "sgp-1", Name: name, Protocol: "TCP", Type: "Instance", Params: map[string]string{"Scheduler": "Wrr"}}}, update: 1, wantID: "sgp-1"},
		{name: "type changed: replace", desired: []Group{{ServicePort: 80, Name: name, Protocol: "TCP", Type: GroupIP}}, owned: []CurrentGroup{cur}, create: 1, del: 1},
		{name: "duplicate from a lost create is deleted", desired: []Group{desired}, owned: []CurrentGroup{cur, {ID: "sgp-2", Name: name, Protocol: "TCP", Type: "Instance"}}, del: 1, wantID: "sgp-1"},
		{name: "port gone", owned: []CurrentGroup{cur}, del: 1},
		{name: "not ours is never deleted", owned: []CurrentGroup{{ID: "sgp-x", Name: "user-group"}}},
		{name: "bound group", desired: []Group{{ServicePort: 80, Name: name, BoundID: "sgp-user"}}, bound: map[string]CurrentGroup{"sgp-user": {ID: "sgp-user"}}, wantID: "sgp-user"},
		{name: "bound group missing", desired: []Group{{ServicePort: 80, Name: name, BoundID: "sgp-user"}}, missing: 1},
		{name: "TCPSSL listener uses the TCP group", desired: []Group{{ServicePort: 80, Name: ref.NLBServerGroup("30080", "TCPSSL"), Protocol: "TCP", Type: GroupInstance}},
			owned: []CurrentGroup{{ID: "sgp-3", Name: ref.NLBServerGroup("30080", "TCPSSL"), Protocol: "TCP", Type: "Instance"}}, wantID: "sgp-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanGroups(tc.desired, tc.owned, tc.bound, ref)
			if len(p.Create) != tc.create || len(p.Update) != tc.update || len(p.Delete) != tc.del || len(p.MissingBound) != tc.missing {
				t.Fatalf("plan %+v", p)
			}
			if p.IDs[80] != tc.wantID {
				t.Errorf("id %q, want %q", p.IDs[80], tc.wantID)
			}
		})
	}
}

func TestPlanServers(t *testing.T) {
	ecs := func(id string, w int, desc string) Server {
		return Server{ServerID: id, Type: ServerEcs, Port: 30080, Weight: w, Description: desc}
	}
	for _, tc := range []struct {
		name                string
		desired, current    []Server
		shared, ignore      bool
		remove, update, add int
	}{
		{name: "add", desired: []Server{ecs("i-1", 100, "g"), ecs("i-2", 100, "g")}, current: []Server{ecs("i-1", 100, "g")}, add: 1},
		{name: "Ecs servers match without the address the cloud filled in", desired: []Server{ecs("i-1", 100, "g")}, current: []Server{{ServerID: "i-1", IP: "10.0.0.1", Type: ServerEcs, Port: 30080, Weight: 100}}},
		{name: "reweigh", desired: []Server{ecs("i-1", 50, "g")}, current: []Server{ecs("i-1", 100, "g")}, update: 1},
		{name: "ignore-weight-update", desired: []Server{ecs("i-1", 50, "g")}, current: []Server{ecs("i-1", 100, "g")}, ignore: true},
		{name: "remove", current: []Server{ecs("i-1", 100, "g")}, remove: 1},
		{name: "shared group: others' members stay", current: []Server{ecs("i-1", 100, "user"), ecs("i-2", 100, "g")}, shared: true, remove: 1},
		{name: "shared group: others' weights stay", desired: []Server{ecs("i-1", 50, "g")}, current: []Server{ecs("i-1", 100, "user")}, shared: true},
		{name: "new port is another member", desired: []Server{{ServerID: "i-1", Type: ServerEcs, Port: 30081, Weight: 100}}, current: []Server{ecs("i-1", 100, "g")}, add: 1, remove: 1},
		{name: "eni keyed by address", desired: []Server{{ServerID: "eni-1", IP: "10.0.0.2", Type: ServerEni, Port: 8080, Weight: 100}}, current: []Server{{ServerID: "eni-1", IP: "10.0.0.3", Type: ServerEni, Port: 8080, Weight: 100}}, add: 1, remove: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanServers(tc.desired, tc.current, tc.shared, "g", tc.ignore)
			if len(p.Remove) != tc.remove || len(p.Update) != tc.update || len(p.Add) != tc.add {
				t.Fatalf("plan %+v", p)
			}
		})
	}
}

func TestPlanSecurityGroups(t *testing.T) {
	for _, tc := range []struct {
		desired, current []string
		leave, join      string
	}{
		{nil, nil, "", ""},
		{[]string{"sg-1"}, nil, "", "sg-1"},
		{[]string{"sg-2"}, []string{"sg-1"}, "sg-1", "sg-2"},
		{nil, []string{"sg-1", "sg-2"}, "sg-1,sg-2", ""},
		{[]string{"sg-1", "sg-2"}, []string{"sg-2", "sg-1"}, "", ""},
	} {
		p := PlanSecurityGroups(tc.desired, tc.current)
		if strings.Join(p.Leave, ",") != tc.leave || strings.Join(p.Join, ",") != tc.join {
			t.Errorf("%v → %v: %+v", tc.current, tc.desired, p)
		}
	}
}

func nlbService(ann map[string]string, ports ...corev1.ServicePort) *corev1.Service {
	class := annotations.NLBClass
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "1b4e28ba-2fa1-11d2-883f-0016d3cca427", Annotations: map[string]string{annotations.Key("zone-maps"): "z1:vsw-1,z2:vsw-2"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class, Ports: ports},
	}
	for k, v := range ann {
		if strings.Contains(k, "/") {
			s.Annotations[k] = v
		} else {
			s.Annotations[annotations.Key(k)] = v
		}
	}
	return s
}

func TestBuildModel(t *testing.T) {
	tcp := corev1.ServicePort{Name: "a", Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("https")}
	udp := corev1.ServicePort{Name: "b", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)}
	dnsTCP := corev1.ServicePort{Name: "dns-tcp", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(5353)}
	dnsUDP := corev1.ServicePort{Name: "dns-udp", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)}
	dnsUDP2 := corev1.ServicePort{Name: "dns-udp", Port: 53, NodePort: 30054, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)}
	node := service.Target{InstanceID: "i-1", IP: "", Port: 30443, Weight: 100}
	for _, tc := range []struct {
		name        string
		ann         map[string]string
		ports       []corev1.ServicePort
		backends    map[int32][]service.Target
		addr        Addresses
		groups      []string // name/protocol/type
		listeners   []string // description/protocol
		servers     []string // type:id:ip:port
		groupSet    map[string]string
		listenerSet map[string]string
		version     string // the groups' AddressIPVersion; "" = ipv4
	}{
		{name: "ecs backends", ports: []corev1.ServicePort{tcp, udp},
			backends:  map[int32][]service.Target{443: {node}},
			groups:    []string{"k8s.30443.TCP.web.ns.c1/TCP/Instance", "k8s.30053.UDP.web.ns.c1/UDP/Instance"},
			listeners: []string{"k8s.443.TCP.web.ns.c1/TCP", "k8s.53.UDP.web.ns.c1/UDP"},
			servers:   []string{"Ecs:i-1::30443"}, groupSet: map[string]string{}, listenerSet: map[string]string{}},
		{name: "53/TCP and 53/UDP on one nodePort: a group and a listener per protocol", ports: []corev1.ServicePort{dnsTCP, dnsUDP},
			backends:  map[int32][]service.Target{53: {{InstanceID: "i-1", Port: 30053, Weight: 100}}},
			groups:    []string{"k8s.30053.TCP.web.ns.c1/TCP/Instance", "k8s.30053.UDP.web.ns.c1/UDP/Instance"},
			listeners: []string{"k8s.53.TCP.web.ns.c1/TCP", "k8s.53.UDP.web.ns.c1/UDP"},
			servers:   []string{"Ecs:i-1::30053", "Ecs:i-1::30053"}, groupSet: map[string]string{}, listenerSet: map[string]string{}},
		{name: "53/TCP and 53/UDP on two nodePorts: each group on its own nodePort", ports: []corev1.ServicePort{dnsTCP, dnsUDP2},
			// ComputeBackends keys by port number: one entry, the last port's.
			backends:  map[int32][]service.Target{53: {{InstanceID: "i-1", Port: 30054, Weight: 100}}},
			groups:    []string{"k8s.30053.TCP.web.ns.c1/TCP/Instance", "k8s.30054.UDP.web.ns.c1/UDP/Instance"},
			listeners: []string{"k8s.53.TCP.web.ns.c1/TCP", "k8s.53.UDP.web.ns.c1/UDP"},
			servers:   []string{"Ecs:i-1::30053", "Ecs:i-1::30054"}, groupSet: map[string]string{}, listenerSet: map[string]string{}},
		{name: "tcpssl with settings", ports: []corev1.ServicePort{tcp},
			ann: map[string]string{"protocol-port": "tcpssl:443", "cert-id": "cert-1,cert-2", "idle-timeout": "60", "proxy-protocol": "on", "cps": "100",
				"scheduler": "wrr", "health-check-type": "http", "health-check-uri": "/hz", "health-check-httpcode": "http_2xx,http_3xx", "health-check-connect-port": "-520",
				"connection-drain": "on", "connection-drain-timeout": "30", "preserve-client-ip": "on", "health-check-method": "head"},
			groups:    []string{"k8s.30443.TCPSSL.web.ns.c1/TCP/Instance"},
			listeners: []string{"k8s.443.TCPSSL.web.ns.c1/TCPSSL"},
			groupSet: map[string]string{"Scheduler": "Wrr", "ConnectionDrainEnabled": "true", "ConnectionDrainTimeout": "30", "PreserveClientIpEnabled": "true",
				"HealthCheckConfig.HealthCheckType": "HTTP", "HealthCheckConfig.HealthCheckUrl": "/hz", "HealthCheckConfig.HealthCheckHttpCode": "http_2xx,http_3xx",
				"HealthCheckConfig.HealthCheckConnectPort": "0", "HealthCheckConfig.HttpCheckMethod": "HEAD"},
			listenerSet: map[string]string{"IdleTimeout": "60", "ProxyProtocolEnabled": "true", "Cps": "100", "CertificateIds": "cert-1"}},
		{name: "eni backends in an instance group", ports: []corev1.ServicePort{tcp},
			ann:      map[string]string{"service.beta.kubernetes.io/backend-type": "eni"},
			backends: map[int32][]service.Target{443: {{IP: "10.0.0.5", Port: 8443, Weight: 100, ENI: "eni-5"}, {IP: "10.0.0.6", Port: 8443, Weight: 100}}},
			groups:   []string{"k8s.https.TCP.web.ns.c1/TCP/Instance"}, listeners: []string{"k8s.443.TCP.web.ns.c1/TCP"},
			servers: []string{"Eni:eni-5:10.0.0.5:8443"}, groupSet: map[string]string{}, listenerSet: map[string]string{}},
		{name: "ecs backends in an ip group", ports: []corev1.ServicePort{tcp},
			ann:      map[string]string{"server-group-type": "ip"},
			backends: map[int32][]service.Target{443: {node}},
			addr:     Addresses{InstanceIPs: map[string]string{"i-1": "10.0.0.1"}},
			groups:   []string{"k8s.30443.TCP.web.ns.c1/TCP/Ip"}, listeners: []string{"k8s.443.TCP.web.ns.c1/TCP"},
			servers: []string{"Ip:10.0.0.1:10.0.0.1:30443"}, groupSet: map[string]string{}, listenerSet: map[string]string{}},
		{name: "ecs backends in an ip group, dualstack", ports: []corev1.ServicePort{tcp},
			ann:      map[string]string{"server-group-type": "ip", "backend-ip-version": "DualStack"},
			backends: map[int32][]service.Target{443: {node, {InstanceID: "i-2", Port: 30443, Weight: 100}}},
			addr:     Addresses{InstanceIPs: map[string]string{"i-1": "10.0.0.1", "i-2": "10.0.0.2"}, InstanceIPv6s: map[string]string{"i-1": "2408::1"}},
			groups:   []string{"k8s.30443.TCP.web.ns.c1/TCP/Ip"}, listeners: []string{"k8s.443.TCP.web.ns.c1/TCP"}, version: "DualStack",
			servers: []string{"Ip:10.0.0.1:10.0.0.1:30443", "Ip:10.0.0.2:10.0.0.2:30443", "Ip:2408::1:2408::1:30443"}, groupSet: map[string]string{}, listenerSet: map[string]string{}},
		{name: "ecs backends in an ip group, ipv6 (an instance without IPv6 left out)", ports: []corev1.ServicePort{tcp},
			ann:      map[string]string{"server-group-type": "ip", "backend-ip-version": "ipv6"},
			backends: map[int32][]service.Target{443: {node, {InstanceID: "i-2", Port: 30443, Weight: 100}}},
			addr:     Addresses{InstanceIPs: map[string]string{"i-1": "10.0.0.1", "i-2": "10.0.0.2"}, InstanceIPv6s: map[string]string{"i-1": "2408::1"}},
			groups:   []string{"k8s.30443.TCP.web.ns.c1/TCP/Ip"}, listeners: []string{"k8s.443.TCP.web.ns.c1/TCP"}, version: "DualStack",
			servers: []string{"Ip:2408::1:2408::1:30443"}, groupSet: map[string]string{}, listenerSet: map[string]string{}},
		{name: "instance group, dualstack: the instance itself", ports: []corev1.ServicePort{tcp},
			ann:      map[string]string{"backend-ip-version": "dualstack"},
			backends: map[int32][]service.Target{443: {node}},
			groups:   []string{"k8s.30443.TCP.web.ns.c1/TCP/Instance"}, listeners: []string{"k8s.443.TCP.web.ns.c1/TCP"}, version: "DualStack",
			servers: []string{"Ecs:i-1::30443"}, groupSet: map[string]string{}, listenerSet: map[string]string{}},
		{name: "port range", ports: []corev1.ServicePort{tcp},
			ann:      map[string]string{"service.beta.kubernetes.io/backend-type": "eni", "server-group-type": "ip", "listener-port-range": "1000-2000:443"},
			backends: map[int32][]service.Target{443: {{IP: "10.0.0.5", Port: 8443, Weight: 100}}},
			groups:   []string{"k8s.1000_2000.TCP.web.ns.c1/TCP/Ip"}, listeners: []string{"k8s.1000_2000.TCP.web.ns.c1/TCP"},
			servers: []string{"Ip:10.0.0.5:10.0.0.5:0"}, groupSet: map[string]string{}, listenerSet: map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := nlbService(tc.ann, tc.ports...)
			settings, err := annotations.Parse(s, annotations.Defaults{Owner: annotations.OwnerNLB})
			if err != nil {
				t.Fatal(err)
			}
			m := BuildModel(&service.Request{Service: s, Settings: settings, Backends: tc.backends, ClusterID: "c1", Identity: service.IdentityOf(s, "c1")}, tc.addr)
			var groups, listeners, servers []string
			for _, g := range m.Groups {
				groups = append(groups, g.Name+"/"+g.Protocol+"/"+g.Type)
				want := tc.version
				if want == "" {
					want = "ipv4"
				}
				if g.AddressIPVersion != want {
					t.Errorf("group AddressIPVersion %q, want %q", g.AddressIPVersion, want)
				}
				for _, srv := range g.Servers {
					servers = append(servers, srv.Type+":"+srv.ServerID+":"+srv.IP+":"+strconv.Itoa(int(srv.Port)))
				}
				if !reflect.DeepEqual(g.Set, tc.groupSet) {
					t.Errorf("group settings %v, want %v", g.Set, tc.groupSet)
				}
			}
			byKey := map[PortKey]Group{}
			for _, g := range m.Groups {
				if _, dup := byKey[g.ServicePort]; dup {
					t.Errorf("two groups with key %d", g.ServicePort)
				}
				byKey[g.ServicePort] = g
			}
			for _, l := range m.Listeners {
				if g, ok := byKey[l.ServicePort]; !ok || g.Protocol != groupProtocol(l.Protocol) {
					t.Errorf("listener %s selects group %+v", l.Description, g)
				}
				listeners = append(listeners, l.Description+"/"+l.Protocol)
				if !reflect.DeepEqual(l.Set, tc.listenerSet) {
					t.Errorf("listener settings %v, want %v", l.Set, tc.listenerSet)
				}
			}
			sort.Strings(servers)
			if !reflect.DeepEqual(groups, tc.groups) || !reflect.DeepEqual(listeners, tc.listeners) || strings.Join(servers, ",") != strings.Join(tc.servers, ",") {
				t.Errorf("groups %v listeners %v servers %v", groups, listeners, servers)
			}
		})
	}
}

func TestFormParams(t *testing.T) {
	got := formParams(map[string]string{"CertificateIds": "c1", "HealthCheckConfig.HealthCheckHttpCode": "http_2xx,http_3xx", "IdleTimeout": "60"})
	want := map[string]string{"CertificateIds.1": "c1", "HealthCheckConfig.HealthCheckHttpCode.1": "http_2xx", "HealthCheckConfig.HealthCheckHttpCode.2": "http_3xx", "IdleTimeout": "60"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v", got)
	}
}
