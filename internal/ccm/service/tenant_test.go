package service_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// The tenant boundary, tried as an attacker with edit rights in one
// namespace (team-a) and no cloud access, against a victim in another
// (team-b) or outside the cluster: one test per attack on the tenant boundary. Each
// checks, through the emulator's request log, that nothing of the victim
// was written, that the attacker's Service got a Warning, and that every
// Service involved deletes completely.

const (
	attackerNS = "team-a"
	victimNS   = "team-b"
)

var tenantsOnce sync.Once

// tenants creates the two namespaces once.
func tenants(t *testing.T) {
	t.Helper()
	tenantsOnce.Do(func() {
		for _, n := range []string{attackerNS, victimNS} {
			_, err := kube(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	})
}

// createIn creates svc in namespace.
func createIn(t *testing.T, namespace string, svc *corev1.Service) *corev1.Service {
	t.Helper()
	svc.Namespace = namespace
	out, err := kube(t).CoreV1().Services(namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// publish writes a hand-made EndpointSlice for the selector-less Service
// namespace/svc on port p80 → 8080, as anyone who can edit the namespace
// can.
func publish(t *testing.T, namespace, svc string, eps ...discoveryv1.Endpoint) {
	t.Helper()
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc + "-hand", Namespace: namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "attacker",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p80"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   eps,
	}
	c := kube(t).DiscoveryV1().EndpointSlices(namespace)
	if _, err := c.Create(context.Background(), sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), sl.Name, metav1.DeleteOptions{}) })
}

func readyEndpoint(ip string, ref *corev1.ObjectReference) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, TargetRef: ref}
}

// nlbService makes an NLB Service in the cluster's zones.
func nlbService(t *testing.T, name string, ann map[string]string) *corev1.Service {
	_, zones := clusterNetwork(t)
	all := map[string]string{annotations.Key("zone-maps"): strings.Join(zones, ",")}
	for k, v := range ann {
		all[k] = v
	}
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: all})
	svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	return svc
}

// TestTenantVGroupPortOfAnotherService (attack 1): an NLB Service that
// names another Service's server group in vgroup-port gets a Warning
// naming the group; the victim group gets no server, no write at all.
func TestTenantVGroupPortOfAnotherService(t *testing.T) {
	t.Parallel()
	tenants(t)
	victim := createIn(t, victimNS, nlbService(t, "victim-vgroup", nil))
	vs := waitIngressIn(t, victimNS, victim.Name, 90*time.Second)
	var group nlb.ServerGroup
	for _, g := range nlbGroups(t, vs) {
		group = g
	}
	if group.ServerGroupId == "" {
		t.Fatal("the victim has no server group")
	}
	before := nlbServers(t, group.ServerGroupId)
	seq := lastSeq()
	createIn(t, attackerNS, nlbService(t, "attack-vgroup", map[string]string{annotations.Key("vgroup-port"): group.ServerGroupId + ":80"}))
	// vgroup-port without id is refused by the annotation parser, before
	// any cloud call.
	waitEventIn(t, attackerNS, "attack-vgroup", service.EventInvalid, group.ServerGroupId)
	if w := writesOn("nlb", seq, group.ServerGroupId, lbID(vs)); len(w) > 0 {
		t.Fatalf("writes on the victim's group or NLB: %v", actions(w))
	}
	if after := nlbServers(t, group.ServerGroupId); len(after) != len(before) {
		t.Fatalf("victim group had %d servers, now %d", len(before), len(after))
	}
	took := deleteServiceIn(t, attackerNS, "attack-vgroup", 60*time.Second)
	t.Logf("attacker deleted in %v", took)
	if w := writesOn("nlb", seq, group.ServerGroupId, lbID(vs)); len(w) > 0 {
		t.Fatalf("writes on the victim's group or NLB: %v", actions(w))
	}
	deleteServiceIn(t, victimNS, victim.Name, 60*time.Second)
}

