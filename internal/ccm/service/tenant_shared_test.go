package service_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// Several Services on one borrowed load balancer: one test per rule of
// docs/service-controller.md "Shared load balancers". team-b (victimNS)
// borrows a user's load balancer first; team-a (attackerNS) borrows it
// too. The request log must show no write on what is team-b's or the
// load balancer owner's, and every Service must delete completely.

// lbLevelActions are the calls that change a load balancer's own settings.
var lbLevelActions = map[string]bool{
	"SetLoadBalancerName": true, "ModifyLoadBalancerInstanceSpec": true, "ModifyLoadBalancerInternetSpec": true,
	"ModifyLoadBalancerInstanceChargeType": true, "SetLoadBalancerDeleteProtection": true,
	"SetLoadBalancerModificationProtection": true, "TagResources": true, "UntagResources": true,
	"UpdateLoadBalancerAttribute": true, "UpdateLoadBalancerZones": true, "UpdateLoadBalancerAddressTypeConfig": true,
	"LoadBalancerJoinSecurityGroup": true, "LoadBalancerLeaveSecurityGroup": true,
	"AttachCommonBandwidthPackageToLoadBalancer": true, "DetachCommonBandwidthPackageFromLoadBalancer": true,
	"EnableLoadBalancerIpv6Internet": true, "DisableLoadBalancerIpv6Internet": true,
	"UpdateLoadBalancerProtection": true,
}

// lbLevelWrites are the load-balancer-level writes on lb after seq.
func lbLevelWrites(product string, seq uint64, lb string) []gateway.RequestRecord {
	var out []gateway.RequestRecord
	for _, r := range writesOn(product, seq, lb) {
		if lbLevelActions[r.Action] {
			out = append(out, r)
		}
	}
	return out
}

// sharedGrant is the tag an administrator puts on a load balancer (or
// group) both teams share, under loadBalancerReuse: tagged.
func sharedGrant() map[string]string {
	return map[string]string{service.TagReusable: attackerNS + "," + victimNS}
}

// sharedSettingsFrozen: team-a's name and spec annotations differ from
// the load balancer team-b borrows too: no load-balancer-level write, a
// Warning naming the annotation, the load balancer's value and team-b's
// Service; once team-b leaves, team-a's settings apply. Run under tagged
// (TestUnderTagged), the load balancer granted to both.
func sharedSettingsFrozen(t *testing.T) {
	tenants(t)
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			user := k.userLB(t, sharedGrant())
			name := "frozen-" + k.name
			victim := createIn(t, victimNS, k.service(t, name, map[string]string{annotations.Key("id"): user}))
			vs := waitIngressIn(t, victimNS, victim.Name, 90*time.Second)
			seq := lastSeq()
			ann := map[string]string{annotations.Key("id"): user, annotations.Key("name"): "renamed-" + k.name}
			if k.name == "clb" {
				ann[annotations.Key("spec")] = "slb.s3.large"
			}
			createIn(t, attackerNS, k.service(t, name, ann))
			waitIngressIn(t, attackerNS, name, 90*time.Second)
			e := waitEventIn(t, attackerNS, name, service.EventSharedSettingIgnored, annotations.Key("name"))
			for _, want := range []string{"users-own", victimNS + "/" + name, user} {
				if !strings.Contains(e.Message, want) {
					t.Errorf("Warning %q does not name %q", e.Message, want)
				}
			}
			if k.name == "clb" {
				waitEventIn(t, attackerNS, name, service.EventSharedSettingIgnored, "slb.s1.small")
			}
			if w := lbLevelWrites(k.product, seq, user); len(w) > 0 {
				t.Fatalf("load-balancer-level writes while shared: %v", actions(w))
			}
			if got := k.lbName(t, user); got != "users-own" {
				t.Fatalf("shared load balancer renamed to %q", got)
			}
			// Nothing of team-b's was written either.
			ref := naming.For(vs, clusterID)
			for _, r := range cloud.Requests(gateway.RequestFilter{Product: k.product, AfterSeq: seq}) {
				p := fmt.Sprint(r.Params)
				if isWrite(r.Action) && (strings.Contains(p, "/"+ref.Name+"/"+ref.Namespace+"/") || strings.Contains(p, "."+ref.Name+"."+ref.Namespace+".")) {
					t.Errorf("write naming team-b's Service: %s %v", r.Action, r.Params)
				}
			}
			deleteServiceIn(t, victimNS, name, 60*time.Second)
			// The only borrower left: its annotations configure the load balancer.
			poll(t, 60*time.Second, "team-a's name applied", func(ctx context.Context) (bool, error) {
				return k.lbName(t, user) == "renamed-"+k.name, nil
			})
			if k.name == "clb" {
				if lb, _ := describeLB(t, user); lb.LoadBalancerSpec != "slb.s3.large" {
					t.Errorf("spec %s after team-b left, want slb.s3.large", lb.LoadBalancerSpec)
				}
			}
			deleteServiceIn(t, attackerNS, name, 60*time.Second)
			if !k.exists(t, user) {
				t.Fatal("the borrowed load balancer was deleted")
			}
		})
	}
}

