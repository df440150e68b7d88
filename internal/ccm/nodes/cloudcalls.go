package nodes

import (
	"context"
	"fmt"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// IDLookup finds one instance by id in a region, whatever its VPC.
type IDLookup interface {
	// InstanceByID returns the instance; nil when it does not exist.
	InstanceByID(ctx context.Context, region, id string) (*Instance, error)
}

// ENIs reads and clears the source/destination check of network
// interfaces.
type ENIs interface {
	// SourceDestCheck reports whether the check is on for eni.
	SourceDestCheck(ctx context.Context, eni string) (bool, error)
	// DisableSourceDestCheck turns the check off on eni.
	DisableSourceDestCheck(ctx context.Context, eni string) error
}

var (
	_ IDLookup = CloudLister{}
	_ ENIs     = CloudLister{}
)

// InstanceByID implements IDLookup with DescribeInstances filtered by the
// id alone, so that an instance outside the cluster VPC is found too.
func (l CloudLister) InstanceByID(ctx context.Context, region, id string) (*Instance, error) {
	resp, err := cloud.Do(ctx, l.Client, cloud.ECS, "DescribeInstances", func(c *cloud.Clients) (*ecs.DescribeInstancesResponse, error) {
		req := ecs.CreateDescribeInstancesRequest()
		if region != "" {
			req.RegionId = region
		}
		req.InstanceIds = `["` + id + `"]`
		return c.ECS.DescribeInstances(req)
	})
	if err != nil {
		return nil, fmt.Errorf("describe instance %s in region %s: %w", id, region, err)
	}
	for _, in := range resp.Instances.Instance {
		if in.InstanceId == id {
			out := convert(in)
			return &out, nil
		}
	}
	return nil, nil
}

// SourceDestCheck implements ENIs with DescribeNetworkInterfaces.
func (l CloudLister) SourceDestCheck(ctx context.Context, eni string) (bool, error) {
	resp, err := cloud.Do(ctx, l.Client, cloud.ECS, "DescribeNetworkInterfaces", func(c *cloud.Clients) (*ecs.DescribeNetworkInterfacesResponse, error) {
		req := ecs.CreateDescribeNetworkInterfacesRequest()
		req.NetworkInterfaceId = &[]string{eni}
		return c.ECS.DescribeNetworkInterfaces(req)
	})
	if err != nil {
		return false, fmt.Errorf("describe network interface %s: %w", eni, err)
	}
	for _, ni := range resp.NetworkInterfaceSets.NetworkInterfaceSet {
		if ni.NetworkInterfaceId == eni {
			return ni.SourceDestCheck, nil
		}
	}
	return false, fmt.Errorf("describe network interface %s: not found", eni)
}

// DisableSourceDestCheck implements ENIs with ModifyNetworkInterfaceAttribute.
func (l CloudLister) DisableSourceDestCheck(ctx context.Context, eni string) error {
	_, err := cloud.Do(ctx, l.Client, cloud.ECS, "ModifyNetworkInterfaceAttribute", func(c *cloud.Clients) (*ecs.ModifyNetworkInterfaceAttributeResponse, error) {
		req := ecs.CreateModifyNetworkInterfaceAttributeRequest()
		req.NetworkInterfaceId = eni
		req.SourceDestCheck = requests.NewBoolean(false)
		return c.ECS.ModifyNetworkInterfaceAttribute(req)
	})
	if err != nil {
		return fmt.Errorf("disable the source/destination check of network interface %s: %w", eni, err)
	}
	return nil
}
