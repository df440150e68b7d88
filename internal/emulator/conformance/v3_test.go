package conformance_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	openapiutil "github.com/alibabacloud-go/darabonba-openapi/v2/utils"
	ecs "github.com/alibabacloud-go/ecs-20140526/v7/client"
	"github.com/alibabacloud-go/tea/dara"
	vpc "github.com/alibabacloud-go/vpc-20160428/v6/client"

	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// The second client generation: the darabonba clients generated from the
// API models (signature V3, ACS3-HMAC-SHA256; Action and Version in
// headers only; repeat lists flattened by the generator; NLB parameters in
// the form body). ECS and VPC use their product modules; SLB and NLB use
// the generic CallApi, as the CCM's NLB client does (the module proxy does
// not serve slb-20140515/v4 or nlb-20220430/v4).

func v3Config(env *emulatortest.Env) *openapiutil.Config {
	return &openapiutil.Config{
		AccessKeyId: dara.String(emulatortest.AccessKeyID), AccessKeySecret: dara.String(emulatortest.AccessKeySecret),
		RegionId: dara.String(env.Region), Endpoint: dara.String(env.Endpoint), Protocol: dara.String("HTTP"),
	}
}

// TestV3ECSLifeCycle runs ECS reads, an ENI change, a security group's
// life and tags through ecs-20140526/v7.
func TestV3ECSLifeCycle(t *testing.T) {
	env := newWorld(t)
	c, err := ecs.NewClient(v3Config(env))
	emulatortest.NoError(t, err)
	region := dara.String(env.Region)

	ids, _ := json.Marshal([]string{worldInst1, worldInst2})
	insts, err := c.DescribeInstances(&ecs.DescribeInstancesRequest{RegionId: region, InstanceIds: dara.String(string(ids)),
		AdditionalAttributes: []*string{dara.String("NETWORK_PRIMARY_ENI_IP")}, MaxResults: dara.Int32(10)})
	emulatortest.NoError(t, err)
	if n := len(insts.Body.Instances.Instance); n != 2 {
		t.Fatalf("DescribeInstances: %d instances, want 2", n)
	}
	first := insts.Body.Instances.Instance[0]
	eni := dara.StringValue(first.NetworkInterfaces.NetworkInterface[0].NetworkInterfaceId)
	if ip := first.VpcAttributes.PrivateIpAddress.IpAddress; len(ip) != 1 || dara.StringValue(ip[0]) != "192.168.1.10" {
		t.Fatalf("private address %v", dara.StringSliceValue(ip))
	}

	_, err = c.ModifyNetworkInterfaceAttribute(&ecs.ModifyNetworkInterfaceAttributeRequest{RegionId: region,
		NetworkInterfaceId: dara.String(eni), SourceDestCheck: dara.Bool(false)})
	emulatortest.NoError(t, err)
	enis, err := c.DescribeNetworkInterfaces(&ecs.DescribeNetworkInterfacesRequest{RegionId: region,
		NetworkInterfaceId: []*string{dara.String(eni)}, MaxResults: dara.Int32(10)})
	emulatortest.NoError(t, err)
	if sets := enis.Body.NetworkInterfaceSets.NetworkInterfaceSet; len(sets) != 1 || dara.BoolValue(sets[0].SourceDestCheck) {
		t.Fatalf("ENI after SourceDestCheck=false: %v", sets)
	}

	sg, err := c.CreateSecurityGroup(&ecs.CreateSecurityGroupRequest{RegionId: region, VpcId: dara.String(worldVPC), SecurityGroupName: dara.String("v3")})
	emulatortest.NoError(t, err)
	sgID := sg.Body.SecurityGroupId
	_, err = c.AuthorizeSecurityGroup(&ecs.AuthorizeSecurityGroupRequest{RegionId: region, SecurityGroupId: sgID,
		Permissions: []*ecs.AuthorizeSecurityGroupRequestPermissions{{IpProtocol: dara.String("TCP"), PortRange: dara.String("443/443"), SourceCidrIp: dara.String("10.0.0.0/8")}}})
	emulatortest.NoError(t, err)
	attr, err := c.DescribeSecurityGroupAttribute(&ecs.DescribeSecurityGroupAttributeRequest{RegionId: region, SecurityGroupId: sgID})
	emulatortest.NoError(t, err)
	if p := attr.Body.Permissions.Permission; len(p) != 1 || dara.StringValue(p[0].PortRange) != "443/443" {
		t.Fatalf("rules after AuthorizeSecurityGroup with Permissions.N: %v", p)
	}

	_, err = c.TagResources(&ecs.TagResourcesRequest{RegionId: region, ResourceType: dara.String("instance"),
		ResourceId: []*string{dara.String(worldInst2)}, Tag: []*ecs.TagResourcesRequestTag{{Key: dara.String("v3"), Value: dara.String("yes")}}})
	emulatortest.NoError(t, err)
	tags, err := c.ListTagResources(&ecs.ListTagResourcesRequest{RegionId: region, ResourceType: dara.String("instance"), ResourceId: []*string{dara.String(worldInst2)}})
	emulatortest.NoError(t, err)
	if tr := tags.Body.TagResources.TagResource; len(tr) != 1 || dara.StringValue(tr[0].TagKey) != "v3" {
		t.Fatalf("tags %v", tr)
	}
	_, err = c.UntagResources(&ecs.UntagResourcesRequest{RegionId: region, ResourceType: dara.String("instance"),
		ResourceId: []*string{dara.String(worldInst2)}, TagKey: []*string{dara.String("v3")}})
	emulatortest.NoError(t, err)
	_, err = c.DeleteSecurityGroup(&ecs.DeleteSecurityGroupRequest{RegionId: region, SecurityGroupId: sgID})
	emulatortest.NoError(t, err)

	_, err = c.DescribeInstanceAttribute(&ecs.DescribeInstanceAttributeRequest{InstanceId: dara.String("i-missing")})
	emulatortest.WantTeaError(t, err, "InvalidInstanceId.NotFound", http.StatusNotFound)
	_, err = c.DescribeInstances(&ecs.DescribeInstancesRequest{RegionId: dara.String("cn-nowhere")})
	emulatortest.WantTeaError(t, err, "InvalidRegionId.NotFound", http.StatusNotFound)
	_, err = c.DescribeInstances(&ecs.DescribeInstancesRequest{})
	emulatortest.WantTeaError(t, err, "MissingParameter", http.StatusBadRequest)
}

