package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// The emulated cloud the sandbox seeds.
const (
	// Region is the sandbox's region.
	Region = "cn-hangzhou"
	// ClusterID is the CCM's cluster id.
	ClusterID = "c-sandbox"
	// VPCName names the seeded VPC, which is how later runs find it.
	VPCName = "sandbox-vpc"
	// VPCCIDR is the VPC's network; the pod network lies outside it.
	VPCCIDR = "192.168.0.0/16"
	// ClusterCIDR is the pod network nodeipam allocates podCIDRs from.
	ClusterCIDR = "10.244.0.0/16"
	// InstanceType of every node.
	InstanceType = "ecs.g7.large"
	// ImageID of every node.
	ImageID = "aliyun_3_x64_20G_alibase_20240819.vhd"
	// HostPrefix starts every node's host name (and Node name).
	HostPrefix = "node-"
)

// zones are the two zones of the seeded vSwitches.
var zones = []string{"cn-hangzhou-h", "cn-hangzhou-i"}

// writeSeed writes the cloud of an empty state: a VPC with one vSwitch per
// zone (its system route table is the one the CCM programs), a security
// group, and n instances spread over the zones. Ids are fixed in the file
// because instances and the security group refer to them; the emulator
// applies the seed only when its state is empty, so they never clash.
func writeSeed(path string, n int) error {
	suffix := strings.ToLower(randomString(17))
	v := api.SeedVPC{ID: "vpc-bp1" + suffix, Name: VPCName, CIDRBlock: VPCCIDR, Tags: map[string]string{"sandbox": ClusterID}}
	for i, z := range zones {
		v.VSwitches = append(v.VSwitches, api.SeedVSwitch{
			ID: fmt.Sprintf("vsw-bp%d%s", i+1, suffix), Name: "sandbox-" + z, ZoneID: z, CIDRBlock: fmt.Sprintf("192.168.%d.0/24", i),
		})
	}
	s := &api.Seed{
		VPCs:           []api.SeedVPC{v},
		SecurityGroups: []api.SeedSecurityGroup{{ID: "sg-bp1" + suffix, Name: "sandbox-nodes", VpcID: v.ID}},
	}
	for i := 0; i < n; i++ {
		s.Instances = append(s.Instances, api.SeedInstance{
			Name: HostPrefix + strconv.Itoa(i), HostName: HostPrefix + strconv.Itoa(i), InstanceType: InstanceType,
			VSwitchID: v.VSwitches[i%len(zones)].ID, SecurityGroupIDs: []string{s.SecurityGroups[0].ID},
			InstanceChargeType: "PostPaid", SpotStrategy: "NoSpot",
		})
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode seed: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write seed: %w", err)
	}
	return nil
}

// clients are official SDK clients pointed at the emulator.
type clients struct {
	ecs *ecs.Client
	vpc *vpc.Client
	slb *slb.Client
}

// newClients builds SDK clients for the emulator at endpoint (host:port).
func newClients(endpoint, keyID, keySecret string) (*clients, error) {
	cred := credentials.NewAccessKeyCredential(keyID, keySecret)
	cfg := func() *sdk.Config {
		c := sdk.NewConfig()
		c.Scheme = "HTTP"
		c.AutoRetry = false
		return c
	}
	e, err := ecs.NewClientWithOptions(Region, cfg(), cred)
	if err != nil {
		return nil, fmt.Errorf("ecs client: %w", err)
	}
	v, err := vpc.NewClientWithOptions(Region, cfg(), cred)
	if err != nil {
		return nil, fmt.Errorf("vpc client: %w", err)
	}
	s, err := slb.NewClientWithOptions(Region, cfg(), cred)
	if err != nil {
		return nil, fmt.Errorf("slb client: %w", err)
	}
	e.Domain, v.Domain, s.Domain = endpoint, endpoint, endpoint
	return &clients{ecs: e, vpc: v, slb: s}, nil
}

// Instance is one ECS instance of the sandbox VPC.
type Instance struct {
	// ID is the instance id (i-...), HostName its host name (= the Node
	// name), PrivateIP its primary private address, Zone and VSwitchID where
	// it runs, Status its ECS status (Running, Stopped...).
	ID, HostName, PrivateIP, Zone, VSwitchID, Status string
}