// TestTenantENIBackendsOutsideTheCluster (attacks 2 and 6, ready
// endpoints): a selector-less eni Service publishes the address of a VM
// that is no Node (a database), and the address of another namespace's
// pod; neither is registered (Warning naming both, no write carrying the
// VM's ENI) while a genuine pod address on a Node's ENI is.
func TestTenantENIBackendsOutsideTheCluster(t *testing.T) {
	t.Parallel()
	tenants(t)
	node, err := emulatorEnv().Instance(instances[nodeNames[0]])
	if err != nil {
		t.Fatal(err)
	}
	ids, err := cloud.Seed(&api.Seed{Instances: []api.SeedInstance{{Name: "database", VSwitchID: node.VpcAttributes.VSwitchId}}})
	if err != nil {
		t.Fatal(err)
	}
	db, err := emulatorEnv().Instance(ids["instance"][0])
	if err != nil {
		t.Fatal(err)
	}
	dbIP := db.VpcAttributes.PrivateIpAddress.IpAddress[0]
	nr := ecs.CreateDescribeNetworkInterfacesRequest()
	nr.InstanceId = db.InstanceId
	enis, err := ecsClient(t).DescribeNetworkInterfaces(nr)
	if err != nil || len(enis.NetworkInterfaceSets.NetworkInterfaceSet) == 0 {
		t.Fatalf("the database's ENI: %v", err)
	}
	dbENI := enis.NetworkInterfaceSets.NetworkInterfaceSet[0].NetworkInterfaceId
	good, foreign := podHostIPs[3], podHostIPs[4]

	name := "attack-eni"
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.BackendTypeKey: "eni"}})
	svc.Spec.Selector = nil
	createIn(t, attackerNS, svc)
	seq := lastSeq()
	publish(t, attackerNS, name,
		readyEndpoint(dbIP, nil),
		readyEndpoint(foreign, &corev1.ObjectReference{Kind: "Pod", Namespace: victimNS, Name: "victim-pod"}),
		readyEndpoint(good, nil))
	got := waitIngressIn(t, attackerNS, name, 60*time.Second)
	group := naming.For(got, clusterID).CLBVGroup("8080")
	poll(t, 20*time.Second, "the pod on the Node's ENI registered", func(ctx context.Context) (bool, error) {
		for _, m := range members(t, lbID(got), group) {
			if m.IP == good && m.ServerID == podHostENI {
				return true, nil
			}
		}
		return false, nil
	})
	if m := members(t, lbID(got), group); len(m) != 1 {
		t.Fatalf("members %+v, want only %s on %s", m, good, podHostENI)
	}
	w := waitEventIn(t, attackerNS, name, service.EventBackendRejected, dbIP)
	for _, want := range []string{dbENI, foreign, victimNS + "/victim-pod"} {
		if !strings.Contains(w.Message, want) {
			t.Errorf("Warning %q does not name %s", w.Message, want)
		}
	}
	if w := writesOn("slb", seq, dbENI, dbIP, foreign); len(w) > 0 {
		t.Fatalf("writes registering the database or the foreign pod: %v", actions(w))
	}
	deleteServiceIn(t, attackerNS, name, 30*time.Second)
}

// podAddress waits for the pod's address (kwok assigns it).
func podAddress(t *testing.T, namespace, name string) string {
	t.Helper()
	var ip string
	poll(t, 30*time.Second, "the address of pod "+namespace+"/"+name, func(ctx context.Context) (bool, error) {
		p, err := kube(t).CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ip = p.Status.PodIP
		return ip != "", nil
	})
	return ip
}

// TestTenantUntargetedEndpointOfAnotherNamespace: an endpoint without a
// targetRef whose address is another namespace's pod is refused by name
// (found through the API server's status.podIP field selector), never
// registered.
func TestTenantUntargetedEndpointOfAnotherNamespace(t *testing.T) {
	t.Parallel()
	tenants(t)
	ctx := context.Background()
	pods := kube(t).CoreV1().Pods(victimNS)
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "victim-untargeted", Namespace: victimNS},
		Spec:       corev1.PodSpec{NodeName: nodeNames[1], Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pods.Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	ip := podAddress(t, victimNS, pod.Name)
	name := "attack-untargeted"
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.BackendTypeKey: "eni"}})
	svc.Spec.Selector = nil
	createIn(t, attackerNS, svc)
	seq := lastSeq()
	publish(t, attackerNS, name, readyEndpoint(ip, nil))
	waitEventIn(t, attackerNS, name, service.EventBackendRejected, victimNS+"/"+pod.Name)
	if w := writesOn("slb", seq, ip); len(w) > 0 {
		t.Fatalf("writes registering the other namespace's pod: %v", actions(w))
	}
	deleteServiceIn(t, attackerNS, name, 30*time.Second)
}

