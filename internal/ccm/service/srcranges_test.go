package service_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

// ownACLs returns the ids of the access control lists tagged for the
// Service (default-name and cluster tags), read through the SDK.
func ownACLs(t *testing.T, svc *corev1.Service) []string {
	t.Helper()
	r := slb.CreateDescribeAccessControlListsRequest()
	r.Tag = &[]slb.DescribeAccessControlListsTag{{Key: naming.TagKeyDefaultName, Value: naming.DefaultLBName(svc)}, {Key: naming.TagKeyCluster, Value: clusterID}}
	r.PageSize = requests.NewInteger(50)
	resp, err := slbClient(t).DescribeAccessControlLists(r)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range resp.Acls.Acl {
		out = append(out, a.AclId)
	}
	return out
}

// ownSecurityGroups returns the security groups tagged with the Service's
// default name, read through the SDK.
func ownSecurityGroups(t *testing.T, svc *corev1.Service) []ecs.SecurityGroup {
	t.Helper()
	r := ecs.CreateDescribeSecurityGroupsRequest()
	r.Tag = &[]ecs.DescribeSecurityGroupsTag{{Key: naming.TagKeyDefaultName, Value: naming.DefaultLBName(svc)}}
	resp, err := ecsClient(t).DescribeSecurityGroups(r)
	if err != nil {
		t.Fatal(err)
	}
	return resp.SecurityGroups.SecurityGroup
}

// aclEntries returns an access control list's entries, sorted.
func aclEntries(t *testing.T, id string) []string {
	t.Helper()
	r := slb.CreateDescribeAccessControlListAttributeRequest()
	r.AclId, r.PageSize = id, requests.NewInteger(300)
	resp, err := slbClient(t).DescribeAccessControlListAttribute(r)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range resp.AclEntrys.AclEntry {
		out = append(out, e.AclEntryIP)
	}
	sort.Strings(out)
	return out
}

