package nlb_test

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	sdknlb "github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/nlb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// ownGroups lists the security groups tagged for the Service, by the SDK.
func (f *fixture) ownGroups(s *corev1.Service) []ecs.SecurityGroup {
	f.t.Helper()
	r := ecs.CreateDescribeSecurityGroupsRequest()
	r.Tag = &[]ecs.DescribeSecurityGroupsTag{{Key: naming.TagKeyDefaultName, Value: naming.DefaultLBName(s)}}
	r.PageSize = requests.NewInteger(50)
	resp, err := f.env.ECS(f.t).DescribeSecurityGroups(r)
	emulatortest.NoError(f.t, err)
	return resp.SecurityGroups.SecurityGroup
}

// rules returns a group's ingress rules as "policy prio proto ports cidr
// [description]", sorted.
func (f *fixture) rules(sg string) []string {
	f.t.Helper()
	r := ecs.CreateDescribeSecurityGroupAttributeRequest()
	r.SecurityGroupId, r.Direction = sg, "ingress"
	resp, err := f.env.ECS(f.t).DescribeSecurityGroupAttribute(r)
	emulatortest.NoError(f.t, err)
	var out []string
	for _, p := range resp.Permissions.Permission {
		cidr := p.SourceCidrIp + p.Ipv6SourceCidrIp
		out = append(out, strings.Join([]string{strings.ToLower(p.Policy), p.Priority, p.IpProtocol, p.PortRange, cidr, p.Description}, " "))
	}
	sort.Strings(out)
	return out
}

// userRule authorizes a rule without our description, as a user would.
func (f *fixture) userRule(sg, cidr string) {
	f.t.Helper()
	r := ecs.CreateAuthorizeSecurityGroupRequest()
	r.SecurityGroupId, r.IpProtocol, r.PortRange, r.SourceCidrIp, r.Description = sg, "TCP", "22/22", cidr, "ssh by hand"
	_, err := f.env.ECS(f.t).AuthorizeSecurityGroup(r)
	emulatortest.NoError(f.t, err)
}

