package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// TestInvalidAnnotation: an invalid value gets a Warning event naming the
// key, the value and what is accepted, and no cloud call for that
// Service; a valid Service created alongside is served; fixing the value
// lets the first one through.
func TestInvalidAnnotation(t *testing.T) {
	seq := lastSeq()
	bad := createService(t, svcSpec{name: "invalid", ports: []int32{80}, annotations: map[string]string{
		annotations.Key("scheduler"):               "fastest",
		annotations.LegacyKey("healthy-threshold"): "42",
	}})
	createService(t, svcSpec{name: "valid-neighbour", ports: []int32{80}})
	ev := waitEvent(t, "invalid", "InvalidAnnotation", "fastest")
	for _, want := range []string{annotations.Key("scheduler"), "wrr, rr", annotations.LegacyKey("healthy-threshold"), `"42"`, "2 to 10"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("event %q lacks %q", ev.Message, want)
		}
	}
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type %s", ev.Type)
	}
	waitIngress(t, "valid-neighbour", 30*time.Second)
	defName := naming.DefaultLBName(bad)
	for _, r := range cloud.Requests(gateway.RequestFilter{Product: "slb", AfterSeq: seq}) {
		if strings.Contains(r.Params["LoadBalancerName"]+r.Params["Tags"], defName) && r.Action != "DescribeLoadBalancers" || r.Action == "CreateLoadBalancer" && r.Params["LoadBalancerName"] == defName {
			t.Errorf("cloud call %s for the invalid Service", r.Action)
		}
	}
	if s := getService(t, "invalid"); len(s.Finalizers) != 0 || len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("invalid Service got finalizers %v status %v", s.Finalizers, s.Status.LoadBalancer.Ingress)
	}
	updateService(t, "invalid", func(s *corev1.Service) {
		s.Annotations[annotations.Key("scheduler")] = "wrr"
		s.Annotations[annotations.LegacyKey("healthy-threshold")] = "4"
	})
	svc := waitIngress(t, "invalid", 30*time.Second)
	for _, l := range listeners(t, lbID(svc)) {
		if l.Scheduler != "wrr" || l.TCPListenerConfig.HealthyThreshold != 4 {
			t.Errorf("listener scheduler %s threshold %d, want wrr and 4", l.Scheduler, l.TCPListenerConfig.HealthyThreshold)
		}
	}
	// An immutable attribute changed on the existing LB is reported, not applied.
	updateService(t, "invalid", func(s *corev1.Service) { s.Annotations[annotations.Key("address-type")] = "intranet" })
	waitEvent(t, "invalid", "ImmutableAttributeChanged", "address-type")
	deleteService(t, "invalid")
	deleteService(t, "valid-neighbour")
}