// writesAbout returns the SLB and ECS writes after seq whose parameters
// name one of ids (the test's load balancer, list or group): tests run in
// parallel, so the log holds other Services' calls too.
func writesAbout(seq uint64, ids ...string) []string {
	var out []string
	for _, r := range cloud.Requests(gateway.RequestFilter{AfterSeq: seq}) {
		if !isWrite(r.Action) {
			continue
		}
		for _, v := range r.Params {
			if v != "" && slices.Contains(ids, v) {
				out = append(out, r.Action)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestCLBSourceRanges: loadBalancerSourceRanges become an access control
// list tagged for the Service, white-listed on every listener; an edit of
// the Service that changes nothing writes nothing; a changed range writes
// one add and one remove; an invalid range gives a Warning naming it and
// changes nothing; the acl-id annotation wins (Warning) and our list goes;
// removing the ranges detaches and deletes it; deleting the Service leaves
// no list and releases the finalizer. A user's list is never written.
func TestCLBSourceRanges(t *testing.T) {
	t.Parallel()
	c := slbClient(t)
	cr := slb.CreateCreateAccessControlListRequest()
	cr.AclName = "user-office"
	userACL, err := c.CreateAccessControlList(cr)
	if err != nil {
		t.Fatal(err)
	}
	er := slb.CreateAddAccessControlListEntryRequest()
	er.AclId, er.AclEntrys = userACL.AclId, `[{"entry":"198.51.100.0/24","comment":"office"}]`
	if _, err := c.AddAccessControlListEntry(er); err != nil {
		t.Fatal(err)
	}
	start := lastSeq()

	const name = "src-ranges"
	svc := newService(svcSpec{name: name, ports: []int32{80, 53}, protocols: []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP}})
	svc.Spec.LoadBalancerSourceRanges = []string{"192.168.0.1/32", "10.0.0.0/8"}
	created, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := lbID(waitIngress(t, name, 30*time.Second))

	acl := func() string {
		t.Helper()
		ids := ownACLs(t, created)
		if len(ids) != 1 {
			t.Fatalf("%d access control lists tagged for the Service, want 1", len(ids))
		}
		return ids[0]
	}
	ours := acl()
	waitACL := func(what string, status, aclID string, entries ...string) {
		t.Helper()
		poll(t, 20*time.Second, what, func(ctx context.Context) (bool, error) {
			ls := listeners(t, id)
			if len(ls) != 2 {
				return false, nil
			}
			for _, l := range ls {
				if l.AclStatus != status || l.AclId != aclID || (aclID != "" && l.AclType != "white") {
					return false, nil
				}
			}
			return aclID == "" || aclID != ours || slices.Equal(aclEntries(t, ours), entries), nil
		})
	}
	waitACL("white list of the ranges on both listeners", "on", ours, "10.0.0.0/8", "192.168.0.1/32")

	// An edit that changes nothing the load balancer uses runs a full sync
	// (the hash covers every annotation) and must write nothing.
	seq := lastSeq()
	updateService(t, name, func(s *corev1.Service) { s.Annotations = map[string]string{"example.com/note": "unrelated"} })
	waitIngress(t, name, 20*time.Second)
	if w := writesAbout(seq, id, ours); len(w) != 0 {
		t.Fatalf("a full sync with nothing to change wrote %v", w)
	}

	seq = lastSeq()
	updateService(t, name, func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "172.16.0.0/12"} })
	waitACL("one range replaced", "on", ours, "10.0.0.0/8", "172.16.0.0/12")
	waitIngress(t, name, 20*time.Second)
	if w := writesAbout(seq, id, ours); !slices.Equal(w, []string{"AddAccessControlListEntry", "RemoveAccessControlListEntry"}) {
		t.Fatalf("one range replaced wrote %v, want one add and one remove", w)
	}

	// An invalid range can reach the CCM only where the API server lets it
	// through: the legacy annotation or the spec field's older, sloppier
	// validation. Try both; a server that refuses both keeps the CCM from
	// ever seeing one (ParseSourceRanges is unit-tested for it).
	seq = lastSeq()
	bad := "010.1.0.0/16"
	accepted := false
	for _, set := range []func(*corev1.Service){
		func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", bad} },
		func(s *corev1.Service) {
			s.Spec.LoadBalancerSourceRanges = nil
			s.Annotations[service.SourceRangesAnnotation] = "10.0.0.0/8," + bad
		},
	} {
		cur := getService(t, name)
		set(cur)
		if _, err := kube(t).CoreV1().Services(ns).Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
			t.Logf("the API server refuses %s: %v", bad, err)
			continue
		}
		accepted = true
		break
	}
	if accepted {
		waitEvent(t, name, service.EventInvalidSourceRanges, `"`+bad+`"`)
		waitIngress(t, name, 20*time.Second)
		if w := writesAbout(seq, id, ours); len(w) != 0 {
			t.Fatalf("an invalid range wrote %v", w)
		}
		waitACL("invalid range: nothing lost", "on", ours, "10.0.0.0/8", "172.16.0.0/12")
	}

	updateService(t, name, func(s *corev1.Service) {
		delete(s.Annotations, service.SourceRangesAnnotation)
		s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
		s.Annotations[annotations.Key("acl-status")] = "on"
		s.Annotations[annotations.Key("acl-id")] = userACL.AclId
		s.Annotations[annotations.Key("acl-type")] = "white"
	})
	waitEvent(t, name, service.EventSourceRangesIgnored, annotations.Key("acl-id"))
	waitACL("the acl-id annotation wins", "on", userACL.AclId)
	poll(t, 20*time.Second, "our list deleted once unused", func(ctx context.Context) (bool, error) {
		return len(ownACLs(t, created)) == 0, nil
	})

	updateService(t, name, func(s *corev1.Service) {
		for _, k := range []string{"acl-status", "acl-id", "acl-type"} {
			delete(s.Annotations, annotations.Key(k))
		}
	})
	poll(t, 20*time.Second, "a new list of ours", func(ctx context.Context) (bool, error) {
		return len(ownACLs(t, created)) == 1, nil
	})
	ours = acl()
	waitACL("ranges back", "on", ours, "10.0.0.0/8")

	updateService(t, name, func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = nil })
	waitACL("ranges removed: access control off", "off", "")
	poll(t, 20*time.Second, "list deleted with the ranges", func(ctx context.Context) (bool, error) {
		return len(ownACLs(t, created)) == 0, nil
	})

	updateService(t, name, func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} })
	poll(t, 20*time.Second, "list for the last time", func(ctx context.Context) (bool, error) {
		return len(ownACLs(t, created)) == 1, nil
	})
	deleteService(t, name)
	if ids := ownACLs(t, created); len(ids) != 0 {
		t.Fatalf("lists left after the Service was deleted: %v", ids)
	}
	if got := aclEntries(t, userACL.AclId); !slices.Equal(got, []string{"198.51.100.0/24"}) {
		t.Fatalf("the user's list changed: %v", got)
	}
	for _, r := range cloud.Requests(gateway.RequestFilter{Product: "slb", AfterSeq: start}) {
		if r.Params["AclId"] == userACL.AclId && strings.Contains(r.Action, "AccessControlList") && isWrite(r.Action) {
			t.Fatalf("the CCM wrote to the user's list: %s", r.Action)
		}
	}
}

