package emulator_test

import (
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

func vpcIDs(t *testing.T, env *emulatortest.Env) []string {
	t.Helper()
	req := vpc.CreateDescribeVpcsRequest()
	req.PageSize = requests.NewInteger(50)
	resp, err := env.VPC(t).DescribeVpcs(req)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range resp.Vpcs.Vpc {
		ids = append(ids, v.VpcId+"="+v.CidrBlock)
	}
	sort.Strings(ids)
	return ids
}

// TestStatePersistsAcrossRestart seeds and mutates an emulator with a state
// file, closes it, reopens the file and checks through the SDK that
// everything is still there and that the seed is not applied again.
func TestStatePersistsAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	seed := &api.Seed{VPCs: []api.SeedVPC{{ID: "vpc-bp1seeded00000000001", CIDRBlock: "192.168.0.0/16",
		VSwitches: []api.SeedVSwitch{{ZoneID: "cn-hangzhou-h", CIDRBlock: "192.168.1.0/24"}}}}}

	e1, err := emulator.New(emulator.Config{StatePath: path, AccessKeys: []emulator.AccessKey{{ID: emulatortest.AccessKeyID, Secret: emulatortest.AccessKeySecret}}})
	if err != nil {
		t.Fatal(err)
	}
	if seeded, err := e1.SeedIfEmpty(seed); err != nil || !seeded {
		t.Fatalf("first seed: %v %v", seeded, err)
	}
	_ = e1.Close()

	// A second, unrelated file must not see the first one's state.
	env := emulatortest.StartWith(t, emulator.Config{StatePath: path + ".unused"})
	if ids := vpcIDs(t, env); len(ids) != 0 {
		t.Fatalf("fresh file has VPCs %v", ids)
	}

	env1 := emulatortest.StartWith(t, emulator.Config{StatePath: path})
	create := vpc.CreateCreateVpcRequest()
	create.CidrBlock = "10.0.0.0/8"
	create.VpcName = "made-by-sdk"
	created, err := env1.VPC(t).CreateVpc(create)
	if err != nil {
		t.Fatal(err)
	}
	before := vpcIDs(t, env1)
	if len(before) != 2 {
		t.Fatalf("before restart %v", before)
	}
	if err := env1.Emulator.Close(); err != nil {
		t.Fatal(err)
	}

	env2 := emulatortest.StartWith(t, emulator.Config{StatePath: path})
	if seeded, err := env2.Emulator.SeedIfEmpty(seed); err != nil || seeded {
		t.Fatalf("seed applied to a non-empty state: %v %v", seeded, err)
	}
	after := vpcIDs(t, env2)
	if len(after) != 2 || after[0] != before[0] || after[1] != before[1] {
		t.Fatalf("after restart %v, before %v", after, before)
	}
	attr := vpc.CreateDescribeVpcAttributeRequest()
	attr.VpcId = created.VpcId
	got, err := env2.VPC(t).DescribeVpcAttribute(attr)
	if err != nil || got.VpcName != "made-by-sdk" {
		t.Fatalf("created VPC after restart: %+v %v", got, err)
	}
}

// TestMetadataDescribesTheFirstInstance checks the metadata service against
// a seeded ECS instance.
func TestMetadataDescribesTheFirstInstance(t *testing.T) {
	env := emulatortest.Start(t)
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{{ID: "vpc-bp1meta000000000000001", CIDRBlock: "172.16.0.0/12",
			VSwitches: []api.SeedVSwitch{{ID: "vsw-bp1meta000000000000001", ZoneID: "cn-hangzhou-k", CIDRBlock: "172.16.5.0/24"}}}},
		Instances: []api.SeedInstance{{ID: "i-bp1meta000000000000001", HostName: "worker-0", InstanceType: "ecs.g7.xlarge",
			VSwitchID: "vsw-bp1meta000000000000001", PrivateIP: "172.16.5.20"}},
	})
	for path, want := range map[string]string{
		"instance-id": "i-bp1meta000000000000001", "vpc-id": "vpc-bp1meta000000000000001", "zone-id": "cn-hangzhou-k",
		"vswitch-id": "vsw-bp1meta000000000000001", "private-ipv4": "172.16.5.20", "region-id": "cn-hangzhou",
		"vpc-cidr-block": "172.16.0.0/12", "hostname": "worker-0", "instance/instance-type": "ecs.g7.xlarge",
	} {
		resp, err := http.Get(env.URL() + "/latest/meta-data/" + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != want {
			t.Fatalf("%s: %d %q, want %q", path, resp.StatusCode, b, want)
		}
	}
}

// TestRequestsAndCounters checks the in-process request log API the CCM's
// tests count calls with.
func TestRequestsAndCounters(t *testing.T) {
	env := emulatortest.Start(t)
	c := env.VPC(t)
	for i := 0; i < 3; i++ {
		if _, err := c.DescribeVpcs(vpc.CreateDescribeVpcsRequest()); err != nil {
			t.Fatal(err)
		}
	}
	attr := vpc.CreateDescribeVpcAttributeRequest()
	attr.VpcId = "vpc-bp1doesnotexist00000"
	if _, err := c.DescribeVpcAttribute(attr); err == nil {
		t.Fatal("want an error for an unknown VPC")
	}
	if n := env.Emulator.Calls("vpc", "DescribeVpcs"); n != 3 {
		t.Fatalf("DescribeVpcs calls %d", n)
	}
	all := env.Emulator.Requests()
	if len(all) != 4 || all[3].Action != "DescribeVpcAttribute" || all[3].Code == gateway.CodeOK || all[3].Params["VpcId"] != attr.VpcId {
		t.Fatalf("requests %+v", all)
	}
	some := env.Emulator.Requests(gateway.RequestFilter{Action: "DescribeVpcAttribute"}, gateway.RequestFilter{AfterSeq: all[1].Seq})
	if len(some) != 2 || some[0].Seq != all[2].Seq {
		t.Fatalf("filtered %+v", some)
	}
	var errs int
	for _, c := range env.Emulator.Counters() {
		errs += c.Errors
	}
	if errs != 1 {
		t.Fatalf("errors %d", errs)
	}
}
