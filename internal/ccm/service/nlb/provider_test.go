package nlb_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	sdknlb "github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/nlb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestCreateConvergesAndReensureIsFree: one Ensure builds the server
// groups and their servers while the load balancer is Provisioning, waits
// for it to be Active, adds the listeners and publishes the DNS name, with
// no read of what it created and one job-status call per wait; a second
// makes no write at all.
func TestCreateConvergesAndReensureIsFree(t *testing.T) {
	f := newFixture(t)
	s := svc("web", map[string]string{"address-type": "intranet", "additional-resource-tags": "team=web", "scheduler": "Sch", "health-check-flag": "on"})
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP})
	req := request(t, s, instances, nil)

	start := f.mark()
	res, err := ensureBound(f.ctx, f.p, req)
	if err != nil {
		t.Fatalf("first Ensure: %v, want it to converge while waiting out Provisioning", err)
	}
	req.LoadBalancerID = res.LoadBalancerID
	byAction := map[string]int{}
	for _, r := range f.env.Emulator.Requests(gateway.RequestFilter{AfterSeq: start, Product: "nlb"}) {
		if r.Action != "GetLoadBalancerAttribute" && r.Action != "ListAsynJobs" {
			byAction[r.Action]++
		}
	}
	t.Logf("create: %v", byAction)
	// GetLoadBalancerAttribute (polled until Active) and ListAsynJobs (polled
	// per job) depend on the fixture's short poll interval; the rest is fixed.
	want := map[string]int{"ListLoadBalancers": 1, "CreateLoadBalancer": 1, "ListServerGroups": 1, "CreateServerGroup": 2,
		"AddServersToServerGroup": 2, "CreateListener": 2}
	if !maps.Equal(byAction, want) {
		t.Errorf("create calls %v, want %v", byAction, want)
	}

	lb := f.getLB(res.LoadBalancerID)
	if len(res.Ingress) != 1 || res.Ingress[0].Hostname != lb.DNSName || lb.DNSName == "" || res.Ingress[0].IP != "" {
		t.Fatalf("ingress %+v, DNSName %q", res.Ingress, lb.DNSName)
	}
	if lb.AddressType != "Intranet" || !lb.DeletionProtectionConfig.Enabled || lb.ModificationProtectionConfig.Status != "ConsoleProtection" {
		t.Fatalf("lb %s %v %s", lb.AddressType, lb.DeletionProtectionConfig.Enabled, lb.ModificationProtectionConfig.Status)
	}
	if lb.LoadBalancerName != naming.DefaultLBName(s) {
		t.Errorf("name %q", lb.LoadBalancerName)
	}
	tags := map[string]string{}
	for _, tg := range lb.Tags {
		tags[tg.TagKey] = tg.TagValue
	}
	if tags[naming.TagKeyDefaultName] != naming.DefaultLBName(s) || tags[naming.TagKeyCluster] != clusterID || tags["team"] != "web" {
		t.Errorf("tags %v", tags)
	}
	ls := f.listeners(lb.LoadBalancerId)
	if len(ls) != 2 || ls[0].ListenerPort != 53 || ls[0].ListenerProtocol != "UDP" || ls[1].ListenerPort != 80 || ls[1].ListenerProtocol != "TCP" {
		t.Fatalf("listeners %+v", ls)
	}
	if ls[1].ListenerDescription != "k8s.80.TCP.web.default."+clusterID {
		t.Errorf("description %q", ls[1].ListenerDescription)
	}
	groups := f.groupsOf(s)
	if len(groups) != 2 {
		t.Fatalf("groups %+v", groups)
	}
	for _, g := range groups {
		if g.Scheduler != "Sch" || !g.HealthCheck.HealthCheckEnabled || g.ServerGroupType != "Instance" {
			t.Errorf("group %s: scheduler %s, health %v, type %s", g.ServerGroupName, g.Scheduler, g.HealthCheck.HealthCheckEnabled, g.ServerGroupType)
		}
		if !slices.Contains(g.RelatedLoadBalancerIds, lb.LoadBalancerId) {
			t.Errorf("group %s not used by %s", g.ServerGroupName, lb.LoadBalancerId)
		}
	}
	if g := groups[1]; g.ServerGroupName != "k8s.30080.TCP.web.default."+clusterID || g.Protocol != "TCP" {
		t.Errorf("group %s %s", g.ServerGroupName, g.Protocol)
	}
	if got := f.servers(groups[1].ServerGroupId); strings.Join(got, ",") != "i-node1:30080/100,i-node2:30080/100,i-node3:30080/100" {
		t.Errorf("servers %v", got)
	}

	// As between two passes of the controller: the last job has ended.
	f.idle(req.LoadBalancerID)
	again := f.mark()
	res2, err := ensureBound(f.ctx, f.p, req)
	emulatortest.NoError(t, err)
	reads, writes, byAction := f.callsSince(again)
	t.Logf("converged re-Ensure: %d reads, %d writes; %v", reads, writes, actionsSince(f, again))
	if writes != 0 {
		t.Errorf("converged Ensure wrote %v", byAction)
	}
	// ListAsynJobs for the create's last listener job, then
	// GetLoadBalancerAttribute, ListServerGroups, 2×ListServerGroupServers,
	// ListListeners.
	if reads != 6 {
		t.Errorf("converged Ensure made %d reads, want 6", reads)
	}
	if res2.Ingress[0].Hostname != lb.DNSName {
		t.Errorf("re-Ensure ingress %+v", res2.Ingress)
	}
	// The controller hands SyncBackends a Request bound from its cache of
	// proven load balancers; binding is not part of the pass.
	bound, err := service.Ready(f.ctx, f.p, req, false)
	if err != nil {
		t.Fatal(err)
	}
	sync := f.mark()
	if _, err := syncBound(f.ctx, f.p, bound); err != nil {
		t.Fatal(err)
	}
	reads, writes, _ = f.callsSince(sync)
	t.Logf("converged SyncBackends: %d reads, %d writes", reads, writes)
	if reads != 3 || writes != 0 {
		t.Errorf("converged SyncBackends: %d reads, %d writes; want 3 and 0", reads, writes)
	}
}