// TestNLBSourceRangesThroughTheController: an NLB Service with source
// ranges gets the k8s-nlb-<name> security group (tagged for it, its rules
// the ranges plus a drop of the rest), joined to its load balancer and
// named in the security-group-id label; removing the ranges deletes the
// group and the label; deleting the Service deletes the load balancer and
// the group.
func TestNLBSourceRangesThroughTheController(t *testing.T) {
	t.Parallel()
	zoneMaps := ccmtest.ZoneMaps(ccmtest.SeedDoc(ccmtest.SeedSpec{}))
	const name = "nlb-src-ranges"
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{
		annotations.Key("zone-maps"): strings.Join(zoneMaps, ","),
	}})
	svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	created, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := waitIngress(t, name, 60*time.Second)
	id := lbID(got)
	groups := func() []ecs.SecurityGroup { return ownSecurityGroups(t, created) }
	gs := groups()
	if len(gs) != 1 || gs[0].SecurityGroupName != naming.NLBSecurityGroupName(naming.DefaultLBName(created)) {
		t.Fatalf("security groups tagged for the Service: %+v", gs)
	}
	sg := gs[0].SecurityGroupId
	if l := got.Labels[naming.LabelSecurityGroupID]; l != sg {
		t.Fatalf("label %s=%q, want %s", naming.LabelSecurityGroupID, l, sg)
	}
	ar := ecs.CreateDescribeSecurityGroupAttributeRequest()
	ar.SecurityGroupId = sg
	attr, err := ecsClient(t).DescribeSecurityGroupAttribute(ar)
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, p := range attr.Permissions.Permission {
		rules = append(rules, strings.ToLower(p.Policy)+" "+p.Priority+" "+p.SourceCidrIp)
	}
	sort.Strings(rules)
	if !slices.Equal(rules, []string{"accept 1 10.0.0.0/8", "drop 100 0.0.0.0/0"}) {
		t.Fatalf("rules %v", rules)
	}
	lr := nlb.CreateGetLoadBalancerAttributeRequest()
	lr.LoadBalancerId = id
	lb, err := nlbClient(t).GetLoadBalancerAttribute(lr)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lb.SecurityGroupIds, []string{sg}) {
		t.Fatalf("load balancer in %v, want %s", lb.SecurityGroupIds, sg)
	}
	updateService(t, name, func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = nil })
	poll(t, 30*time.Second, "ranges removed: group deleted, label removed", func(ctx context.Context) (bool, error) {
		s := getService(t, name)
		_, labelled := s.Labels[naming.LabelSecurityGroupID]
		return !labelled && len(groups()) == 0, nil
	})
	updateService(t, name, func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} })
	poll(t, 30*time.Second, "ranges back: a group again", func(ctx context.Context) (bool, error) {
		return len(groups()) == 1, nil
	})
	deleteService(t, name)
	if gs := groups(); len(gs) != 0 {
		t.Fatalf("security groups left after the Service was deleted: %+v", gs)
	}
}

