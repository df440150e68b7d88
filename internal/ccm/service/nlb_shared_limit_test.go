package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// sharedNLBPortsLimited (run by TestUnderTagged): on an NLB granted to
// both teams, team-b borrows port 80 with force-override-listeners;
// team-a borrows it too with 16 ports, 80 (held by team-b's listener) and
// 10001-10015. team-a gets service.MaxGroupsPerSharedLB server groups and
// listeners (10001-10010), each group made once, and members only in
// them; none for 80 nor 10011-10015, and a Warning naming those ports and
// team-b's Service. Nothing of team-b's is written; both Services delete
// completely and the NLB stays, without listeners.
func sharedNLBPortsLimited(t *testing.T) {
	tenants(t)
	user := kinds(t)[1].userLB(t, sharedGrant())
	const name = "nlb-quota"
	borrow := func() map[string]string {
		return map[string]string{annotations.Key("id"): user, annotations.Key("force-override-listeners"): "true"}
	}
	vs := createIn(t, victimNS, nlbService(t, name, borrow()))
	vs = waitIngressIn(t, victimNS, name, 90*time.Second)
	var victimIDs []string
	for _, g := range nlbGroups(t, vs) {
		victimIDs = append(victimIDs, g.ServerGroupId)
	}
	victimListener := nlbListeners(t, user)["TCP:80"].ListenerId
	if len(victimIDs) != 1 || victimListener == "" {
		t.Fatalf("team-b's groups %v and listener %q, want one each", victimIDs, victimListener)
	}
	victimServers := len(nlbServers(t, victimIDs[0]))

	seq := lastSeq()
	ports := []int32{80}
	for p := int32(10001); p <= 10015; p++ {
		ports = append(ports, p)
	}
	ann := borrow()
	ann[annotations.Key("zone-maps")] = nlbZoneMaps()
	svc := newService(svcSpec{name: name, ports: ports, annotations: ann})
	svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	as := createIn(t, attackerNS, svc)
	e := waitEventIn(t, attackerNS, name, service.EventSharedPortsSkipped, "above the limit")
	t.Logf("warned: %s", e.Message)
	for _, want := range []string{"80/TCP", "10011/TCP", "10015/TCP", victimNS + "/" + name, user} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("the Warning does not name %q: %s", want, e.Message)
		}
	}
	waitIngressIn(t, attackerNS, name, 120*time.Second)

	groups := nlbGroups(t, as)
	if len(groups) != service.MaxGroupsPerSharedLB {
		t.Errorf("team-a has %d server groups, want %d", len(groups), service.MaxGroupsPerSharedLB)
	}
	own := map[string]bool{}
	for _, g := range groups {
		own[g.ServerGroupId] = true
	}
	ls := nlbListeners(t, user)
	for _, p := range ports {
		_, has := ls[fmt.Sprintf("TCP:%d", p)]
		if want := p == 80 || p <= 10010; has != want {
			t.Errorf("listener TCP:%d present %v, want %v", p, has, want)
		}
	}
	created := 0
	for _, r := range cloud.Requests(gateway.RequestFilter{Product: "nlb", AfterSeq: seq}) {
		switch r.Action {
		case "CreateServerGroup":
			if strings.Contains(fmt.Sprint(r.Params), "."+name+"."+attackerNS+".") {
				created++
			}
		case "AddServersToServerGroup":
			if id := r.Params["ServerGroupId"]; !own[id] && strings.Contains(fmt.Sprint(r.Params), "."+name+"."+attackerNS+".") {
				t.Errorf("team-a's members added to group %s, not one of its %d", id, len(own))
			}
		}
	}
	if created != service.MaxGroupsPerSharedLB {
		t.Errorf("%d CreateServerGroup for team-a, want %d (groups only for ports with a listener)", created, service.MaxGroupsPerSharedLB)
	}
	noWritesOn(t, "nlb", seq, append(victimIDs, victimListener)...)
	if n := len(nlbServers(t, victimIDs[0])); n != victimServers {
		t.Errorf("team-b's group had %d servers, now %d", victimServers, n)
	}

	deleteServiceIn(t, attackerNS, name, 90*time.Second)
	deleteServiceIn(t, victimNS, name, 60*time.Second)
	if g := nlbGroups(t, as); len(g) != 0 {
		t.Errorf("team-a's server groups left: %d", len(g))
	}
	if g := nlbGroups(t, vs); len(g) != 0 {
		t.Errorf("team-b's server groups left: %d", len(g))
	}
	if !nlbLBExists(t, user) {
		t.Fatal("the borrowed NLB was deleted")
	}
	poll(t, 30*time.Second, "no listener left on the borrowed NLB", func(ctx context.Context) (bool, error) {
		return len(nlbListeners(t, user)) == 0, nil
	})
}
