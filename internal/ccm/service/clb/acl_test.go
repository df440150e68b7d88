package clb_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

const aclClusterID = "c-acl"

// aclFixture is an emulator with a VPC and two instances, and the CLB
// provider pointed at it through the cloud client and the SDK.
type aclFixture struct {
	t   *testing.T
	env *emulatortest.Env
	sdk *slb.Client
	p   *clb.Provider
}

func newACLFixture(t *testing.T) *aclFixture {
	t.Helper()
	env := emulatortest.Start(t)
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{{ID: "vpc-acl", CIDRBlock: "192.168.0.0/16", VSwitches: []api.SeedVSwitch{
			{ID: "vsw-acl", ZoneID: "cn-hangzhou-h", CIDRBlock: "192.168.1.0/24"},
		}}},
		SecurityGroups: []api.SeedSecurityGroup{{ID: "sg-acl", VpcID: "vpc-acl"}},
		Instances:      []api.SeedInstance{{ID: "i-acl1", VSwitchID: "vsw-acl"}, {ID: "i-acl2", VSwitchID: "vsw-acl"}},
	})
	c, err := cloud.New(cloud.Options{
		Region:      env.Region,
		Credentials: cloud.StaticProvider{Creds: cloud.NewCredentials(emulatortest.AccessKeyID, emulatortest.AccessKeySecret, "", time.Time{})},
		Endpoints:   cloud.Endpoints{ECS: env.Endpoint, VPC: env.Endpoint, SLB: env.Endpoint, NLB: env.Endpoint, Scheme: "HTTP"},
		BaseBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, QPS: 1000, Burst: 1000,
	})
	emulatortest.NoError(t, err)
	p, err := clb.New(clb.Options{Cloud: c, VpcID: "vpc-acl"})
	emulatortest.NoError(t, err)
	return &aclFixture{t: t, env: env, sdk: env.SLB(t), p: p}
}

