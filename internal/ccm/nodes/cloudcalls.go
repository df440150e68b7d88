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

// ENILister reads the source/destination check of every primary ENI of a
// VPC in a few paged calls, so that initializing N Nodes at once does not
// read N ENIs one by one.
type ENILister interface {
	// PrimarySourceDestChecks returns each primary ENI of the VPC's
	// check, by ENI id.
	PrimarySourceDestChecks(ctx context.Context, vpcID string) (map[string]bool, error)
}

var (
	_ IDLookup  = CloudLister{}
	_ ENIs      = CloudLister{}
	_ ENILister = CloudLister{}
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

// eniPageSize is the largest DescribeNetworkInterfaces page (MaxResults).
const eniPageSize = 500

// PrimarySourceDestChecks implements ENILister with DescribeNetworkInterfaces
// filtered by VPC and type, 500 a page.
func (l CloudLister) PrimarySourceDestChecks(ctx context.Context, vpcID string) (map[string]bool, error) {
	out := map[string]bool{}
	token := ""
	for {
		resp, err := cloud.Do(ctx, l.Client, cloud.ECS, "DescribeNetworkInterfaces", func(c *cloud.Clients) (*ecs.DescribeNetworkInterfacesResponse, error) {
			req := ecs.CreateDescribeNetworkInterfacesRequest()
			req.VpcId = vpcID
			req.Type = "Primary"
			req.MaxResults = requests.NewInteger(eniPageSize)
			req.NextToken = token
			return c.ECS.DescribeNetworkInterfaces(req)
		})
		if err != nil {
			return nil, fmt.Errorf("list the primary network interfaces of VPC %s: %w", vpcID, err)
		}
		for _, ni := range resp.NetworkInterfaceSets.NetworkInterfaceSet {
			out[ni.NetworkInterfaceId] = ni.SourceDestCheck
		}
		if token = resp.NextToken; token == "" || len(resp.NetworkInterfaceSets.NetworkInterfaceSet) == 0 {
			return out, nil
		}
	}
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
