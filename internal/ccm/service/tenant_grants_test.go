package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// Borrowing is granted, not taken: under loadBalancerReuse: tagged, the
// attacker (team-a) and the victim (team-b) both borrow a load balancer an
// administrator granted to both. The attacker names the victim's
// CCM-made group in vgroup-port, then a user-made group nobody granted it,
// then that group once granted; and a certificate granted only to the
// victim. Each refusal is a Warning naming the grant, with no write naming
// the resource; every Service deletes completely. They run under the CCM
// TestUnderTagged restarts with loadBalancerReuse: tagged.

// recheck asks the CCM for a sync of an unchanged Service, as a user's
// label change does.
func recheck(t *testing.T, namespace, name string) {
	t.Helper()
	updateServiceIn(t, namespace, name, func(s *corev1.Service) {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels["recheck"] = fmt.Sprint(time.Now().UnixNano())
	})
}

// clbGroupOf is the id of the vServer group the CCM made on lb for the
// Service namespace/name.
func clbGroupOf(t *testing.T, lb, namespace, name string) string {
	t.Helper()
	req := slb.CreateDescribeVServerGroupsRequest()
	req.LoadBalancerId = lb
	resp, err := slbClient(t).DescribeVServerGroups(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range resp.VServerGroups.VServerGroup {
		if p, ok := naming.ParseCLB(g.VServerGroupName); ok && p.Ref.Namespace == namespace && p.Ref.Name == name {
			return g.VServerGroupId
		}
	}
	t.Fatalf("no vServer group of %s/%s on %s", namespace, name, lb)
	return ""
}

// clbMembers counts the members of a vServer group.
func clbMembers(t *testing.T, group string) int {
	t.Helper()
	req := slb.CreateDescribeVServerGroupAttributeRequest()
	req.VServerGroupId = group
	resp, err := slbClient(t).DescribeVServerGroupAttribute(req)
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.BackendServers.BackendServer)
}

// tagSLB tags SLB resources of type rtype as an administrator would.
func tagSLB(t *testing.T, rtype, id, key, value string) {
	t.Helper()
	req := slb.CreateTagResourcesRequest()
	req.ResourceType, req.ResourceId = rtype, &[]string{id}
	req.Tag = &[]slb.TagResourcesTag{{Key: key, Value: value}}
	if _, err := slbClient(t).TagResources(req); err != nil {
		t.Fatalf("tag %s %s: %v", rtype, id, err)
	}
}

// noWritesOn fails when a write after seq names one of ids.
func noWritesOn(t *testing.T, product string, seq uint64, ids ...string) {
	t.Helper()
	if w := writesOn(product, seq, ids...); len(w) > 0 {
		for _, r := range w {
			t.Errorf("write naming %v: %s %v", ids, r.Action, r.Params)
		}
		t.FailNow()
	}
}