func aclService(name string, ranges ...string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("5d1c9a2e-" + name + "-4b1f-8c3d-2e4f6a8b0c1d"), Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeLoadBalancer,
			LoadBalancerSourceRanges: ranges,
			Ports:                    []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// ensure runs Ensure as the controller would for a Service, with the label
// hint of the last run; it returns the result or the error.
func (f *aclFixture) ensure(s *corev1.Service, lbID string) (*service.Result, error) {
	f.t.Helper()
	settings, err := annotations.Parse(s, annotations.Defaults{Owner: annotations.OwnerCLB})
	emulatortest.NoError(f.t, err)
	b := map[int32][]service.Target{}
	for _, id := range []string{"i-acl1", "i-acl2"} {
		b[80] = append(b[80], service.Target{NodeName: id, InstanceID: id, Port: 30080, Weight: 100})
	}
	return ensureBound(context.Background(), f.p, &service.Request{Service: s, Settings: settings, Backends: b, ClusterID: aclClusterID, Identity: service.IdentityOf(s, aclClusterID), LoadBalancerID: lbID})
}

func (f *aclFixture) ownACLs(s *corev1.Service) []string {
	f.t.Helper()
	r := slb.CreateDescribeAccessControlListsRequest()
	r.Tag = &[]slb.DescribeAccessControlListsTag{{Key: naming.TagKeyDefaultName, Value: naming.DefaultLBName(s)}}
	r.PageSize = requests.NewInteger(50)
	resp, err := f.sdk.DescribeAccessControlLists(r)
	emulatortest.NoError(f.t, err)
	var out []string
	for _, a := range resp.Acls.Acl {
		out = append(out, a.AclId)
	}
	return out
}

func (f *aclFixture) entries(id string) []string {
	f.t.Helper()
	r := slb.CreateDescribeAccessControlListAttributeRequest()
	r.AclId = id
	resp, err := f.sdk.DescribeAccessControlListAttribute(r)
	emulatortest.NoError(f.t, err)
	var out []string
	for _, e := range resp.AclEntrys.AclEntry {
		out = append(out, e.AclEntryIP)
	}
	sort.Strings(out)
	return out
}

func (f *aclFixture) mark() uint64 {
	all := f.env.Emulator.Requests()
	return all[len(all)-1].Seq
}

func (f *aclFixture) writesSince(seq uint64) []string {
	var out []string
	for _, r := range f.env.Emulator.Requests(gateway.RequestFilter{AfterSeq: seq}) {
		if !api.IsReadOnlyAction(r.Action) {
			out = append(out, r.Action)
		}
	}
	sort.Strings(out)
	return out
}

// TestSourceRangesInvalidKeepsTheList: an element that is not a CIDR block
// (only older API servers let one through) gives a Warning naming it and
// no write at all: the list keeps its entries and stays attached.
func TestSourceRangesInvalidKeepsTheList(t *testing.T) {
	f := newACLFixture(t)
	s := aclService("frozen", "10.0.0.0/8")
	res, err := f.ensure(s, "")
	emulatortest.NoError(t, err)
	lbID := res.LoadBalancerID
	acls := f.ownACLs(s)
	if len(acls) != 1 || !slices.Equal(f.entries(acls[0]), []string{"10.0.0.0/8"}) {
		t.Fatalf("lists %v", acls)
	}
	for _, ranges := range [][]string{{"10.0.0.0/8", "010.1.0.0/16"}, {"office"}} {
		s.Spec.LoadBalancerSourceRanges = ranges
		m := f.mark()
		res, err := f.ensure(s, lbID)
		emulatortest.NoError(t, err)
		if w := f.writesSince(m); len(w) != 0 {
			t.Fatalf("%v: writes %v", ranges, w)
		}
		bad := ranges[len(ranges)-1]
		if len(res.Warnings) != 1 || res.Warnings[0].Reason != service.EventInvalidSourceRanges || !strings.Contains(res.Warnings[0].Message, `"`+bad+`"`) {
			t.Fatalf("%v: warnings %+v", ranges, res.Warnings)
		}
		if !slices.Equal(f.entries(acls[0]), []string{"10.0.0.0/8"}) {
			t.Fatalf("%v: entries %v", ranges, f.entries(acls[0]))
		}
	}
}

// TestSourceRangesLostResponses: a create or an add whose response is lost
// after the cloud applied it (emulator fault drop, after) fails that sync;
// the next one finds the list by its tags and the entries already there,
// so there is exactly one list with exactly the ranges and no duplicate
// call.
func TestSourceRangesLostResponses(t *testing.T) {
	for _, action := range []string{"CreateAccessControlList", "AddAccessControlListEntry"} {
		t.Run(action, func(t *testing.T) {
			f := newACLFixture(t)
			_, err := f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: action, Drop: true, After: true, Count: 1})
			emulatortest.NoError(t, err)
			s := aclService("lost", "10.0.0.0/8", "172.16.0.0/12")
			if _, err := f.ensure(s, ""); err == nil {
				t.Fatal("the lost response did not fail the sync")
			} else {
				t.Logf("first sync: %v", err)
			}
			lbID := f.lbTagged(s)
			res, err := f.ensure(s, lbID)
			emulatortest.NoError(t, err)
			if res.LoadBalancerID != lbID || lbID == "" {
				t.Fatalf("load balancer %s, tagged %s", res.LoadBalancerID, lbID)
			}
			acls := f.ownACLs(s)
			if len(acls) != 1 || !slices.Equal(f.entries(acls[0]), []string{"10.0.0.0/8", "172.16.0.0/12"}) {
				t.Fatalf("lists %v", acls)
			}
			if n := len(f.env.Emulator.Requests(gateway.RequestFilter{Action: action})); n != 1 {
				t.Fatalf("%s called %d times", action, n)
			}
			m := f.mark()
			if _, err := f.ensure(s, lbID); err != nil {
				t.Fatal(err)
			}
			if w := f.writesSince(m); len(w) != 0 {
				t.Fatalf("converged re-Ensure wrote %v", w)
			}
		})
	}
}

// lbTagged returns the load balancer tagged for the Service, if any.
func (f *aclFixture) lbTagged(s *corev1.Service) string {
	r := slb.CreateDescribeLoadBalancersRequest()
	r.Tags = `[{"TagKey":"` + naming.TagKeyDefaultName + `","TagValue":"` + naming.DefaultLBName(s) + `"}]`
	resp, err := f.sdk.DescribeLoadBalancers(r)
	emulatortest.NoError(f.t, err)
	if len(resp.LoadBalancers.LoadBalancer) == 0 {
		return ""
	}
	return resp.LoadBalancers.LoadBalancer[0].LoadBalancerId
}