// sharedBoundMembersReleased: the members a Service put in a user's
// vServer group through vgroup-port leave it as soon as the annotation
// goes, and at Delete; the user's own member is never touched. Run under
// tagged (TestUnderTagged): the load balancer and the group are granted
// to team-a.
func sharedBoundMembersReleased(t *testing.T) {
	tenants(t)
	c := slbClient(t)
	cr := slb.CreateCreateLoadBalancerRequest()
	cr.LoadBalancerName, cr.LoadBalancerSpec = "release-user-lb", "slb.s1.small"
	cr.Tag = &[]slb.CreateLoadBalancerTag{{Key: service.TagReusable, Value: attackerNS}}
	lb, err := c.CreateLoadBalancer(cr)
	if err != nil {
		t.Fatal(err)
	}
	owner := instanceByName(t, "svc-node-0")
	gr := slb.CreateCreateVServerGroupRequest()
	gr.LoadBalancerId, gr.VServerGroupName = lb.LoadBalancerId, "user-group"
	gr.BackendServers = `[{"ServerId":"` + owner + `","Port":"9000","Weight":"77","Type":"ecs"}]`
	g, err := c.CreateVServerGroup(gr)
	if err != nil {
		t.Fatal(err)
	}
	tagSLB(t, "vservergroup", g.VServerGroupId, service.TagReusablePrefix+attackerNS, "true")
	onlyOwner := map[string]int{owner: 77}
	seq := lastSeq()
	name := "bound-release"
	bind := func(s *corev1.Service) { s.Annotations[annotations.Key("vgroup-port")] = g.VServerGroupId + ":80" }
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.Key("id"): lb.LoadBalancerId}})
	bind(svc)
	createIn(t, attackerNS, svc)
	waitIngressIn(t, attackerNS, name, 60*time.Second)
	members := func() map[string]int { return groupMembers(t, lb.LoadBalancerId)["user-group"] }
	poll(t, 30*time.Second, "the Service's members in the user's group", func(ctx context.Context) (bool, error) {
		return len(members()) == nodeCount+1, nil
	})

	updateServiceIn(t, attackerNS, name, func(s *corev1.Service) { delete(s.Annotations, annotations.Key("vgroup-port")) })
	waitIngressIn(t, attackerNS, name, 30*time.Second)
	if got := members(); !reflect.DeepEqual(got, onlyOwner) {
		t.Fatalf("after vgroup-port was removed the user's group holds %v, want only the owner's member", got)
	}

	updateServiceIn(t, attackerNS, name, bind)
	waitIngressIn(t, attackerNS, name, 30*time.Second)
	if got := members(); len(got) != nodeCount+1 {
		t.Fatalf("bound again: %d members, want %d", len(got), nodeCount+1)
	}
	deleteServiceIn(t, attackerNS, name, 30*time.Second)
	if got := members(); !reflect.DeepEqual(got, onlyOwner) {
		t.Fatalf("after delete the user's group holds %v, want only the owner's member", got)
	}
	for _, r := range writesOn("slb", seq, lb.LoadBalancerId, g.VServerGroupId) {
		if strings.Contains(r.Params["BackendServers"], owner) {
			t.Errorf("write touching the owner's member: %s %v", r.Action, r.Params)
		}
	}
}