// actionsSince lists the actions called after a mark.
func actionsSince(f *fixture, seq uint64) []string {
	var out []string
	for _, r := range f.env.Emulator.Requests(gateway.RequestFilter{AfterSeq: seq}) {
		out = append(out, r.Action)
	}
	return out
}

// TestPortsAndBackendsChange: adding and removing a port adds and removes
// its listener and group; weights, added and removed instances change
// only the servers, through SyncBackends.
func TestPortsAndBackendsChange(t *testing.T) {
	f := newFixture(t)
	s := svc("app", nil)
	req := f.ensureNew(request(t, s, instances[:2], nil))
	lbID := req.LoadBalancerID

	s2 := s.DeepCopy()
	s2.Spec.Ports = append(s2.Spec.Ports, corev1.ServicePort{Name: "tls", Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP})
	req2 := request(t, s2, instances[:2], nil)
	req2.LoadBalancerID = lbID
	f.ensure(req2)
	if ls := f.listeners(lbID); len(ls) != 2 || ls[1].ListenerPort != 443 {
		t.Fatalf("after adding 443: %+v", ls)
	}
	if g := f.groupsOf(s); len(g) != 2 {
		t.Fatalf("groups after adding 443: %d", len(g))
	}

	req3 := request(t, s, instances[:2], nil)
	req3.LoadBalancerID = lbID
	f.ensure(req3)
	ls := f.listeners(lbID)
	if len(ls) != 1 || ls[0].ListenerPort != 80 {
		t.Fatalf("after removing 443: %+v", ls)
	}
	groups := f.groupsOf(s)
	if len(groups) != 1 || groups[0].ServerGroupName != "k8s.30080.TCP.app.default."+clusterID {
		t.Fatalf("groups after removing 443: %+v", groups)
	}
	gid := groups[0].ServerGroupId

	for _, tc := range []struct {
		name    string
		nodes   []string
		weights map[string]int
		want    string
		writes  map[string]int
	}{
		{"reweigh", instances[:2], map[string]int{"i-node1": 30}, "i-node1:30080/30,i-node2:30080/100", map[string]int{"UpdateServerGroupServersAttribute": 1}},
		{"add an instance", instances, map[string]int{"i-node1": 30}, "i-node1:30080/30,i-node2:30080/100,i-node3:30080/100", map[string]int{"AddServersToServerGroup": 1}},
		{"remove an instance", []string{"i-node2", "i-node3"}, nil, "i-node2:30080/100,i-node3:30080/100", map[string]int{"RemoveServersFromServerGroup": 1}},
		{"remove and add", []string{"i-node1", "i-node3"}, nil, "i-node1:30080/100,i-node3:30080/100", map[string]int{"RemoveServersFromServerGroup": 1, "AddServersToServerGroup": 1}},
		{"no change", []string{"i-node1", "i-node3"}, nil, "i-node1:30080/100,i-node3:30080/100", map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request(t, s, tc.nodes, tc.weights)
			r.LoadBalancerID = lbID
			m := f.mark()
			if _, err := syncBound(f.ctx, f.p, r); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.servers(gid), ","); got != tc.want {
				t.Errorf("servers %s, want %s", got, tc.want)
			}
			_, _, writes := f.callsSince(m)
			if len(writes) != len(tc.writes) {
				t.Errorf("writes %v, want %v", writes, tc.writes)
			}
			for k, v := range tc.writes {
				if writes[k] != v {
					t.Errorf("writes %v, want %v", writes, tc.writes)
				}
			}
		})
	}
}