// tenantGrantsCLBGroups: on a CLB granted to both namespaces, the
// attacker's vgroup-port naming the victim's CCM-made group is refused
// (GroupNotGranted, no write naming it); so is a user-made group without
// a grant; once an administrator grants the group to team-a, it is bound
// (team-a's Nodes are its members).
func tenantGrantsCLBGroups(t *testing.T) {
	tenants(t)
	lb := kinds(t)[0].userLB(t, map[string]string{service.TagReusable: attackerNS + "," + victimNS})
	victim := "grant-clb-b"
	createIn(t, victimNS, newService(svcSpec{name: victim, ports: []int32{8091}, annotations: map[string]string{
		annotations.Key("id"): lb, annotations.Key("force-override-listeners"): "true"}}))
	waitIngressIn(t, victimNS, victim, 60*time.Second)
	victimGroup := clbGroupOf(t, lb, victimNS, victim)
	victimMembers := clbMembers(t, victimGroup)

	seq := lastSeq()
	attacker := "grant-clb-a"
	createIn(t, attackerNS, newService(svcSpec{name: attacker, ports: []int32{80}, annotations: map[string]string{
		annotations.Key("id"): lb, annotations.Key("vgroup-port"): victimGroup + ":80"}}))
	e := waitEventIn(t, attackerNS, attacker, service.EventGroupNotGranted, victimGroup)
	t.Logf("refused: %s", e.Message)
	if !strings.Contains(e.Message, victimNS+"/"+victim) {
		t.Errorf("the Warning does not name the group's Service %s/%s: %s", victimNS, victim, e.Message)
	}
	noWritesOn(t, "slb", seq, victimGroup)
	if n := clbMembers(t, victimGroup); n != victimMembers {
		t.Fatalf("the victim's group had %d members, now %d", victimMembers, n)
	}

	cr := slb.CreateCreateVServerGroupRequest()
	cr.LoadBalancerId, cr.VServerGroupName = lb, "users-group"
	g, err := slbClient(t).CreateVServerGroup(cr)
	if err != nil {
		t.Fatal(err)
	}
	userGroup := g.VServerGroupId
	seq = lastSeq()
	updateServiceIn(t, attackerNS, attacker, func(s *corev1.Service) { s.Annotations[annotations.Key("vgroup-port")] = userGroup + ":80" })
	e = waitEventIn(t, attackerNS, attacker, service.EventGroupNotGranted, userGroup)
	if !strings.Contains(e.Message, service.TagReusable+"="+attackerNS) || !strings.Contains(e.Message, "loadBalancerReuse: tagged") {
		t.Errorf("the Warning does not name the tag to add and the mode: %s", e.Message)
	}
	noWritesOn(t, "slb", seq, userGroup, victimGroup)

	tagSLB(t, "vservergroup", userGroup, service.TagReusablePrefix+attackerNS, "true")
	recheck(t, attackerNS, attacker)
	waitIngressIn(t, attackerNS, attacker, 60*time.Second)
	poll(t, 30*time.Second, "team-a's Nodes in the granted group", func(ctx context.Context) (bool, error) {
		return clbMembers(t, userGroup) > 0, nil
	})
	noWritesOn(t, "slb", seq, victimGroup)

	deleteServiceIn(t, attackerNS, attacker, 60*time.Second)
	deleteServiceIn(t, victimNS, victim, 60*time.Second)
	if _, ok := describeLB(t, lb); !ok {
		t.Fatal("the borrowed CLB was deleted")
	}
}

// tenantGrantsNLBGroups is tenantGrantsCLBGroups on an NLB: the
// victim's group is used by its listener on the shared NLB, the user's by
// the user's own listener.
func tenantGrantsNLBGroups(t *testing.T) {
	tenants(t)
	vpcID, _ := clusterNetwork(t)
	lb := kinds(t)[1].userLB(t, map[string]string{service.TagReusable: attackerNS + "," + victimNS})
	victim := "grant-nlb-b"
	vs := createIn(t, victimNS, nlbService(t, victim, map[string]string{annotations.Key("id"): lb, annotations.Key("force-override-listeners"): "true"}))
	waitIngressIn(t, victimNS, victim, 90*time.Second)
	var victimGroup string
	for _, g := range nlbGroups(t, vs) {
		victimGroup = g.ServerGroupId
	}
	if victimGroup == "" {
		t.Fatal("the victim has no server group")
	}
	victimServers := len(nlbServers(t, victimGroup))

	seq := lastSeq()
	attacker := "grant-nlb-a"
	createIn(t, attackerNS, nlbService(t, attacker, map[string]string{annotations.Key("id"): lb, annotations.Key("vgroup-port"): victimGroup + ":80"}))
	e := waitEventIn(t, attackerNS, attacker, service.EventGroupNotGranted, victimGroup)
	t.Logf("refused: %s", e.Message)
	noWritesOn(t, "nlb", seq, victimGroup)
	if n := len(nlbServers(t, victimGroup)); n != victimServers {
		t.Fatalf("the victim's group had %d servers, now %d", victimServers, n)
	}

	gr := nlb.CreateCreateServerGroupRequest()
	gr.ServerGroupName, gr.VpcId, gr.ServerGroupType, gr.Protocol = "users-group", vpcID, "Instance", "TCP"
	g, err := nlbClient(t).CreateServerGroup(gr)
	if err != nil {
		t.Fatal(err)
	}
	userGroup := g.ServerGroupId
	lr := nlb.CreateCreateListenerRequest()
	lr.LoadBalancerId, lr.ListenerProtocol, lr.ListenerPort, lr.ServerGroupId = lb, "TCP", requests.NewInteger(9000), userGroup
	poll(t, 30*time.Second, "the user's listener on the NLB", func(ctx context.Context) (bool, error) {
		_, err := nlbClient(t).CreateListener(lr)
		if err != nil {
			return false, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), "\n", " "))
		}
		return true, nil
	})
	poll(t, 30*time.Second, "the user's group used by the NLB", func(ctx context.Context) (bool, error) {
		r := nlb.CreateListServerGroupsRequest()
		r.ServerGroupIds = &[]string{userGroup}
		resp, err := nlbClient(t).ListServerGroups(r)
		return err == nil && len(resp.ServerGroups) == 1 && len(resp.ServerGroups[0].RelatedLoadBalancerIds) == 1, nil
	})
	seq = lastSeq()
	updateServiceIn(t, attackerNS, attacker, func(s *corev1.Service) { s.Annotations[annotations.Key("vgroup-port")] = userGroup + ":80" })
	waitEventIn(t, attackerNS, attacker, service.EventGroupNotGranted, userGroup)
	noWritesOn(t, "nlb", seq, userGroup, victimGroup)

	tr := nlb.CreateTagResourcesRequest()
	tr.ResourceType, tr.ResourceId = "servergroup", &[]string{userGroup}
	tr.Tag = &[]nlb.TagResourcesTag{{Key: service.TagReusable, Value: attackerNS}}
	if _, err := nlbClient(t).TagResources(tr); err != nil {
		t.Fatal(err)
	}
	recheck(t, attackerNS, attacker)
	waitIngressIn(t, attackerNS, attacker, 90*time.Second)
	poll(t, 60*time.Second, "team-a's Nodes in the granted group", func(ctx context.Context) (bool, error) {
		return len(nlbServers(t, userGroup)) > 0, nil
	})
	noWritesOn(t, "nlb", seq, victimGroup)

	deleteServiceIn(t, attackerNS, attacker, 60*time.Second)
	deleteServiceIn(t, victimNS, victim, 60*time.Second)
	if !nlbLBExists(t, lb) {
		t.Fatal("the borrowed NLB was deleted")
	}
}

