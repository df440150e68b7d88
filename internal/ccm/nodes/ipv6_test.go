package nodes

import (
	"context"
	"slices"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInstanceMetadataIPv6 covers the IPv6DualStack gate and the lookup of
// a Node by a dual-stack kubelet's --node-ip, either family first.
func TestInstanceMetadataIPv6(t *testing.T) {
	var in ecs.Instance
	in.InstanceId, in.RegionId, in.ZoneId, in.InstanceType = "i-1", "cn-hangzhou", "cn-hangzhou-h", "ecs.g7.large"
	in.VpcAttributes.PrivateIpAddress.IpAddress = []string{"192.168.0.10"}
	in.PublicIpAddress.IpAddress = []string{"47.1.2.3"}
	secondary := ecs.NetworkInterface{NetworkInterfaceId: "eni-s", Type: "Secondary"}
	secondary.Ipv6Sets.Ipv6Set = []ecs.Ipv6Set{{Ipv6Address: "2408:4005:300:1::9"}}
	primary := ecs.NetworkInterface{NetworkInterfaceId: "eni-p", Type: "Primary"}
	primary.Ipv6Sets.Ipv6Set = []ecs.Ipv6Set{{Ipv6Address: "2408:4005:300:1:0:0:0:1"}, {Ipv6Address: "not-an-ip"}, {Ipv6Address: "2408:4005:300:1::2"}}
	in.NetworkInterfaces.NetworkInterface = []ecs.NetworkInterface{secondary, primary}
	converted := convert(in)
	if want := []string{"2408:4005:300:1::1", "2408:4005:300:1::2"}; !slices.Equal(converted.IPv6s, want) || converted.PrimaryENI != "eni-p" {
		t.Fatalf("converted IPv6s %v (ENI %s), want the primary ENI's %v", converted.IPv6s, converted.PrimaryENI, want)
	}

	v4only := converted
	v4only.ID, v4only.PrivateIPs, v4only.IPv6s = "i-2", []string{"192.168.0.11"}, nil
	f := &fakeLister{list: []Instance{converted, v4only}}
	for _, tc := range []struct {
		name     string
		gate     bool
		nodeIP   string
		internal []string
	}{
		{"gate off", false, "192.168.0.10", []string{"192.168.0.10"}},
		{"gate on", true, "192.168.0.10", []string{"192.168.0.10", "2408:4005:300:1::1", "2408:4005:300:1::2"}},
		{"dual-stack node-ip", true, "192.168.0.10,2408:4005:300:1::1", []string{"192.168.0.10", "2408:4005:300:1::1", "2408:4005:300:1::2"}},
		{"IPv6 node-ip first, non-canonical", true, "2408:4005:300:1:0::1, 192.168.0.10", []string{"192.168.0.10", "2408:4005:300:1::1", "2408:4005:300:1::2"}},
		{"no IPv6 on the instance", true, "192.168.0.11", []string{"192.168.0.11"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewInstances(NewIndex(f, "vpc-1"), "cn-hangzhou", nil)
			s.SetDualStack(tc.gate)
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{annotationProvidedNodeIP: tc.nodeIP}}}
			md, err := s.InstanceMetadata(context.Background(), node)
			if err != nil {
				t.Fatal(err)
			}
			var internal []string
			for _, a := range md.NodeAddresses {
				if a.Type == v1.NodeInternalIP {
					internal = append(internal, a.Address)
				}
			}
			if !slices.Equal(internal, tc.internal) {
				t.Fatalf("InternalIPs %v, want %v (all: %v)", internal, tc.internal, md.NodeAddresses)
			}
			// IPv6 InternalIPs come right after the IPv4 ones, before ExternalIPs.
			if md.NodeAddresses[len(tc.internal)].Type != v1.NodeExternalIP {
				t.Fatalf("order: %v", md.NodeAddresses)
			}
		})
	}
}
