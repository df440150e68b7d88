package ecs_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// Assertions shared by all product tests live in emulatortest.
var (
	wantErr = emulatortest.WantServerError
	noErr   = emulatortest.NoError
)

func jsonList(v ...string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// network seeds VPC vpc-a (vSwitches vsw-a in zone h and vsw-small /29 in
// zone i, group sg-a) and VPC vpc-b (vsw-b, group sg-b).
func network(t *testing.T, env *emulatortest.Env) {
	t.Helper()
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{
			{ID: "vpc-a", CIDRBlock: "172.16.0.0/12", VSwitches: []api.SeedVSwitch{
				{ID: "vsw-a", ZoneID: "cn-hangzhou-h", CIDRBlock: "172.16.1.0/24"},
				{ID: "vsw-small", ZoneID: "cn-hangzhou-i", CIDRBlock: "172.16.2.0/29"},
			}},
			{ID: "vpc-b", CIDRBlock: "10.0.0.0/8", VSwitches: []api.SeedVSwitch{{ID: "vsw-b", ZoneID: "cn-hangzhou-j", CIDRBlock: "10.1.0.0/16"}}},
		},
		SecurityGroups: []api.SeedSecurityGroup{{ID: "sg-a", VpcID: "vpc-a"}, {ID: "sg-b", VpcID: "vpc-b"}},
	})
}

func run(c *ecs.Client, vsw, sg string, amount int, mut func(r *ecs.RunInstancesRequest)) (*ecs.RunInstancesResponse, error) {
	r := ecs.CreateRunInstancesRequest()
	r.ImageId, r.InstanceType, r.VSwitchId, r.SecurityGroupId = "aliyun_3_x64", "ecs.g6.large", vsw, sg
	r.Amount = requests.NewInteger(amount)
	if mut != nil {
		mut(r)
	}
	return c.RunInstances(r)
}

func describe(t *testing.T, c *ecs.Client, mut func(r *ecs.DescribeInstancesRequest)) *ecs.DescribeInstancesResponse {
	t.Helper()
	r := ecs.CreateDescribeInstancesRequest()
	if mut != nil {
		mut(r)
	}
	resp, err := c.DescribeInstances(r)
	noErr(t, err)
	return resp
}

func available(t *testing.T, env *emulatortest.Env, vsw string) int64 {
	t.Helper()
	r := vpc.CreateDescribeVSwitchAttributesRequest()
	r.VSwitchId = vsw
	resp, err := env.VPC(t).DescribeVSwitchAttributes(r)
	noErr(t, err)
	return resp.AvailableIpAddressCount
}

