package nodes

import (
	"context"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudapi "k8s.io/cloud-provider/api"
)

func TestInstanceMetadataAddressesAndLabels(t *testing.T) {
	var in ecs.Instance
	in.InstanceId, in.RegionId, in.ZoneId, in.InstanceType = "i-1", "cn-hangzhou", "cn-hangzhou-h", "ecs.g7.large"
	in.Status, in.InstanceChargeType, in.SpotStrategy = "Running", "PrePaid", "SpotAsPriceGo"
	in.VpcAttributes.PrivateIpAddress.IpAddress = []string{"192.168.0.10"}
	in.PublicIpAddress.IpAddress = []string{"47.1.2.3"}
	in.EipAddress.IpAddress = "47.9.9.9"
	in.Tags.Tag = []ecs.Tag{{TagKey: TagNodePoolID, TagValue: "np-1"}}
	f := &fakeLister{list: []Instance{convert(in)}}
	s := NewInstances(NewIndex(f, "vpc-1"), "cn-hangzhou", nil)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{Addresses: []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "192.168.0.10"}, {Type: v1.NodeHostName, Address: "host-1"},
	}}}
	md, err := s.InstanceMetadata(context.Background(), node)
	if err != nil {
		t.Fatal(err)
	}
	want := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "192.168.0.10"},
		{Type: v1.NodeExternalIP, Address: "47.1.2.3"},
		{Type: v1.NodeExternalIP, Address: "47.9.9.9"},
		{Type: v1.NodeHostName, Address: "host-1"},
	}
	if len(md.NodeAddresses) != len(want) {
		t.Fatalf("addresses %v, want %v", md.NodeAddresses, want)
	}
	for i := range want {
		if md.NodeAddresses[i] != want[i] {
			t.Fatalf("addresses %v, want %v", md.NodeAddresses, want)
		}
	}
	if md.ProviderID != "cn-hangzhou.i-1" || md.Zone != "cn-hangzhou-h" || md.Region != "cn-hangzhou" || md.InstanceType != "ecs.g7.large" {
		t.Fatalf("%+v", md)
	}
	for k, v := range map[string]string{LabelChargeType: "PrePaid", LabelSpotStrategy: "SpotAsPriceGo", LabelNodePoolID: "np-1"} {
		if md.AdditionalLabels[k] != v {
			t.Errorf("label %s = %q, want %q", k, md.AdditionalLabels[k], v)
		}
	}
	if down, err := s.InstanceShutdown(context.Background(), node); err != nil || down {
		t.Fatalf("running instance reported shut down: %v %v", down, err)
	}
	excluded := node.DeepCopy()
	excluded.Labels = map[string]string{LabelExcludeNodeDeprecated: ""}
	excluded.Spec.Taints = []v1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Effect: v1.TaintEffectNoSchedule}}
	if md, err := s.InstanceMetadata(context.Background(), excluded); md != nil || err != nil {
		t.Fatalf("excluded uninitialized node: %v %v, want nil metadata (initialization skipped)", md, err)
	}
	// Initialized, then excluded: the upstream periodic address update
	// reads the metadata without a nil check, so it must be non-nil and
	// carry no address (the update is then skipped).
	excluded.Spec.Taints = nil
	if md, err := s.InstanceMetadata(context.Background(), excluded); md == nil || err != nil || len(md.NodeAddresses) != 0 || md.ProviderID != "" {
		t.Fatalf("excluded initialized node: %+v %v, want empty metadata", md, err)
	}
	if ok, err := s.InstanceExists(context.Background(), excluded); !ok || err != nil {
		t.Fatal("an excluded node must always exist")
	}
}