// TestTenantReadinessGateAcrossNamespaces (attack 6): an EndpointSlice
// whose not-ready endpoint names a gated pod of another namespace never
// gets that pod's gate set, and the attacker is told.
func TestTenantReadinessGateAcrossNamespaces(t *testing.T) {
	t.Parallel()
	tenants(t)
	ctx := context.Background()
	name := "attack-gate"
	gate := service.ReadinessGate(name)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "victim-gated", Namespace: victimNS},
		Spec: corev1.PodSpec{NodeName: nodeNames[1], HostNetwork: true, ReadinessGates: []corev1.PodReadinessGate{{ConditionType: gate}},
			Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
	}
	pods := kube(t).CoreV1().Pods(victimNS)
	pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pods.Delete(context.Background(), "victim-gated", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	ip := podAddress(t, victimNS, pod.Name)
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.BackendTypeKey: "eni"}})
	svc.Spec.Selector = nil
	createIn(t, attackerNS, svc)
	publish(t, attackerNS, name, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: victimNS, Name: pod.Name, UID: pod.UID}})
	waitIngressIn(t, attackerNS, name, 60*time.Second)
	// The slice's own event makes another pass; a gate would be set within
	// a second (TestReadinessGate: ~0.7 s).
	time.Sleep(3 * time.Second)
	p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == gate {
			t.Fatalf("the victim's pod got gate %s: %+v", gate, c)
		}
	}
	waitEventIn(t, attackerNS, name, service.EventBackendRejected, victimNS+"/"+pod.Name)
	deleteServiceIn(t, attackerNS, name, 30*time.Second)
}

// deleteCLB deletes a load balancer as a console user would (protection
// off first).
func deleteCLB(t *testing.T, id string) {
	t.Helper()
	p := slb.CreateSetLoadBalancerDeleteProtectionRequest()
	p.LoadBalancerId, p.DeleteProtection = id, "off"
	if _, err := slbClient(t).SetLoadBalancerDeleteProtection(p); err != nil {
		t.Fatal(err)
	}
	d := slb.CreateDeleteLoadBalancerRequest()
	d.LoadBalancerId = id
	if _, err := slbClient(t).DeleteLoadBalancer(d); err != nil {
		t.Fatal(err)
	}
}

// TestTenantNoStuckDelete (attack 3): a Service whose borrowed CLB was
// deleted in the console, or whose id was edited to a load balancer that
// does not exist, deletes in well under 30 s.
func TestTenantNoStuckDelete(t *testing.T) {
	t.Parallel()
	tenants(t)
	for _, tc := range []struct {
		name    string
		breakIt func(t *testing.T, name, lb string)
	}{
		{"console-deleted", func(t *testing.T, _, lb string) { deleteCLB(t, lb) }},
		{"id-to-nowhere", func(t *testing.T, name, _ string) {
			updateServiceIn(t, attackerNS, name, func(s *corev1.Service) { s.Annotations[annotations.Key("id")] = "lb-doesnotexist0000000" })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			user := userLB(t).LoadBalancerId
			name := "stuck-" + tc.name
			createIn(t, attackerNS, newService(svcSpec{name: name, ports: []int32{8080}, annotations: map[string]string{annotations.Key("id"): user}}))
			if got := lbID(waitIngressIn(t, attackerNS, name, 60*time.Second)); got != user {
				t.Fatalf("bound to %q, want %s", got, user)
			}
			tc.breakIt(t, name, user)
			took := deleteServiceIn(t, attackerNS, name, 30*time.Second)
			t.Logf("deleted in %v", took)
		})
	}
}