// TestV3VPCLifeCycle runs VPC reads and the route entry calls the CCM
// makes (batch and single) through vpc-20160428/v6.
func TestV3VPCLifeCycle(t *testing.T) {
	env := newWorld(t)
	c, err := vpc.NewClient(v3Config(env))
	emulatortest.NoError(t, err)
	region := dara.String(env.Region)

	v, err := c.DescribeVpcAttribute(&vpc.DescribeVpcAttributeRequest{RegionId: region, VpcId: dara.String(worldVPC)})
	emulatortest.NoError(t, err)
	if dara.StringValue(v.Body.CidrBlock) != "192.168.0.0/16" || len(v.Body.VSwitchIds.VSwitchId) != 2 {
		t.Fatalf("VPC %+v", v.Body)
	}
	sw, err := c.DescribeVSwitchAttributes(&vpc.DescribeVSwitchAttributesRequest{RegionId: region, VSwitchId: dara.String(worldVSW1)})
	emulatortest.NoError(t, err)
	if dara.StringValue(sw.Body.ZoneId) != worldZone1 {
		t.Fatalf("vSwitch zone %s", dara.StringValue(sw.Body.ZoneId))
	}
	tables, err := c.DescribeRouteTableList(&vpc.DescribeRouteTableListRequest{RegionId: region, VpcId: dara.String(worldVPC)})
	emulatortest.NoError(t, err)
	if l := tables.Body.RouterTableList.RouterTableListType; len(l) != 1 || dara.StringValue(l[0].RouteTableId) != worldTable {
		t.Fatalf("route tables %v", l)
	}

	created, err := c.CreateRouteEntries(&vpc.CreateRouteEntriesRequest{RegionId: region, RouteEntries: []*vpc.CreateRouteEntriesRequestRouteEntries{
		{RouteTableId: dara.String(worldTable), DstCidrBlock: dara.String("172.20.1.0/24"), NextHop: dara.String(worldInst1), NextHopType: dara.String("Instance")},
		{RouteTableId: dara.String(worldTable), DstCidrBlock: dara.String("172.20.2.0/24"), NextHop: dara.String(worldInst2), NextHopType: dara.String("Instance")},
	}})
	emulatortest.NoError(t, err)
	if dara.Int32Value(created.Body.SuccessCount) != 2 {
		t.Fatalf("CreateRouteEntries: %+v", created.Body)
	}
	single, err := c.CreateRouteEntry(&vpc.CreateRouteEntryRequest{RegionId: region, RouteTableId: dara.String(worldTable),
		DestinationCidrBlock: dara.String("172.20.3.0/24"), NextHopType: dara.String("Instance"), NextHopId: dara.String(worldInst1)})
	emulatortest.NoError(t, err)
	list, err := c.DescribeRouteEntryList(&vpc.DescribeRouteEntryListRequest{RegionId: region, RouteTableId: dara.String(worldTable),
		RouteEntryType: dara.String("Custom"), MaxResult: dara.Int32(100)})
	emulatortest.NoError(t, err)
	if n := len(list.Body.RouteEntrys.RouteEntry); n != 3 {
		t.Fatalf("%d custom routes, want 3", n)
	}
	_, err = c.DeleteRouteEntry(&vpc.DeleteRouteEntryRequest{RegionId: region, RouteEntryId: single.Body.RouteEntryId})
	emulatortest.NoError(t, err)
	deleted, err := c.DeleteRouteEntries(&vpc.DeleteRouteEntriesRequest{RegionId: region, RouteEntries: []*vpc.DeleteRouteEntriesRequestRouteEntries{
		{RouteTableId: dara.String(worldTable), DstCidrBlock: dara.String("172.20.1.0/24"), NextHop: dara.String(worldInst1)},
		{RouteTableId: dara.String(worldTable), DstCidrBlock: dara.String("172.20.2.0/24"), NextHop: dara.String(worldInst2)},
	}})
	emulatortest.NoError(t, err)
	if dara.Int32Value(deleted.Body.SuccessCount) != 2 {
		t.Fatalf("DeleteRouteEntries: %+v", deleted.Body)
	}
	_, err = c.DeleteRouteEntry(&vpc.DeleteRouteEntryRequest{RegionId: region, RouteEntryId: dara.String("rte-missing")})
	emulatortest.WantTeaError(t, err, "InvalidRouteEntry.NotFound", http.StatusNotFound)
	_, err = c.DescribeVpcAttribute(&vpc.DescribeVpcAttributeRequest{RegionId: dara.String("cn-nowhere"), VpcId: dara.String(worldVPC)})
	emulatortest.WantTeaError(t, err, "InvalidRegionId.NotFound", http.StatusNotFound)
}