// TestListenerAnnotations covers HTTP/HTTPS/UDP listeners with their
// settings, and an update of one setting.
func TestListenerAnnotations(t *testing.T) {
	cert := uploadCert(t)
	name := "listeners"
	createService(t, svcSpec{name: name, ports: []int32{80, 443, 53, 8080}, protocols: []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolTCP},
		annotations: map[string]string{
			annotations.Key("protocol-port"):       "http:80,https:443,udp:53",
			annotations.Key("cert-id"):             cert,
			annotations.Key("forward-port"):        "80:443",
			annotations.Key("sticky-session"):      "on",
			annotations.Key("sticky-session-type"): "insert",
			annotations.Key("cookie-timeout"):      "1800",
			annotations.Key("health-check-flag"):   "on",
			annotations.Key("health-check-uri"):    "/healthz",
			annotations.Key("persistence-timeout"): "60",
			annotations.Key("idle-timeout"):        "30",
			annotations.Key("xforwardedfor-proto"): "on",
			annotations.Key("scheduler"):           "wrr",
			annotations.Key("established-timeout"): "300",
			annotations.Key("bandwidth"):           "20",
			annotations.Key("charge-type"):         "paybybandwidth",
		}})
	svc := waitIngress(t, name, 30*time.Second)
	ls := listeners(t, lbID(svc))
	byPort := map[int]slb.ListenerInDescribeLoadBalancerListeners{}
	for _, l := range ls {
		byPort[l.ListenerPort] = l
	}
	if len(ls) != 4 {
		t.Fatalf("%d listeners", len(ls))
	}
	if l := byPort[80]; l.ListenerProtocol != "http" || l.HTTPListenerConfig.ListenerForward != "on" || l.HTTPListenerConfig.ForwardPort != 443 {
		t.Errorf("80: %s forward %s:%d", l.ListenerProtocol, l.HTTPListenerConfig.ListenerForward, l.HTTPListenerConfig.ForwardPort)
	}
	if l := byPort[443]; l.ListenerProtocol != "https" || l.HTTPSListenerConfig.ServerCertificateId != cert || l.HTTPSListenerConfig.StickySession != "on" ||
		l.HTTPSListenerConfig.CookieTimeout != 1800 || l.HTTPSListenerConfig.HealthCheck != "on" || l.HTTPSListenerConfig.HealthCheckURI != "/healthz" ||
		l.HTTPSListenerConfig.IdleTimeout != 30 || l.HTTPSListenerConfig.XForwardedForProto != "on" || l.VServerGroupId == "" {
		t.Errorf("443: %+v", l)
	}
	if l := byPort[53]; l.ListenerProtocol != "udp" || l.UDPListenerConfig.PersistenceTimeout != 60 || l.Scheduler != "wrr" {
		t.Errorf("53: %s persistence %d scheduler %s", l.ListenerProtocol, l.UDPListenerConfig.PersistenceTimeout, l.Scheduler)
	}
	if l := byPort[8080]; l.ListenerProtocol != "tcp" || l.TCPListenerConfig.EstablishedTimeout != 300 || l.TCPListenerConfig.PersistenceTimeout != 60 {
		t.Errorf("8080: %s established %d", l.ListenerProtocol, l.TCPListenerConfig.EstablishedTimeout)
	}
	if lb, _ := describeLB(t, lbID(svc)); lb.InternetChargeType != "paybybandwidth" || lb.Bandwidth != 20 {
		t.Errorf("charge %s bandwidth %d", lb.InternetChargeType, lb.Bandwidth)
	}
	seq := lastSeq()
	updateService(t, name, func(s *corev1.Service) {
		s.Annotations[annotations.Key("established-timeout")] = "600"
		s.Annotations[annotations.Key("bandwidth")] = "30"
	})
	poll(t, 20*time.Second, "updated timeout and bandwidth", func(ctx context.Context) (bool, error) {
		lb, _ := describeLB(t, lbID(svc))
		for _, l := range listeners(t, lbID(svc)) {
			if l.ListenerPort == 8080 {
				return l.TCPListenerConfig.EstablishedTimeout == 600 && lb.Bandwidth == 30, nil
			}
		}
		return false, nil
	})
	waitIngress(t, name, 10*time.Second)
	// Only the two changes are written.
	if w := actions(writesSince(seq)); len(w) != 2 {
		t.Errorf("writes after the update: %v, want one listener update and one internet spec change", w)
	}
	deleteService(t, name)
}

