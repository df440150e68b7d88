package service_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// createDNSService creates a Service with 53/TCP and 53/UDP. With
// distinct false the API server gives both one nodePort (it does so for
// one port number on two protocols); with distinct true they get two free
// nodePorts of their own, which only an explicit request achieves.
func createDNSService(t *testing.T, name string, class *string, ann map[string]string, distinct bool) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: class,
			Selector:          map[string]string{"app": name},
			Ports: []corev1.ServicePort{
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(5353)},
				{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)},
			},
		},
	}
	for attempt := 0; ; attempt++ {
		if distinct {
			base := int32(30000 + rand.IntN(2700))
			svc.Spec.Ports[0].NodePort, svc.Spec.Ports[1].NodePort = base, base+1
		}
		out, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
		if err == nil {
			np0, np1 := out.Spec.Ports[0].NodePort, out.Spec.Ports[1].NodePort
			if (np0 == np1) == distinct {
				t.Fatalf("nodePorts %d and %d, distinct %t", np0, np1, distinct)
			}
			return out
		}
		// A nodePort taken by another test's Service: try two others.
		if !distinct || !apierrors.IsInvalid(err) || attempt > 20 {
			t.Fatal(err)
		}
	}
}

// TestNLBSamePortTCPAndUDP: 53/TCP and 53/UDP get one server group per
// protocol, named after the nodePort and protocol, each holding every
// Node, and two listeners forwarding each to its own protocol's group; a
// second full sync makes no NLB write. Both with one shared nodePort (what
// the API server allocates) and with two.
func TestNLBSamePortTCPAndUDP(t *testing.T) {
	t.Parallel()
	_, zones := clusterNetwork(t)
	for _, distinct := range []bool{false, true} {
		name := "dual-nlb-shared"
		if distinct {
			name = "dual-nlb-distinct"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seq := lastSeq()
			created := createDNSService(t, name, ptr.To(annotations.NLBClass), map[string]string{annotations.Key("zone-maps"): strings.Join(zones, ",")}, distinct)
			svc := waitIngress(t, name, 60*time.Second)
			id := lbID(svc)
			ref := naming.For(svc, clusterID)
			groups := nlbGroups(t, svc)
			ls := nlbListeners(t, id)
			if len(groups) != 2 || len(ls) != 2 {
				t.Fatalf("groups %v listeners %v, want two of each", keys(groups), keys(ls))
			}
			ids := []string{id}
			for _, sp := range created.Spec.Ports {
				proto := string(sp.Protocol)
				g, ok := groups[ref.NLBServerGroup(strconv.Itoa(int(sp.NodePort)), proto)]
				if !ok || g.Protocol != proto {
					t.Errorf("%s: no %s group %s in %v", sp.Name, proto, ref.NLBServerGroup(strconv.Itoa(int(sp.NodePort)), proto), keys(groups))
					continue
				}
				l := ls[proto+":53"]
				if l.ServerGroupId != g.ServerGroupId || l.ListenerDescription != ref.NLBListener(53, proto) {
					t.Errorf("listener %s:53 %+v, want description %s and group %s", proto, l, ref.NLBListener(53, proto), g.ServerGroupId)
				}
				servers := nlbServers(t, g.ServerGroupId)
				if len(servers) != nodeCount {
					t.Errorf("group %s: %d servers, want %d", g.ServerGroupName, len(servers), nodeCount)
				}
				for _, srv := range servers {
					if srv.Port != int(sp.NodePort) {
						t.Errorf("group %s: server %s on port %d, want the nodePort %d", g.ServerGroupName, srv.ServerId, srv.Port, sp.NodePort)
					}
				}
				ids = append(ids, g.ServerGroupId, l.ListenerId)
			}
			// The Service's name is in its group names, and its default name
			// in the create calls' tags.
			first := writesOn("nlb", seq, append([]string{"." + name + ".", naming.DefaultLBName(svc)}, ids...)...)
			t.Logf("first sync: %d NLB writes %v", len(first), actions(first))

			seq = lastSeq()
			resync(t, name, "nlb", "ListListeners", id)
			time.Sleep(time.Second)
			if w := writesOn("nlb", seq, ids...); len(w) != 0 {
				t.Errorf("second sync made %d NLB writes: %v", len(w), actions(w))
			}
			deleteService(t, name)
			if nlbLBExists(t, id) {
				t.Errorf("NLB %s survived its Service", id)
			}
			if g := nlbGroups(t, svc); len(g) != 0 {
				t.Errorf("server groups %v survived the Service", keys(g))
			}
		})
	}
}

// TestCLBSamePortTCPAndUDP: on a CLB, vServer group names carry no
// protocol, so 53/TCP and 53/UDP on one nodePort share one group (as the
// existing CCM does) and with two nodePorts each has its own; either way
// the listeners forward to the right group, no duplicate group is made,
// and a second full sync makes no SLB write.
func TestCLBSamePortTCPAndUDP(t *testing.T) {
	t.Parallel()
	for _, distinct := range []bool{false, true} {
		name := "dual-clb-shared"
		if distinct {
			name = "dual-clb-distinct"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seq := lastSeq()
			created := createDNSService(t, name, nil, nil, distinct)
			svc := waitIngress(t, name, 30*time.Second)
			id := lbID(svc)
			ref := naming.For(svc, clusterID)
			groups := clbGroupIDs(t, id)
			members := groupMembers(t, id)
			wantGroups := 1
			if distinct {
				wantGroups = 2
			}
			if len(groups) != wantGroups {
				t.Fatalf("vServer groups %v, want %d", groups, wantGroups)
			}
			for _, sp := range created.Spec.Ports {
				name := ref.CLBVGroup(strconv.Itoa(int(sp.NodePort)))
				l, ok := clbListener(t, id, 53, strings.ToLower(string(sp.Protocol)))
				if !ok || l.VServerGroupId != groups[name] || groups[name] == "" || l.Description != ref.CLBListener(53) || l.Status != "running" {
					t.Errorf("listener %s:53 %s (found %t), want group %s (%s)", sp.Protocol, clbString(l), ok, groups[name], name)
				}
				if len(members[name]) != nodeCount {
					t.Errorf("group %s: %d members, want %d", name, len(members[name]), nodeCount)
				}
			}
			ids := []string{id}
			for _, g := range groups {
				ids = append(ids, g)
			}
			first := writesOn("slb", seq, append([]string{naming.DefaultLBName(svc)}, ids...)...)
			t.Logf("first sync: %d SLB writes %v", len(first), actions(first))
			seq = lastSeq()
			resync(t, name, "slb", "DescribeLoadBalancerListeners", id)
			time.Sleep(time.Second)
			if w := writesOn("slb", seq, ids...); len(w) != 0 {
				t.Errorf("second sync made %d SLB writes: %v", len(w), actions(w))
			}
			deleteService(t, name)
			if _, ok := describeLB(t, id); ok {
				t.Errorf("CLB %s survived its Service", id)
			}
		})
	}
}

func nlbServers(t *testing.T, group string) []nlb.Server {
	t.Helper()
	r := nlb.CreateListServerGroupServersRequest()
	r.ServerGroupId = group
	r.MaxResults = requests.NewInteger(100)
	resp, err := nlbClient(t).ListServerGroupServers(r)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Servers
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