// v3call is one generic CallApi call; its JSON body is returned.
type v3call func(t *testing.T, action string, params map[string]any) (map[string]any, error)

func v3caller(env *emulatortest.Env, version string, inBody bool) v3call {
	return func(t *testing.T, action string, params map[string]any) (map[string]any, error) {
		t.Helper()
		c, err := openapi.NewClient(v3Config(env))
		emulatortest.NoError(t, err)
		var query map[string]string
		var body map[string]any
		if inBody {
			body = params
		} else {
			query = map[string]string{}
			for k, v := range params {
				query[k] = fmt.Sprint(v)
			}
		}
		out, err := emulatortest.CallV3(c, action, version, query, body)
		if err != nil {
			return nil, err
		}
		b, _ := out["body"].(map[string]any)
		return b, nil
	}
}

// must calls action and fails the test on an error.
func (c v3call) must(t *testing.T, action string, params map[string]any) map[string]any {
	t.Helper()
	out, err := c(t, action, params)
	emulatortest.NoError(t, err)
	return out
}

// TestV3CLBLifeCycle runs a CLB create → listeners → backends → delete
// through CallApi (query parameters, JSON-string BackendServers, repeat
// lists).
func TestV3CLBLifeCycle(t *testing.T) {
	env := newWorld(t)
	call := v3caller(env, "2014-05-15", false)
	r := env.Region
	lb := call.must(t, "CreateLoadBalancer", map[string]any{"RegionId": r, "LoadBalancerName": "v3", "AddressType": "intranet", "VSwitchId": worldVSW1})
	id := lb["LoadBalancerId"].(string)
	vsg := call.must(t, "CreateVServerGroup", map[string]any{"RegionId": r, "LoadBalancerId": id, "VServerGroupName": "v3",
		"BackendServers": `[{"serverId":"` + worldInst1 + `","weight":100,"port":30080,"type":"ecs"}]`})
	gid := vsg["VServerGroupId"].(string)
	call.must(t, "CreateLoadBalancerTCPListener", map[string]any{"RegionId": r, "LoadBalancerId": id, "ListenerPort": 80,
		"VServerGroupId": gid, "Bandwidth": -1, "Scheduler": "wrr", "Description": "k8s/80/web/default/clusterid"})
	call.must(t, "StartLoadBalancerListener", map[string]any{"RegionId": r, "LoadBalancerId": id, "ListenerPort": 80})
	listeners := call.must(t, "DescribeLoadBalancerListeners", map[string]any{"RegionId": r, "LoadBalancerId.1": id})
	if l, _ := listeners["Listeners"].([]any); len(l) != 1 {
		t.Fatalf("listeners %v", listeners)
	}
	call.must(t, "AddVServerGroupBackendServers", map[string]any{"RegionId": r, "VServerGroupId": gid,
		"BackendServers": `[{"ServerId":"` + worldInst2 + `","Weight":"50","Port":"30080"}]`})
	attr := call.must(t, "DescribeVServerGroupAttribute", map[string]any{"RegionId": r, "VServerGroupId": gid})
	if b, _ := attr["BackendServers"].(map[string]any)["BackendServer"].([]any); len(b) != 2 {
		t.Fatalf("backends %v", attr)
	}
	call.must(t, "TagResources", map[string]any{"RegionId": r, "ResourceType": "instance", "ResourceId.1": id, "Tag.1.Key": "kubernetes.do.not.delete", "Tag.1.Value": "v3"})
	tags := call.must(t, "ListTagResources", map[string]any{"RegionId": r, "ResourceType": "instance", "ResourceId.1": id})
	if tr, _ := tags["TagResources"].(map[string]any)["TagResource"].([]any); len(tr) != 1 {
		t.Fatalf("tags %v", tags)
	}
	call.must(t, "RemoveVServerGroupBackendServers", map[string]any{"RegionId": r, "VServerGroupId": gid,
		"BackendServers": `[{"ServerId":"` + worldInst2 + `","Port":"30080"}]`})
	call.must(t, "DeleteLoadBalancerListener", map[string]any{"RegionId": r, "LoadBalancerId": id, "ListenerPort": 80})
	call.must(t, "DeleteVServerGroup", map[string]any{"RegionId": r, "VServerGroupId": gid})
	call.must(t, "SetLoadBalancerDeleteProtection", map[string]any{"RegionId": r, "LoadBalancerId": id, "DeleteProtection": "off"})
	call.must(t, "DeleteLoadBalancer", map[string]any{"RegionId": r, "LoadBalancerId": id})

	_, err := call(t, "DescribeLoadBalancerAttribute", map[string]any{"RegionId": r, "LoadBalancerId": id})
	emulatortest.WantTeaError(t, err, "InvalidLoadBalancerId.NotFound", http.StatusNotFound)
	_, err = call(t, "CreateLoadBalancerTCPListener", map[string]any{"RegionId": r, "LoadBalancerId": id, "ListenerPort": 80, "Scheduler": "wlc"})
	emulatortest.WantTeaError(t, err, "InvalidLoadBalancerId.NotFound", http.StatusNotFound)
	_, err = call(t, "DescribeLoadBalancers", map[string]any{"RegionId": "cn-nowhere"})
	emulatortest.WantTeaError(t, err, "InvalidRegionId.NotFound", http.StatusNotFound)
	_, err = call(t, "DescribeLoadBalancers", map[string]any{})
	emulatortest.WantTeaError(t, err, "MissingParameter", http.StatusBadRequest)
}