// TestSourceRangesRemovedThenDeleted: the ranges are removed and the
// delete of the access control list or security group they had fails on
// a transient error. The list or group must still go: by the Service's
// next syncs while it lives on (the sync fails and the next one looks the
// list up although nothing uses it any more), and, when the Service is
// deleted before any sync succeeded, by its tags at deletion rather than
// by the ranges the deleted Service no longer has (found by the soak: a
// CLB Service's list outlived it).
func TestSourceRangesRemovedThenDeleted(t *testing.T) {
	t.Parallel()
	zoneMaps := strings.Join(ccmtest.ZoneMaps(ccmtest.SeedDoc(ccmtest.SeedSpec{})), ",")
	for _, tc := range []rangesRemoved{
		{"removed-ranges-clb", false, "slb", "DeleteAccessControlList", "AclId", true},
		{"removed-ranges-nlb", true, "ecs", "DeleteSecurityGroup", "SecurityGroupId", true},
		{"removed-ranges-clb-lives", false, "slb", "DeleteAccessControlList", "AclId", false},
		{"removed-ranges-nlb-lives", true, "ecs", "DeleteSecurityGroup", "SecurityGroupId", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, zoneMaps)
		})
	}
}

// rangesRemoved is one case of TestSourceRangesRemovedThenDeleted: the
// Service's kind, the delete that fails (product, action and the
// parameter naming the list or group), and whether the Service is
// deleted while it fails.
type rangesRemoved struct {
	name                   string
	nlb                    bool
	product, action, param string
	deleted                bool
}

func (tc rangesRemoved) run(t *testing.T, zoneMaps string) {
	svc := newService(svcSpec{name: tc.name, ports: []int32{80}})
	if tc.nlb {
		svc.Annotations = map[string]string{annotations.Key("zone-maps"): zoneMaps}
		svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	}
	svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	created, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitIngress(t, tc.name, 60*time.Second)
	owned := func() []string {
		if !tc.nlb {
			return ownACLs(t, created)
		}
		var out []string
		for _, g := range ownSecurityGroups(t, created) {
			out = append(out, g.SecurityGroupId)
		}
		return out
	}
	ids := owned()
	if len(ids) != 1 {
		t.Fatalf("%d lists or groups tagged for the Service, want 1", len(ids))
	}
	rule, err := cloud.Gateway.AddFault(gateway.FaultRule{Product: tc.product, Action: tc.action, Params: map[string]string{tc.param: ids[0]},
		Error: &gateway.FaultError{Code: "ServiceUnavailable"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cloud.Gateway.RemoveFault(rule.ID)
	faulted := func(since uint64) bool {
		for _, r := range cloud.Requests(gateway.RequestFilter{Action: tc.action, AfterSeq: since}) {
			if r.Fault == rule.ID {
				return true
			}
		}
		return false
	}
	seq := lastSeq()
	updateService(t, tc.name, func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = nil })
	poll(t, 30*time.Second, "the delete of "+ids[0]+" failing after the ranges were removed", func(ctx context.Context) (bool, error) {
		return faulted(seq), nil
	})
	// Let that sync end, past the client's retries of the delete:
	// CLB keeps a list it cannot delete and completes the sync
	// (hash label current), NLB fails it and retries later.
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		s := getService(t, tc.name)
		return s.Labels[naming.LabelHash] == naming.Hash(s), nil
	})
	if !tc.deleted {
		cloud.Gateway.RemoveFault(rule.ID)
		poll(t, 30*time.Second, ids[0]+" deleted by a later sync of the Service", func(ctx context.Context) (bool, error) {
			return len(owned()) == 0, nil
		})
		deleteService(t, tc.name)
		return
	}
	seq = lastSeq()
	if err := kube(t).CoreV1().Services(ns).Delete(context.Background(), tc.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The deletion tries the delete too (and fails on the fault),
	// or, as before the fix, releases the Service without it.
	poll(t, 30*time.Second, "the deletion trying "+ids[0]+" or the Service gone", func(ctx context.Context) (bool, error) {
		_, err := kube(t).CoreV1().Services(ns).Get(ctx, tc.name, metav1.GetOptions{})
		return faulted(seq) || apierrors.IsNotFound(err), nil
	})
	cloud.Gateway.RemoveFault(rule.ID)
	deleteService(t, tc.name)
	if left := owned(); len(left) != 0 {
		t.Fatalf("left after the Service was deleted: %v", left)
	}
}
