package migratetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// The existing CCM's formats, as kubernetes/cloud-provider-alibaba-cloud
// writes them (finalizers, labels, annotations, tags, route descriptions),
// written out here rather than taken from our naming package: the way
// back works only if what we create is what it looks for, so the check
// must not share our code's idea of it.
const (
	theirFinalizerCLB = "service.k8s.alibaba/resources"
	theirFinalizerNLB = "service.k8s.alibaba/nlb"
	theirNLBClass     = "alibabacloud.com/nlb"
	theirZoneMaps     = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-zone-maps"
	theirLabelLBID    = "service.k8s.alibaba/loadbalancer-id"
	theirTagName      = "kubernetes.do.not.delete"
	theirTagCluster   = "ack.aliyun.com"
)

// theirLBName is its default load balancer name: "a" + the UID without
// dashes, cut to 32 characters.
func theirLBName(uid string) string {
	n := "a" + strings.ReplaceAll(uid, "-", "")
	return n[:min(len(n), 32)]
}

// theirCLBName is its CLB listener description and vServer group name:
// k8s/<port>/<service>/<namespace>/<clusterID>.
func theirCLBName(port int32, svc, ns, cluster string) string {
	return fmt.Sprintf("k8s/%d/%s/%s/%s", port, svc, ns, cluster)
}

// theirNLBName is its NLB listener description and server group name:
// k8s.<port>.<PROTO>.<service>.<namespace>.<clusterID>.
func theirNLBName(port int32, proto, svc, ns, cluster string) string {
	return fmt.Sprintf("k8s.%d.%s.%s.%s.%s", port, proto, svc, ns, cluster)
}