func uploadCert(t *testing.T) string {
	t.Helper()
	certPEM, keyPEM := selfSigned(t)
	req := slb.CreateUploadServerCertificateRequest()
	req.ServerCertificate, req.PrivateKey, req.ServerCertificateName = certPEM, keyPEM, "svc-test"
	resp, err := slbClient(t).UploadServerCertificate(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.ServerCertificateId
}

// TestLocalTrafficPolicyWeights: Cluster → Local moves the backends to the
// Nodes running ready pods, weighted by their count; scaling the
// Deployment changes the weights.
func TestLocalTrafficPolicyWeights(t *testing.T) {
	name := "local"
	cs := kube(t)
	ctx := context.Background()
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					Containers:  []corev1.Container{{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{})
	createService(t, svcSpec{name: name, ports: []int32{80}})
	svc := waitIngress(t, name, 30*time.Second)
	id := lbID(svc)
	group := naming.For(svc, clusterID).CLBVGroup(itoa(svc.Spec.Ports[0].NodePort))
	if n := len(groupMembers(t, id)[group]); n != nodeCount {
		t.Fatalf("Cluster policy: %d members, want %d", n, nodeCount)
	}
	updateService(t, name, func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal })
	for _, replicas := range []int32{1, 25} {
		if replicas != 1 {
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}})
			if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var want, lastGot map[string]int
		defer func() {
			if t.Failed() {
				t.Logf("Local weights: want %v, group has %v", want, lastGot)
			}
		}()
		took := poll(t, 40*time.Second, "Local weights", func(ctx context.Context) (bool, error) {
			want = readyPodsPerInstance(t, name)
			total := 0
			for _, c := range want {
				total += c
			}
			if total != int(replicas) {
				return false, nil
			}
			// Pods on the pod host (excluded from load balancers) are
			// no backends.
			delete(want, "")
			got := groupMembers(t, id)[group]
			lastGot = got
			if len(got) != len(want) {
				return false, nil
			}
			for inst, c := range want {
				if got[inst] != c {
					return false, nil
				}
			}
			return true, nil
		})
		t.Logf("%d replicas: members %v (instance → weight = ready pods) after %v", replicas, want, took.Round(time.Millisecond))
		if replicas > nodeCount {
			heavier := false
			for _, c := range want {
				heavier = heavier || c > 1
			}
			if !heavier {
				t.Errorf("%d replicas on %d Nodes but no weight above 1: %v", replicas, nodeCount, want)
			}
		}
	}
	deleteService(t, name)
}

func readyPodsPerInstance(t *testing.T, app string) map[string]int {
	t.Helper()
	pods, err := kube(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out[instances[p.Spec.NodeName]]++
			}
		}
	}
	return out
}

