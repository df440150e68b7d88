package service_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

var (
	nodeIPv6Once sync.Once
	nodeIPv6     map[string]string // instance id → IPv6 address
	nodeIPv4     map[string]string // instance id → IPv4 address
	nodeIPv6Err  error
)

// nodeAddresses gives every Node's instance an IPv6 address (the suite's
// vSwitches have /64s) through AssignIpv6Addresses, once, and returns both
// families by instance.
func nodeAddresses(t *testing.T) (v4, v6 map[string]string) {
	t.Helper()
	nodeIPv6Once.Do(func() {
		c, err := emulatortest.For(cloud, accessKeyID, accessKeySecret).NewECS()
		if err != nil {
			nodeIPv6Err = err
			return
		}
		var ids []string
		for _, id := range instances {
			ids = append(ids, id)
		}
		req := ecs.CreateDescribeInstancesRequest()
		req.InstanceIds = `["` + strings.Join(ids, `","`) + `"]`
		req.PageSize = "100"
		resp, err := c.DescribeInstances(req)
		if err != nil {
			nodeIPv6Err = err
			return
		}
		nodeIPv4, nodeIPv6 = map[string]string{}, map[string]string{}
		for _, in := range resp.Instances.Instance {
			nodeIPv4[in.InstanceId] = in.VpcAttributes.PrivateIpAddress.IpAddress[0]
			as := ecs.CreateAssignIpv6AddressesRequest()
			as.NetworkInterfaceId, as.Ipv6AddressCount = in.NetworkInterfaces.NetworkInterface[0].NetworkInterfaceId, requests.NewInteger(1)
			ar, err := c.AssignIpv6Addresses(as)
			if err != nil {
				nodeIPv6Err = fmt.Errorf("assign an IPv6 address to %s: %w", in.InstanceId, err)
				return
			}
			nodeIPv6[in.InstanceId] = ar.Ipv6Sets.Ipv6Address[0]
		}
	})
	if nodeIPv6Err != nil {
		t.Fatal(nodeIPv6Err)
	}
	return nodeIPv4, nodeIPv6
}

// nlbGroup returns the server group of the NLB's only listener: its
// AddressIPVersion and its servers' addresses, sorted.
func nlbGroup(ctx context.Context, t *testing.T, lbID string) (id, version string, ips []string, err error) {
	c := nlbClient(t)
	ls := nlb.CreateListListenersRequest()
	ls.LoadBalancerIds = &[]string{lbID}
	listeners, err := c.ListListeners(ls)
	if err != nil {
		return "", "", nil, err
	}
	if len(listeners.Listeners) != 1 {
		return "", "", nil, fmt.Errorf("%d listeners", len(listeners.Listeners))
	}
	id = listeners.Listeners[0].ServerGroupId
	gs := nlb.CreateListServerGroupsRequest()
	gs.ServerGroupIds = &[]string{id}
	groups, err := c.ListServerGroups(gs)
	if err != nil {
		return "", "", nil, err
	}
	if len(groups.ServerGroups) != 1 {
		return "", "", nil, fmt.Errorf("group %s not listed", id)
	}
	sv := nlb.CreateListServerGroupServersRequest()
	sv.ServerGroupId = id
	sv.MaxResults = requests.NewInteger(100)
	servers, err := c.ListServerGroupServers(sv)
	if err != nil {
		return "", "", nil, err
	}
	for _, s := range servers.Servers {
		ips = append(ips, s.ServerIp)
	}
	slices.Sort(ips)
	return id, groups.ServerGroups[0].AddressIPVersion, ips, nil
}

// TestNLBBackendIPVersion: backend-ip-version on an NLB Service with Ip
// server groups: dualstack gives a DualStack group with each Node's IPv4
// and IPv6 address; ipv6 keeps that group with the IPv6 addresses only;
// back to ipv4 replaces it with an ipv4 group of IPv4 addresses (the family
// of a group cannot change).
func TestNLBBackendIPVersion(t *testing.T) {
	v4, v6 := nodeAddresses(t)
	zoneMaps := ccmtest.ZoneMaps(ccmtest.SeedDoc(ccmtest.SeedSpec{}))
	const name = "nlb-ipv6"
	key := annotations.Key("backend-ip-version")
	svc := newService(svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{
		annotations.Key("zone-maps"):         strings.Join(zoneMaps, ","),
		annotations.Key("server-group-type"): "ip",
		annotations.Key("ip-version"):        "DualStack",
		key:                                  "dualstack",
	}})
	svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	if _, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer deleteService(t, name)
	id := lbID(waitIngress(t, name, 60*time.Second))

	want := func(maps ...map[string]string) []string {
		var out []string
		for _, m := range maps {
			for _, inst := range instances {
				out = append(out, m[inst])
			}
		}
		slices.Sort(out)
		return out
	}
	expect := func(what, version string, ips []string) (groupID string) {
		t.Helper()
		var last string
		start := time.Now()
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			gid, v, got, err := nlbGroup(ctx, t, id)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if !strings.EqualFold(v, version) || !slices.Equal(got, ips) {
				last = fmt.Sprintf("group %s %s with %d servers %v", gid, v, len(got), got)
				return false, nil
			}
			groupID = gid
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: want a %s group with %d servers: %v (last: %s)", what, version, len(ips), err, last)
		}
		t.Logf("%s: %s group %s with %d servers after %v", what, version, groupID, len(ips), time.Since(start).Round(100*time.Millisecond))
		return groupID
	}
	for _, ip := range v6 {
		if a, err := netip.ParseAddr(ip); err != nil || !a.Is6() {
			t.Fatalf("assigned address %q is not IPv6", ip)
		}
	}
	dual := expect("dualstack", "DualStack", want(v4, v6))
	if ev := events(t, name); slices.ContainsFunc(ev, func(e corev1.Event) bool { return e.Reason == annotations.EventNotApplied }) {
		t.Errorf("backend-ip-version reported not applied on an NLB")
	}

	updateService(t, name, func(s *corev1.Service) { s.Annotations[key] = "ipv6" })
	if g := expect("ipv6", "DualStack", want(v6)); g != dual {
		t.Errorf("ipv6 replaced the DualStack group %s with %s; it can serve both", dual, g)
	}
	updateService(t, name, func(s *corev1.Service) { s.Annotations[key] = "ipv4" })
	if g := expect("ipv4", "ipv4", want(v4)); g == dual {
		t.Errorf("the DualStack group %s was kept for ipv4 backends", g)
	}
}