// ensureNew converges a new Service and returns its request with the
// load balancer id recorded.
func (f *fixture) ensureNew(req *service.Request) *service.Request {
	f.t.Helper()
	f.ensure(req)
	// The create's last listener job is left running (the provider's next
	// pass waits for it): let it end before the test writes to the load
	// balancer itself.
	f.idle(req.LoadBalancerID)
	return req
}

// idle waits until no listener job runs on the load balancer.
func (f *fixture) idle(lbID string) {
	f.t.Helper()
	emulatortest.Eventually(f.t, "listeners of "+lbID+" running", func() bool {
		for _, l := range f.listeners(lbID) {
			if l.ListenerStatus != "Running" {
				return false
			}
		}
		return true
	})
}

// TestReusedLoadBalancerKeepsUserListeners: on a reused load balancer
// without force-override-listeners no listener is created, changed or
// deleted (they are the owner's, as with CLB); with force-override the
// Service's listener is added and a user listener on the Service's port is
// taken over (group, settings and our description in one
// UpdateListenerAttribute), so it is ours and goes with the Service, while
// a user listener on another port survives every sync and the deletion.
func TestReusedLoadBalancerKeepsUserListeners(t *testing.T) {
	f := newFixture(t)
	lbID, userGroup, userListeners := f.userLB(8080, 443)
	s := svc("reuse", map[string]string{"id": lbID})
	s.Annotations = map[string]string{annKey("id"): lbID}
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "tls", Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP})
	req := request(t, s, instances, nil)
	mark := f.mark()
	res := f.ensure(req)
	if res.LoadBalancerID != lbID {
		t.Fatalf("load balancer %s, want the reused %s", res.LoadBalancerID, lbID)
	}
	if _, _, byAction := f.callsSince(mark); byAction["CreateListener"]+byAction["UpdateListenerAttribute"]+byAction["DeleteListener"] != 0 {
		t.Errorf("listener writes on a reused NLB without force: %v", byAction)
	}
	ls := f.listeners(lbID)
	if len(ls) != 2 {
		t.Fatalf("listeners %+v", ls)
	}
	for _, l := range ls {
		if l.ServerGroupId != userGroup || !strings.HasPrefix(l.ListenerDescription, "user listener") {
			t.Errorf("user listener changed: %+v", l)
		}
	}
	lb := f.getLB(lbID)
	if lb.LoadBalancerName != "user-lb" || lb.DeletionProtectionConfig.Enabled {
		t.Errorf("reused LB attributes changed: %s %v", lb.LoadBalancerName, lb.DeletionProtectionConfig.Enabled)
	}
	reused := false
	for _, tg := range lb.Tags {
		reused = reused || tg.TagKey == naming.TagKeyReused && tg.TagValue == "true"
	}
	if !reused {
		t.Errorf("no %s tag: %+v", naming.TagKeyReused, lb.Tags)
	}

	// force-override-listeners: the user listener on 443 is taken over: it
	// moves to our group and gets our description in the same call.
	s.Annotations[annKey("force-override-listeners")] = "true"
	req = request(t, s, instances, nil)
	mark = f.mark()
	res = f.ensure(req)
	if len(res.Warnings) != 0 {
		t.Errorf("warnings with force: %+v", res.Warnings)
	}
	if _, _, byAction := f.callsSince(mark); byAction["UpdateListenerAttribute"] != 1 || byAction["CreateListener"] != 1 {
		t.Errorf("take-over writes %v, want one UpdateListenerAttribute (443) and one CreateListener (80)", byAction)
	}
	if l := f.listeners(lbID); len(l) != 3 {
		t.Fatalf("listeners with force %+v", l)
	}
	var ours443 string
	for _, g := range f.groupsOf(s) {
		if strings.HasPrefix(g.ServerGroupName, "k8s.30443.") {
			ours443 = g.ServerGroupId
		}
	}
	ours443Desc := "k8s.443.TCP.reuse.default." + clusterID
	for _, l := range f.listeners(lbID) {
		if l.ListenerPort == 443 && (l.ServerGroupId != ours443 || l.ListenerDescription != ours443Desc) {
			t.Errorf("forced listener %+v, want group %s and description %s", l, ours443, ours443Desc)
		}
		if l.ListenerPort == 8080 && (l.ServerGroupId != userGroup || l.ListenerDescription != "user listener 8080") {
			t.Errorf("the user's listener on another port changed: %+v", l)
		}
	}

	// As an earlier version left a take-over: our group, the user's
	// description. Only the description differs: exactly one write.
	emulatortest.Eventually(t, "description set back", func() bool {
		u := sdknlb.CreateUpdateListenerAttributeRequest()
		u.ListenerId, u.ListenerDescription = userListeners[443], "user listener 443"
		_, err := f.sdk.UpdateListenerAttribute(u)
		return err == nil
	})
	emulatortest.Eventually(t, "listener 443 running", func() bool {
		for _, l := range f.listeners(lbID) {
			if l.ListenerStatus != "Running" {
				return false
			}
		}
		return true
	})
	mark = f.mark()
	f.ensure(req)
	if _, writes, byAction := f.callsSince(mark); writes != 1 || byAction["UpdateListenerAttribute"] != 1 {
		t.Errorf("description-only repair wrote %v, want one UpdateListenerAttribute", byAction)
	}
	for _, r := range f.env.Emulator.Requests(gateway.RequestFilter{Action: "UpdateListenerAttribute", AfterSeq: mark}) {
		if r.Params["ListenerDescription"] != ours443Desc || r.Params["ServerGroupId"] != "" {
			t.Errorf("description-only repair sent %v", r.Params)
		}
	}

	msg, err := deleteBound(f.ctx, f.p, req)
	emulatortest.NoError(t, err)
	t.Log(msg)
	if !f.lbExists(lbID) {
		t.Fatal("reused load balancer deleted")
	}
	ls = f.listeners(lbID)
	if len(ls) != 1 || ls[0].ListenerId != userListeners[8080] || ls[0].ServerGroupId != userGroup || ls[0].ListenerDescription != "user listener 8080" {
		t.Fatalf("listeners after delete %+v, want only the user's 8080 as it was", ls)
	}
	// The taken-over 443 listener went with the Service, and so did our group.
	if g := f.groupsOf(s); len(g) != 0 {
		t.Errorf("groups after delete: %+v", g)
	}
}