// TestTenantReleaseFollowsBinding (attack 4): a Service bound to borrowed
// CLB A whose id is edited to B (refused) and which is then deleted leaves
// no listener or group of its own on A, and B is never written.
func TestTenantReleaseFollowsBinding(t *testing.T) {
	t.Parallel()
	tenants(t)
	a, b := userLB(t).LoadBalancerId, userLB(t).LoadBalancerId
	name := "rebind"
	createIn(t, attackerNS, newService(svcSpec{name: name, ports: []int32{8080}, annotations: map[string]string{annotations.Key("id"): a}}))
	got := waitIngressIn(t, attackerNS, name, 60*time.Second)
	ref := naming.For(got, clusterID)
	if _, ok := groupMembers(t, a)[ref.CLBVGroup(itoa(got.Spec.Ports[0].NodePort))]; !ok {
		t.Fatalf("no group of the Service on %s: %v", a, groupMembers(t, a))
	}
	seq := lastSeq()
	updateServiceIn(t, attackerNS, name, func(s *corev1.Service) { s.Annotations[annotations.Key("id")] = b })
	waitEventIn(t, attackerNS, name, service.EventReuseRefused, b)
	deleteServiceIn(t, attackerNS, name, 30*time.Second)
	for _, l := range listeners(t, a) {
		if _, ours := ref.OwnsCLB(l.Description); ours {
			t.Errorf("listener %d of the deleted Service left on %s", l.ListenerPort, a)
		}
	}
	for g := range groupMembers(t, a) {
		if _, ours := ref.OwnsCLB(g); ours {
			t.Errorf("group %s of the deleted Service left on %s", g, a)
		}
	}
	if _, ok := clbListener(t, a, 80, "tcp"); !ok {
		t.Errorf("the user's own listener on %s is gone", a)
	}
	if w := writesOn("slb", seq, b); len(w) > 0 {
		t.Fatalf("writes on %s, named only by the refused edit: %v", b, actions(w))
	}
}

// TestTenantIDRemoved: removing id from a Service bound to a borrowed CLB
// is refused like editing it (a new load balancer would strand the
// Service's listeners on the borrowed one); deleting the Service then
// releases them.
func TestTenantIDRemoved(t *testing.T) {
	t.Parallel()
	tenants(t)
	a := userLB(t).LoadBalancerId
	name := "unborrow"
	createIn(t, attackerNS, newService(svcSpec{name: name, ports: []int32{8080}, annotations: map[string]string{annotations.Key("id"): a}}))
	got := waitIngressIn(t, attackerNS, name, 60*time.Second)
	ref := naming.For(got, clusterID)
	seq := lastSeq()
	updateServiceIn(t, attackerNS, name, func(s *corev1.Service) { delete(s.Annotations, annotations.Key("id")) })
	waitEventIn(t, attackerNS, name, service.EventReuseRefused, a)
	if w := writesOn("slb", seq, naming.DefaultLBName(got)); len(w) > 0 {
		t.Fatalf("a load balancer was made for the Service after id was removed: %v", actions(w))
	}
	if _, ok := groupMembers(t, a)[ref.CLBVGroup(itoa(got.Spec.Ports[0].NodePort))]; !ok {
		t.Fatalf("the Service's group on %s went before the Service did: %v", a, groupMembers(t, a))
	}
	deleteServiceIn(t, attackerNS, name, 30*time.Second)
	for _, l := range listeners(t, a) {
		if _, ours := ref.OwnsCLB(l.Description); ours {
			t.Errorf("listener %d of the deleted Service left on %s", l.ListenerPort, a)
		}
	}
}