// TestCordonWithRemoveUnscheduled: a cordoned Node leaves the backends of
// Services that ask for it, and only theirs; uncordoning brings it back.
func TestCordonWithRemoveUnscheduled(t *testing.T) {
	cs := kube(t)
	ctx := context.Background()
	createService(t, svcSpec{name: "cordon-remove", ports: []int32{80}, annotations: map[string]string{annotations.Key("remove-unscheduled-backend"): "on"}})
	createService(t, svcSpec{name: "cordon-keep", ports: []int32{80}})
	remove := waitIngress(t, "cordon-remove", 30*time.Second)
	keep := waitIngress(t, "cordon-keep", 30*time.Second)
	node := nodeNames[0]
	setUnschedulable := func(v bool) {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": v}})
		if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	members := func(svc *corev1.Service) map[string]int {
		return groupMembers(t, lbID(svc))[naming.For(svc, clusterID).CLBVGroup(itoa(svc.Spec.Ports[0].NodePort))]
	}
	setUnschedulable(true)
	defer setUnschedulable(false)
	poll(t, 20*time.Second, "cordoned node removed", func(ctx context.Context) (bool, error) {
		m := members(remove)
		_, present := m[instances[node]]
		return len(m) == nodeCount-1 && !present, nil
	})
	if m := members(keep); len(m) != nodeCount {
		t.Errorf("the Service without the annotation has %d members, want %d", len(m), nodeCount)
	}
	setUnschedulable(false)
	poll(t, 20*time.Second, "uncordoned node back", func(ctx context.Context) (bool, error) {
		return len(members(remove)) == nodeCount, nil
	})
	deleteService(t, "cordon-remove")
	deleteService(t, "cordon-keep")
}

// userLB creates a load balancer as a user would, with a listener of
// their own on port 80.
func userLB(t *testing.T) *slb.CreateLoadBalancerResponse {
	t.Helper()
	c := slbClient(t)
	cr := slb.CreateCreateLoadBalancerRequest()
	cr.LoadBalancerName, cr.LoadBalancerSpec = "user-lb", "slb.s1.small"
	lb, err := c.CreateLoadBalancer(cr)
	if err != nil {
		t.Fatal(err)
	}
	lr := slb.CreateCreateLoadBalancerTCPListenerRequest()
	lr.LoadBalancerId, lr.ListenerPort, lr.BackendServerPort, lr.Bandwidth, lr.Description = lb.LoadBalancerId, requests.NewInteger(80), requests.NewInteger(80), requests.NewInteger(-1), "user-80"
	if _, err := c.CreateLoadBalancerTCPListener(lr); err != nil {
		t.Fatal(err)
	}
	return lb
}

// TestReuse: the id annotation binds a user's load balancer. Without
// force-override-listeners its listeners are left alone; with it, ours are
// created and the user's on a Service port is taken over (our group and
// description), so it goes with the Service. The load balancer survives
// the Service either way.
func TestReuse(t *testing.T) {
	for _, force := range []bool{false, true} {
		name := "reuse-noforce"
		if force {
			name = "reuse-force"
		}
		t.Run(name, func(t *testing.T) {
			lb := userLB(t)
			ann := map[string]string{annotations.Key("id"): lb.LoadBalancerId}
			if force {
				ann[annotations.Key("force-override-listeners")] = "true"
			}
			createService(t, svcSpec{name: name, ports: []int32{80, 81}, annotations: ann})
			svc := waitIngress(t, name, 30*time.Second)
			if svc.Status.LoadBalancer.Ingress[0].IP != lb.Address || lbID(svc) != lb.LoadBalancerId {
				t.Errorf("status %v label %s", svc.Status.LoadBalancer.Ingress, lbID(svc))
			}
			got, _ := describeLB(t, lb.LoadBalancerId)
			reusedTag := false
			for _, tg := range got.Tags.Tag {
				reusedTag = reusedTag || tg.TagKey == naming.TagKeyReused && tg.TagValue == "true"
				if tg.TagKey == naming.TagKeyDefaultName {
					t.Errorf("a reused load balancer got our ownership tag")
				}
			}
			if !reusedTag {
				t.Errorf("tags %v lack %s", got.Tags.Tag, naming.TagKeyReused)
			}
			ls := listeners(t, lb.LoadBalancerId)
			if !force {
				if len(ls) != 1 || ls[0].Description != "user-80" || ls[0].VServerGroupId != "" {
					t.Errorf("without force the listeners changed: %+v", ls)
				}
			} else {
				if len(ls) != 2 || ls[0].Description != naming.For(svc, clusterID).CLBListener(80) || ls[0].VServerGroupId == "" || ls[1].Description != naming.For(svc, clusterID).CLBListener(81) || ls[1].Status != "running" {
					t.Errorf("with force: %+v", ls)
				}
			}
			if n := len(groupMembers(t, lb.LoadBalancerId)); n != 2 {
				t.Errorf("%d vServer groups, want 2", n)
			}
			deleteService(t, name)
			if _, ok := describeLB(t, lb.LoadBalancerId); !ok {
				t.Fatalf("reused load balancer %s was deleted", lb.LoadBalancerId)
			}
			ls = listeners(t, lb.LoadBalancerId)
			if force && len(ls) != 0 {
				t.Errorf("after delete: listeners %+v, want none (the user's on 80 was taken over)", ls)
			}
			if !force && (len(ls) != 1 || ls[0].Description != "user-80") {
				t.Errorf("after delete: listeners %+v, want only the user's", ls)
			}
		})
	}
}

// TestPreserveOnDelete: preserve-lb-on-delete keeps the load balancer and
// its listeners; protections are turned off and our tags removed.
func TestPreserveOnDelete(t *testing.T) {
	name := "preserve"
	createService(t, svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.Key("preserve-lb-on-delete"): ""}})
	id := lbID(waitIngress(t, name, 30*time.Second))
	deleteService(t, name)
	lb, ok := describeLB(t, id)
	if !ok {
		t.Fatalf("preserved load balancer %s was deleted", id)
	}
	if lb.DeleteProtection != "off" || lb.ModificationProtectionStatus != "NonProtection" {
		t.Errorf("protections %s/%s, want off/NonProtection", lb.DeleteProtection, lb.ModificationProtectionStatus)
	}
	for _, tg := range lb.Tags.Tag {
		if tg.TagKey == naming.TagKeyDefaultName || tg.TagKey == naming.TagKeyCluster {
			t.Errorf("tag %s kept", tg.TagKey)
		}
	}
	if n := len(listeners(t, id)); n != 1 {
		t.Errorf("%d listeners kept, want 1", n)
	}
}