// sharedPortsLimited: on a CLB team-b borrows, team-a's Service with
// 100 ports and no listener of its own makes no vServer group and no
// member (a Warning says why); team-b's group is never written. Run under
// tagged (TestUnderTagged), the load balancer granted to both.
func sharedPortsLimited(t *testing.T) {
	tenants(t)
	user := kinds(t)[0].userLB(t, sharedGrant())
	name := "quota"
	createIn(t, victimNS, newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.Key("id"): user}}))
	waitIngressIn(t, victimNS, name, 60*time.Second)
	victimGroups := clbGroupIDs(t, user)
	if len(victimGroups) != 1 {
		t.Fatalf("team-b's groups %v, want 1", victimGroups)
	}
	seq := lastSeq()
	ports := make([]int32, 100)
	for i := range ports {
		ports[i] = int32(10001 + i)
	}
	createIn(t, attackerNS, newService(svcSpec{name: name, ports: ports, annotations: map[string]string{annotations.Key("id"): user}}))
	waitEventIn(t, attackerNS, name, service.EventSharedPortsSkipped, victimNS+"/"+name)
	waitIngressIn(t, attackerNS, name, 60*time.Second)
	for _, r := range cloud.Requests(gateway.RequestFilter{Product: "slb", AfterSeq: seq}) {
		if (r.Action == "CreateVServerGroup" || r.Action == "AddVServerGroupBackendServers") && strings.Contains(fmt.Sprint(r.Params), "/"+name+"/"+attackerNS+"/") {
			t.Fatalf("team-a made a group or members without a listener: %s %v", r.Action, r.Params)
		}
	}
	if got := clbGroupIDs(t, user); !reflect.DeepEqual(got, victimGroups) {
		t.Fatalf("groups now %v, were %v", got, victimGroups)
	}
	for _, id := range victimGroups {
		if w := writesOn("slb", seq, id); len(w) > 0 {
			t.Errorf("writes on team-b's group: %v", actions(w))
		}
	}
	deleteServiceIn(t, attackerNS, name, 60*time.Second)
	deleteServiceIn(t, victimNS, name, 60*time.Second)
	if g := clbGroupIDs(t, user); len(g) != 0 {
		t.Errorf("groups left on the borrowed CLB: %v", g)
	}
}

// TestDuplicateTaggedLoadBalancersDeleted: a second load balancer tagged
// for a Service (as a lost create answer and a crash leave it) is deleted
// with the Service, not leaked.
func TestDuplicateTaggedLoadBalancersDeleted(t *testing.T) {
	t.Parallel()
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			name := "dup-" + k.name
			svc := create(t, k.service(t, name, nil))
			first := lbID(waitIngress(t, name, 90*time.Second))
			tags := map[string]string{}
			for _, tg := range naming.DefaultTags(svc, clusterID) {
				tags[tg.Key] = tg.Value
			}
			second := k.userLB(t, tags)
			if got := k.tagged(t, svc); len(got) != 2 {
				t.Fatalf("tagged for the Service: %v, want %s and %s", got, first, second)
			}
			deleteServiceIn(t, ns, name, 60*time.Second)
			for _, id := range []string{first, second} {
				if k.exists(t, id) {
					t.Errorf("load balancer %s tagged for the deleted Service still exists", id)
				}
			}
		})
	}
}

// lbName reads a load balancer's name.
func (k lbKind) lbName(t *testing.T, id string) string {
	t.Helper()
	if k.name == "clb" {
		lb, ok := describeLB(t, id)
		if !ok {
			t.Fatalf("load balancer %s not found", id)
		}
		return lb.LoadBalancerName
	}
	r := nlb.CreateGetLoadBalancerAttributeRequest()
	r.LoadBalancerId = id
	resp, err := nlbClient(t).GetLoadBalancerAttribute(r)
	if err != nil {
		t.Fatal(err)
	}
	return resp.LoadBalancerName
}