// TestTenantListenerTakeover (attack 5): two namespaces borrow one CLB;
// the attacker asks for the victim's port with force-override-listeners
// and gets a Warning naming the owner; the victim's listener is never
// written. Both Services delete completely, the user's listener stays.
func TestTenantListenerTakeover(t *testing.T) {
	t.Parallel()
	tenants(t)
	lb := userLB(t).LoadBalancerId
	force := map[string]string{annotations.Key("id"): lb, annotations.Key("force-override-listeners"): "true"}
	victim := createIn(t, victimNS, newService(svcSpec{name: "shared", ports: []int32{8081}, annotations: force}))
	waitIngressIn(t, victimNS, victim.Name, 60*time.Second)
	before, ok := clbListener(t, lb, 8081, "tcp")
	if !ok {
		t.Fatalf("no victim listener on %s", lb)
	}
	seq := lastSeq()
	createIn(t, attackerNS, newService(svcSpec{name: "shared", ports: []int32{8081}, annotations: force}))
	// The attacker's group is created on the shared LB before listeners
	// are planned: once it exists, the listener pass has run or is next.
	poll(t, 30*time.Second, "the attacker's sync reached the listeners", func(ctx context.Context) (bool, error) {
		for _, e := range eventsIn(t, attackerNS, "shared") {
			if e.Reason == clb.EventListenerConflict || e.Reason == service.EventEnsured {
				return true, nil
			}
		}
		return false, nil
	})
	after, _ := clbListener(t, lb, 8081, "tcp")
	if clbString(after) != clbString(before) {
		t.Fatalf("victim listener changed:\n%s\n%s", clbString(before), clbString(after))
	}
	for _, r := range writesOn("slb", seq, lb) {
		if strings.Contains(r.Action, "Listener") && r.Params["ListenerPort"] == "8081" {
			t.Fatalf("write on the victim's listener: %s %v", r.Action, r.Params)
		}
	}
	waitEventIn(t, attackerNS, "shared", clb.EventListenerConflict, victimNS+"/shared")
	deleteServiceIn(t, attackerNS, "shared", 30*time.Second)
	if _, ok := clbListener(t, lb, 8081, "tcp"); !ok {
		t.Fatal("the attacker's delete removed the victim's listener")
	}
	deleteServiceIn(t, victimNS, "shared", 30*time.Second)
	if _, ok := clbListener(t, lb, 8081, "tcp"); ok {
		t.Error("the victim's listener outlived its Service")
	}
	if _, ok := clbListener(t, lb, 80, "tcp"); !ok {
		t.Error("the user's own listener is gone")
	}
}

// TestTenantBorrowedNLB (attack 8): on a borrowed NLB without
// force-override-listeners, no listener is created; security-group-ids ""
// leaves none of the owner's groups; loadBalancerSourceRanges are refused
// with a Warning. The Service deletes completely.
func TestTenantBorrowedNLB(t *testing.T) {
	t.Parallel()
	tenants(t)
	k := kinds(t)[1]
	user := k.userLB(t, nil)
	vpcID, _ := clusterNetwork(t)
	sgr := ecs.CreateCreateSecurityGroupRequest()
	sgr.VpcId, sgr.SecurityGroupType, sgr.SecurityGroupName = vpcID, "enterprise", "owners-firewall"
	sg, err := ecsClient(t).CreateSecurityGroup(sgr)
	if err != nil {
		t.Fatalf("create the owner's security group: %v", err)
	}
	jr := nlb.CreateLoadBalancerJoinSecurityGroupRequest()
	jr.LoadBalancerId, jr.SecurityGroupIds = user, &[]string{sg.SecurityGroupId}
	// A new NLB refuses the join while it is provisioning.
	poll(t, 30*time.Second, "the owner's security group joined", func(ctx context.Context) (bool, error) {
		_, err := nlbClient(t).LoadBalancerJoinSecurityGroup(jr)
		if err != nil {
			return false, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), "\n", " "))
		}
		return true, nil
	})
	name := "borrow-nlb"
	svc := nlbService(t, name, map[string]string{annotations.Key("id"): user, annotations.Key("security-group-ids"): ""})
	svc.Spec.LoadBalancerSourceRanges = []string{"10.1.0.0/16"}
	seq := lastSeq()
	createIn(t, attackerNS, svc)
	waitIngressIn(t, attackerNS, name, 90*time.Second)
	waitEventIn(t, attackerNS, name, service.EventSourceRangesIgnored, user)
	for _, r := range cloud.Requests() {
		if r.Seq <= seq || !isWrite(r.Action) {
			continue
		}
		for _, bad := range []string{"CreateListener", "LoadBalancerLeaveSecurityGroup", "LoadBalancerJoinSecurityGroup", "CreateSecurityGroup"} {
			if r.Action == bad && (strings.Contains(strings.Join(paramValues(r.Params), ","), user) || bad == "CreateSecurityGroup" && strings.Contains(r.Params["Description"], name)) {
				t.Errorf("%s on the borrowed NLB: %v", bad, r.Params)
			}
		}
	}
	ga := nlb.CreateGetLoadBalancerAttributeRequest()
	ga.LoadBalancerId = user
	attr, err := nlbClient(t).GetLoadBalancerAttribute(ga)
	if err != nil || len(attr.SecurityGroupIds) != 1 || attr.SecurityGroupIds[0] != sg.SecurityGroupId {
		t.Fatalf("owner's security groups now %v (%v)", attr.SecurityGroupIds, err)
	}
	deleteServiceIn(t, attackerNS, name, 60*time.Second)
	if !k.exists(t, user) {
		t.Fatal("the borrowed NLB was deleted")
	}
}

func paramValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestTenantKindSurvivesGateOff (attack 7): NLBs made through the type
// annotation while the LoadBalancerTypeAnnotation gate was on are kept,
// and keep being served, when a restart turns the gate off; a new Service
// asking for nlb without the gate gets a Warning and nothing; one asking
// for alb is another controller's. It restarts the CCM, so it does not
// run in parallel.
func TestTenantKindSurvivesGateOff(t *testing.T) {
	tenants(t)
	_, zones := clusterNetwork(t)
	typed := func(name, kind string) *corev1.Service {
		return newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{
			annotations.LoadBalancerTypeKey: kind, annotations.Key("zone-maps"): strings.Join(zones, ","),
		}})
	}
	createIn(t, victimNS, typed("typed-nlb", "nlb"))
	nlbID := lbID(waitIngressIn(t, victimNS, "typed-nlb", 90*time.Second))
	if !strings.HasPrefix(nlbID, "nlb-") {
		t.Fatalf("bound to %s, want an NLB", nlbID)
	}
	restartCCM(t, "Global:\n  clusterID: "+clusterID+"\n")
	defer restartCCM(t, "Global:\n  clusterID: "+clusterID+"\n  featureGates: LoadBalancerTypeAnnotation=true\n")
	seq := lastSeq()
	createIn(t, victimNS, typed("typed-nlb-late", "nlb"))
	createIn(t, victimNS, typed("typed-alb", "alb"))
	waitEventIn(t, victimNS, "typed-nlb-late", service.EventOwnershipAmbiguous, "LoadBalancerTypeAnnotation")
	// The bound NLB is still served: a label change makes a full sync.
	updateServiceIn(t, victimNS, "typed-nlb", func(s *corev1.Service) { s.Annotations[annotations.Key("idle-timeout")] = "90" })
	poll(t, 30*time.Second, "the NLB listener follows idle-timeout", func(ctx context.Context) (bool, error) {
		l, ok := nlbListeners(t, nlbID)["TCP:80"]
		return ok && l.IdleTimeout == 90, nil
	})
	for _, r := range cloud.Requests() {
		if r.Seq > seq && (r.Action == "DeleteLoadBalancer" || r.Action == "CreateLoadBalancer") {
			t.Errorf("%s %s %v after the gate went off", r.Product, r.Action, r.Params)
		}
	}
	for _, n := range []string{"typed-nlb-late", "typed-alb"} {
		s, err := kube(t).CoreV1().Services(victimNS).Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Finalizers) > 0 || len(s.Status.LoadBalancer.Ingress) > 0 {
			t.Errorf("%s: finalizers %v, status %v", n, s.Finalizers, s.Status.LoadBalancer.Ingress)
		}
	}
	for _, e := range eventsIn(t, victimNS, "typed-alb") {
		if e.Type == corev1.EventTypeWarning {
			t.Errorf("another controller's Service got %s: %s", e.Reason, e.Message)
		}
	}
	for _, n := range []string{"typed-nlb", "typed-nlb-late", "typed-alb"} {
		deleteServiceIn(t, victimNS, n, 60*time.Second)
	}
	if nlbLBExists(t, nlbID) {
		t.Errorf("NLB %s not deleted with its Service", nlbID)
	}
}

// restartCCM replaces the CCM process with one reading cloudConfig.
func restartCCM(t *testing.T, cloudConfig string) {
	t.Helper()
	ccm.Stop()
	if err := startCCMWith(cloudConfig); err != nil {
		t.Fatal(err)
	}
}

// emulatorEnv is the SDK view of the test emulator.
func emulatorEnv() *emulatortest.Env { return emulatortest.For(cloud, accessKeyID, accessKeySecret) }
