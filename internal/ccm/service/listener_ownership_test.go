package service_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

// resyncAnnotation forces a full sync without changing what the Service
// asks of the cloud: any annotation change moves the hash label.
const resyncAnnotation = "example.com/resync"

// resync bumps resyncAnnotation and waits until the CCM has recorded the
// new hash after reading, with read, the listeners of lb (so a full sync,
// not just a backend pass, ran).
func resync(t *testing.T, name, product, read, lb string) {
	t.Helper()
	seq := lastSeq()
	updateService(t, name, func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		n, _ := strconv.Atoi(s.Annotations[resyncAnnotation])
		s.Annotations[resyncAnnotation] = strconv.Itoa(n + 1)
	})
	poll(t, 30*time.Second, "full sync of "+name, func(ctx context.Context) (bool, error) {
		for _, r := range cloud.Requests(gateway.RequestFilter{Product: product, Action: read, AfterSeq: seq}) {
			for _, v := range r.Params {
				if v == lb {
					return true, nil
				}
			}
		}
		return false, nil
	})
	waitIngress(t, name, 30*time.Second)
}

// writesOn returns the write calls of product after seq with a parameter
// that contains one of ids (a load balancer, listener or group id, or a
// name), so that the calls of tests running in parallel do not count.
func writesOn(product string, seq uint64, ids ...string) []gateway.RequestRecord {
	var out []gateway.RequestRecord
	for _, r := range cloud.Requests(gateway.RequestFilter{Product: product, AfterSeq: seq}) {
		if !isWrite(r.Action) {
			continue
		}
	params:
		for _, v := range r.Params {
			for _, id := range ids {
				if id != "" && strings.Contains(v, id) {
					out = append(out, r)
					break params
				}
			}
		}
	}
	return out
}

// clbListener returns the listener of a CLB on port and protocol.
func clbListener(t *testing.T, lb string, port int, proto string) (slb.ListenerInDescribeLoadBalancerListeners, bool) {
	t.Helper()
	for _, l := range listeners(t, lb) {
		if l.ListenerPort == port && strings.EqualFold(l.ListenerProtocol, proto) {
			return l, true
		}
	}
	return slb.ListenerInDescribeLoadBalancerListeners{}, false
}

// clbString shows what the tests compare of a CLB listener.
func clbString(l slb.ListenerInDescribeLoadBalancerListeners) string {
	return fmt.Sprintf("%s:%d{description %q, group %s, scheduler %s, %s}", l.ListenerProtocol, l.ListenerPort, l.Description, l.VServerGroupId, l.Scheduler, l.Status)
}

// clbGroupIDs returns vServer group name → id; two groups with one name
// (a duplicate the CCM made) fail the test.
func clbGroupIDs(t *testing.T, lb string) map[string]string {
	t.Helper()
	req := slb.CreateDescribeVServerGroupsRequest()
	req.LoadBalancerId = lb
	resp, err := slbClient(t).DescribeVServerGroups(req)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range resp.VServerGroups.VServerGroup {
		if _, dup := out[g.VServerGroupName]; dup {
			t.Errorf("two vServer groups named %s", g.VServerGroupName)
		}
		out[g.VServerGroupName] = g.VServerGroupId
	}
	return out
}