func annKey(suffix string) string {
	return "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-" + suffix
}

// TestDelete: the load balancer (protected) and our groups are deleted;
// a second Delete finds nothing to do.
func TestDelete(t *testing.T) {
	f := newFixture(t)
	s := svc("gone", nil)
	req := f.ensureNew(request(t, s, instances, nil))
	lbID := req.LoadBalancerID
	msg, err := deleteBound(f.ctx, f.p, req)
	emulatortest.NoError(t, err)
	if !strings.Contains(msg, "Deleted load balancer "+lbID) {
		t.Errorf("message %q", msg)
	}
	if f.lbExists(lbID) {
		t.Fatal("load balancer still exists")
	}
	if g := f.groupsOf(s); len(g) != 0 {
		t.Fatalf("groups left: %+v", g)
	}
	msg, err = deleteBound(f.ctx, f.p, req)
	emulatortest.NoError(t, err)
	if !strings.Contains(msg, "no load balancer of its own") {
		t.Errorf("second delete %q", msg)
	}
}

// TestPreserveOnDelete: the load balancer stays with its listener and
// group; protections are off and the default tags gone.
func TestPreserveOnDelete(t *testing.T) {
	f := newFixture(t)
	s := svc("keep", map[string]string{"preserve-lb-on-delete": "", "additional-resource-tags": "team=a"})
	req := f.ensureNew(request(t, s, instances, nil))
	lbID := req.LoadBalancerID
	_, err := deleteBound(f.ctx, f.p, req)
	emulatortest.NoError(t, err)
	lb := f.getLB(lbID)
	if lb.DeletionProtectionConfig.Enabled || lb.ModificationProtectionConfig.Status != "NonProtection" {
		t.Errorf("protections %v %s", lb.DeletionProtectionConfig.Enabled, lb.ModificationProtectionConfig.Status)
	}
	for _, tg := range lb.Tags {
		if tg.TagKey == naming.TagKeyDefaultName || tg.TagKey == naming.TagKeyCluster {
			t.Errorf("default tag %s left", tg.TagKey)
		}
	}
	if ls := f.listeners(lbID); len(ls) != 1 || ls[0].ListenerPort != 80 {
		t.Errorf("listeners %+v", ls)
	}
	if g := f.groupsOf(s); len(g) != 1 || len(f.servers(g[0].ServerGroupId)) != 3 {
		t.Errorf("groups %+v", g)
	}
}

