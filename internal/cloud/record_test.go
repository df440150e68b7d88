package cloud_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestRecorderKeepsWritesFromTheCloud: through a Recorder, reads reach the
// cloud and writes do not: each is recorded with its parameters (query
// or form body, envelope left out) and answered as a success, a create
// with a placeholder id that a later write carries; a read naming a
// placeholder is answered empty without asking the cloud, and an NLB
// made in the pass reads as Active.
func TestRecorderKeepsWritesFromTheCloud(t *testing.T) {
	env := emulatortest.Start(t)
	rec := cloud.NewRecorder(http.DefaultTransport)
	c := newClient(t, env, cloud.Options{Transport: rec})
	ctx := context.Background()

	if _, err := cloud.Do(ctx, c, cloud.SLB, "DescribeLoadBalancers", func(cl *cloud.Clients) (*slb.DescribeLoadBalancersResponse, error) {
		return cl.SLB.DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
	}); err != nil {
		t.Fatal(err)
	}
	cr := slb.CreateCreateLoadBalancerRequest()
	cr.LoadBalancerName, cr.ClientToken = "web", "token-1"
	created, err := cloud.Do(ctx, c, cloud.SLB, "CreateLoadBalancer", func(cl *cloud.Clients) (*slb.CreateLoadBalancerResponse, error) {
		return cl.SLB.CreateLoadBalancer(cr)
	})
	if err != nil {
		t.Fatal(err)
	}
	if created.LoadBalancerId != "<new LoadBalancer>" {
		t.Errorf("created id %q", created.LoadBalancerId)
	}
	gr := slb.CreateDescribeVServerGroupsRequest()
	gr.LoadBalancerId = created.LoadBalancerId
	groups, err := cloud.Do(ctx, c, cloud.SLB, "DescribeVServerGroups", func(cl *cloud.Clients) (*slb.DescribeVServerGroupsResponse, error) {
		return cl.SLB.DescribeVServerGroups(gr)
	})
	if err != nil || len(groups.VServerGroups.VServerGroup) != 0 {
		t.Errorf("groups of the load balancer to be made: %v, %v", groups, err)
	}
	lr := nlb.CreateCreateListenerRequest()
	lr.LoadBalancerId, lr.ListenerProtocol, lr.ServerGroupId = "nlb-1", "TCP", "sgp-1"
	listener, err := cloud.Do(ctx, c, cloud.NLB, "CreateListener", func(cl *cloud.Clients) (*nlb.CreateListenerResponse, error) {
		return cl.NLB.CreateListener(lr)
	})
	if err != nil || listener.ListenerId != "<new Listener>" || listener.JobId == "" {
		t.Errorf("NLB listener: %+v, %v", listener, err)
	}
	nlbCreated, err := cloud.Do(ctx, c, cloud.NLB, "CreateLoadBalancer", func(cl *cloud.Clients) (*nlb.CreateLoadBalancerResponse, error) {
		return cl.NLB.CreateLoadBalancer(nlb.CreateCreateLoadBalancerRequest())
	})
	if err != nil || nlbCreated.LoadbalancerId != "<new LoadBalancer#2>" {
		t.Errorf("NLB create: %+v, %v", nlbCreated, err)
	}
	ar := nlb.CreateGetLoadBalancerAttributeRequest()
	ar.LoadBalancerId = "<new LoadBalancer#2>"
	attr, err := cloud.Do(ctx, c, cloud.NLB, "GetLoadBalancerAttribute", func(cl *cloud.Clients) (*nlb.GetLoadBalancerAttributeResponse, error) {
		return cl.NLB.GetLoadBalancerAttribute(ar)
	})
	if err != nil || attr.LoadBalancerStatus != "Active" || attr.LoadBalancerId != ar.LoadBalancerId {
		t.Errorf("NLB to be made: %+v, %v", attr, err)
	}

	var sent []string
	for _, r := range env.Emulator.Requests(gateway.RequestFilter{}) {
		sent = append(sent, r.Action)
	}
	if len(sent) != 1 || sent[0] != "DescribeLoadBalancers" {
		t.Errorf("sent to the cloud: %v; want the one read", sent)
	}
	ws := rec.Take()
	if len(ws) != 3 || ws[0].Action != "CreateLoadBalancer" || ws[1].Action != "CreateListener" || ws[2].Product != cloud.NLB {
		t.Fatalf("recorded %+v", ws)
	}
	if p := ws[0].Params; p["LoadBalancerName"] != "web" || p["ClientToken"] != "" || p["Signature"] != "" || p["AccessKeyId"] != "" || ws[0].Product != cloud.SLB {
		t.Errorf("CreateLoadBalancer recorded as %+v", ws[0])
	}
	if p := ws[1].Params; p["ServerGroupId"] != "sgp-1" || p["ListenerProtocol"] != "TCP" || ws[1].Product != cloud.NLB || ws[1].Created != "<new Listener>" {
		t.Errorf("CreateListener (form body) recorded as %+v", ws[1])
	}
	if again := rec.Take(); len(again) != 0 {
		t.Errorf("Take did not forget: %+v", again)
	}
}
