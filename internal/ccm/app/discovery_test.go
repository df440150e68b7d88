package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/clusterid"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	ccmcloud "github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// existingCLB creates, through the SLB SDK, a CLB as the existing CCM
// leaves one: tagged with the cluster id (none when empty) and a TCP:80
// listener described desc. It returns the load balancer id.
func existingCLB(t *testing.T, cluster, desc string) string {
	t.Helper()
	c := emulatortest.For(cloud, accessKeyID, accessKeySecret).SLB(t)
	cr := slb.CreateCreateLoadBalancerRequest()
	cr.AddressType, cr.LoadBalancerSpec = "internet", "slb.s1.small"
	tags := []slb.CreateLoadBalancerTag{{Key: naming.TagKeyDefaultName, Value: "a" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "")}}
	if cluster != "" {
		tags = append(tags, slb.CreateLoadBalancerTag{Key: naming.TagKeyCluster, Value: cluster})
	}
	cr.Tag = &tags
	lb, err := c.CreateLoadBalancer(cr)
	if err != nil {
		t.Fatal(err)
	}
	lr := slb.CreateCreateLoadBalancerTCPListenerRequest()
	lr.LoadBalancerId, lr.ListenerPort, lr.BackendServerPort = lb.LoadBalancerId, requests.NewInteger(80), requests.NewInteger(30080)
	lr.Bandwidth, lr.Description = requests.NewInteger(-1), desc
	if _, err := c.CreateLoadBalancerTCPListener(lr); err != nil {
		t.Fatal(err)
	}
	return lb.LoadBalancerId
}

// existingNLB creates, through the NLB SDK, an NLB as the existing CCM
// leaves one: tagged with the cluster id and a TCP:80 listener described
// desc. It returns the load balancer id.
func existingNLB(t *testing.T, cluster, desc string) string {
	t.Helper()
	c := emulatortest.For(cloud, accessKeyID, accessKeySecret).NLB(t)
	r := nlb.CreateCreateLoadBalancerRequest()
	r.AddressType, r.VpcId = "Intranet", vpcID
	r.ZoneMappings = &[]nlb.CreateLoadBalancerZoneMappings{{ZoneId: "cn-hangzhou-h", VSwitchId: vswitch[0]}, {ZoneId: "cn-hangzhou-i", VSwitchId: vswitch[1]}}
	lb, err := c.CreateLoadBalancer(r)
	if err != nil {
		t.Fatal(err)
	}
	tag := nlb.CreateTagResourcesRequest()
	tag.ResourceType, tag.ResourceId, tag.Tag = "loadbalancer", &[]string{lb.LoadbalancerId}, &[]nlb.TagResourcesTag{{Key: naming.TagKeyCluster, Value: cluster}}
	if _, err := c.TagResources(tag); err != nil {
		t.Fatal(err)
	}
	g := nlb.CreateCreateServerGroupRequest()
	g.ServerGroupName, g.VpcId, g.Protocol = "k8s.30080.TCP.web.ns."+cluster, vpcID, "TCP"
	gr, err := c.CreateServerGroup(g)
	if err != nil {
		t.Fatal(err)
	}
	// The load balancer provisions first: the listener waits for it.
	poll(t, 30*time.Second, "NLB listener "+desc, func(context.Context) (bool, error) {
		l := nlb.CreateCreateListenerRequest()
		l.LoadBalancerId, l.ListenerProtocol, l.ServerGroupId = lb.LoadbalancerId, "TCP", gr.ServerGroupId
		l.ListenerPort, l.ListenerDescription = requests.NewInteger(80), desc
		_, err := c.CreateListener(l)
		return err == nil, err
	})
	return lb.LoadbalancerId
}