// TestLoadBalancerDeletedOutOfBand: SyncBackends asks for a full sync, and
// Ensure creates a new load balancer (a new ClientToken, not a replay of
// the first create) and reuses the existing groups.
func TestLoadBalancerDeletedOutOfBand(t *testing.T) {
	f := newFixture(t)
	s := svc("oob", nil)
	req := f.ensureNew(request(t, s, instances, nil))
	old := req.LoadBalancerID
	groups := f.groupsOf(s)

	pr := sdknlb.CreateUpdateLoadBalancerProtectionRequest()
	pr.LoadBalancerId = old
	pr.DeletionProtectionEnabled = "false"
	_, err := f.sdk.UpdateLoadBalancerProtection(pr)
	emulatortest.NoError(t, err)
	dr := sdknlb.CreateDeleteLoadBalancerRequest()
	dr.LoadBalancerId = old
	_, err = f.sdk.DeleteLoadBalancer(dr)
	emulatortest.NoError(t, err)
	// Deletion is a job: the LB is Deleting, its listeners still use the
	// group, until it ends.
	emulatortest.Eventually(t, "the out-of-band deletion to finish", func() bool { return !f.lbExists(old) })

	if _, err := syncBound(f.ctx, f.p, req); !errors.Is(err, service.ErrFullSyncNeeded) {
		t.Fatalf("SyncBackends: %v, want ErrFullSyncNeeded", err)
	}
	res := f.ensure(req)
	if res.LoadBalancerID == old || !f.lbExists(res.LoadBalancerID) {
		t.Fatalf("not recreated: %s (old %s)", res.LoadBalancerID, old)
	}
	now := f.groupsOf(s)
	if len(now) != 1 || now[0].ServerGroupId != groups[0].ServerGroupId {
		t.Errorf("groups %+v, want the old one reused", now)
	}
	if ls := f.listeners(res.LoadBalancerID); len(ls) != 1 || ls[0].ServerGroupId != groups[0].ServerGroupId {
		t.Errorf("listeners %+v", ls)
	}
}

// TestConvergesUnderThrottling: with 30% of NLB calls refused with
// Throttling.User, Ensure still converges and a re-Ensure writes nothing.
func TestConvergesUnderThrottling(t *testing.T) {
	f := newFixture(t)
	throttle := func() {
		_, err := f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "nlb", Probability: 0.3,
			Error: &gateway.FaultError{Code: "Throttling.User", Status: 400, Message: "Request was denied due to user flow control."}})
		emulatortest.NoError(t, err)
	}
	throttle()
	s := svc("busy", map[string]string{"security-group-ids": "sg-one"})
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "b", Port: 81, NodePort: 30081, Protocol: corev1.ProtocolTCP})
	req := request(t, s, instances, nil)
	res := f.ensure(req)
	var throttled int
	for _, r := range f.env.Emulator.Requests() {
		if r.Code == "Throttling.User" {
			throttled++
		}
	}
	t.Logf("%d calls throttled", throttled)
	if throttled == 0 {
		t.Fatal("no call was throttled")
	}
	// Check with the SDK unhindered, then throttle the re-Ensure again.
	f.env.Emulator.Gateway.ClearFaults()
	lb := f.getLB(res.LoadBalancerID)
	if len(f.listeners(lb.LoadBalancerId)) != 2 || !slices.Equal(lb.SecurityGroupIds, []string{"sg-one"}) {
		t.Fatalf("not converged: %+v", lb)
	}
	throttle()
	m := f.mark()
	f.ensure(req)
	if _, writes, by := f.callsSince(m); writes != 0 {
		t.Errorf("re-Ensure under throttling wrote %v", by)
	}
}