func TestRunInstancesShapeAndIdempotency(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	// Long enough that the calls below, on a loaded machine, still see
	// the instance Pending.
	noErr(t, env.Emulator.Store.Settings().SetDelay(store.DelayECSInstance, 2*time.Second))
	c := env.ECS(t)
	resp, err := run(c, "vsw-a", "sg-a", 2, func(r *ecs.RunInstancesRequest) {
		r.ClientToken, r.InstanceName, r.HostName = "run-1", "web", "web-host"
		r.InternetMaxBandwidthOut = requests.NewInteger(5)
		r.Tag = &[]ecs.RunInstancesTag{{Key: "app", Value: "web"}}
	})
	noErr(t, err)
	ids := resp.InstanceIdSets.InstanceIdSet
	if len(ids) != 2 || !strings.HasPrefix(ids[0], "i-") {
		t.Fatalf("ids %v", ids)
	}
	again, err := run(c, "vsw-a", "sg-a", 2, func(r *ecs.RunInstancesRequest) {
		r.ClientToken, r.InstanceName, r.HostName = "run-1", "web", "web-host"
		r.InternetMaxBandwidthOut = requests.NewInteger(5)
		r.Tag = &[]ecs.RunInstancesTag{{Key: "app", Value: "web"}}
	})
	noErr(t, err)
	if strings.Join(again.InstanceIdSets.InstanceIdSet, ",") != strings.Join(ids, ",") {
		t.Fatalf("not idempotent: %v vs %v", again.InstanceIdSets.InstanceIdSet, ids)
	}
	_, err = run(c, "vsw-a", "sg-a", 1, func(r *ecs.RunInstancesRequest) { r.ClientToken = "run-1" })
	wantErr(t, err, "IdempotentParameterMismatch", http.StatusBadRequest)
	if got := available(t, env, "vsw-a"); got != 250 {
		t.Fatalf("available after 2 instances: %d", got)
	}
	env.Seed(t, &api.Seed{EIPs: []api.SeedEIP{{ID: "eip-1", IPAddress: "47.5.5.5", InstanceID: ids[0], Bandwidth: "20"}}})

	d := describe(t, c, func(r *ecs.DescribeInstancesRequest) { r.InstanceIds = jsonList(ids[0]) })
	if d.TotalCount != 1 || len(d.Instances.Instance) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	i := d.Instances.Instance[0]
	ip := i.VpcAttributes.PrivateIpAddress.IpAddress[0]
	nic := i.NetworkInterfaces.NetworkInterface[0]
	if i.Status != "Pending" || i.InstanceName != "web" || i.HostName != "web-host" || i.InstanceType != "ecs.g6.large" ||
		i.VpcAttributes.VpcId != "vpc-a" || i.VpcAttributes.VSwitchId != "vsw-a" || i.ZoneId != "cn-hangzhou-h" ||
		!strings.HasPrefix(ip, "172.16.1.") || i.InstanceNetworkType != "vpc" || i.InstanceChargeType != "PostPaid" ||
		i.SpotStrategy != "NoSpot" || i.CreationTime == "" || len(i.PublicIpAddress.IpAddress) != 1 ||
		i.EipAddress.IpAddress != "47.5.5.5" || i.EipAddress.AllocationId != "eip-1" || i.EipAddress.Bandwidth != 20 ||
		i.SecurityGroupIds.SecurityGroupId[0] != "sg-a" || len(i.Tags.Tag) != 1 || i.Tags.Tag[0].TagKey != "app" ||
		!strings.HasPrefix(nic.NetworkInterfaceId, "eni-") || nic.Type != "Primary" || nic.PrimaryIpAddress != ip ||
		i.Cpu != 2 || i.Memory != 8192 || i.RegionId != env.Region {
		t.Fatalf("instance: %+v", i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for describe(t, c, func(r *ecs.DescribeInstancesRequest) { r.InstanceIds = jsonList(ids[0]) }).Instances.Instance[0].Status != "Running" {
		if time.Now().After(deadline) {
			t.Fatal("instance never became Running")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRunInstancesErrors(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	c := env.ECS(t)
	_, err := run(c, "vsw-a", "sg-a", 1, func(r *ecs.RunInstancesRequest) { r.PrivateIpAddress = "172.16.1.10" })
	noErr(t, err)
	cases := []struct {
		name        string
		vsw, sg     string
		amount      int
		mut         func(r *ecs.RunInstancesRequest)
		code        string
		status      int
		vswAfterCap int64
	}{
		{"unknown vswitch", "vsw-x", "sg-a", 1, nil, "InvalidVSwitchId.NotFound", http.StatusNotFound, 0},
		{"unknown group", "vsw-a", "sg-x", 1, nil, "InvalidSecurityGroupId.NotFound", http.StatusNotFound, 0},
		{"group of other vpc", "vsw-a", "sg-b", 1, nil, "InvalidSecurityGroup.VpcMismatch", http.StatusBadRequest, 0},
		{"no image", "vsw-a", "sg-a", 1, func(r *ecs.RunInstancesRequest) { r.ImageId = "" }, "MissingParameter", http.StatusBadRequest, 0},
		{"bad type", "vsw-a", "sg-a", 1, func(r *ecs.RunInstancesRequest) { r.InstanceType = "m5.large" }, "InvalidInstanceType.ValueNotSupported", http.StatusBadRequest, 0},
		{"ip taken", "vsw-a", "sg-a", 1, func(r *ecs.RunInstancesRequest) { r.PrivateIpAddress = "172.16.1.10" }, "InvalidPrivateIpAddress.Duplicated", http.StatusBadRequest, 0},
		{"zone mismatch", "vsw-a", "sg-a", 1, func(r *ecs.RunInstancesRequest) { r.ZoneId = "cn-hangzhou-i" }, "InvalidVSwitchId.ZoneMismatch", http.StatusBadRequest, 0},
		{"amount", "vsw-a", "sg-a", 101, nil, "InvalidParameter", http.StatusBadRequest, 0},
		{"vswitch full", "vsw-small", "sg-a", 5, nil, "InvalidVSwitchId.IpNotEnough", http.StatusBadRequest, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(c, tc.vsw, tc.sg, tc.amount, tc.mut)
			wantErr(t, err, tc.code, tc.status)
			if tc.vswAfterCap > 0 && available(t, env, tc.vsw) != tc.vswAfterCap {
				t.Fatalf("addresses leaked: %d", available(t, env, tc.vsw))
			}
		})
	}
}

func TestDescribeInstancesFiltersAndPaging(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	env.Seed(t, &api.Seed{Instances: []api.SeedInstance{
		{ID: "i-1", VSwitchID: "vsw-a", PrivateIP: "172.16.1.11", Tags: map[string]string{"role": "master"}},
		{ID: "i-2", VSwitchID: "vsw-a", PrivateIP: "172.16.1.12", Tags: map[string]string{"role": "worker"}},
		{ID: "i-3", VSwitchID: "vsw-small", Status: "Stopped", Tags: map[string]string{"role": "worker"}},
		{ID: "i-4", VSwitchID: "vsw-b", PublicIP: "47.9.9.9"},
		{ID: "i-5", VSwitchID: "vsw-b", InstanceChargeType: "PrePaid", SpotStrategy: "SpotAsPriceGo"},
	}})
	c := env.ECS(t)
	cases := []struct {
		name string
		mut  func(r *ecs.DescribeInstancesRequest)
		want string
	}{
		{"all", func(r *ecs.DescribeInstancesRequest) { r.PageSize = requests.NewInteger(100) }, "i-1,i-2,i-3,i-4,i-5"},
		{"ids", func(r *ecs.DescribeInstancesRequest) { r.InstanceIds = jsonList("i-5", "i-2", "i-x") }, "i-2,i-5"},
		{"private ips", func(r *ecs.DescribeInstancesRequest) { r.PrivateIpAddresses = jsonList("172.16.1.12") }, "i-2"},
		{"vpc", func(r *ecs.DescribeInstancesRequest) { r.VpcId = "vpc-b" }, "i-4,i-5"},
		{"vswitch", func(r *ecs.DescribeInstancesRequest) { r.VSwitchId = "vsw-small" }, "i-3"},
		{"zone", func(r *ecs.DescribeInstancesRequest) { r.ZoneId = "cn-hangzhou-h" }, "i-1,i-2"},
		{"status", func(r *ecs.DescribeInstancesRequest) { r.Status = "Stopped" }, "i-3"},
		{"network type", func(r *ecs.DescribeInstancesRequest) { r.InstanceNetworkType = "classic" }, ""},
		{"tag", func(r *ecs.DescribeInstancesRequest) {
			r.Tag = &[]ecs.DescribeInstancesTag{{Key: "role", Value: "worker"}}
		}, "i-2,i-3"},
		{"tag key", func(r *ecs.DescribeInstancesRequest) { r.Tag = &[]ecs.DescribeInstancesTag{{Key: "role"}} }, "i-1,i-2,i-3"},
		{"public ip", func(r *ecs.DescribeInstancesRequest) { r.PublicIpAddresses = jsonList("47.9.9.9") }, "i-4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, i := range describe(t, c, tc.mut).Instances.Instance {
				got = append(got, i.InstanceId)
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("got %v want %s", got, tc.want)
			}
		})
	}
	i5 := describe(t, c, func(r *ecs.DescribeInstancesRequest) { r.InstanceIds = jsonList("i-5") }).Instances.Instance[0]
	if i5.InstanceChargeType != "PrePaid" || i5.SpotStrategy != "SpotAsPriceGo" {
		t.Fatalf("charge: %+v", i5)
	}

	p1 := describe(t, c, func(r *ecs.DescribeInstancesRequest) { r.PageSize = requests.NewInteger(2) })
	p3 := describe(t, c, func(r *ecs.DescribeInstancesRequest) {
		r.PageSize, r.PageNumber = requests.NewInteger(2), requests.NewInteger(3)
	})
	if p1.TotalCount != 5 || len(p1.Instances.Instance) != 2 || p1.PageSize != 2 || len(p3.Instances.Instance) != 1 || p3.Instances.Instance[0].InstanceId != "i-5" {
		t.Fatalf("page paging: %d %d %d", p1.TotalCount, len(p1.Instances.Instance), len(p3.Instances.Instance))
	}
	if def := describe(t, c, nil); def.PageSize != 10 || len(def.Instances.Instance) != 5 {
		t.Fatalf("default page size %d", def.PageSize)
	}
	var all []string
	token := ""
	for n := 0; n < 5; n++ {
		r := describe(t, c, func(r *ecs.DescribeInstancesRequest) { r.MaxResults, r.NextToken = requests.NewInteger(2), token })
		for _, i := range r.Instances.Instance {
			all = append(all, i.InstanceId)
		}
		if token = r.NextToken; token == "" {
			break
		}
	}
	if strings.Join(all, ",") != "i-1,i-2,i-3,i-4,i-5" {
		t.Fatalf("token paging: %v", all)
	}

	var many []string
	for n := 0; n < 101; n++ {
		many = append(many, fmt.Sprintf("i-%d", n))
	}
	bad := []func(r *ecs.DescribeInstancesRequest){
		func(r *ecs.DescribeInstancesRequest) { r.InstanceIds = jsonList(many...) },
		func(r *ecs.DescribeInstancesRequest) { r.InstanceIds = "i-1" },
	}
	for _, mut := range bad {
		r := ecs.CreateDescribeInstancesRequest()
		mut(r)
		_, err := c.DescribeInstances(r)
		wantErr(t, err, "InvalidInstanceIds.Malformed", http.StatusBadRequest)
	}
	r := ecs.CreateDescribeInstancesRequest()
	r.PageSize = requests.NewInteger(101)
	_, err := c.DescribeInstances(r)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
}

func status(t *testing.T, c *ecs.Client, id string) string {
	t.Helper()
	return describe(t, c, func(r *ecs.DescribeInstancesRequest) { r.InstanceIds = jsonList(id) }).Instances.Instance[0].Status
}

func waitStatus(t *testing.T, c *ecs.Client, id, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for status(t, c, id) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s never became %s", id, want)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

func TestStartStopTransitions(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	env.Seed(t, &api.Seed{Instances: []api.SeedInstance{{ID: "i-1", VSwitchID: "vsw-a"}, {ID: "i-2", VSwitchID: "vsw-a", Status: "Stopped"}}})
	noErr(t, env.Emulator.Store.Settings().SetDelay(store.DelayECSInstance, 200*time.Millisecond))
	c := env.ECS(t)

	stop := ecs.CreateStopInstancesRequest()
	stop.InstanceId = &[]string{"i-1"}
	r, err := c.StopInstances(stop)
	noErr(t, err)
	ir := r.InstanceResponses.InstanceResponse
	if len(ir) != 1 || ir[0].PreviousStatus != "Running" || ir[0].CurrentStatus != "Stopping" || ir[0].Code != "200" {
		t.Fatalf("stop: %+v", ir)
	}
	if got := status(t, c, "i-1"); got != "Stopping" {
		t.Fatalf("status %s", got)
	}
	_, err = c.StopInstances(stop)
	wantErr(t, err, "IncorrectInstanceStatus", http.StatusForbidden)
	start := ecs.CreateStartInstancesRequest()
	start.InstanceId = &[]string{"i-1"}
	_, err = c.StartInstances(start)
	wantErr(t, err, "IncorrectInstanceStatus", http.StatusForbidden)
	waitStatus(t, c, "i-1", "Stopped")

	// AllTogether (default) fails the whole batch on one bad instance.
	both := ecs.CreateStartInstancesRequest()
	both.InstanceId = &[]string{"i-1", "i-missing"}
	_, err = c.StartInstances(both)
	wantErr(t, err, "InvalidInstanceId.NotFound", http.StatusNotFound)
	if got := status(t, c, "i-1"); got != "Stopped" {
		t.Fatalf("AllTogether changed i-1: %s", got)
	}
	// SuccessFirst reports per instance.
	both.BatchOptimization = "SuccessFirst"
	rs, err := c.StartInstances(both)
	noErr(t, err)
	ir = rs.InstanceResponses.InstanceResponse
	if len(ir) != 2 || ir[0].Code != "200" || ir[0].CurrentStatus != "Starting" || ir[1].Code != "InvalidInstanceId.NotFound" {
		t.Fatalf("SuccessFirst: %+v", ir)
	}
	if got := status(t, c, "i-1"); got != "Starting" {
		t.Fatalf("status %s", got)
	}
	waitStatus(t, c, "i-1", "Running")
	start.InstanceId = &[]string{"i-2"}
	_, err = c.StartInstances(start)
	noErr(t, err)
	waitStatus(t, c, "i-2", "Running")
}

func TestDeleteInstancesReleaseResources(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	env.Seed(t, &api.Seed{
		Instances: []api.SeedInstance{
			{ID: "i-1", VSwitchID: "vsw-a", SecondaryENIs: []api.SeedENI{{ID: "eni-s1", PrivateIPs: []string{"172.16.1.100", "172.16.1.101"}}}},
			{ID: "i-2", VSwitchID: "vsw-a", Status: "Stopped"},
			{ID: "i-3", VSwitchID: "vsw-a", Status: "Stopped"},
		},
		EIPs: []api.SeedEIP{{ID: "eip-1", IPAddress: "47.6.6.6", InstanceID: "i-1"}},
	})
	c := env.ECS(t)
	if got := available(t, env, "vsw-a"); got != 252-5 {
		t.Fatalf("available %d", got)
	}
	del := ecs.CreateDeleteInstanceRequest()
	del.InstanceId = "i-1"
	_, err := c.DeleteInstance(del)
	wantErr(t, err, "IncorrectInstanceStatus", http.StatusForbidden)
	del.Force = requests.NewBoolean(true)
	_, err = c.DeleteInstance(del)
	noErr(t, err)
	_, err = c.DeleteInstance(del)
	wantErr(t, err, "InvalidInstanceId.NotFound", http.StatusNotFound)
	if got := available(t, env, "vsw-a"); got != 250 {
		t.Fatalf("addresses not released: %d", got)
	}
	ni := ecs.CreateDescribeNetworkInterfacesRequest()
	ni.InstanceId = "i-1"
	nr, err := c.DescribeNetworkInterfaces(ni)
	noErr(t, err)
	if len(nr.NetworkInterfaceSets.NetworkInterfaceSet) != 0 {
		t.Fatalf("ENIs left: %+v", nr.NetworkInterfaceSets)
	}
	er := vpc.CreateDescribeEipAddressesRequest()
	er.AllocationId = "eip-1"
	eips, err := env.VPC(t).DescribeEipAddresses(er)
	noErr(t, err)
	if e := eips.EipAddresses.EipAddress[0]; e.Status != "Available" || e.InstanceId != "" {
		t.Fatalf("EIP still bound: %+v", e)
	}

	many := ecs.CreateDeleteInstancesRequest()
	many.InstanceId = &[]string{"i-2", "i-missing"}
	_, err = c.DeleteInstances(many)
	wantErr(t, err, "InvalidInstanceId.NotFound", http.StatusNotFound)
	many.InstanceId = &[]string{"i-2", "i-3"}
	_, err = c.DeleteInstances(many)
	noErr(t, err)
	if d := describe(t, c, nil); d.TotalCount != 0 {
		t.Fatalf("left %d", d.TotalCount)
	}
	if got := available(t, env, "vsw-a"); got != 252 {
		t.Fatalf("available %d", got)
	}
}

func TestNetworkInterfaces(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	env.Seed(t, &api.Seed{Instances: []api.SeedInstance{
		{ID: "i-1", VSwitchID: "vsw-a", PrimaryENIID: "eni-p1", SecurityGroupIDs: []string{"sg-a"},
			SecondaryENIs: []api.SeedENI{{ID: "eni-s1", PrivateIPs: []string{"172.16.1.50", "172.16.1.51"}}}},
		{ID: "i-2", VSwitchID: "vsw-a", PrimaryENIID: "eni-p2"},
		{ID: "i-3", VSwitchID: "vsw-b", PrimaryENIID: "eni-p3"},
	}})
	c := env.ECS(t)
	cases := []struct {
		name string
		mut  func(r *ecs.DescribeNetworkInterfacesRequest)
		want string
	}{
		{"vpc", func(r *ecs.DescribeNetworkInterfacesRequest) { r.VpcId = "vpc-a" }, "eni-p1,eni-s1,eni-p2"},
		{"vswitch", func(r *ecs.DescribeNetworkInterfacesRequest) { r.VSwitchId = "vsw-b" }, "eni-p3"},
		{"instance", func(r *ecs.DescribeNetworkInterfacesRequest) { r.InstanceId = "i-1" }, "eni-p1,eni-s1"},
		{"ids", func(r *ecs.DescribeNetworkInterfacesRequest) { r.NetworkInterfaceId = &[]string{"eni-p3", "eni-p2"} }, "eni-p2,eni-p3"},
		{"secondary ip", func(r *ecs.DescribeNetworkInterfacesRequest) { r.PrivateIpAddress = &[]string{"172.16.1.51"} }, "eni-s1"},
		{"type", func(r *ecs.DescribeNetworkInterfacesRequest) { r.Type = "Secondary" }, "eni-s1"},
		{"status", func(r *ecs.DescribeNetworkInterfacesRequest) { r.Status = "Available" }, ""},
		{"group", func(r *ecs.DescribeNetworkInterfacesRequest) { r.SecurityGroupId = "sg-a" }, "eni-p1,eni-s1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ecs.CreateDescribeNetworkInterfacesRequest()
			tc.mut(r)
			resp, err := c.DescribeNetworkInterfaces(r)
			noErr(t, err)
			var got []string
			for _, e := range resp.NetworkInterfaceSets.NetworkInterfaceSet {
				got = append(got, e.NetworkInterfaceId)
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("got %v want %s", got, tc.want)
			}
		})
	}
	r := ecs.CreateDescribeNetworkInterfacesRequest()
	r.NetworkInterfaceId = &[]string{"eni-s1"}
	resp, err := c.DescribeNetworkInterfaces(r)
	noErr(t, err)
	s1 := resp.NetworkInterfaceSets.NetworkInterfaceSet[0]
	if s1.InstanceId != "i-1" || s1.Status != "InUse" || s1.Type != "Secondary" || s1.PrivateIpAddress != "172.16.1.50" ||
		len(s1.PrivateIpSets.PrivateIpSet) != 2 || !s1.PrivateIpSets.PrivateIpSet[0].Primary || s1.PrivateIpSets.PrivateIpSet[1].Primary ||
		s1.VpcId != "vpc-a" || s1.ZoneId != "cn-hangzhou-h" || !strings.HasPrefix(s1.MacAddress, "00:16:3e:") || s1.SourceDestCheck {
		t.Fatalf("eni: %+v", s1)
	}

	var all []string
	token := ""
	for n := 0; n < 5; n++ {
		r := ecs.CreateDescribeNetworkInterfacesRequest()
		r.MaxResults, r.NextToken = requests.NewInteger(3), token
		resp, err := c.DescribeNetworkInterfaces(r)
		noErr(t, err)
		for _, e := range resp.NetworkInterfaceSets.NetworkInterfaceSet {
			all = append(all, e.NetworkInterfaceId)
		}
		if token = resp.NextToken; token == "" {
			break
		}
	}
	if len(all) != 4 {
		t.Fatalf("token paging: %v", all)
	}

	m := ecs.CreateModifyNetworkInterfaceAttributeRequest()
	m.NetworkInterfaceId, m.NetworkInterfaceName = "eni-p2", "renamed"
	m.SourceDestCheck = requests.NewBoolean(true)
	m.SecurityGroupId = &[]string{"sg-a"}
	_, err = c.ModifyNetworkInterfaceAttribute(m)
	noErr(t, err)
	r = ecs.CreateDescribeNetworkInterfacesRequest()
	r.NetworkInterfaceId = &[]string{"eni-p2"}
	resp, err = c.DescribeNetworkInterfaces(r)
	noErr(t, err)
	p2 := resp.NetworkInterfaceSets.NetworkInterfaceSet[0]
	if p2.NetworkInterfaceName != "renamed" || !p2.SourceDestCheck || len(p2.SecurityGroupIds.SecurityGroupId) != 1 || p2.SecurityGroupIds.SecurityGroupId[0] != "sg-a" {
		t.Fatalf("modified: %+v", p2)
	}
	// The primary ENI's groups are the instance's groups.
	if sg := describe(t, c, func(r *ecs.DescribeInstancesRequest) { r.InstanceIds = jsonList("i-2") }).Instances.Instance[0].SecurityGroupIds.SecurityGroupId; len(sg) != 1 || sg[0] != "sg-a" {
		t.Fatalf("instance groups %v", sg)
	}
	m.NetworkInterfaceId = "eni-missing"
	_, err = c.ModifyNetworkInterfaceAttribute(m)
	wantErr(t, err, "InvalidEniId.NotFound", http.StatusNotFound)
	m.NetworkInterfaceId, m.SecurityGroupId = "eni-p2", &[]string{"sg-b"}
	_, err = c.ModifyNetworkInterfaceAttribute(m)
	wantErr(t, err, "InvalidSecurityGroup.VpcMismatch", http.StatusBadRequest)
}

func TestSecurityGroups(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	c := env.ECS(t)
	cr := ecs.CreateCreateSecurityGroupRequest()
	cr.VpcId, cr.SecurityGroupName, cr.ClientToken = "vpc-a", "web", "sg-token"
	cr.Tag = &[]ecs.CreateSecurityGroupTag{{Key: "tier", Value: "web"}}
	g, err := c.CreateSecurityGroup(cr)
	noErr(t, err)
	again, err := c.CreateSecurityGroup(cr)
	noErr(t, err)
	if !strings.HasPrefix(g.SecurityGroupId, "sg-") || again.SecurityGroupId != g.SecurityGroupId {
		t.Fatalf("create: %s %s", g.SecurityGroupId, again.SecurityGroupId)
	}
	missing := ecs.CreateCreateSecurityGroupRequest()
	missing.VpcId = "vpc-missing"
	_, err = c.CreateSecurityGroup(missing)
	wantErr(t, err, "InvalidVpcId.NotFound", http.StatusNotFound)

	ds := ecs.CreateDescribeSecurityGroupsRequest()
	ds.VpcId = "vpc-a"
	list, err := c.DescribeSecurityGroups(ds)
	noErr(t, err)
	if list.TotalCount != 2 || list.RegionId != env.Region {
		t.Fatalf("list: %+v", list)
	}
	ds.Tag = &[]ecs.DescribeSecurityGroupsTag{{Key: "tier", Value: "web"}}
	list, err = c.DescribeSecurityGroups(ds)
	noErr(t, err)
	if list.TotalCount != 1 || list.SecurityGroups.SecurityGroup[0].SecurityGroupName != "web" || list.SecurityGroups.SecurityGroup[0].VpcId != "vpc-a" {
		t.Fatalf("tag filter: %+v", list.SecurityGroups)
	}
	page := ecs.CreateDescribeSecurityGroupsRequest()
	page.PageSize = requests.NewInteger(2)
	list, err = c.DescribeSecurityGroups(page)
	noErr(t, err)
	if list.TotalCount != 3 || len(list.SecurityGroups.SecurityGroup) != 2 {
		t.Fatalf("paging: %+v", list)
	}

	auth := ecs.CreateAuthorizeSecurityGroupRequest()
	auth.SecurityGroupId, auth.IpProtocol, auth.PortRange, auth.SourceCidrIp = g.SecurityGroupId, "tcp", "80/80", "0.0.0.0/0"
	_, err = c.AuthorizeSecurityGroup(auth)
	noErr(t, err)
	_, err = c.AuthorizeSecurityGroup(auth) // an identical rule is not added twice
	noErr(t, err)
	multi := ecs.CreateAuthorizeSecurityGroupRequest()
	multi.SecurityGroupId = g.SecurityGroupId
	multi.Permissions = &[]ecs.AuthorizeSecurityGroupPermissions{
		{IpProtocol: "udp", PortRange: "53/53", SourceCidrIp: "10.0.0.0/8", Policy: "drop", Priority: "5"},
		{IpProtocol: "icmp", PortRange: "-1/-1", SourceGroupId: "sg-a"},
	}
	_, err = c.AuthorizeSecurityGroup(multi)
	noErr(t, err)
	bad := []struct {
		proto, ports, src, code string
	}{
		{"tcp", "0/80", "0.0.0.0/0", "InvalidPortRange.Malformed"},
		{"icmp", "1/2", "0.0.0.0/0", "InvalidPortRange.Malformed"},
		{"sctp", "1/2", "0.0.0.0/0", "InvalidIpProtocol.Malformed"},
		{"tcp", "1/2", "not-a-cidr", "InvalidSourceCidrIp.Malformed"},
	}
	for _, b := range bad {
		r := ecs.CreateAuthorizeSecurityGroupRequest()
		r.SecurityGroupId, r.IpProtocol, r.PortRange, r.SourceCidrIp = g.SecurityGroupId, b.proto, b.ports, b.src
		_, err := c.AuthorizeSecurityGroup(r)
		wantErr(t, err, b.code, http.StatusBadRequest)
	}

	attr := func() []ecs.Permission {
		r := ecs.CreateDescribeSecurityGroupAttributeRequest()
		r.SecurityGroupId = g.SecurityGroupId
		resp, err := c.DescribeSecurityGroupAttribute(r)
		noErr(t, err)
		if resp.VpcId != "vpc-a" || resp.SecurityGroupName != "web" {
			t.Fatalf("attribute: %+v", resp)
		}
		return resp.Permissions.Permission
	}
	perms := attr()
	if len(perms) != 3 || perms[0].IpProtocol != "TCP" || perms[0].Policy != "accept" || perms[0].Priority != "1" || perms[0].Direction != "ingress" ||
		perms[1].Policy != "drop" || perms[2].SourceGroupId != "sg-a" || !strings.HasPrefix(perms[0].SecurityGroupRuleId, "sgr-") {
		t.Fatalf("perms: %+v", perms)
	}

	mod := ecs.CreateModifySecurityGroupRuleRequest()
	mod.SecurityGroupId, mod.SecurityGroupRuleId, mod.Description, mod.Priority = g.SecurityGroupId, perms[0].SecurityGroupRuleId, "http", "10"
	_, err = c.ModifySecurityGroupRule(mod)
	noErr(t, err)
	byMatch := ecs.CreateModifySecurityGroupRuleRequest()
	byMatch.SecurityGroupId, byMatch.IpProtocol, byMatch.PortRange, byMatch.SourceCidrIp, byMatch.Policy = g.SecurityGroupId, "udp", "53/53", "10.0.0.0/8", "accept"
	_, err = c.ModifySecurityGroupRule(byMatch)
	noErr(t, err)
	perms = attr()
	if perms[0].Description != "http" || perms[0].Priority != "10" || perms[0].PortRange != "80/80" || perms[1].Policy != "accept" {
		t.Fatalf("modified: %+v", perms)
	}
	mod.SecurityGroupRuleId = "sgr-missing"
	_, err = c.ModifySecurityGroupRule(mod)
	wantErr(t, err, "InvalidSecurityGroupRuleId.NotFound", http.StatusNotFound)

	rv := ecs.CreateRevokeSecurityGroupRequest()
	rv.SecurityGroupId, rv.IpProtocol, rv.PortRange, rv.SourceCidrIp, rv.Priority = g.SecurityGroupId, "TCP", "80/80", "0.0.0.0/0", "10"
	_, err = c.RevokeSecurityGroup(rv)
	noErr(t, err)
	byID := ecs.CreateRevokeSecurityGroupRequest()
	byID.SecurityGroupId, byID.SecurityGroupRuleId = g.SecurityGroupId, &[]string{perms[2].SecurityGroupRuleId}
	_, err = c.RevokeSecurityGroup(byID)
	noErr(t, err)
	if perms = attr(); len(perms) != 1 || perms[0].IpProtocol != "UDP" {
		t.Fatalf("after revoke: %+v", perms)
	}

	ma := ecs.CreateModifySecurityGroupAttributeRequest()
	ma.SecurityGroupId, ma.SecurityGroupName, ma.Description = g.SecurityGroupId, "web2", "frontends"
	_, err = c.ModifySecurityGroupAttribute(ma)
	noErr(t, err)
	one := ecs.CreateDescribeSecurityGroupsRequest()
	one.SecurityGroupIds = jsonList(g.SecurityGroupId)
	list, err = c.DescribeSecurityGroups(one)
	noErr(t, err)
	if sg := list.SecurityGroups.SecurityGroup[0]; sg.SecurityGroupName != "web2" || sg.Description != "frontends" || sg.RuleCount != 1 {
		t.Fatalf("renamed: %+v", sg)
	}

	// sg-a is referenced by nothing now but used by an instance.
	env.Seed(t, &api.Seed{Instances: []api.SeedInstance{{ID: "i-1", VSwitchID: "vsw-a", SecurityGroupIDs: []string{"sg-a"}}}})
	del := ecs.CreateDeleteSecurityGroupRequest()
	del.SecurityGroupId = "sg-a"
	_, err = c.DeleteSecurityGroup(del)
	wantErr(t, err, "DependencyViolation", http.StatusForbidden)
	del.SecurityGroupId = g.SecurityGroupId
	_, err = c.DeleteSecurityGroup(del)
	noErr(t, err)
	_, err = c.DeleteSecurityGroup(del)
	wantErr(t, err, "InvalidSecurityGroupId.NotFound", http.StatusNotFound)
}

func TestTags(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	env.Seed(t, &api.Seed{Instances: []api.SeedInstance{
		{ID: "i-1", VSwitchID: "vsw-a", PrimaryENIID: "eni-1"},
		{ID: "i-2", VSwitchID: "vsw-a", Tags: map[string]string{"k8s": "yes"}},
	}})
	noErr(t, env.Emulator.Store.Settings().SetQuota(store.QuotaTagsPerResource, 3))
	c := env.ECS(t)
	tag := func(typ string, ids []string, tags ...ecs.TagResourcesTag) error {
		r := ecs.CreateTagResourcesRequest()
		r.ResourceType, r.ResourceId, r.Tag = typ, &ids, &tags
		_, err := c.TagResources(r)
		return err
	}
	noErr(t, tag("instance", []string{"i-1", "i-2"}, ecs.TagResourcesTag{Key: "a", Value: "1"}, ecs.TagResourcesTag{Key: "b", Value: "2"}))
	noErr(t, tag("securitygroup", []string{"sg-a"}, ecs.TagResourcesTag{Key: "a", Value: "sg"}))
	noErr(t, tag("eni", []string{"eni-1"}, ecs.TagResourcesTag{Key: "a", Value: "eni"}))
	noErr(t, tag("instance", []string{"i-1"}, ecs.TagResourcesTag{Key: "a", Value: "one"})) // overwrite
	wantErr(t, tag("instance", []string{"i-2"}, ecs.TagResourcesTag{Key: "c", Value: "3"}), "InvalidTagCount", http.StatusBadRequest)
	wantErr(t, tag("instance", []string{"i-1", "i-missing"}, ecs.TagResourcesTag{Key: "z"}), "InvalidResourceId.NotFound", http.StatusNotFound)
	wantErr(t, tag("disk", []string{"d-1"}, ecs.TagResourcesTag{Key: "z"}), "InvalidResourceType.NotFound", http.StatusBadRequest)
	wantErr(t, tag("instance", []string{"i-1"}, ecs.TagResourcesTag{Key: "aliyun-x"}), "InvalidTagKey.Malformed", http.StatusBadRequest)

	list := func(typ string, ids []string, filter ...ecs.ListTagResourcesTag) []string {
		t.Helper()
		r := ecs.CreateListTagResourcesRequest()
		r.ResourceType = typ
		if ids != nil {
			r.ResourceId = &ids
		}
		if filter != nil {
			r.Tag = &filter
		}
		resp, err := c.ListTagResources(r)
		noErr(t, err)
		var out []string
		for _, tr := range resp.TagResources.TagResource {
			out = append(out, tr.ResourceId+":"+tr.TagKey+"="+tr.TagValue)
		}
		sort.Strings(out)
		return out
	}
	if got := strings.Join(list("instance", []string{"i-1"}), ","); got != "i-1:a=one,i-1:b=2" {
		t.Fatalf("by id: %s", got)
	}
	if got := strings.Join(list("instance", nil, ecs.ListTagResourcesTag{Key: "k8s", Value: "yes"}), ","); got != "i-2:a=1,i-2:b=2,i-2:k8s=yes" {
		t.Fatalf("by tag: %s", got)
	}
	if got := strings.Join(list("securitygroup", nil), ","); got != "sg-a:a=sg" {
		t.Fatalf("groups: %s", got)
	}
	if got := strings.Join(list("eni", []string{"eni-1"}), ","); got != "eni-1:a=eni" {
		t.Fatalf("enis: %s", got)
	}
	// Tag filters work on DescribeInstances too.
	if d := describe(t, c, func(r *ecs.DescribeInstancesRequest) {
		r.Tag = &[]ecs.DescribeInstancesTag{{Key: "a", Value: "one"}}
	}); d.TotalCount != 1 || d.Instances.Instance[0].InstanceId != "i-1" {
		t.Fatalf("describe by tag: %d", d.TotalCount)
	}

	un := ecs.CreateUntagResourcesRequest()
	un.ResourceType, un.ResourceId, un.TagKey = "instance", &[]string{"i-1"}, &[]string{"a"}
	_, err := c.UntagResources(un)
	noErr(t, err)
	if got := strings.Join(list("instance", []string{"i-1"}), ","); got != "i-1:b=2" {
		t.Fatalf("after untag: %s", got)
	}
	un.ResourceId, un.TagKey, un.All = &[]string{"i-2"}, nil, requests.NewBoolean(true)
	_, err = c.UntagResources(un)
	noErr(t, err)
	if got := list("instance", []string{"i-2"}); len(got) != 0 {
		t.Fatalf("after untag all: %v", got)
	}
}

func TestSeedValidationAndLookups(t *testing.T) {
	env := emulatortest.Start(t)
	network(t, env)
	for _, bad := range []api.SeedInstance{
		{VSwitchID: "vsw-x"},
		{VSwitchID: "vsw-a", SecurityGroupIDs: []string{"sg-b"}},
		{VSwitchID: "vsw-a", PrivateIP: "10.9.9.9"},
		{VSwitchID: "vsw-a", Status: "Exploded"},
	} {
		if _, err := env.Emulator.Seed(&api.Seed{Instances: []api.SeedInstance{bad}}); err == nil {
			t.Fatalf("seed %+v accepted", bad)
		}
	}
	ids := env.Seed(t, &api.Seed{Instances: []api.SeedInstance{
		{ID: "i-first", VSwitchID: "vsw-a", PrivateIP: "172.16.1.20", HostName: "node-1", InstanceType: "ecs.c6.xlarge", SecurityGroupIDs: []string{"sg-a"},
			SecondaryENIs: []api.SeedENI{{ID: "eni-sec", PrivateIPs: []string{"172.16.1.30"}}}},
		{ID: "i-second", VSwitchID: "vsw-b"},
	}})
	if strings.Join(ids["instance"], ",") != "i-first,i-second" || len(ids["eni"]) != 3 {
		t.Fatalf("seed ids: %v", ids)
	}
	if got := available(t, env, "vsw-a"); got != 250 {
		t.Fatalf("available %d", got)
	}
	e := env.Emulator.ECS
	st := env.Emulator.Store
	st.Lock()
	defer st.Unlock()
	inst, ok := e.Instance("i-first")
	if !ok || inst.VpcID != "vpc-a" || inst.VSwitchID != "vsw-a" || inst.ZoneID != "cn-hangzhou-h" || inst.PrivateIP != "172.16.1.20" ||
		inst.Status != "Running" || len(inst.ENIIDs) != 2 || inst.ENIIDs[1] != "eni-sec" || inst.RegionID != env.Region {
		t.Fatalf("Instance: %+v", inst)
	}
	if _, ok := e.Instance("i-x"); ok {
		t.Fatal("unknown instance found")
	}
	if eni, ok := e.ENI("eni-sec"); !ok || eni.InstanceID != "i-first" || eni.PrivateIPs[0] != "172.16.1.30" || eni.VpcID != "vpc-a" {
		t.Fatalf("ENI: %+v", eni)
	}
	if eni, ok := e.ENIByIP("vpc-a", "172.16.1.30"); !ok || eni.ID != "eni-sec" {
		t.Fatalf("ENIByIP: %+v", eni)
	}
	if _, ok := e.ENIByIP("vpc-b", "172.16.1.30"); ok {
		t.Fatal("ENIByIP ignored the VPC")
	}
	if v, ok := e.SecurityGroupVPC("sg-b"); !ok || v != "vpc-b" {
		t.Fatalf("SecurityGroupVPC: %s", v)
	}
	id, ok := e.Identity("")
	if !ok || id.InstanceID != "i-first" || id.Hostname != "node-1" || id.PrivateIPv4 != "172.16.1.20" || id.VpcCIDRBlock != "172.16.0.0/12" ||
		id.ZoneID != "cn-hangzhou-h" || id.VSwitchID != "vsw-a" || id.VpcID != "vpc-a" || id.InstanceType != "ecs.c6.xlarge" ||
		!strings.HasPrefix(id.MAC, "00:16:3e:") || id.RegionID != env.Region {
		t.Fatalf("Identity: %+v", id)
	}
	if id, ok := e.Identity("i-second"); !ok || id.VpcCIDRBlock != "10.0.0.0/8" {
		t.Fatalf("Identity second: %+v", id)
	}
	if _, ok := e.Identity("i-x"); ok {
		t.Fatal("identity of unknown instance")
	}
}
