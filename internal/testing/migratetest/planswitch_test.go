package migratetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/plan"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// legacyNS holds what TestPlanBeforeTheSwitch builds in the existing CCM's
// shapes, apart from the other tests' Services.
const legacyNS = "legacy"

// legacyState is a Node and a CLB Service as the existing CCM leaves them.
type legacyState struct {
	node, instance, podCIDR string
	routeTable, routeEntry  string
	lbID, groupID           string
}

// buildLegacyState makes, through the API server and the SDK and without
// any CCM running, what the existing CCM leaves for one Node and one CLB
// Service: the Node initialized (providerID, no uninitialized taint) with
// an undescribed route entry podCIDR → instance, and the Service with its
// finalizer, id label and address, its CLB tagged for it, a vServer group
// k8s/<nodePort>/<svc>/<ns>/<cluster> holding every eligible Node's
// instance (weight 100, on the nodePort) and a TCP listener on it.
func buildLegacyState(t *testing.T) legacyState {
	t.Helper()
	ctx := context.Background()
	cs := kube(t)
	env := emulatortest.For(cloud, accessKeyID, accessKeySecret)
	st := legacyState{node: "legacy-node", instance: instances[3]}
	ips, err := env.PrivateIPs([]string{st.instance})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, st.node, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: st.node, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Spec:       corev1.NodeSpec{ProviderID: cloud.Region() + "." + st.instance},
			Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ips[st.instance]}}},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, st.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st.podCIDR = n.Spec.PodCIDR
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return st.podCIDR != "", nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("podCIDR and Ready of %s: %v", st.node, err)
	}
	vc := env.VPC(t)
	tables := vpc.CreateDescribeRouteTableListRequest()
	tables.VpcId = cloudVPC(t)
	tr, err := vc.DescribeRouteTableList(tables)
	if err != nil || len(tr.RouterTableList.RouterTableListType) == 0 {
		t.Fatalf("route tables: %v", err)
	}
	st.routeTable = tr.RouterTableList.RouterTableListType[0].RouteTableId
	re := vpc.CreateCreateRouteEntryRequest()
	re.RouteTableId, re.DestinationCidrBlock, re.NextHopType, re.NextHopId = st.routeTable, st.podCIDR, "Instance", st.instance
	// The table may still be busy with the previous test's CCM's writes
	// (TaskConflict, IncorrectRouteEntryStatus): retried as the existing
	// CCM would.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		entry, err := vc.CreateRouteEntry(re)
		if err != nil {
			t.Logf("create the existing CCM's route for %s: %v", st.node, err)
			return false, nil
		}
		st.routeEntry = entry.RouteEntryId
		return true, nil
	})
	if err != nil {
		t.Fatalf("the existing CCM's route for %s: %v", st.node, err)
	}

	svc, err := cs.CoreV1().Services(legacyNS).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: legacyNS, Finalizers: []string{theirFinalizerCLB}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "legacy"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodePort := svc.Spec.Ports[0].NodePort
	sc := env.SLB(t)
	name := theirLBName(string(svc.UID))
	cr := slb.CreateCreateLoadBalancerRequest()
	cr.LoadBalancerName, cr.AddressType, cr.LoadBalancerSpec = name, "internet", "slb.s1.small"
	cr.Tag = &[]slb.CreateLoadBalancerTag{{Key: theirTagName, Value: name}, {Key: theirTagCluster, Value: legacyClusterID}}
	lb, err := sc.CreateLoadBalancer(cr)
	if err != nil {
		t.Fatal(err)
	}
	st.lbID = lb.LoadBalancerId
	var members []map[string]any
	for _, id := range eligibleInstances(t) {
		members = append(members, map[string]any{"ServerId": id, "Port": nodePort, "Weight": 100, "Type": "ecs",
			"Description": theirCLBName(nodePort, "app", legacyNS, legacyClusterID)})
	}
	body, _ := json.Marshal(members)
	gr := slb.CreateCreateVServerGroupRequest()
	gr.LoadBalancerId, gr.VServerGroupName = st.lbID, theirCLBName(nodePort, "app", legacyNS, legacyClusterID)
	gr.BackendServers = string(body)
	g, err := sc.CreateVServerGroup(gr)
	if err != nil {
		t.Fatal(err)
	}
	st.groupID = g.VServerGroupId
	lr := slb.CreateCreateLoadBalancerTCPListenerRequest()
	lr.LoadBalancerId, lr.ListenerPort, lr.VServerGroupId = st.lbID, requests.NewInteger(80), st.groupID
	lr.Bandwidth, lr.Scheduler = requests.NewInteger(-1), "rr"
	lr.Description = theirCLBName(80, "app", legacyNS, legacyClusterID)
	if _, err := sc.CreateLoadBalancerTCPListener(lr); err != nil {
		t.Fatal(err)
	}
	start := slb.CreateStartLoadBalancerListenerRequest()
	start.LoadBalancerId, start.ListenerPort = st.lbID, requests.NewInteger(80)
	if _, err := sc.StartLoadBalancerListener(start); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, theirLabelLBID, st.lbID)
	if _, err := cs.CoreV1().Services(legacyNS).Patch(ctx, "app", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	status := fmt.Sprintf(`{"status":{"loadBalancer":{"ingress":[{"ip":%q}]}}}`, lb.Address)
	if _, err := cs.CoreV1().Services(legacyNS).Patch(ctx, "app", types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	return st
}

// eligibleInstances are the instances of the cluster's initialized,
// Ready Nodes: the backends the existing CCM gives a Cluster Service.
func eligibleInstances(t *testing.T) []string {
	t.Helper()
	list, err := kube(t).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range list.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		tainted := false
		for _, tn := range n.Spec.Taints {
			tainted = tainted || tn.Key == cloudapi.TaintExternalCloudProvider
		}
		if i := strings.LastIndex(n.Spec.ProviderID, "."); i > 0 && ready && !tainted && n.DeletionTimestamp == nil {
			out = append(out, n.Spec.ProviderID[i+1:])
		}
	}
	return out
}