// TestSecurityGroupsFollowTheAnnotation: join, replace, and an empty value
// leaves them all.
func TestSecurityGroupsFollowTheAnnotation(t *testing.T) {
	f := newFixture(t)
	s := svc("sg", map[string]string{"security-group-ids": "sg-one"})
	req := f.ensureNew(request(t, s, instances, nil))
	for _, tc := range []struct{ value, want string }{
		{"sg-two", "sg-two"}, {"sg-one,sg-two", "sg-one,sg-two"}, {"", ""},
	} {
		s.Annotations[annKey("security-group-ids")] = tc.value
		r := request(t, s, instances, nil)
		r.LoadBalancerID = req.LoadBalancerID
		f.ensure(r)
		got := f.getLB(req.LoadBalancerID).SecurityGroupIds
		slices.Sort(got)
		if strings.Join(got, ",") != tc.want {
			t.Errorf("annotation %q: groups %v, want %s", tc.value, got, tc.want)
		}
	}
}

// TestENIBackendsInIpGroups: eni backends with server-group-type ip
// register pod IPs as Ip servers on their target port.
func TestENIBackendsInIpGroups(t *testing.T) {
	f := newFixture(t)
	s := svc("pods", map[string]string{"server-group-type": "ip", "service.beta.kubernetes.io/backend-type": "eni"})
	req := request(t, s, nil, nil)
	req.Backends = map[int32][]service.Target{80: {
		{IP: "192.168.1.100", Port: 8080, Weight: 100}, {IP: "192.168.2.100", Port: 8080, Weight: 50},
	}}
	f.ensure(req)
	g := f.groupsOf(s)
	if len(g) != 1 || g[0].ServerGroupType != "Ip" || g[0].ServerGroupName != "k8s.8080.TCP.pods.default."+clusterID {
		t.Fatalf("groups %+v", g)
	}
	if got := strings.Join(f.servers(g[0].ServerGroupId), ","); got != "192.168.1.100:8080/100,192.168.2.100:8080/50" {
		t.Errorf("servers %s", got)
	}
}