// TestSourceRangesSecurityGroup: loadBalancerSourceRanges become the
// k8s-nlb-<name> security group (tagged for the Service, the existing CCM's
// rules) joined to the load balancer next to the security-group-ids ones;
// a converged re-Ensure writes nothing; a change of ranges writes only the
// difference; an invalid range freezes everything with a Warning naming
// it; removing the ranges leaves and deletes the group; the user's group
// and the rules a user added are never touched; Delete leaves nothing.
func TestSourceRangesSecurityGroup(t *testing.T) {
	f := newFixture(t)
	f.userRule("sg-one", "203.0.113.0/24")
	userRules := f.rules("sg-one")
	s := svc("ranges", map[string]string{"security-group-ids": "sg-one"})
	s.Spec.LoadBalancerSourceRanges = []string{"192.168.1.0/24", "10.0.0.1/8"}
	req := request(t, s, instances, nil)
	first := f.ensure(req)
	lbID := req.LoadBalancerID
	desc := nlb.SecurityGroupRuleDescription("default", "ranges", clusterID)

	own := func() string {
		t.Helper()
		gs := f.ownGroups(s)
		if len(gs) != 1 {
			t.Fatalf("%d security groups tagged for the Service, want 1", len(gs))
		}
		return gs[0].SecurityGroupId
	}
	sg := own()
	if g := f.ownGroups(s)[0]; g.SecurityGroupName != naming.NLBSecurityGroupName(naming.DefaultLBName(s)) || g.VpcId != vpcID {
		t.Fatalf("group %s named %q in %s", sg, g.SecurityGroupName, g.VpcId)
	}
	wantRules := func(what string, cidrs ...string) {
		t.Helper()
		var want []string
		for _, c := range cidrs {
			want = append(want, "accept 1 ALL -1/-1 "+c+" "+desc)
		}
		want = append(want, "drop 100 ALL -1/-1 0.0.0.0/0 "+desc)
		sort.Strings(want)
		if got := f.rules(sg); !slices.Equal(got, want) {
			t.Fatalf("%s: rules\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	wantRules("created", "10.0.0.0/8", "192.168.1.0/24")
	if got, ok := first.Labels[naming.LabelSecurityGroupID]; !ok || got != sg {
		t.Fatalf("labels %v, want %s=%s", first.Labels, naming.LabelSecurityGroupID, sg)
	}
	joined := func() []string {
		got := f.getLB(lbID).SecurityGroupIds
		slices.Sort(got)
		return got
	}
	if got := joined(); !slices.Equal(got, sortedOf("sg-one", sg)) {
		t.Fatalf("load balancer in %v, want sg-one and %s", got, sg)
	}

	m := f.mark()
	f.ensure(req)
	if _, writes, by := f.callsSince(m); writes != 0 {
		t.Fatalf("converged re-Ensure wrote %v", by)
	}

	steps := []struct {
		name   string
		ranges []string
		sgIDs  string
		writes map[string]int
		cidrs  []string
		groups []string
	}{
		{"one range replaced", []string{"10.0.0.0/8", "172.16.0.0/12"}, "sg-one",
			map[string]int{"AuthorizeSecurityGroup": 1, "RevokeSecurityGroup": 1}, []string{"10.0.0.0/8", "172.16.0.0/12"}, []string{"sg-one", sg}},
		{"user groups changed, ours kept", []string{"10.0.0.0/8", "172.16.0.0/12"}, "sg-two",
			map[string]int{"LoadBalancerLeaveSecurityGroup": 1, "LoadBalancerJoinSecurityGroup": 1}, []string{"10.0.0.0/8", "172.16.0.0/12"}, []string{"sg-two", sg}},
		{"user groups emptied, ours kept", []string{"10.0.0.0/8", "172.16.0.0/12"}, "",
			map[string]int{"LoadBalancerLeaveSecurityGroup": 1}, []string{"10.0.0.0/8", "172.16.0.0/12"}, []string{sg}},
	}
	for _, st := range steps {
		s.Spec.LoadBalancerSourceRanges = st.ranges
		s.Annotations[annKey("security-group-ids")] = st.sgIDs
		r := request(t, s, instances, nil)
		r.LoadBalancerID = lbID
		m := f.mark()
		f.ensure(r)
		if _, _, by := f.callsSince(m); !equalCounts(by, st.writes) {
			t.Fatalf("%s: writes %v, want %v", st.name, by, st.writes)
		}
		wantRules(st.name, st.cidrs...)
		if got := joined(); !slices.Equal(got, sortedOf(st.groups...)) {
			t.Fatalf("%s: load balancer in %v, want %v", st.name, got, st.groups)
		}
	}

	// A user's rule in our group is not ours to revoke.
	f.userRule(sg, "198.51.100.0/24")
	withUser := f.rules(sg)
	s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "010.1.0.0/16"}
	r := request(t, s, instances, nil)
	r.LoadBalancerID = lbID
	m = f.mark()
	res := f.ensure(r)
	if _, writes, by := f.callsSince(m); writes != 0 {
		t.Fatalf("invalid range: writes %v", by)
	}
	if res.Labels != nil {
		t.Fatalf("invalid range: labels %v, want none touched", res.Labels)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Reason != service.EventInvalidSourceRanges || !strings.Contains(res.Warnings[0].Message, `"010.1.0.0/16"`) {
		t.Fatalf("invalid range: warnings %+v", res.Warnings)
	}
	if got := f.rules(sg); !slices.Equal(got, withUser) {
		t.Fatalf("invalid range changed the rules: %v", got)
	}

	s.Spec.LoadBalancerSourceRanges = nil
	r = request(t, s, instances, nil)
	r.LoadBalancerID = lbID
	m = f.mark()
	if res := f.ensure(r); res.Labels[naming.LabelSecurityGroupID] != "" || len(res.Labels) != 1 {
		t.Fatalf("ranges removed: labels %v, want the security-group-id label removed", res.Labels)
	}
	if _, _, by := f.callsSince(m); !equalCounts(by, map[string]int{"LoadBalancerLeaveSecurityGroup": 1, "DeleteSecurityGroup": 1}) {
		t.Fatalf("ranges removed: writes %v", by)
	}
	if gs := f.ownGroups(s); len(gs) != 0 || len(joined()) != 0 {
		t.Fatalf("ranges removed: groups %v, load balancer in %v", gs, joined())
	}
	if got := f.rules("sg-one"); !slices.Equal(got, userRules) {
		t.Fatalf("the user's group changed: %v", got)
	}

	s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	r = request(t, s, instances, nil)
	r.LoadBalancerID = lbID
	f.ensure(r)
	sg = own()
	wantRules("ranges back", "10.0.0.0/8")
	msg, err := deleteBound(f.ctx, f.p, r)
	emulatortest.NoError(t, err)
	t.Log(msg)
	if gs := f.ownGroups(s); len(gs) != 0 || f.lbExists(lbID) {
		t.Fatalf("after Delete: groups %v, load balancer exists %t", gs, f.lbExists(lbID))
	}
	if got := f.rules("sg-one"); !slices.Equal(got, userRules) {
		t.Fatalf("the user's group changed: %v", got)
	}
}

func sortedOf(s ...string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return out
}

func equalCounts(got, want map[string]int) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// TestSourceRangesLostResponses: a response lost after ECS applied the
// call. CreateSecurityGroup (not safe to replay) fails that sync and the
// next finds the group by its tags; AuthorizeSecurityGroup (the same rule
// twice is one rule) is replayed by the cloud client within the sync.
// Either way: one group, exact rules, and a converged re-Ensure writes
// nothing.
func TestSourceRangesLostResponses(t *testing.T) {
	for _, tc := range []struct {
		action   string
		replayed bool
	}{{"CreateSecurityGroup", false}, {"AuthorizeSecurityGroup", true}} {
		action := tc.action
		t.Run(action, func(t *testing.T) {
			f := newFixture(t)
			s := svc("lost-"+strings.ToLower(action), nil)
			s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
			r := request(t, s, instances, nil)
			_, err := f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "ecs", Action: action, Drop: true, After: true, Count: 1})
			emulatortest.NoError(t, err)
			failed := false
			for i := 0; i < 20; i++ {
				res, err := ensureBound(f.ctx, f.p, r)
				if err == nil {
					r.LoadBalancerID = res.LoadBalancerID
					break
				}
				if !errors.As(err, new(*service.RetryError)) {
					failed = true
					t.Logf("sync %d: %v", i+1, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if failed == tc.replayed || r.LoadBalancerID == "" {
				t.Fatalf("lost response failed a sync: %t; converged: %t", failed, r.LoadBalancerID != "")
			}
			gs := f.ownGroups(s)
			if len(gs) != 1 {
				t.Fatalf("%d groups tagged for the Service", len(gs))
			}
			desc := nlb.SecurityGroupRuleDescription("default", s.Name, clusterID)
			if got := f.rules(gs[0].SecurityGroupId); !slices.Equal(got, []string{"accept 1 ALL -1/-1 10.0.0.0/8 " + desc, "drop 100 ALL -1/-1 0.0.0.0/0 " + desc}) {
				t.Fatalf("rules %v", got)
			}
			want := 1
			if tc.replayed {
				want = 2
			}
			if n := len(f.env.Emulator.Requests(gateway.RequestFilter{Action: action})); n != want {
				t.Fatalf("%s called %d times, want %d", action, n, want)
			}
			m := f.mark()
			f.ensure(r)
			if _, writes, by := f.callsSince(m); writes != 0 {
				t.Fatalf("converged re-Ensure wrote %v", by)
			}
		})
	}
}

// TestSourceRangesAdoptsTheExistingCCMGroup: a group as the existing CCM
// leaves it (its name, tags, type, description and rules, joined to the
// load balancer) is adopted as is: 0 writes.
func TestSourceRangesAdoptsTheExistingCCMGroup(t *testing.T) {
	f := newFixture(t)
	s := svc("adopt", nil)
	req := f.ensureNew(request(t, s, instances, nil))
	desc := nlb.SecurityGroupRuleDescription("default", "adopt", clusterID)
	e := f.env.ECS(t)
	cr := ecs.CreateCreateSecurityGroupRequest()
	cr.VpcId, cr.SecurityGroupName, cr.SecurityGroupType, cr.Description = vpcID, naming.NLBSecurityGroupName(naming.DefaultLBName(s)), "enterprise", desc
	cr.Tag = &[]ecs.CreateSecurityGroupTag{{Key: naming.TagKeyDefaultName, Value: naming.DefaultLBName(s)}, {Key: naming.TagKeyCluster, Value: clusterID}}
	created, err := e.CreateSecurityGroup(cr)
	emulatortest.NoError(t, err)
	ar := ecs.CreateAuthorizeSecurityGroupRequest()
	ar.SecurityGroupId = created.SecurityGroupId
	ar.Permissions = &[]ecs.AuthorizeSecurityGroupPermissions{
		{Policy: "accept", Priority: "1", IpProtocol: "ALL", PortRange: "-1/-1", SourceCidrIp: "10.0.0.0/8", Description: desc},
		{Policy: "drop", Priority: "100", IpProtocol: "ALL", PortRange: "-1/-1", SourceCidrIp: "0.0.0.0/0", Description: desc},
	}
	_, err = e.AuthorizeSecurityGroup(ar)
	emulatortest.NoError(t, err)
	j := sdknlbJoin(req.LoadBalancerID, created.SecurityGroupId)
	_, err = f.sdk.LoadBalancerJoinSecurityGroup(j)
	emulatortest.NoError(t, err)
	emulatortest.Eventually(t, "join job done", func() bool { return f.getLB(req.LoadBalancerID).LoadBalancerStatus == "Active" })

	s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	r := request(t, s, instances, nil)
	r.LoadBalancerID = req.LoadBalancerID
	m := f.mark()
	f.ensure(r)
	if _, writes, by := f.callsSince(m); writes != 0 {
		t.Fatalf("adopting the existing CCM's group wrote %v", by)
	}
	if gs := f.ownGroups(s); len(gs) != 1 || gs[0].SecurityGroupId != created.SecurityGroupId {
		t.Fatalf("groups %+v", gs)
	}
}

func sdknlbJoin(lbID, sg string) *sdknlb.LoadBalancerJoinSecurityGroupRequest {
	r := sdknlb.CreateLoadBalancerJoinSecurityGroupRequest()
	r.LoadBalancerId, r.SecurityGroupIds = lbID, &[]string{sg}
	return r
}