// tenantGrantsCertificates: the attacker's HTTPS listener naming a
// certificate granted only to the victim (by cert-id, then by
// domain-extensions) is refused before anything is created; with
// certificates granted to team-a the load balancer and listener are made.
func tenantGrantsCertificates(t *testing.T) {
	tenants(t)
	victimCert, ownCert := uploadCert(t), uploadCert(t)
	tagSLB(t, "certificate", victimCert, service.TagReusable, victimNS)
	tagSLB(t, "certificate", ownCert, service.TagReusable, "team-x, "+attackerNS)

	seq := lastSeq()
	name := "grant-cert-a"
	svc := createIn(t, attackerNS, newService(svcSpec{name: name, ports: []int32{443}, annotations: map[string]string{
		annotations.Key("protocol-port"): "https:443", annotations.Key("cert-id"): victimCert}}))
	e := waitEventIn(t, attackerNS, name, service.EventCertificateNotGranted, victimCert)
	t.Logf("refused: %s", e.Message)
	if !strings.Contains(e.Message, annotations.Key("cert-id")) {
		t.Errorf("the Warning does not name the annotation: %s", e.Message)
	}
	noWritesOn(t, "slb", seq, victimCert)
	if got := kinds(t)[0].tagged(t, svc); len(got) > 0 {
		t.Fatalf("load balancers created for the refused Service: %v", got)
	}

	updateServiceIn(t, attackerNS, name, func(s *corev1.Service) {
		s.Annotations[annotations.Key("cert-id")] = ownCert
		s.Annotations[annotations.Key("domain-extensions")] = "a.example.com:" + victimCert
	})
	waitEventIn(t, attackerNS, name, service.EventCertificateNotGranted, annotations.Key("domain-extensions"))
	noWritesOn(t, "slb", seq, victimCert)
	if got := kinds(t)[0].tagged(t, svc); len(got) > 0 {
		t.Fatalf("load balancers created for the refused Service: %v", got)
	}

	updateServiceIn(t, attackerNS, name, func(s *corev1.Service) { delete(s.Annotations, annotations.Key("domain-extensions")) })
	id := lbID(waitIngressIn(t, attackerNS, name, 60*time.Second))
	l, ok := clbListener(t, id, 443, "https")
	if !ok {
		t.Fatalf("no HTTPS listener on %s", id)
	}
	req := slb.CreateDescribeLoadBalancerHTTPSListenerAttributeRequest()
	req.LoadBalancerId, req.ListenerPort = id, requests.NewInteger(443)
	attr, err := slbClient(t).DescribeLoadBalancerHTTPSListenerAttribute(req)
	if err != nil || attr.ServerCertificateId != ownCert {
		t.Fatalf("listener %s serves %q (%v), want %s", clbString(l), attr.ServerCertificateId, err, ownCert)
	}
	noWritesOn(t, "slb", seq, victimCert)
	deleteServiceIn(t, attackerNS, name, 60*time.Second)
	if _, ok := describeLB(t, id); ok {
		t.Errorf("CLB %s outlived its Service", id)
	}
}