// TestForceOverrideTakesOverCLBListener: on a reused CLB with
// force-override-listeners, the user's listener on a Service port is taken
// over in one SetLoadBalancerTCPListenerAttribute that carries our
// description with the settings and group, so it is ours from then on:
// removing the port deletes it. A listener taken over without the
// description (as earlier versions left it) gets it back in exactly one
// call. The user's listener on another port, its group and the load
// balancer are never touched.
func TestForceOverrideTakesOverCLBListener(t *testing.T) {
	t.Parallel()
	c := slbClient(t)
	cr := slb.CreateCreateLoadBalancerRequest()
	cr.LoadBalancerName, cr.LoadBalancerSpec = "takeover-user-clb", "slb.s1.small"
	lb, err := c.CreateLoadBalancer(cr)
	if err != nil {
		t.Fatal(err)
	}
	id := lb.LoadBalancerId
	gr := slb.CreateCreateVServerGroupRequest()
	gr.LoadBalancerId, gr.VServerGroupName = id, "user-group"
	ug, err := c.CreateVServerGroup(gr)
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range []int{80, 8080} {
		lr := slb.CreateCreateLoadBalancerTCPListenerRequest()
		lr.LoadBalancerId, lr.ListenerPort, lr.VServerGroupId = id, requests.NewInteger(port), ug.VServerGroupId
		lr.Bandwidth, lr.Scheduler, lr.Description = requests.NewInteger(-1), "wrr", "user-"+strconv.Itoa(port)
		if _, err := c.CreateLoadBalancerTCPListener(lr); err != nil {
			t.Fatal(err)
		}
		st := slb.CreateStartLoadBalancerListenerRequest()
		st.LoadBalancerId, st.ListenerPort, st.ListenerProtocol = id, requests.NewInteger(port), "tcp"
		if _, err := c.StartLoadBalancerListener(st); err != nil {
			t.Fatal(err)
		}
	}
	user8080, _ := clbListener(t, id, 8080, "tcp")

	const name = "takeover-clb"
	seq := lastSeq()
	createService(t, svcSpec{name: name, ports: []int32{80, 81}, annotations: map[string]string{
		annotations.Key("id"):                       id,
		annotations.Key("force-override-listeners"): "true",
		annotations.Key("scheduler"):                "rr",
	}})
	svc := waitIngress(t, name, 30*time.Second)
	ref := naming.For(svc, clusterID)
	ourGroup := clbGroupIDs(t, id)[ref.CLBVGroup(strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))]
	l80, _ := clbListener(t, id, 80, "tcp")
	if l80.Description != ref.CLBListener(80) || l80.Scheduler != "rr" || l80.VServerGroupId != ourGroup || ourGroup == "" || l80.Status != "running" {
		t.Errorf("taken-over listener %s, want description %q, scheduler rr, group %s, running", clbString(l80), ref.CLBListener(80), ourGroup)
	}
	var sets []gateway.RequestRecord
	for _, w := range writesOn("slb", seq, id) {
		if w.Params["ListenerPort"] == "8080" {
			t.Errorf("the user's listener on 8080 was written to: %s %v", w.Action, w.Params)
		}
		if w.Action == "SetLoadBalancerTCPListenerAttribute" {
			sets = append(sets, w)
		}
	}
	if len(sets) != 1 || sets[0].Params["ListenerPort"] != "80" || sets[0].Params["Description"] != ref.CLBListener(80) ||
		sets[0].Params["Scheduler"] != "rr" || sets[0].Params["VServerGroupId"] != ourGroup {
		t.Errorf("take-over writes %v, want one SetLoadBalancerTCPListenerAttribute on 80 with description, scheduler and group", sets)
	}

	// A listener taken over by an earlier version kept the user's
	// description: only that differs, so exactly one call fixes it.
	set := slb.CreateSetLoadBalancerTCPListenerAttributeRequest()
	set.LoadBalancerId, set.ListenerPort, set.Description = id, requests.NewInteger(80), "user-80"
	if _, err := c.SetLoadBalancerTCPListenerAttribute(set); err != nil {
		t.Fatal(err)
	}
	seq = lastSeq()
	resync(t, name, "slb", "DescribeLoadBalancerListeners", id)
	w := writesOn("slb", seq, id)
	if len(w) != 1 || w[0].Action != "SetLoadBalancerTCPListenerAttribute" || w[0].Params["Description"] != ref.CLBListener(80) ||
		w[0].Params["Scheduler"] != "" || w[0].Params["VServerGroupId"] != "" {
		t.Errorf("description-only repair: %d writes %v, want one SetLoadBalancerTCPListenerAttribute with only the description", len(w), w)
	}
	t.Logf("description-only repair: %v", actions(w))

	// Port 80 goes: the taken-over listener is ours, so it is deleted.
	updateService(t, name, func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[1:] })
	poll(t, 30*time.Second, "listener 80 deleted", func(ctx context.Context) (bool, error) {
		_, ok := clbListener(t, id, 80, "tcp")
		return !ok, nil
	})
	deleteService(t, name)
	if _, ok := describeLB(t, id); !ok {
		t.Fatalf("reused load balancer %s was deleted", id)
	}
	ls := listeners(t, id)
	if len(ls) != 1 || ls[0].ListenerPort != 8080 || ls[0].Description != "user-8080" || ls[0].Scheduler != user8080.Scheduler ||
		ls[0].VServerGroupId != ug.VServerGroupId || ls[0].Status != "running" {
		var got []string
		for _, l := range ls {
			got = append(got, clbString(l))
		}
		t.Errorf("after delete: listeners %v, want only the user's 8080 as it was", got)
	}
	if g := clbGroupIDs(t, id); len(g) != 1 || g["user-group"] != ug.VServerGroupId {
		t.Errorf("after delete: groups %v, want only the user's", g)
	}
}

// clusterNetwork returns the cluster VPC and its zone → vSwitch pairs as
// "zone:vsw" (the zone-maps format).
func clusterNetwork(t *testing.T) (string, []string) {
	t.Helper()
	req := ecs.CreateDescribeInstancesRequest()
	req.InstanceIds = `["` + instances[nodeNames[0]] + `"]`
	resp, err := ecsClient(t).DescribeInstances(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Instances.Instance) != 1 {
		t.Fatalf("instance %s not found", instances[nodeNames[0]])
	}
	zones := ccmtest.ZoneMaps(ccmtest.SeedDoc(ccmtest.SeedSpec{}))
	return resp.Instances.Instance[0].VpcAttributes.VpcId, zones
}