// TestSettingsChanges: each annotation change costs only the calls it
// needs: a listener setting one UpdateListenerAttribute, a health check
// one UpdateServerGroupAttribute; a protocol change recreates the listener
// and its group; a group type change replaces the group under the listener.
func TestSettingsChanges(t *testing.T) {
	f := newFixture(t)
	s := svc("conf", nil)
	req := f.ensureNew(request(t, s, instances[:2], nil))
	lbID := req.LoadBalancerID
	for _, tc := range []struct {
		name   string
		ann    map[string]string
		writes map[string]int
		check  func(t *testing.T)
	}{
		{"idle timeout", map[string]string{"idle-timeout": "60"}, map[string]int{"UpdateListenerAttribute": 1}, func(t *testing.T) {
			if l := f.listeners(lbID); l[0].IdleTimeout != 60 {
				t.Errorf("idle timeout %d", l[0].IdleTimeout)
			}
		}},
		{"health check", map[string]string{"idle-timeout": "60", "health-check-type": "http", "health-check-uri": "/healthz", "healthy-threshold": "4"}, map[string]int{"UpdateServerGroupAttribute": 1}, func(t *testing.T) {
			h := f.groupsOf(s)[0].HealthCheck
			if h.HealthCheckType != "HTTP" || h.HealthCheckUrl != "/healthz" || h.HealthyThreshold != 4 {
				t.Errorf("health check %+v", h)
			}
		}},
		{"tcpssl", map[string]string{"idle-timeout": "60", "health-check-type": "http", "health-check-uri": "/healthz", "healthy-threshold": "4", "protocol-port": "tcpssl:80", "cert-id": "cert-abc"},
			map[string]int{"DeleteListener": 1, "CreateListener": 1, "CreateServerGroup": 1, "AddServersToServerGroup": 1, "DeleteServerGroup": 1}, func(t *testing.T) {
				l := f.listeners(lbID)
				if len(l) != 1 || l[0].ListenerProtocol != "TCPSSL" || len(l[0].CertificateIds) != 1 || l[0].CertificateIds[0] != "cert-abc" || l[0].IdleTimeout != 60 {
					t.Errorf("listener %+v", l)
				}
				g := f.groupsOf(s)
				if len(g) != 1 || g[0].Protocol != "TCP" || g[0].ServerGroupName != "k8s.30080.TCPSSL.conf.default."+clusterID || l[0].ServerGroupId != g[0].ServerGroupId {
					t.Errorf("groups %+v", g)
				}
			}},
		{"group type", map[string]string{"idle-timeout": "60", "health-check-type": "http", "health-check-uri": "/healthz", "healthy-threshold": "4", "protocol-port": "tcpssl:80", "cert-id": "cert-abc", "server-group-type": "ip"},
			map[string]int{"CreateServerGroup": 1, "AddServersToServerGroup": 1, "UpdateListenerAttribute": 1, "DeleteServerGroup": 1}, func(t *testing.T) {
				g := f.groupsOf(s)
				if len(g) != 1 || g[0].ServerGroupType != "Ip" || strings.Join(f.servers(g[0].ServerGroupId), ",") != "192.168.1.11:30080/100,192.168.2.12:30080/100" {
					t.Errorf("groups %+v", g)
				}
				if l := f.listeners(lbID); l[0].ServerGroupId != g[0].ServerGroupId {
					t.Errorf("listener still on %s", l[0].ServerGroupId)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.ann {
				s.Annotations[annKey(k)] = v
			}
			r := request(t, s, instances[:2], nil)
			r.LoadBalancerID = lbID
			m := f.mark()
			f.ensure(r)
			_, _, writes := f.callsSince(m)
			if len(writes) != len(tc.writes) {
				t.Errorf("writes %v, want %v", writes, tc.writes)
			}
			for k, v := range tc.writes {
				if writes[k] != v {
					t.Errorf("writes %v, want %v", writes, tc.writes)
				}
			}
			tc.check(t)
		})
	}
}

// TestServerBatches: servers are added and removed in calls of at most
// BatchSize, within the cloud's per-call quota.
func TestServerBatches(t *testing.T) {
	f := newFixtureWith(t, func(o *nlb.Options) { o.BatchSize = 2 })
	emulatortest.NoError(t, f.env.Emulator.Store.Settings().SetQuota(store.QuotaNLBServersPerCall, 2))
	s := svc("batch", nil)
	m := f.mark()
	req := f.ensureNew(request(t, s, instances, nil))
	if _, _, writes := f.callsSince(m); writes["AddServersToServerGroup"] != 2 {
		t.Errorf("writes %v, want 2 AddServersToServerGroup", writes)
	}
	if got := f.servers(f.groupsOf(s)[0].ServerGroupId); len(got) != 3 {
		t.Fatalf("servers %v", got)
	}
	m = f.mark()
	unbound := request(t, s, nil, nil)
	unbound.Binding = &service.Binding{}
	if _, err := syncBound(f.ctx, f.p, unbound); !errors.Is(err, service.ErrFullSyncNeeded) {
		t.Fatalf("SyncBackends bound to no load balancer: %v", err)
	}
	r := request(t, s, nil, nil)
	r.LoadBalancerID = req.LoadBalancerID
	_, err := syncBound(f.ctx, f.p, r)
	emulatortest.NoError(t, err)
	if _, _, writes := f.callsSince(m); writes["RemoveServersFromServerGroup"] != 2 {
		t.Errorf("writes %v, want 2 RemoveServersFromServerGroup", writes)
	}
}

// TestBoundServerGroup: vgroup-port puts our servers (marked by
// description) into the user's group, used by a listener of the borrowed
// load balancer, next to the user's own, and the Service's deletion takes
// only ours out. A group no listener of the bound load balancer uses
// (another team's, say) is refused before any server is written.
func TestBoundServerGroup(t *testing.T) {
	f := newFixture(t)
	lbID, group, _ := f.userLB(80)
	emulatortest.Eventually(t, "user server added", func() bool {
		a := sdknlb.CreateAddServersToServerGroupRequest()
		a.ServerGroupId = group
		a.Servers = &[]sdknlb.AddServersToServerGroupServers{{ServerId: instances[2], ServerType: "Ecs", Port: "9000", Weight: "10"}}
		_, err := f.sdk.AddServersToServerGroup(a)
		return err == nil
	})
	// Not bound to the load balancer that uses the group: refused by the
	// parser before any call (vgroup-port needs id, for CLB and NLB alike).
	own := svc("bound-elsewhere", map[string]string{"vgroup-port": group + ":80"})
	var inv *annotations.InvalidError
	if _, err := annotations.Parse(own, annotations.Defaults{Owner: annotations.OwnerNLB}); !errors.As(err, &inv) || inv.BackendsUsable() || !strings.Contains(err.Error(), group) {
		t.Fatalf("vgroup-port of a group used by another load balancer: %v", err)
	}
	s := svc("bound", map[string]string{"id": lbID, "vgroup-port": group + ":80"})
	req := f.ensureNew(request(t, s, instances[:2], nil))
	if got := strings.Join(f.servers(group), ","); got != "i-node1:30080/100,i-node2:30080/100,i-node3:9000/10" {
		t.Fatalf("servers %s", got)
	}
	if l := f.listeners(lbID); len(l) != 1 || l[0].ServerGroupId != group {
		t.Fatalf("listeners %+v", l)
	}
	if len(f.groupsOf(s)) != 0 {
		t.Errorf("a group of our own was created")
	}
	_, err := deleteBound(f.ctx, f.p, req)
	emulatortest.NoError(t, err)
	if got := strings.Join(f.servers(group), ","); got != "i-node3:9000/10" {
		t.Errorf("servers after delete: %s, want only the user's", got)
	}
}

// TestLoadBalancerAttributes: each load-balancer-level annotation change
// costs its one call, and a re-Ensure after it none.
func TestLoadBalancerAttributes(t *testing.T) {
	f := newFixture(t)
	s := svc("attrs", nil)
	req := f.ensureNew(request(t, s, instances[:1], nil))
	lbID := req.LoadBalancerID
	for _, tc := range []struct {
		name   string
		ann    map[string]string
		writes map[string]int
		check  func(lb *sdknlb.GetLoadBalancerAttributeResponse) bool
	}{
		{"name and cross-zone", map[string]string{"name": "renamed", "cross-zone-enabled": "off"}, map[string]int{"UpdateLoadBalancerAttribute": 1},
			func(lb *sdknlb.GetLoadBalancerAttributeResponse) bool {
				return lb.LoadBalancerName == "renamed" && !lb.CrossZoneEnabled
			}},
		{"zones", map[string]string{"zone-maps": zoneMaps + ",cn-hangzhou-j:vsw-j"}, map[string]int{"UpdateLoadBalancerZones": 1},
			func(lb *sdknlb.GetLoadBalancerAttributeResponse) bool { return len(lb.ZoneMappings) == 3 }},
		{"bandwidth package", map[string]string{"bandwidth-package-id": "cbwp-test1"}, map[string]int{"AttachCommonBandwidthPackageToLoadBalancer": 1},
			func(lb *sdknlb.GetLoadBalancerAttributeResponse) bool { return lb.BandwidthPackageId == "cbwp-test1" }},
		{"address type", map[string]string{"address-type": "intranet"}, map[string]int{"UpdateLoadBalancerAddressTypeConfig": 1},
			func(lb *sdknlb.GetLoadBalancerAttributeResponse) bool { return lb.AddressType == "Intranet" }},
		{"additional tags", map[string]string{"additional-resource-tags": "env=prod"}, map[string]int{"TagResources": 1},
			func(lb *sdknlb.GetLoadBalancerAttributeResponse) bool {
				for _, tg := range lb.Tags {
					if tg.TagKey == "env" && tg.TagValue == "prod" {
						return true
					}
				}
				return false
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.ann {
				s.Annotations[annKey(k)] = v
			}
			r := request(t, s, instances[:1], nil)
			r.LoadBalancerID = lbID
			m := f.mark()
			f.ensure(r)
			_, _, writes := f.callsSince(m)
			if !reflectEqual(writes, tc.writes) {
				t.Errorf("writes %v, want %v", writes, tc.writes)
			}
			if lb := f.getLB(lbID); !tc.check(lb) {
				t.Errorf("not applied: %+v", lb)
			}
			m = f.mark()
			f.ensure(r)
			if _, _, writes := f.callsSince(m); len(writes) != 0 {
				t.Errorf("re-Ensure wrote %v", writes)
			}
		})
	}
}

func reflectEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