// runPlan runs `cloud-controller-manager plan -o json` as an operator
// would before the switch: the existing CCM's cloud-config (no clusterID)
// and credentials, routes planned for the cluster CIDR.
func runPlan(t *testing.T) (*plan.Report, int, string) {
	t.Helper()
	o := ccmtest.CCMOptions{Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(), AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret, CloudConfig: v2CloudConfig}
	run, err := ccmtest.RunPlan(o, t.TempDir(), "--cluster-cidr="+clusterCIDR, "--timeout=2m")
	if err != nil {
		t.Fatal(err)
	}
	return run.Report, run.ExitCode, run.Log
}

// writesNaming are the successful cloud writes after seq whose parameters
// name one of ids.
func writesNaming(seq uint64, ids ...string) []string {
	var out []string
	for _, r := range cloud.Requests(gateway.RequestFilter{AfterSeq: seq}) {
		if api.IsReadOnlyAction(r.Action) || r.Code != gateway.CodeOK {
			continue
		}
		for _, v := range r.Params {
			if slicesContainsSub(ids, v) {
				out = append(out, r.Action)
				break
			}
		}
	}
	return out
}

func slicesContainsSub(ids []string, v string) bool {
	for _, id := range ids {
		if id != "" && strings.Contains(v, id) {
			return true
		}
	}
	return false
}

// TestPlanBeforeTheSwitch: on a cluster in the existing CCM's shapes (a
// Node with its undescribed route, a CLB Service with its group, members
// and listener, no clusterID in the config), `plan` plans no cloud write
// for them and makes none; the CCM started with the existing CCM's users'
// flags then writes nothing to them either.
func TestPlanBeforeTheSwitch(t *testing.T) {
	ctx := context.Background()
	if _, err := kube(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: legacyNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	existingCCMState(t) // the cloud names the cluster id the config lacks
	st := buildLegacyState(t)
	seq := lastCloudSeq()
	r, code, log := runPlan(t)
	var planned []string
	for _, it := range r.Items {
		for _, w := range it.Cloud {
			planned = append(planned, it.Name+": "+w.Action)
		}
	}
	t.Logf("plan exited %d: %d cloud writes %v, %d Kubernetes writes, %d items", code, r.CloudWrites, planned, r.KubeWrites, len(r.Items))
	for _, it := range r.Items {
		if (it.Name == legacyNS+"/app" || it.Name == st.node) && len(it.Cloud) > 0 {
			t.Errorf("plan would write for %s %s: %+v", it.Kind, it.Name, it.Cloud)
		}
		if it.Error != "" {
			t.Errorf("plan failed for %s %s: %s", it.Kind, it.Name, it.Error)
		}
	}
	if r.CloudWrites == 0 && code != plan.ExitNoWrites {
		t.Errorf("no cloud writes but exit %d", code)
	}
	if !strings.Contains(log, legacyClusterID) {
		t.Errorf("the plan's log does not name the discovered cluster id %s:\n%s", legacyClusterID, log)
	}
	for _, rec := range cloud.Requests(gateway.RequestFilter{AfterSeq: seq}) {
		if !api.IsReadOnlyAction(rec.Action) {
			t.Errorf("plan sent %s %s", rec.Product, rec.Action)
		}
	}

	c := startCCM(t, "ccm-after-plan", []string{
		"--kubeconfig=/etc/kubernetes/cloud-controller-manager.conf",
		"--cloud-config=/etc/kubernetes/config/cloud-config.conf",
		"--network=vpc", "--controllers=node,route,service,nlb", "--metrics-bind-addr=0",
		"--configure-cloud-routes=true", "--cluster-cidr=" + clusterCIDR, "--route-reconciliation-period=1m",
	})
	seq = lastCloudSeq()
	poll(t, c, 60*time.Second, legacyNS+"/app synced by the CCM", func(ctx context.Context) (bool, error) {
		s, err := kube(t).CoreV1().Services(legacyNS).Get(ctx, "app", metav1.GetOptions{})
		return err == nil && s.Labels["service.beta.kubernetes.io/hash"] != "", err
	})
	time.Sleep(10 * time.Second) // a few route passes and the backend pass
	if w := writesNaming(seq, st.lbID, st.groupID, st.routeEntry, st.podCIDR); len(w) > 0 {
		t.Errorf("after the switch the CCM wrote to the existing CCM's resources: %v", w)
	}
	t.Cleanup(func() { // before the CCM stops: it releases the finalizer
		_ = kube(t).CoreV1().Services(legacyNS).Delete(context.Background(), "app", metav1.DeleteOptions{})
		_ = c.Until(30*time.Second, func(ctx context.Context) (bool, error) {
			_, err := kube(t).CoreV1().Services(legacyNS).Get(ctx, "app", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
}

// lastCloudSeq is the newest request log sequence number.
func lastCloudSeq() uint64 {
	rs := cloud.Requests(gateway.RequestFilter{})
	if len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1].Seq
}