// nlbListeners returns the NLB listeners by "PROTO:port".
func nlbListeners(t *testing.T, lb string) map[string]nlb.ListenerInfo {
	t.Helper()
	r := nlb.CreateListListenersRequest()
	r.LoadBalancerIds = &[]string{lb}
	r.MaxResults = requests.NewInteger(100)
	resp, err := nlbClient(t).ListListeners(r)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]nlb.ListenerInfo{}
	for _, l := range resp.Listeners {
		out[strings.ToUpper(l.ListenerProtocol)+":"+strconv.Itoa(l.ListenerPort)] = l
	}
	return out
}

// nlbGroups returns the server groups of a Service by name.
func nlbGroups(t *testing.T, svc *corev1.Service) map[string]nlb.ServerGroup {
	t.Helper()
	r := nlb.CreateListServerGroupsRequest()
	r.Tag = &[]nlb.ListServerGroupsTag{{Key: naming.TagKeyDefaultName, Value: naming.DefaultLBName(svc)}}
	r.MaxResults = requests.NewInteger(100)
	resp, err := nlbClient(t).ListServerGroups(r)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]nlb.ServerGroup{}
	for _, g := range resp.ServerGroups {
		if _, dup := out[g.ServerGroupName]; dup {
			t.Errorf("two server groups named %s", g.ServerGroupName)
		}
		out[g.ServerGroupName] = g
	}
	return out
}

func nlbLBExists(t *testing.T, id string) bool {
	t.Helper()
	r := nlb.CreateGetLoadBalancerAttributeRequest()
	r.LoadBalancerId = id
	_, err := nlbClient(t).GetLoadBalancerAttribute(r)
	return err == nil
}