// TestV3NLBLifeCycle runs an NLB create → server group → backends →
// listener → delete through CallApi with the parameters in the form body,
// as the CCM's NLB client sends them.
func TestV3NLBLifeCycle(t *testing.T) {
	env := newWorld(t)
	call := v3caller(env, "2022-04-30", true)
	lb := call.must(t, "CreateLoadBalancer", map[string]any{"LoadBalancerType": "Network", "AddressType": "Intranet", "VpcId": worldVPC,
		"LoadBalancerName": "v3", "ZoneMappings": []map[string]any{{"ZoneId": worldZone1, "VSwitchId": worldVSW1}, {"ZoneId": worldZone2, "VSwitchId": worldVSW2}}})
	id := lb["LoadbalancerId"].(string)
	if lb["JobId"] == "" || lb["JobId"] == nil {
		t.Fatalf("CreateLoadBalancer without JobId: %v", lb)
	}
	emulatortest.Eventually(t, "NLB active", func() bool {
		got, err := call(t, "GetLoadBalancerAttribute", map[string]any{"LoadBalancerId": id})
		return err == nil && got["LoadBalancerStatus"] == "Active"
	})
	sg := call.must(t, "CreateServerGroup", map[string]any{"ServerGroupName": "v3", "VpcId": worldVPC, "Protocol": "TCP",
		"HealthCheckConfig": map[string]any{"HealthCheckEnabled": true, "HealthCheckConnectTimeout": 5}})
	sgID := sg["ServerGroupId"].(string)
	call.must(t, "AddServersToServerGroup", map[string]any{"ServerGroupId": sgID,
		"Servers": []map[string]any{{"ServerId": worldInst1, "ServerType": "Ecs", "Port": 30080, "Weight": 100}}})
	lsn := call.must(t, "CreateListener", map[string]any{"LoadBalancerId": id, "ListenerProtocol": "TCP", "ListenerPort": 80, "ServerGroupId": sgID})
	lsnID := lsn["ListenerId"].(string)
	emulatortest.Eventually(t, "listener job", func() bool {
		got, err := call(t, "GetJobStatus", map[string]any{"JobId": lsn["JobId"]})
		return err == nil && got["Status"] == "Succeeded"
	})
	listed := call.must(t, "ListListeners", map[string]any{"LoadBalancerIds": []string{id}})
	if l, _ := listed["Listeners"].([]any); len(l) != 1 {
		t.Fatalf("listeners %v", listed)
	}
	servers := call.must(t, "ListServerGroupServers", map[string]any{"ServerGroupId": sgID})
	if s, _ := servers["Servers"].([]any); len(s) != 1 {
		t.Fatalf("servers %v", servers)
	}
	call.must(t, "TagResources", map[string]any{"ResourceType": "loadbalancer", "ResourceId": []string{id}, "Tag": []map[string]any{{"Key": "v3", "Value": "yes"}}})
	emulatortest.Eventually(t, "listener deleted", func() bool {
		_, err := call(t, "DeleteListener", map[string]any{"ListenerId": lsnID})
		return err == nil
	})
	emulatortest.Eventually(t, "server group deleted", func() bool {
		_, err := call(t, "DeleteServerGroup", map[string]any{"ServerGroupId": sgID})
		return err == nil
	})
	emulatortest.Eventually(t, "load balancer deleted", func() bool {
		_, err := call(t, "DeleteLoadBalancer", map[string]any{"LoadBalancerId": id})
		return err == nil
	})
	emulatortest.Eventually(t, "load balancer gone", func() bool {
		_, err := call(t, "GetLoadBalancerAttribute", map[string]any{"LoadBalancerId": id})
		return err != nil
	})
	_, err := call(t, "GetLoadBalancerAttribute", map[string]any{"LoadBalancerId": id})
	emulatortest.WantTeaError(t, err, "ResourceNotFound.loadBalancer", http.StatusNotFound)
	_, err = call(t, "ListLoadBalancers", map[string]any{"RegionId": "cn-nowhere"})
	emulatortest.WantTeaError(t, err, "UnauthorizedRegion", http.StatusBadRequest)
}
