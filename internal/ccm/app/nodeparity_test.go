package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	cloudapi "k8s.io/cloud-provider/api"
	"k8s.io/cloud-provider/names"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

func vpcClient(t *testing.T) *vpc.Client {
	return emulatortest.For(cloud, accessKeyID, accessKeySecret).VPC(t)
}

// primaryENI returns the instance's primary network interface.
func primaryENI(t *testing.T, id string) string {
	t.Helper()
	req := ecs.CreateDescribeInstancesRequest()
	req.InstanceIds = `["` + id + `"]`
	resp, err := ecsClient(t).DescribeInstances(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range resp.Instances.Instance {
		for _, ni := range in.NetworkInterfaces.NetworkInterface {
			if ni.Type == "Primary" {
				return ni.NetworkInterfaceId
			}
		}
	}
	t.Fatalf("instance %s has no primary ENI", id)
	return ""
}

func sourceDestCheck(t *testing.T, eni string) bool {
	t.Helper()
	req := ecs.CreateDescribeNetworkInterfacesRequest()
	req.NetworkInterfaceId = &[]string{eni}
	resp, err := ecsClient(t).DescribeNetworkInterfaces(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.NetworkInterfaceSets.NetworkInterfaceSet) != 1 {
		t.Fatalf("ENI %s: %d found", eni, len(resp.NetworkInterfaceSets.NetworkInterfaceSet))
	}
	return resp.NetworkInterfaceSets.NetworkInterfaceSet[0].SourceDestCheck
}

func setSourceDestCheck(t *testing.T, eni string, on bool) {
	t.Helper()
	req := ecs.CreateModifyNetworkInterfaceAttributeRequest()
	req.NetworkInterfaceId = eni
	req.SourceDestCheck = requests.NewBoolean(on)
	if _, err := ecsClient(t).ModifyNetworkInterfaceAttribute(req); err != nil {
		t.Fatal(err)
	}
}

// registerNamed registers a kubelet Node under name and deletes it when
// the test ends.
func registerNamed(t *testing.T, name string, in instance, kwok bool) {
	t.Helper()
	if _, err := localcluster.RegisterKubeletNode(context.Background(), kube(t), localcluster.KubeletNode{Name: name, InternalIP: in.ip, Kwok: kwok}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube(t).CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// routeVia returns the destination of the cluster VPC's custom route entry
// whose next hop is the instance, "" when there is none.
func routeVia(ctx context.Context, t *testing.T, instanceID string) (string, error) {
	tables := vpc.CreateDescribeRouteTableListRequest()
	tables.VpcId = vpcID
	tr, err := vpcClient(t).DescribeRouteTableList(tables)
	if err != nil {
		return "", err
	}
	for _, rt := range tr.RouterTableList.RouterTableListType {
		req := vpc.CreateDescribeRouteEntryListRequest()
		req.RouteTableId = rt.RouteTableId
		req.RouteEntryType = "Custom"
		resp, err := vpcClient(t).DescribeRouteEntryList(req)
		if err != nil {
			return "", err
		}
		for _, e := range resp.RouteEntrys.RouteEntry {
			for _, h := range e.NextHops.NextHop {
				if h.NextHopId == instanceID {
					return e.DestinationCidrBlock, nil
				}
			}
		}
	}
	return "", nil
}

// TestInitMarksNetworkUnavailableUntilRouteCreated: initialization sets
// NetworkUnavailable=True/NoRouteCreated while the Node still carries the
// uninitialized taint; once the route controller has created the route
// (podCIDR → the Node's instance) it turns False/RouteCreated. The Node is
// not kwok-managed, so nothing else writes the condition.
func TestInitMarksNetworkUnavailableUntilRouteCreated(t *testing.T) {
	if nodes.ReasonNoRouteCreated != routes.ReasonNoRouteCreated {
		t.Fatalf("initialization writes %q, the route controller %q", nodes.ReasonNoRouteCreated, routes.ReasonNoRouteCreated)
	}
	in := addInstances(t, 1)[0]
	cs := kube(t)
	name := nodeName("netunavail")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	registerNamed(t, name, in, false)
	type seen struct {
		status  corev1.ConditionStatus
		reason  string
		message string
		tainted bool
		after   time.Duration
	}
	var history []seen
	var final *corev1.Node
	for final == nil {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed; conditions seen: %+v", history)
			}
			n, isNode := ev.Object.(*corev1.Node)
			if !isNode || ev.Type == watch.Deleted {
				continue
			}
			for _, c := range n.Status.Conditions {
				if c.Type != corev1.NodeNetworkUnavailable {
					continue
				}
				if len(history) == 0 || history[len(history)-1].status != c.Status || history[len(history)-1].reason != c.Reason {
					history = append(history, seen{c.Status, c.Reason, c.Message, hasTaint(n, cloudapi.TaintExternalCloudProvider), time.Since(start)})
				}
				if c.Status == corev1.ConditionFalse && c.Reason == routes.ReasonRouteCreated {
					final = n
				}
			}
		case <-ctx.Done():
			t.Fatalf("no NetworkUnavailable=False/RouteCreated within 60s; seen: %+v", history)
		}
	}
	t.Logf("NetworkUnavailable transitions: %+v", history)
	first := history[0]
	if first.status != corev1.ConditionTrue || first.reason != nodes.ReasonNoRouteCreated || !first.tainted ||
		!strings.Contains(first.message, "initialized") {
		t.Fatalf("first NetworkUnavailable %+v, want True/%s set by initialization while the Node is still tainted", first, nodes.ReasonNoRouteCreated)
	}
	if final.Spec.PodCIDR == "" {
		t.Fatal("the Node has no podCIDR")
	}
	dst, err := routeVia(context.Background(), t, in.id)
	if err != nil {
		t.Fatal(err)
	}
	if dst != final.Spec.PodCIDR {
		t.Fatalf("route via %s has destination %q, want the podCIDR %s", in.id, dst, final.Spec.PodCIDR)
	}
}

// TestInitDisablesSourceDestCheck: a Node whose primary ENI has the
// source/destination check on gets it turned off (one
// ModifyNetworkInterfaceAttribute) before its taint goes; one whose check
// is off costs a read and no write; while the write is refused the Node
// stays uninitialized with an AddNodeFailed event naming the ENI.
func TestInitDisablesSourceDestCheck(t *testing.T) {
	insts := addInstances(t, 2)
	on, off := primaryENI(t, insts[0].id), primaryENI(t, insts[1].id)
	setSourceDestCheck(t, on, true)
	if !sourceDestCheck(t, on) || sourceDestCheck(t, off) {
		t.Fatal("the emulator does not keep SourceDestCheck")
	}
	refused := &gateway.FaultError{Code: "Forbidden.RAM", Status: 403, Message: "User not authorized to operate on the specified resource."}
	rule, err := cloud.Gateway.AddFault(gateway.FaultRule{Product: "ecs", Action: "ModifyNetworkInterfaceAttribute", Error: refused})
	if err != nil {
		t.Fatal(err)
	}
	writes := func() int { return cloud.Calls("ecs", "ModifyNetworkInterfaceAttribute") }
	reads := func() int { return cloud.Calls("ecs", "DescribeNetworkInterfaces") }
	w0, r0 := writes(), reads()
	blocked := nodeName("sdc-on")
	registerNamed(t, blocked, insts[0], true)
	poll(t, 30*time.Second, "AddNodeFailed naming the ENI", func(ctx context.Context) (bool, error) {
		for _, e := range nodeEvents(ctx, t, blocked) {
			if e.Reason == nodes.ReasonAddFailed && strings.Contains(e.Message, on) && strings.Contains(e.Message, "Forbidden.RAM") {
				return true, nil
			}
		}
		return false, nil
	})
	n, err := getNode(context.Background(), kube(t), blocked)
	if err != nil || !hasTaint(n, cloudapi.TaintExternalCloudProvider) || n.Spec.ProviderID != "" {
		t.Fatalf("the Node was initialized although its ENI could not be fixed: %v", err)
	}
	cloud.Gateway.RemoveFault(rule.ID)
	took := waitInitialized(t, blocked, insts[0])
	t.Logf("initialized %v after the write was allowed again", took.Round(10*time.Millisecond))
	if sourceDestCheck(t, on) {
		t.Fatal("the source/destination check is still on")
	}
	refusedWrites := writes() - w0 - 1

	w1, r1 := writes(), reads()
	clean := nodeName("sdc-off")
	registerNamed(t, clean, insts[1], true)
	waitInitialized(t, clean, insts[1])
	if d := writes() - w1; d != 0 {
		t.Fatalf("%d ModifyNetworkInterfaceAttribute calls for an ENI whose check is already off", d)
	}
	// The listing made for the first Node may still serve the second.
	if d := reads() - r1; d > 1 {
		t.Fatalf("%d DescribeNetworkInterfaces calls for one Node, want at most 1", d)
	}
	if sourceDestCheck(t, off) {
		t.Fatal("the check of the second ENI was turned on")
	}
	t.Logf("refused writes retried %d times; %d reads for the first Node", refusedWrites, r1-r0)

}

// TestNodeLabelsResynced: after initialization, labels that drift from
// the instance (a charge type or zone overwritten on the Node) are put
// back, and a node pool tag set on the instance later becomes the
// nodepool-id label, by the periodic resync (every 3s here; upstream sets
// labels only at initialization and never overwrites one). Labels the
// instance does not imply are kept.
func TestNodeLabelsResynced(t *testing.T) {
	in := addInstances(t, 1)[0]
	name := nodeName("labels")
	registerNamed(t, name, in, true)
	waitInitialized(t, name, in)
	cs := kube(t)
	patch := []byte(`{"metadata":{"labels":{"` + nodes.LabelChargeType + `":"PrePaid","` + corev1.LabelTopologyZone + `":"elsewhere","team":"a"}}}`)
	if _, err := cs.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	tag := ecs.CreateTagResourcesRequest()
	tag.ResourceType = "instance"
	tag.ResourceId = &[]string{in.id}
	tag.Tag = &[]ecs.TagResourcesTag{{Key: nodes.TagNodePoolID, Value: "np-parity"}}
	if _, err := ecsClient(t).TagResources(tag); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var drift time.Duration
	poll(t, 45*time.Second, "labels resynced from the instance", func(ctx context.Context) (bool, error) {
		n, err := getNode(ctx, cs, name)
		if err != nil {
			return false, err
		}
		if drift == 0 && n.Labels[nodes.LabelChargeType] == "PostPaid" && n.Labels[corev1.LabelTopologyZone] == in.zone {
			drift = time.Since(start)
		}
		for k, want := range map[string]string{
			nodes.LabelChargeType: "PostPaid", corev1.LabelTopologyZone: in.zone, corev1.LabelFailureDomainBetaZone: in.zone,
			nodes.LabelNodePoolID: "np-parity", "team": "a",
		} {
			if n.Labels[k] != want {
				return false, fmt.Errorf("label %s=%q, want %q", k, n.Labels[k], want)
			}
		}
		return true, nil
	})
	t.Logf("drifted labels restored after %v, node pool label after %v (resync %v, instance cache 15s)",
		drift.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond), labelResync)
	poll(t, 10*time.Second, "SyncedNodeLabels event", func(ctx context.Context) (bool, error) {
		for _, e := range nodeEvents(ctx, t, name) {
			if e.Reason == nodes.ReasonLabelsSynced && strings.Contains(e.Message, nodes.LabelChargeType+"=PostPaid") {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestNodeInAnotherVPCConfirmedByID: a Node whose providerID names an
// instance outside the cluster VPC is initialized from it and, though
// NotReady, is not deleted, since a lookup by id without the VPC filter
// finds it; once that instance is deleted, the Node is. (A segmented
// alicloud://<zone>/<region>.<id> providerID, as the existing CCM accepts.)
func TestNodeInAnotherVPCConfirmedByID(t *testing.T) {
	suffix := fmt.Sprint(nodeSeq.Add(1))
	ids, err := cloud.Seed(&api.Seed{
		VPCs: []api.SeedVPC{{Name: "other-vpc-" + suffix, CIDRBlock: "172.16.0.0/16", VSwitches: []api.SeedVSwitch{{
			ID: "vsw-otherparity" + suffix, ZoneID: "cn-hangzhou-i", CIDRBlock: "172.16.0.0/24",
		}}}},
		Instances: []api.SeedInstance{{Name: "other-vpc-node-" + suffix, InstanceType: "ecs.g7.xlarge", VSwitchID: "vsw-otherparity" + suffix,
			InstanceChargeType: "PostPaid", SpotStrategy: "NoSpot"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := ids["instance"][0]
	cs := kube(t)
	name := nodeName("othervpc")
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{localcluster.KwokNodeAnnotation: localcluster.KwokNodeValue}},
		Spec: corev1.NodeSpec{
			ProviderID: "alicloud://cn-hangzhou-i/" + cloud.Region() + "." + id,
			Taints:     []corev1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	poll(t, 20*time.Second, "node in another VPC initialized", func(ctx context.Context) (bool, error) {
		n, err := getNode(ctx, cs, name)
		if err != nil {
			return false, err
		}
		return !hasTaint(n, cloudapi.TaintExternalCloudProvider) && n.Labels[corev1.LabelTopologyZone] == "cn-hangzhou-i" &&
			n.Labels[corev1.LabelInstanceTypeStable] == "ecs.g7.xlarge", nil
	})
	// Its heartbeat stops: the Node goes NotReady (Unknown) after the
	// grace period.
	stopKwok(t, name)
	poll(t, 40*time.Second, "node NotReady", func(ctx context.Context) (bool, error) {
		n, err := getNode(ctx, cs, name)
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionUnknown, nil
			}
		}
		return false, nil
	})
	// Several lifecycle passes (--node-monitor-period=1s).
	time.Sleep(4 * time.Second)
	if _, err := getNode(context.Background(), cs, name); err != nil {
		t.Fatalf("a NotReady Node whose instance exists in another VPC was deleted: %v", err)
	}
	del := ecs.CreateDeleteInstanceRequest()
	del.InstanceId = id
	del.Force = "true"
	if _, err := ecsClient(t).DeleteInstance(del); err != nil {
		t.Fatal(err)
	}
	took := poll(t, 30*time.Second, "node deleted once its instance is gone", func(ctx context.Context) (bool, error) {
		_, err := getNode(ctx, cs, name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	t.Logf("node deleted %v after its instance in the other VPC", took.Round(100*time.Millisecond))
}

// TestServiceWorkersFromCloudConfig: cloud-config
// serviceMaxConcurrentReconciles sets the service controller's workers;
// an explicit --concurrent-service-syncs wins; neither leaves the default.
func TestServiceWorkersFromCloudConfig(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		args         []string
		want         int
	}{
		{"cloud-config", "Global:\n  clusterID: " + clusterID + "\n  serviceMaxConcurrentReconciles: 7\n", nil, 7},
		{"flag wins", "Global:\n  clusterID: " + clusterID + "\n  serviceMaxConcurrentReconciles: 7\n", []string{"--concurrent-service-syncs=2"}, 2},
		{"default", "Global:\n  clusterID: " + clusterID + "\n", nil, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startBare(t, tc.config, append([]string{"--controllers=" + names.ServiceLBController}, tc.args...)...)
			want := fmt.Sprintf(`"Starting service controller" workers=%d `, tc.want)
			poll(t, 30*time.Second, "service controller started with "+want, func(context.Context) (bool, error) {
				if c.Exited() {
					t.Fatalf("the CCM exited; log:\n%s", ccmtest.Tail(c.Log(), 20))
				}
				for _, line := range strings.Split(c.Log(), "\n") {
					if strings.Contains(line, `"Starting service controller"`) {
						if !strings.Contains(line, want) {
							t.Fatalf("want %s in %s", want, line)
						}
						return true, nil
					}
				}
				return false, nil
			})
		})
	}
}

// TestEndpointAndInitFlags: --network (default vpc), --use-vpc-endpoints
// or cloud-config useVPCEndpoints select the VPC-internal endpoints,
// --network=public the public ones, which the explicit
// *_ENDPOINT overrides (here the emulator) still beat;
// --skip-disable-source-dest-check drops that initialization step; the
// client pacing flags reach the cloud client.
func TestEndpointAndInitFlags(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		args         []string
		want         []string
	}{
		{"flags", "Global:\n  clusterID: " + clusterID + "\n", []string{"--use-vpc-endpoints", "--skip-disable-source-dest-check", "--cloud-api-qps=5", "--cloud-api-product-qps=250", "--cloud-api-burst=7"},
			[]string{"useVPCEndpoints=true", `ecsEndpoint="` + cloud.Addr() + `"`, `nlbEndpoint="` + cloud.Addr() + `"`, "disableSourceDestCheck=false",
				"cloudAPIQPS=5 cloudAPIProductQPS=250 cloudAPIBurst=7"}},
		{"cloud-config", "Global:\n  clusterID: " + clusterID + "\n  useVPCEndpoints: true\n", nil,
			[]string{"useVPCEndpoints=true", `vpcEndpoint="` + cloud.Addr() + `"`, "disableSourceDestCheck=true"}},
		// VPC endpoints by default, as the existing CCM's --network.
		{"defaults", "Global:\n  clusterID: " + clusterID + "\n", nil,
			[]string{`network="vpc" useVPCEndpoints=true`, "disableSourceDestCheck=true", "markNetworkUnavailable=false",
				"cloudAPIQPS=20 cloudAPIProductQPS=100 cloudAPIBurst=40"}},
		{"network public", "Global:\n  clusterID: " + clusterID + "\n  useVPCEndpoints: true\n", []string{"--network=public"},
			[]string{`network="public" useVPCEndpoints=false`, `slbEndpoint="` + cloud.Addr() + `"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startBare(t, tc.config, tc.args...)
			poll(t, 30*time.Second, "configuration and initialization steps logged", func(context.Context) (bool, error) {
				if c.Exited() {
					t.Fatalf("the CCM exited; log:\n%s", ccmtest.Tail(c.Log(), 20))
				}
				log := c.Log()
				if !strings.Contains(log, "Node initialization steps") {
					return false, nil
				}
				for _, w := range tc.want {
					if !strings.Contains(log, w) {
						t.Fatalf("the log lacks %s:\n%s", w, ccmtest.Tail(log, 30))
					}
				}
				return true, nil
			})
		})
	}
}

// TestNodesJoiningTogetherShareENIListing: Nodes registered at once have
// their primary ENIs' source/destination checks read from one listing of
// the VPC's primary ENIs, not one DescribeNetworkInterfaces each, and a
// check found on is still turned off.
func TestNodesJoiningTogetherShareENIListing(t *testing.T) {
	const n = 12
	insts := addInstances(t, n)
	on := primaryENI(t, insts[3].id)
	setSourceDestCheck(t, on, true)
	// Let any listing an earlier test made go stale, so this one's count
	// starts from a fresh listing.
	time.Sleep(16 * time.Second)
	reads := func() int { return cloud.Calls("ecs", "DescribeNetworkInterfaces") }
	writes := func() int { return cloud.Calls("ecs", "ModifyNetworkInterfaceAttribute") }
	r0, w0 := reads(), writes()
	names := make([]string, n)
	for i := range insts {
		names[i] = nodeName(fmt.Sprintf("eni-batch-%d", i))
		registerNamed(t, names[i], insts[i], true)
	}
	for i := range insts {
		waitInitialized(t, names[i], insts[i])
	}
	if d := reads() - r0; d < 1 || d > 2 {
		t.Fatalf("%d DescribeNetworkInterfaces calls for %d Nodes joining together, want 1 listing (2 if the first Node's instance lookup raced the registrations)", d, n)
	}
	if d := writes() - w0; d != 1 {
		t.Fatalf("%d ModifyNetworkInterfaceAttribute calls, want 1 (one ENI had its check on)", d)
	}
	if sourceDestCheck(t, on) {
		t.Fatal("the check that was on is still on")
	}
	t.Logf("%d Nodes: %d DescribeNetworkInterfaces, %d ModifyNetworkInterfaceAttribute", n, reads()-r0, writes()-w0)
}