// TestForceOverrideTakesOverNLBListener is the NLB twin of the CLB test:
// the user's listener on a Service port is taken over with our
// ListenerDescription in the same UpdateListenerAttribute as its settings
// and server group; an old take-over missing the description is repaired
// with exactly one call; removing the port deletes it; the user's listener
// on another port, the user's group and the load balancer stay.
func TestForceOverrideTakesOverNLBListener(t *testing.T) {
	t.Parallel()
	c := nlbClient(t)
	vpcID, zones := clusterNetwork(t)
	r := nlb.CreateCreateLoadBalancerRequest()
	r.AddressType, r.VpcId, r.LoadBalancerName = "Intranet", vpcID, "takeover-user-nlb"
	var zm []nlb.CreateLoadBalancerZoneMappings
	for _, z := range zones[:2] {
		zone, vsw, _ := strings.Cut(z, ":")
		zm = append(zm, nlb.CreateLoadBalancerZoneMappings{ZoneId: zone, VSwitchId: vsw})
	}
	r.ZoneMappings = &zm
	lb, err := c.CreateLoadBalancer(r)
	if err != nil {
		t.Fatal(err)
	}
	id := lb.LoadbalancerId
	poll(t, 30*time.Second, "user NLB active", func(ctx context.Context) (bool, error) {
		a := nlb.CreateGetLoadBalancerAttributeRequest()
		a.LoadBalancerId = id
		resp, err := c.GetLoadBalancerAttribute(a)
		return err == nil && resp.LoadBalancerStatus == "Active", err
	})
	g := nlb.CreateCreateServerGroupRequest()
	g.ServerGroupName, g.VpcId, g.Protocol = "takeover-user-group", vpcID, "TCP"
	ug, err := c.CreateServerGroup(g)
	if err != nil {
		t.Fatal(err)
	}
	userIDs := map[int]string{}
	for _, port := range []int{80, 8080} {
		poll(t, 30*time.Second, "user listener "+strconv.Itoa(port), func(ctx context.Context) (bool, error) {
			l := nlb.CreateCreateListenerRequest()
			l.LoadBalancerId, l.ListenerProtocol, l.ServerGroupId = id, "TCP", ug.ServerGroupId
			l.ListenerPort, l.ListenerDescription = requests.NewInteger(port), "user listener "+strconv.Itoa(port)
			resp, err := c.CreateListener(l)
			if err != nil {
				return false, err
			}
			userIDs[port] = resp.ListenerId
			return true, nil
		})
	}
	poll(t, 30*time.Second, "user listeners running", func(ctx context.Context) (bool, error) {
		for _, l := range nlbListeners(t, id) {
			if l.ListenerStatus != "Running" {
				return false, nil
			}
		}
		return true, nil
	})
	user8080 := nlbListeners(t, id)["TCP:8080"]

	const name = "takeover-nlb"
	seq := lastSeq()
	s := newService(svcSpec{name: name, ports: []int32{80, 81}, annotations: map[string]string{
		annotations.Key("id"):                       id,
		annotations.Key("force-override-listeners"): "true",
		annotations.Key("idle-timeout"):             "60",
	}})
	s.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	if _, err := kube(t).CoreV1().Services(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := waitIngress(t, name, 60*time.Second)
	ref := naming.For(svc, clusterID)
	ourGroup := nlbGroups(t, svc)[ref.NLBServerGroup(strconv.Itoa(int(svc.Spec.Ports[0].NodePort)), "TCP")].ServerGroupId
	l80 := nlbListeners(t, id)["TCP:80"]
	if l80.ListenerId != userIDs[80] || l80.ListenerDescription != ref.NLBListener(80, "TCP") || l80.IdleTimeout != 60 || l80.ServerGroupId != ourGroup || ourGroup == "" {
		t.Errorf("taken-over listener %+v, want %s with description %q, idle timeout 60, group %s", l80, userIDs[80], ref.NLBListener(80, "TCP"), ourGroup)
	}
	var updates []gateway.RequestRecord
	for _, w := range writesOn("nlb", seq, id, userIDs[80], userIDs[8080]) {
		if w.Params["ListenerId"] == userIDs[8080] {
			t.Errorf("the user's listener on 8080 was written to: %s %v", w.Action, w.Params)
		}
		if w.Action == "UpdateListenerAttribute" {
			updates = append(updates, w)
		}
	}
	if len(updates) != 1 || updates[0].Params["ListenerId"] != userIDs[80] || updates[0].Params["ListenerDescription"] != ref.NLBListener(80, "TCP") ||
		updates[0].Params["IdleTimeout"] != "60" || updates[0].Params["ServerGroupId"] != ourGroup {
		t.Errorf("take-over writes %v, want one UpdateListenerAttribute on %s with description, idle timeout and group", updates, userIDs[80])
	}

	// A listener taken over by an earlier version kept the user's
	// description: only that differs, so exactly one call fixes it.
	poll(t, 30*time.Second, "description set back", func(ctx context.Context) (bool, error) {
		u := nlb.CreateUpdateListenerAttributeRequest()
		u.ListenerId, u.ListenerDescription = userIDs[80], "user listener 80"
		_, err := c.UpdateListenerAttribute(u)
		return err == nil, err
	})
	poll(t, 30*time.Second, "listener 80 running", func(ctx context.Context) (bool, error) {
		return nlbListeners(t, id)["TCP:80"].ListenerStatus == "Running", nil
	})
	seq = lastSeq()
	resync(t, name, "nlb", "ListListeners", id)
	w := writesOn("nlb", seq, id, userIDs[80], userIDs[8080], ourGroup)
	if len(w) != 1 || w[0].Action != "UpdateListenerAttribute" || w[0].Params["ListenerDescription"] != ref.NLBListener(80, "TCP") ||
		w[0].Params["IdleTimeout"] != "" || w[0].Params["ServerGroupId"] != "" {
		t.Errorf("description-only repair: %d writes %v, want one UpdateListenerAttribute with only the description", len(w), w)
	}
	t.Logf("description-only repair: %v", actions(w))

	// Port 80 goes: the taken-over listener is ours, so it is deleted.
	updateService(t, name, func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[1:] })
	poll(t, 30*time.Second, "listener 80 deleted", func(ctx context.Context) (bool, error) {
		_, ok := nlbListeners(t, id)["TCP:80"]
		return !ok, nil
	})
	deleteService(t, name)
	if !nlbLBExists(t, id) {
		t.Fatalf("reused load balancer %s was deleted", id)
	}
	ls := nlbListeners(t, id)
	l := ls["TCP:8080"]
	if len(ls) != 1 || l.ListenerId != userIDs[8080] || l.ListenerDescription != "user listener 8080" || l.ServerGroupId != ug.ServerGroupId ||
		l.IdleTimeout != user8080.IdleTimeout || l.ListenerStatus != "Running" {
		t.Errorf("after delete: listeners %+v, want only the user's 8080 as it was", ls)
	}
	if g := nlbGroups(t, svc); len(g) != 0 {
		t.Errorf("after delete: our server groups %v remain", g)
	}
	gs := nlb.CreateListServerGroupsRequest()
	gs.ServerGroupIds = &[]string{ug.ServerGroupId}
	if resp, err := c.ListServerGroups(gs); err != nil || len(resp.ServerGroups) != 1 {
		t.Errorf("the user's server group is gone: %v %v", resp, err)
	}
}
