package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// internalIPs are a Node's InternalIP addresses in order.
func internalIPs(n *corev1.Node) []string {
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out = append(out, a.Address)
		}
	}
	return out
}

// registerDualStack registers a Node as a kubelet with
// --cloud-provider=external does: with --node-ip=<v4>,<v6> when v6 is set
// (the provided-node-ip annotation, which the cloud-node controller
// requires to match the cloud's addresses), without --node-ip otherwise
// (every address the cloud reports is kept). Only the first is left to
// kwok: kwok writes its own InternalIP on a Node without one, which the
// other, found by its status address, must keep.
func registerDualStack(t *testing.T, in instance, v6 string) string {
	t.Helper()
	name := nodeName("ipv6")
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
			Annotations: map[string]string{},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
	}
	if v6 != "" {
		n.Annotations[cloudapi.AnnotationAlphaProvidedIPAddr] = in.ip + "," + v6
		n.Annotations[localcluster.KwokNodeAnnotation] = localcluster.KwokNodeValue
	}
	cs := kube(t)
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	// A merge patch, not an update: nodeipam and kwok write the Node too.
	patch := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":%q},{"type":"Hostname","address":%q}]}}`, in.ip, name)
	if _, err := cs.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil && v6 == "" {
		t.Fatal(err)
	}
	return name
}

// TestNodeIPv6InternalIP: with the IPv6DualStack gate (on in this suite's
// CCM) a Node whose instance has an IPv6 address on its primary ENI gets
// it as a second InternalIP, after the IPv4 one; a Node whose instance has
// none keeps its IPv4 address only, until an address is assigned through
// the ECS API, which the next address resync picks up.
func TestNodeIPv6InternalIP(t *testing.T) {
	ids, err := cloud.Seed(&api.Seed{Instances: []api.SeedInstance{
		{Name: "ipv6-dual", InstanceType: "ecs.g7.large", VSwitchID: vswitch[0], InstanceChargeType: "PostPaid", SpotStrategy: "NoSpot", IPv6AddressCount: 1},
		{Name: "ipv6-none", InstanceType: "ecs.g7.large", VSwitchID: vswitch[0], InstanceChargeType: "PostPaid", SpotStrategy: "NoSpot"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := ecsClient(t)
	req := ecs.CreateDescribeInstancesRequest()
	req.InstanceIds = `["` + strings.Join(ids["instance"], `","`) + `"]`
	resp, err := c.DescribeInstances(req)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]ecs.Instance{}
	for _, in := range resp.Instances.Instance {
		byID[in.InstanceId] = in
	}
	dual, none := byID[ids["instance"][0]], byID[ids["instance"][1]]
	v6 := dual.NetworkInterfaces.NetworkInterface[0].Ipv6Sets.Ipv6Set
	if len(v6) != 1 {
		t.Fatalf("seeded instance has IPv6 %+v, want one address", v6)
	}
	insts := []instance{
		{id: dual.InstanceId, ip: dual.VpcAttributes.PrivateIpAddress.IpAddress[0], zone: dual.ZoneId},
		{id: none.InstanceId, ip: none.VpcAttributes.PrivateIpAddress.IpAddress[0], zone: none.ZoneId},
	}
	dualName, noneName := registerDualStack(t, insts[0], v6[0].Ipv6Address), registerDualStack(t, insts[1], "")
	took := waitInitialized(t, dualName, insts[0])
	waitInitialized(t, noneName, insts[1])

	cs := kube(t)
	wantIPs := func(name string, want []string, timeout time.Duration) time.Duration {
		return poll(t, timeout, fmt.Sprintf("node %s InternalIPs %v", name, want), func(ctx context.Context) (bool, error) {
			n, err := getNode(ctx, cs, name)
			if err != nil {
				if ctx.Err() != nil {
					// Keep the last mismatch as the reason.
					return false, nil
				}
				return false, err
			}
			if got := internalIPs(n); !slices.Equal(got, want) {
				return false, fmt.Errorf("InternalIPs %v", got)
			}
			return true, nil
		})
	}
	wantIPs(dualName, []string{insts[0].ip, v6[0].Ipv6Address}, 10*time.Second)
	wantIPs(noneName, []string{insts[1].ip}, 10*time.Second)
	t.Logf("dual-stack node initialized in %v", took.Round(10*time.Millisecond))

	// Assign an address through the ECS API: the resync (every 3s, over an
	// instance listing at most --instance-cache-ttl old) adds it.
	as := ecs.CreateAssignIpv6AddressesRequest()
	as.NetworkInterfaceId, as.Ipv6AddressCount = none.NetworkInterfaces.NetworkInterface[0].NetworkInterfaceId, requests.NewInteger(1)
	ar, err := c.AssignIpv6Addresses(as)
	if err != nil {
		t.Fatal(err)
	}
	added := wantIPs(noneName, []string{insts[1].ip, ar.Ipv6Sets.Ipv6Address[0]}, 40*time.Second)
	t.Logf("assigned IPv6 address on the Node %v after AssignIpv6Addresses", added.Round(100*time.Millisecond))
}
