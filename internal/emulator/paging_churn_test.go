package emulator_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// churnLister is one token-paged listing the CCM makes (internal/ccm:
// nodes/index.go, nodes/cloudcalls.go, routes/cloudcalls.go,
// service/clb/cloud.go, service/nlb/cloud.go), with how to make and remove
// the items it lists.
type churnLister struct {
	name, product, version, action string
	// list are the listing's fixed parameters (filters, page size).
	list map[string]string
	// pageSize names the page-size parameter (MaxResults, MaxResult).
	pageSize string
	// items extracts the ids of one page's answer.
	items func(body map[string]any) []string
	// create makes one item (n is unique) and returns its id; remove
	// deletes an item.
	create func(c *openapi.Client, n int) (string, error)
	remove func(c *openapi.Client, id string) error
}

// TestListingsUnderChurn pages every token-paged listing the CCM makes,
// three items a page, while another goroutine deletes items that sort
// among those already returned and creates new ones: every item that
// exists throughout must come back exactly once, and nothing twice. With
// the offset tokens the emulator had, a delete before the offset made the
// next page skip an item.
func TestListingsUnderChurn(t *testing.T) {
	// Zero timing: this test is about paging, and churn needs deletes to
	// take effect at once.
	env := emulatortest.StartWith(t, emulator.Config{Timing: store.TimingZero})
	ids := env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{{ID: "vpc-churn", CIDRBlock: "192.168.0.0/16", RouteTableID: "vtb-churn", VSwitches: []api.SeedVSwitch{
			{ID: "vsw-churn-h", ZoneID: "cn-hangzhou-h", CIDRBlock: "192.168.1.0/24"},
			{ID: "vsw-churn-i", ZoneID: "cn-hangzhou-i", CIDRBlock: "192.168.2.0/24"},
		}}},
		SecurityGroups: []api.SeedSecurityGroup{{ID: "sg-churn", VpcID: "vpc-churn"}},
		Instances:      seedInstances(40),
	})
	instances := ids["instance"]
	c := env.OpenAPI(t)
	nlbV, slbV, vpcV, ecsV := "2022-04-30", "2014-05-15", "2016-04-28", "2014-05-26"
	q := func(kv ...string) map[string]string {
		m := map[string]string{"RegionId": env.Region}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	call := func(action, version string, params map[string]string) (map[string]any, error) {
		out, err := emulatortest.CallV3(c, action, version, params, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", action, err)
		}
		body, _ := out["body"].(map[string]any)
		return body, nil
	}
	mustCall := func(action, version string, params map[string]string) map[string]any {
		t.Helper()
		body, err := call(action, version, params)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	// Fixtures the listings hang off.
	nlbID := str(mustCall("CreateLoadBalancer", nlbV, q("AddressType", "Intranet", "VpcId", "vpc-churn",
		"ZoneMappings.1.ZoneId", "cn-hangzhou-h", "ZoneMappings.1.VSwitchId", "vsw-churn-h",
		"ZoneMappings.2.ZoneId", "cn-hangzhou-i", "ZoneMappings.2.VSwitchId", "vsw-churn-i"))["LoadbalancerId"])
	sgpID := str(mustCall("CreateServerGroup", nlbV, q("ServerGroupName", "churn-fixture", "VpcId", "vpc-churn"))["ServerGroupId"])
	clbID := str(mustCall("CreateLoadBalancer", slbV, q("AddressType", "intranet", "VSwitchId", "vsw-churn-h", "LoadBalancerName", "churn"))["LoadBalancerId"])
	field := func(path ...string) func(map[string]any) []string {
		return func(body map[string]any) []string {
			var v any = body
			for _, p := range path[:len(path)-1] {
				m, _ := v.(map[string]any)
				v = m[p]
			}
			list, _ := v.([]any)
			var out []string
			for _, it := range list {
				m, _ := it.(map[string]any)
				out = append(out, str(m[path[len(path)-1]]))
			}
			return out
		}
	}
	created := func(key string) func(map[string]any, error) (string, error) {
		return func(body map[string]any, err error) (string, error) {
			if err != nil {
				return "", err
			}
			return str(body[key]), nil
		}
	}
	zones := []string{"ZoneMappings.1.ZoneId", "cn-hangzhou-h", "ZoneMappings.1.VSwitchId", "vsw-churn-h",
		"ZoneMappings.2.ZoneId", "cn-hangzhou-i", "ZoneMappings.2.VSwitchId", "vsw-churn-i"}

	cases := []churnLister{
		{
			name: "NLB ListLoadBalancers", product: "nlb", version: nlbV, action: "ListLoadBalancers",
			list: q("VpcIds.1", "vpc-churn"), pageSize: "MaxResults", items: field("LoadBalancers", "LoadBalancerId"),
			create: func(c *openapi.Client, n int) (string, error) {
				return created("LoadbalancerId")(call("CreateLoadBalancer", nlbV, q(append([]string{"AddressType", "Intranet", "VpcId", "vpc-churn"}, zones...)...)))
			},
			remove: func(c *openapi.Client, id string) error {
				_, err := call("DeleteLoadBalancer", nlbV, q("LoadBalancerId", id))
				return err
			},
		},
		{
			name: "NLB ListServerGroups", product: "nlb", version: nlbV, action: "ListServerGroups",
			list: q("VpcId", "vpc-churn"), pageSize: "MaxResults", items: field("ServerGroups", "ServerGroupId"),
			create: func(c *openapi.Client, n int) (string, error) {
				return created("ServerGroupId")(call("CreateServerGroup", nlbV, q("ServerGroupName", "churn-"+strconv.Itoa(n), "VpcId", "vpc-churn")))
			},
			remove: func(c *openapi.Client, id string) error {
				_, err := call("DeleteServerGroup", nlbV, q("ServerGroupId", id))
				return err
			},
		},
		{
			name: "NLB ListListeners", product: "nlb", version: nlbV, action: "ListListeners",
			list: q("LoadBalancerIds.1", nlbID), pageSize: "MaxResults", items: field("Listeners", "ListenerId"),
			create: func(c *openapi.Client, n int) (string, error) {
				return created("ListenerId")(call("CreateListener", nlbV, q("LoadBalancerId", nlbID, "ListenerProtocol", "TCP",
					"ListenerPort", strconv.Itoa(1000+n), "ServerGroupId", sgpID)))
			},
			remove: func(c *openapi.Client, id string) error {
				_, err := call("DeleteListener", nlbV, q("ListenerId", id))
				return err
			},
		},
		{
			name: "NLB ListServerGroupServers", product: "nlb", version: nlbV, action: "ListServerGroupServers",
			list: q("ServerGroupId", sgpID), pageSize: "MaxResults",
			items: func(body map[string]any) []string {
				var out []string
				for _, it := range body["Servers"].([]any) {
					m := it.(map[string]any)
					out = append(out, str(m["ServerId"])+":"+str(m["Port"]))
				}
				return out
			},
			create: func(c *openapi.Client, n int) (string, error) {
				inst, port := instances[n%len(instances)], strconv.Itoa(2000+n)
				_, err := call("AddServersToServerGroup", nlbV, q("ServerGroupId", sgpID, "Servers.1.ServerId", inst, "Servers.1.ServerType", "Ecs", "Servers.1.Port", port))
				return inst + ":" + port, err
			},
			remove: func(c *openapi.Client, id string) error {
				inst, port, _ := cut(id)
				_, err := call("RemoveServersFromServerGroup", nlbV, q("ServerGroupId", sgpID, "Servers.1.ServerId", inst, "Servers.1.ServerType", "Ecs", "Servers.1.Port", port))
				return err
			},
		},
		{
			name: "CLB DescribeLoadBalancerListeners", product: "slb", version: slbV, action: "DescribeLoadBalancerListeners",
			list: q("LoadBalancerId.1", clbID), pageSize: "MaxResults",
			items: func(body map[string]any) []string {
				var out []string
				for _, it := range body["Listeners"].([]any) {
					out = append(out, str(it.(map[string]any)["ListenerPort"]))
				}
				return out
			},
			create: func(c *openapi.Client, n int) (string, error) {
				port := strconv.Itoa(1000 + n)
				_, err := call("CreateLoadBalancerTCPListener", slbV, q("LoadBalancerId", clbID, "ListenerPort", port, "BackendServerPort", "80", "Bandwidth", "-1"))
				return port, err
			},
			remove: func(c *openapi.Client, id string) error {
				_, err := call("DeleteLoadBalancerListener", slbV, q("LoadBalancerId", clbID, "ListenerPort", id))
				return err
			},
		},
		{
			name: "VPC DescribeRouteEntryList", product: "vpc", version: vpcV, action: "DescribeRouteEntryList",
			list: q("RouteTableId", "vtb-churn", "RouteEntryType", "Custom"), pageSize: "MaxResult", items: field("RouteEntrys", "RouteEntry", "RouteEntryId"),
			create: func(c *openapi.Client, n int) (string, error) {
				return created("RouteEntryId")(call("CreateRouteEntry", vpcV, q("RouteTableId", "vtb-churn",
					"DestinationCidrBlock", fmt.Sprintf("10.%d.%d.0/24", n/250, n%250), "NextHopId", instances[n%len(instances)], "NextHopType", "Instance")))
			},
			remove: func(c *openapi.Client, id string) error {
				_, err := call("DeleteRouteEntry", vpcV, q("RouteEntryId", id))
				return err
			},
		},
		{
			name: "ECS DescribeInstances", product: "ecs", version: ecsV, action: "DescribeInstances",
			list: q("VSwitchId", "vsw-churn-i"), pageSize: "MaxResults", items: field("Instances", "Instance", "InstanceId"),
			create: func(c *openapi.Client, n int) (string, error) {
				body, err := call("RunInstances", ecsV, q("ImageId", "aliyun_3_x64_20G_alibase_20240819.vhd", "InstanceType", "ecs.g7.large",
					"VSwitchId", "vsw-churn-i", "SecurityGroupId", "sg-churn"))
				if err != nil {
					return "", err
				}
				if set, ok := body["InstanceIdSets"].(map[string]any); ok {
					if l, ok := set["InstanceIdSet"].([]any); ok && len(l) == 1 {
						return str(l[0]), nil
					}
				}
				return "", fmt.Errorf("RunInstances answered %v", body)
			},
			remove: func(c *openapi.Client, id string) error {
				_, err := call("DeleteInstance", ecsV, q("InstanceId", id, "Force", "true"))
				return err
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runChurn(t, tc, c, call)
		})
	}
}

// runChurn creates stable items interleaved with doomed ones, then pages
// the listing three at a time while a goroutine deletes the doomed items
// (which sort among the stable ones, before and after the cursor) and
// creates new ones.
func runChurn(t *testing.T, tc churnLister, c *openapi.Client, call func(string, string, map[string]string) (map[string]any, error)) {
	n := 0
	next := func() int { n++; return n + 100*len(tc.name)%50 }
	stable := map[string]bool{}
	var doomed []string
	for i := 0; i < 24; i++ {
		id, err := tc.create(c, next())
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			stable[id] = true
		} else {
			doomed = append(doomed, id)
		}
	}
	var (
		wg   sync.WaitGroup
		stop = make(chan struct{})
		errs = make(chan error, 1)
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if len(doomed) > 0 {
				err = tc.remove(c, doomed[0])
				doomed = doomed[1:]
			}
			if err == nil {
				var id string
				id, err = tc.create(c, next())
				doomed = append(doomed, id)
			}
			if err != nil {
				select {
				case errs <- err:
				default:
				}
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	seen := map[string]int{}
	token, pages := "", 0
	for {
		params := map[string]string{}
		for k, v := range tc.list {
			params[k] = v
		}
		params[tc.pageSize] = "3"
		if token != "" {
			params["NextToken"] = token
		}
		body, err := call(tc.action, tc.version, params)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		for _, id := range tc.items(body) {
			seen[id]++
		}
		pages++
		if token = str(body["NextToken"]); token == "" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("churn: %v", err)
	default:
	}
	if pages < 4 {
		t.Fatalf("only %d pages: the listing was not paged", pages)
	}
	for id := range stable {
		if seen[id] != 1 {
			t.Errorf("%s present throughout was listed %d times", id, seen[id])
		}
	}
	for id, k := range seen {
		if k > 1 {
			t.Errorf("%s listed %d times", id, k)
		}
	}
}

func seedInstances(n int) []api.SeedInstance {
	out := make([]api.SeedInstance, n)
	for i := range out {
		out[i] = api.SeedInstance{VSwitchID: "vsw-churn-h", HostName: fmt.Sprintf("churn-%d", i)}
	}
	return out
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

func cut(id string) (string, string, bool) {
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == ':' {
			return id[:i], id[i+1:], true
		}
	}
	return id, "", false
}
