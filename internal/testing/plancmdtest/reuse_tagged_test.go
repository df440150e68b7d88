package plancmdtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/plan"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestPlanListsWhatTaggedWouldRefuse: a cluster running
// loadBalancerReuse: any has a Service borrowing a CLB nobody granted, one
// borrowing a granted CLB and binding a user-made group nobody granted,
// one borrowing a granted CLB, and one of its own. The plan (making no
// cloud write) lists the first two as refused under tagged, with the
// reason, in JSON and in the table, and not the others.
func TestPlanListsWhatTaggedWouldRefuse(t *testing.T) {
	ctx := context.Background()
	cs, err := cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	const space = "plan-grants"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	c := emulatortest.For(cloud, accessKeyID, accessKeySecret).SLB(t)
	userLB := func(name string, tags map[string]string) string {
		r := slb.CreateCreateLoadBalancerRequest()
		r.LoadBalancerName, r.LoadBalancerSpec = name, "slb.s1.small"
		var ts []slb.CreateLoadBalancerTag
		for k, v := range tags {
			ts = append(ts, slb.CreateLoadBalancerTag{Key: k, Value: v})
		}
		r.Tag = &ts
		lb, err := c.CreateLoadBalancer(r)
		if err != nil {
			t.Fatal(err)
		}
		return lb.LoadBalancerId
	}
	ungranted := userLB("ungranted", nil)
	granted := userLB("granted", map[string]string{service.TagReusable: "other," + space})
	gr := slb.CreateCreateVServerGroupRequest()
	gr.LoadBalancerId, gr.VServerGroupName = granted, "users-group"
	g, err := c.CreateVServerGroup(gr)
	if err != nil {
		t.Fatal(err)
	}
	svcs := map[string]map[string]string{
		"borrow":     {annotations.Key("id"): ungranted},
		"bind-group": {annotations.Key("id"): granted, annotations.Key("vgroup-port"): g.VServerGroupId + ":80"},
		"granted":    {annotations.Key("id"): granted},
		"own":        nil,
	}
	ccm := startCCM(t, "ccm-grants")
	for name, ann := range svcs {
		svc := lbService(name, nil, ann)
		svc.Namespace = space
		if _, err := cs.CoreV1().Services(space).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name := range svcs {
		until(t, ccm, 90*time.Second, "Service "+name+" synced", func(ctx context.Context) (bool, error) {
			s, err := cs.CoreV1().Services(space).Get(ctx, name, metav1.GetOptions{})
			return err == nil && len(s.Status.LoadBalancer.Ingress) > 0, nil
		})
	}
	quiet(t, 3*time.Second)
	ccm.Stop()

	r, _ := planReadOnly(t, "plan-stricter")
	if r.StricterPolicy != service.ReuseTagged {
		t.Fatalf("stricterPolicy %q, want %s", r.StricterPolicy, service.ReuseTagged)
	}
	got := map[string]string{}
	for _, x := range r.WouldRefuse {
		got[x.Service] = x.Reason
	}
	want := map[string][]string{
		space + "/borrow":     {ungranted, "not granted to namespace " + space, service.TagReusable + "=" + space},
		space + "/bind-group": {g.VServerGroupId, "not granted to namespace " + space},
	}
	if len(got) != len(want) {
		t.Errorf("would refuse %v, want exactly %v", got, want)
	}
	for svc, parts := range want {
		for _, p := range parts {
			if !strings.Contains(got[svc], p) {
				t.Errorf("%s: reason %q lacks %q", svc, got[svc], p)
			}
		}
	}
	var table strings.Builder
	if err := plan.Render(&table, r, plan.FormatTable); err != nil {
		t.Fatal(err)
	}
	line := "would be refused under loadBalancerReuse: tagged: " + space + "/borrow: load balancer " + ungranted
	if !strings.Contains(table.String(), line) {
		t.Errorf("the table lacks %q:\n%s", line, table.String())
	}
	for _, it := range r.Items {
		if strings.HasPrefix(it.Name, space+"/") && len(it.Cloud) > 0 {
			t.Errorf("%s: cloud writes planned under the running mode (any): %+v", it.Name, it.Cloud)
		}
	}

	ccm = startCCM(t, "ccm-grants-cleanup")
	for name := range svcs {
		if err := cs.CoreV1().Services(space).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name := range svcs {
		until(t, ccm, 60*time.Second, "Service "+name+" deleted", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Services(space).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	ccm.Stop()
}