// TestWayBack: what this CCM creates is what the existing CCM looks for,
// so setting its image again needs no conversion: a new CLB Service's load
// balancer carries its tags, its listener its description, its vServer
// group its name with the Node as member on the nodePort, the Service its
// finalizer and id label; a Node's route has its shape (destination the
// podCIDR, next hop type Instance, the Node's instance).
func TestWayBack(t *testing.T) {
	ctx := context.Background()
	args := []string{
		"--kubeconfig=/etc/kubernetes/cloud-controller-manager.conf",
		"--cloud-config=/etc/kubernetes/config/cloud-config.conf",
		"--network=vpc",
		"--controllers=node,route,service,nlb",
		"--metrics-bind-addr=0",
		"--configure-cloud-routes=true",
		"--cluster-cidr=" + clusterCIDR,
		"--route-reconciliation-period=1m",
	}
	existingCCMState(t) // the cloud names the cluster id the config lacks
	c := startCCM(t, "ccm-way-back", args)
	node := registerNode(t, c, "back-node-", instances[2])
	cs := kube(t)
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "back"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the CCM stops: it releases the finalizer
		_ = cs.CoreV1().Services("default").Delete(context.Background(), "back", metav1.DeleteOptions{})
		_ = c.Until(30*time.Second, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Services("default").Get(ctx, "back", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
	poll(t, c, 60*time.Second, "address of Service default/back", func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Services("default").Get(ctx, "back", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		svc = s
		return len(s.Status.LoadBalancer.Ingress) == 1, nil
	})
	if !slices.Contains(svc.Finalizers, theirFinalizerCLB) {
		t.Errorf("finalizers %v lack %s", svc.Finalizers, theirFinalizerCLB)
	}
	lbID := svc.Labels[theirLabelLBID]
	sc := emulatortest.For(cloud, accessKeyID, accessKeySecret).SLB(t)
	dr := slb.CreateDescribeLoadBalancersRequest()
	dr.LoadBalancerId = lbID
	lbs, err := sc.DescribeLoadBalancers(dr)
	if err != nil || len(lbs.LoadBalancers.LoadBalancer) != 1 {
		t.Fatalf("the load balancer %q of label %s: %v", lbID, theirLabelLBID, err)
	}
	lb := lbs.LoadBalancers.LoadBalancer[0]
	tags := map[string]string{}
	for _, tg := range lb.Tags.Tag {
		tags[tg.TagKey] = tg.TagValue
	}
	if want := theirLBName(string(svc.UID)); tags[theirTagName] != want || lb.LoadBalancerName != want {
		t.Errorf("load balancer name %q, tag %s=%q; the existing CCM finds it by %q", lb.LoadBalancerName, theirTagName, tags[theirTagName], want)
	}
	if tags[theirTagCluster] != legacyClusterID {
		t.Errorf("tag %s=%q, want the cluster's %q", theirTagCluster, tags[theirTagCluster], legacyClusterID)
	}
	want := theirCLBName(8080, "back", "default", legacyClusterID)
	lr := slb.CreateDescribeLoadBalancerListenersRequest()
	lr.LoadBalancerId = &[]string{lbID}
	ls, err := sc.DescribeLoadBalancerListeners(lr)
	if err != nil || len(ls.Listeners) != 1 {
		t.Fatalf("listeners of %s: %v %+v", lbID, err, ls)
	}
	if l := ls.Listeners[0]; l.Description != want || l.ListenerPort != 8080 {
		t.Errorf("listener %d %q, want 8080 %q", l.ListenerPort, l.Description, want)
	}
	groupName := theirCLBName(svc.Spec.Ports[0].NodePort, "back", "default", legacyClusterID)
	gr := slb.CreateDescribeVServerGroupsRequest()
	gr.LoadBalancerId = lbID
	groups, err := sc.DescribeVServerGroups(gr)
	if err != nil || len(groups.VServerGroups.VServerGroup) != 1 || groups.VServerGroups.VServerGroup[0].VServerGroupName != groupName {
		t.Fatalf("vServer groups of %s: %v %+v; want one named %q", lbID, err, groups, groupName)
	}
	poll(t, c, 30*time.Second, "the Node in "+groupName, func(ctx context.Context) (bool, error) {
		ar := slb.CreateDescribeVServerGroupAttributeRequest()
		ar.VServerGroupId = groups.VServerGroups.VServerGroup[0].VServerGroupId
		a, err := sc.DescribeVServerGroupAttribute(ar)
		if err != nil {
			return false, err
		}
		for _, b := range a.BackendServers.BackendServer {
			if b.ServerId == instances[2] && b.Port == int(svc.Spec.Ports[0].NodePort) {
				return true, nil
			}
		}
		return false, nil
	})
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || n.Spec.PodCIDR == "" {
		t.Fatalf("Node %s podCIDR: %v", node, err)
	}
	poll(t, c, 60*time.Second, "route of "+node+" in the existing CCM's shape", func(ctx context.Context) (bool, error) {
		entries, err := customRoutes(t)
		for _, e := range entries {
			if e.DestinationCidrBlock != n.Spec.PodCIDR {
				continue
			}
			for _, h := range e.NextHops.NextHop {
				if h.NextHopType == "Instance" && h.NextHopId == instances[2] {
					return true, nil
				}
			}
			return false, fmt.Errorf("route %s next hops %+v, want Instance %s", e.DestinationCidrBlock, e.NextHops.NextHop, instances[2])
		}
		return false, err
	})
	checkNLBWayBack(t, c)
}

// checkNLBWayBack: an NLB Service's load balancer, listener and server
// group carry the existing CCM's tags, description and name, the group
// holds the Node's instance on the nodePort, the Service its finalizer.
func checkNLBWayBack(t *testing.T, c *ccmtest.CCM) {
	ctx := context.Background()
	cs := kube(t)
	zones := ccmtest.ZoneMaps(ccmtest.SeedDoc(ccmtest.SeedSpec{}))
	class := theirNLBClass
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "back-nlb", Namespace: "default", Annotations: map[string]string{theirZoneMaps: strings.Join(zones, ",")}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class, Selector: map[string]string{"app": "back"},
			Ports: []corev1.ServicePort{{Name: "tcp", Port: 9090, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the CCM stops: it releases the finalizer
		_ = cs.CoreV1().Services("default").Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
		_ = c.Until(60*time.Second, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Services("default").Get(ctx, svc.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
	poll(t, c, 90*time.Second, "address of Service default/back-nlb", func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Services("default").Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		svc = s
		return len(s.Status.LoadBalancer.Ingress) == 1 && s.Status.LoadBalancer.Ingress[0].Hostname != "", nil
	})
	if !slices.Contains(svc.Finalizers, theirFinalizerNLB) {
		t.Errorf("finalizers %v lack %s", svc.Finalizers, theirFinalizerNLB)
	}
	lbID := svc.Labels[theirLabelLBID]
	nc := emulatortest.For(cloud, accessKeyID, accessKeySecret).NLB(t)
	lr := nlb.CreateListLoadBalancersRequest()
	lr.LoadBalancerIds = &[]string{lbID}
	lbs, err := nc.ListLoadBalancers(lr)
	if err != nil || len(lbs.LoadBalancers) != 1 {
		t.Fatalf("the NLB %q of label %s: %v", lbID, theirLabelLBID, err)
	}
	tags := map[string]string{}
	for _, tg := range lbs.LoadBalancers[0].Tags {
		tags[tg.Key] = tg.Value
	}
	if want := theirLBName(string(svc.UID)); tags[theirTagName] != want || tags[theirTagCluster] != legacyClusterID {
		t.Errorf("NLB tags %v; the existing CCM finds it by %s=%s, %s=%s", tags, theirTagName, want, theirTagCluster, legacyClusterID)
	}
	ll := nlb.CreateListListenersRequest()
	ll.LoadBalancerIds = &[]string{lbID}
	ls, err := nc.ListListeners(ll)
	if err != nil || len(ls.Listeners) != 1 {
		t.Fatalf("listeners of %s: %v %+v", lbID, err, ls)
	}
	if want := theirNLBName(9090, "TCP", svc.Name, "default", legacyClusterID); ls.Listeners[0].ListenerDescription != want {
		t.Errorf("listener description %q, want %q", ls.Listeners[0].ListenerDescription, want)
	}
	gr := nlb.CreateListServerGroupsRequest()
	gr.ServerGroupIds = &[]string{ls.Listeners[0].ServerGroupId}
	groups, err := nc.ListServerGroups(gr)
	if err != nil || len(groups.ServerGroups) != 1 {
		t.Fatalf("server group %s: %v", ls.Listeners[0].ServerGroupId, err)
	}
	g := groups.ServerGroups[0]
	if want := theirNLBName(svc.Spec.Ports[0].NodePort, "TCP", svc.Name, "default", legacyClusterID); g.ServerGroupName != want {
		t.Errorf("server group name %q, want %q", g.ServerGroupName, want)
	}
	gtags := map[string]string{}
	for _, tg := range g.Tags {
		gtags[tg.Key] = tg.Value
	}
	if gtags[theirTagName] != theirLBName(string(svc.UID)) || gtags[theirTagCluster] != legacyClusterID {
		t.Errorf("server group tags %v", gtags)
	}
	poll(t, c, 30*time.Second, "the Node in "+g.ServerGroupName, func(ctx context.Context) (bool, error) {
		sr := nlb.CreateListServerGroupServersRequest()
		sr.ServerGroupId = g.ServerGroupId
		servers, err := nc.ListServerGroupServers(sr)
		if err != nil {
			return false, err
		}
		for _, b := range servers.Servers {
			if b.ServerId == instances[2] && b.Port == int(svc.Spec.Ports[0].NodePort) {
				return true, nil
			}
		}
		return false, nil
	})
}