// boundService creates a ClusterIP Service labelled with the load
// balancer id, as a Service the existing CCM served keeps it (ClusterIP so
// that the suite's CCM leaves it alone); it is deleted when the test ends.
func boundService(t *testing.T, ns, name, lbID string) {
	t.Helper()
	cs := kube(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{naming.LabelLoadBalancerID: lbID}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func discoveryClient(t *testing.T) *ccmcloud.Client {
	t.Helper()
	c, err := ccmcloud.New(ccmcloud.Options{
		Region:      cloud.Region(),
		Endpoints:   ccmcloud.Endpoints{ECS: cloud.Addr(), VPC: cloud.Addr(), SLB: cloud.Addr(), NLB: cloud.Addr(), Scheme: "HTTP"},
		Credentials: ccmcloud.StaticProvider{Creds: ccmcloud.NewCredentials(accessKeyID, accessKeySecret, "", time.Time{})},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClusterIDDiscovery: the cluster id is found from the tags and
// listener descriptions of the load balancers the cluster's Services are
// bound to, only when they agree on one; a listener naming a Service not
// bound to its load balancer is no evidence; the calls are bounded.
func TestClusterIDDiscovery(t *testing.T) {
	const maxCalls = 2*2 + 2 + 1 + 2
	empty := emptyVPC(t)
	for _, tc := range []struct {
		name     string
		seed     func(t *testing.T)
		want     string
		explains []string
	}{
		{"none", func(t *testing.T) {
			// An untagged LB whose listener names another Service.
			boundService(t, "disc-none", "web", existingCLB(t, "", "k8s/80/other/disc-none/c-other"))
		}, "", []string{"discovery found no cluster id in 1 Services labelled", "1 CLBs and their 1 listeners", "route entries"}},
		{"unambiguous", func(t *testing.T) {
			boundService(t, "disc-one", "web", existingCLB(t, "c-legacy1", "k8s/80/web/disc-one/c-legacy1"))
			// Listener evidence alone (an LB reused by id, not tagged).
			boundService(t, "disc-one", "api", existingCLB(t, "", "k8s/80/api/disc-one/c-legacy1"))
		}, "c-legacy1", nil},
		{"ambiguous", func(t *testing.T) {
			boundService(t, "disc-two", "web", existingCLB(t, "c-first", "k8s/80/web/disc-two/c-first"))
			boundService(t, "disc-two", "api", existingCLB(t, "c-second", ""))
		}, "", []string{"discovery found several cluster ids", `"c-first" (description "k8s/80/web/disc-two/c-first" of a listener of CLB lb-`, `"c-second" (tag ack.aliyun.com of CLB lb-`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.seed(t)
			before := cloud.Calls("slb", "DescribeLoadBalancers")
			res := clusterid.Discover(context.Background(), clusterid.Input{Cloud: discoveryClient(t), Kube: kube(t), VpcID: empty})
			if res.ID != tc.want {
				t.Fatalf("id %q, want %q; %s; findings %v", res.ID, tc.want, res.Explain(), res.Findings)
			}
			if res.Calls > maxCalls || cloud.Calls("slb", "DescribeLoadBalancers")-before != 1 {
				t.Errorf("%d cloud calls (%d DescribeLoadBalancers), want at most %d and one listing", res.Calls, cloud.Calls("slb", "DescribeLoadBalancers")-before, maxCalls)
			}
			for _, w := range tc.explains {
				if !strings.Contains(res.Explain(), w) {
					t.Errorf("the explanation lacks %q:\n%s", w, res.Explain())
				}
			}
			t.Logf("%s: %d calls; %s; findings %v", tc.name, res.Calls, strings.Join(res.Tried, "; "), res.Findings)
		})
	}
	t.Run("NLB tag and listener", func(t *testing.T) {
		boundService(t, "disc-nlb", "web", existingNLB(t, "c-nlb", "k8s.80.TCP.web.disc-nlb.c-nlb"))
		res := clusterid.Discover(context.Background(), clusterid.Input{Cloud: discoveryClient(t), Kube: kube(t), VpcID: empty})
		if res.ID != "c-nlb" || len(res.Findings) != 2 {
			t.Fatalf("id %q from %v, want c-nlb from the NLB's tag and listener; %s", res.ID, res.Findings, res.Explain())
		}
	})
	t.Run("route entries of the cluster's Nodes", func(t *testing.T) {
		ids, err := cloud.Seed(&api.Seed{
			VPCs: []api.SeedVPC{{Name: "disc-routes", CIDRBlock: "172.17.0.0/16", RouteTableID: "vtb-discroutes",
				VSwitches: []api.SeedVSwitch{{ID: "vsw-discroutes", ZoneID: "cn-hangzhou-h", CIDRBlock: "172.17.0.0/24"}}}},
			Instances: []api.SeedInstance{{Name: "disc-routes", VSwitchID: "vsw-discroutes"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		node := nodeName("disc-routes")
		if _, err := kube(t).CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube(t).CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
		for i, desc := range []string{"k8s/c-routes/" + node, "k8s/c-gone/no-such-node", "user route"} {
			req := vpc.CreateCreateRouteEntryRequest()
			req.RouteTableId, req.DestinationCidrBlock = "vtb-discroutes", fmt.Sprintf("10.%d.0.0/24", 100+i)
			req.NextHopType, req.NextHopId, req.Description = "Instance", ids["instance"][0], desc
			// One entry at a time per table: TaskConflict until the last is in.
			poll(t, 10*time.Second, "route entry "+desc, func(context.Context) (bool, error) {
				_, err := vpcClient(t).CreateRouteEntry(req)
				return err == nil, err
			})
		}
		res := clusterid.Discover(context.Background(), clusterid.Input{Cloud: discoveryClient(t), Kube: kube(t), VpcID: ids["vpc"][0]})
		if res.ID != "c-routes" || len(res.Findings) != 1 {
			t.Fatalf("id %q from %v, want c-routes from the entry of an existing Node only; %s", res.ID, res.Findings, res.Explain())
		}
	})
}