// cloudFacts is the sandbox's cloud as read through the APIs.
type cloudFacts struct {
	VpcID         string
	VSwitches     map[string]string // zone → vSwitch id
	RouteTableID  string
	SecurityGroup string
	Instances     []Instance
}

// discover finds the sandbox VPC by name and everything in it.
func (c *clients) discover() (*cloudFacts, error) {
	req := vpc.CreateDescribeVpcsRequest()
	req.VpcName = VPCName
	resp, err := c.vpc.DescribeVpcs(req)
	if err != nil {
		return nil, fmt.Errorf("DescribeVpcs: %w", err)
	}
	if len(resp.Vpcs.Vpc) != 1 {
		return nil, fmt.Errorf("DescribeVpcs: want exactly one VPC named %s, found %d", VPCName, len(resp.Vpcs.Vpc))
	}
	f := &cloudFacts{VpcID: resp.Vpcs.Vpc[0].VpcId, VSwitches: map[string]string{}}

	vreq := vpc.CreateDescribeVSwitchesRequest()
	vreq.VpcId = f.VpcID
	vreq.PageSize = "50"
	vresp, err := c.vpc.DescribeVSwitches(vreq)
	if err != nil {
		return nil, fmt.Errorf("DescribeVSwitches: %w", err)
	}
	for _, v := range vresp.VSwitches.VSwitch {
		f.VSwitches[v.ZoneId] = v.VSwitchId
	}

	rreq := vpc.CreateDescribeRouteTableListRequest()
	rreq.VpcId = f.VpcID
	rresp, err := c.vpc.DescribeRouteTableList(rreq)
	if err != nil {
		return nil, fmt.Errorf("DescribeRouteTableList: %w", err)
	}
	for _, t := range rresp.RouterTableList.RouterTableListType {
		if t.RouteTableType == "System" {
			f.RouteTableID = t.RouteTableId
		}
	}
	if f.RouteTableID == "" {
		return nil, fmt.Errorf("DescribeRouteTableList: VPC %s has no system route table", f.VpcID)
	}

	sreq := ecs.CreateDescribeSecurityGroupsRequest()
	sreq.VpcId = f.VpcID
	sresp, err := c.ecs.DescribeSecurityGroups(sreq)
	if err != nil {
		return nil, fmt.Errorf("DescribeSecurityGroups: %w", err)
	}
	if len(sresp.SecurityGroups.SecurityGroup) == 0 {
		return nil, fmt.Errorf("DescribeSecurityGroups: VPC %s has no security group", f.VpcID)
	}
	f.SecurityGroup = sresp.SecurityGroups.SecurityGroup[0].SecurityGroupId

	if f.Instances, err = c.instances(f.VpcID); err != nil {
		return nil, err
	}
	return f, nil
}

// instances lists the VPC's instances that are not being released, sorted
// by host name.
func (c *clients) instances(vpcID string) ([]Instance, error) {
	var out []Instance
	for page := 1; ; page++ {
		req := ecs.CreateDescribeInstancesRequest()
		req.VpcId = vpcID
		req.PageSize = "100"
		req.PageNumber = requests.NewInteger(page)
		resp, err := c.ecs.DescribeInstances(req)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstances: %w", err)
		}
		for _, in := range resp.Instances.Instance {
			ip := ""
			if ips := in.VpcAttributes.PrivateIpAddress.IpAddress; len(ips) > 0 {
				ip = ips[0]
			}
			out = append(out, Instance{ID: in.InstanceId, HostName: in.HostName, PrivateIP: ip, Zone: in.ZoneId, VSwitchID: in.VpcAttributes.VSwitchId, Status: in.Status})
		}
		if len(resp.Instances.Instance) == 0 || page*100 >= resp.TotalCount {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return hostLess(out[i].HostName, out[j].HostName) })
	return out, nil
}

// hostLess orders node-2 before node-10.
func hostLess(a, b string) bool {
	na, ea := strconv.Atoi(strings.TrimPrefix(a, HostPrefix))
	nb, eb := strconv.Atoi(strings.TrimPrefix(b, HostPrefix))
	if ea == nil && eb == nil {
		return na < nb
	}
	return a < b
}
