package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestNLBOfAnotherVPCRefusedOnce: a Service borrowing an NLB of another
// VPC with Instance server groups gets one Warning ReuseLoadBalancerRefused
// naming both VPCs, as a CLB of another VPC does, and the controller does
// not retry it: no SyncLoadBalancerFailed, no call naming the NLB in the
// seconds after (it was a failed sync retried with backoff, two NLB reads
// each time, in the sandbox).
func TestNLBOfAnotherVPCRefusedOnce(t *testing.T) {
	t.Parallel()
	if _, err := cloud.Seed(&api.Seed{VPCs: []api.SeedVPC{{ID: "vpc-refused-other", CIDRBlock: "172.16.0.0/16", VSwitches: []api.SeedVSwitch{
		{ID: "vsw-refused-h", ZoneID: "cn-hangzhou-h", CIDRBlock: "172.16.1.0/24"},
		{ID: "vsw-refused-i", ZoneID: "cn-hangzhou-i", CIDRBlock: "172.16.2.0/24"},
	}}}}); err != nil {
		t.Fatal(err)
	}
	r := nlb.CreateCreateLoadBalancerRequest()
	r.AddressType, r.VpcId, r.LoadBalancerName = "Intranet", "vpc-refused-other", "other-team"
	r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: "cn-hangzhou-h", VSwitchId: "vsw-refused-h"}, {ZoneId: "cn-hangzhou-i", VSwitchId: "vsw-refused-i"}}
	resp, err := nlbClient(t).CreateLoadBalancer(r)
	if err != nil {
		t.Fatal(err)
	}
	lbID := resp.LoadbalancerId
	defer func() {
		d := nlb.CreateDeleteLoadBalancerRequest()
		d.LoadBalancerId = lbID
		if _, err := nlbClient(t).DeleteLoadBalancer(d); err != nil {
			t.Errorf("delete the other VPC's NLB: %v", err)
		}
	}()
	poll(t, 30*time.Second, "NLB "+lbID+" Active", func(ctx context.Context) (bool, error) {
		g := nlb.CreateGetLoadBalancerAttributeRequest()
		g.LoadBalancerId = lbID
		a, err := nlbClient(t).GetLoadBalancerAttribute(g)
		return err == nil && a.LoadBalancerStatus == "Active", err
	})

	const name = "nlb-other-vpc"
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.Key("id"): lbID}})
	svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	if _, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer deleteService(t, name)
	e := waitEvent(t, name, service.EventReuseRefused, "vpc-refused-other")
	if !strings.Contains(e.Message, "server-group-type") {
		t.Errorf("the refusal does not say how to borrow it: %s", e.Message)
	}
	mark := lastSeq()
	time.Sleep(6 * time.Second) // a backoff retry would come after 1, 2 and 4 s
	var retried []string
	for _, rec := range cloud.Requests(gateway.RequestFilter{Product: "nlb", AfterSeq: mark}) {
		for _, v := range rec.Params {
			if v == lbID {
				retried = append(retried, rec.Action)
				break
			}
		}
	}
	if len(retried) > 0 {
		t.Errorf("the refused Service was retried: %v", retried)
	}
	for _, ev := range events(t, name) {
		if ev.Reason == service.EventSyncFailed {
			t.Errorf("a refusal reported as a failed sync: %s", ev.Message)
		}
		if ev.Reason == service.EventReuseRefused && ev.Count > 1 {
			t.Errorf("the refusal was recorded %d times", ev.Count)
		}
	}
}

// clusterVPC is the VPC of the suite's Nodes, the cluster's: tests such as
// this one seed other VPCs in the shared cloud.
func clusterVPC(t *testing.T) string {
	t.Helper()
	in, err := emulatortest.For(cloud, accessKeyID, accessKeySecret).Instance(instances[nodeNames[0]])
	if err != nil {
		t.Fatal(err)
	}
	return in.VpcAttributes.VpcId
}
