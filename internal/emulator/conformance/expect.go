package conformance

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// This file holds what the strict model check (Check) cannot see: the
// members a real client reads from an answer (a missing one decodes to a
// zero value without complaint), the documented values of enumerated
// members (a lower-cased status decodes just as well), and the error
// answers each action may give. Every expectation cites where it was read;
// none is taken from the emulator's own output.

// Sources.
const (
	ccmCLB  = "internal/ccm/service/clb/lb.go, groups.go, listeners.go"
	ccmNLB  = "internal/ccm/service/nlb/cloud.go, jobs.go"
	ccmNode = "internal/ccm/nodes/index.go, instances.go"
	ccmRt   = "internal/cloud/vpcroutes.go"
	tfSLB   = "github.com/aliyun/terraform-provider-alicloud alicloud/service_alicloud_slb.go (DescribeSlb*, WaitForSlb*)"
	tfNLB   = "github.com/aliyun/terraform-provider-alicloud alicloud/service_alicloud_nlb_v2.go (DescribeNlb*, *StateRefreshFunc)"
	sdkSLB  = "github.com/alibabacloud-go/slb-20140515 client/*_response_body_model.go"
	sdkNLB  = "github.com/alibabacloud-go/nlb-20220430 client/client.go *ResponseBody*"
	apiRef  = "alibaba-openapi.md §1.7 (the project's notes of the error tables)"
	tfErr   = "github.com/aliyun/terraform-provider-alicloud alicloud/errors.go and the IsExpectedErrors calls of its SLB, NLB, ECS and VPC resources"
	ecsDocs = "ECS API reference, DescribeInstances Status"
	vpcDocs = "VPC API reference, DescribeRouteEntryList Status"
	nlbHlth = "NLB API reference, GetListenerHealthStatus (https://help.aliyun.com/zh/slb/api-getlistenerhealthstatus-nlb)"
)

// Expectation is what a successful answer of one action must carry.
type Expectation struct {
	// Required are the member paths a client reads: dotted names, an
	// array's items written Name[] (each item must have the rest).
	Required []string
	// Enums maps a member path to its documented values.
	Enums map[string]Enum
	// Source says who reads the members.
	Source string
}

// Enum is the documented set of an enumerated member.
type Enum struct {
	Values []string
	// FoldCase accepts any letter case, where the documentation itself
	// spells a value in more than one case.
	FoldCase bool
	Source   string
}

var (
	clbLBStatus  = Enum{Values: []string{"inactive", "active", "locked"}, Source: sdkSLB + " LoadBalancerStatus"}
	clbAddrType  = Enum{Values: []string{"internet", "intranet"}, Source: sdkSLB + " AddressType"}
	clbNetwork   = Enum{Values: []string{"vpc", "classic"}, Source: sdkSLB + " NetworkType"}
	clbCharge    = Enum{Values: []string{"paybytraffic", "paybybandwidth"}, Source: sdkSLB + " describe_load_balancer_attribute InternetChargeType"}
	clbPayType   = Enum{Values: []string{"PayOnDemand", "PrePay"}, Source: sdkSLB + " PayType"}
	clbIPVersion = Enum{Values: []string{"ipv4", "ipv6"}, Source: sdkSLB + " AddressIPVersion"}
	clbOnOff     = Enum{Values: []string{"on", "off"}, Source: sdkSLB + " DeleteProtection"}
	clbLsnStatus = Enum{Values: []string{"running", "stopped", "starting", "configuring", "stopping"}, Source: sdkSLB + " describe_load_balancer_listeners Status (running, stopped); API reference listener state machine (starting, configuring, stopping)"}
	clbProtocol  = Enum{Values: []string{"tcp", "udp", "http", "https"}, Source: sdkSLB + " ListenerProtocol"}
	clbScheduler = Enum{Values: []string{"wrr", "rr", "sch", "tch", "qch"}, Source: sdkSLB + " describe_load_balancer_listeners Scheduler"}
	clbSrvType   = Enum{Values: []string{"ecs", "eni", "eci"}, Source: sdkSLB + " describe_vserver_group_attribute BackendServers Type"}
	clbHealth    = Enum{Values: []string{"normal", "abnormal", "unavailable"}, Source: sdkSLB + " describe_health_status ServerHealthStatus"}

	nlbLBStatus  = Enum{Values: []string{"Inactive", "Active", "Provisioning", "Configuring", "Deleting", "Deleted", "CreateFailed"}, Source: sdkNLB + " LoadBalancerStatus"}
	nlbBusiness  = Enum{Values: []string{"Abnormal", "Normal"}, Source: sdkNLB + " LoadBalancerBusinessStatus"}
	nlbAddrType  = Enum{Values: []string{"Internet", "Intranet"}, Source: sdkNLB + " AddressType"}
	nlbIPVersion = Enum{Values: []string{"ipv4", "DualStack"}, Source: sdkNLB + " AddressIpVersion"}
	nlbLsnStatus = Enum{Values: []string{"Provisioning", "Running", "Configuring", "Stopping", "Stopped", "Starting", "Deleting", "Deleted"}, Source: sdkNLB + " ListenerStatus"}
	nlbProtocol  = Enum{Values: []string{"TCP", "UDP", "TCPSSL"}, Source: sdkNLB + " ListenerProtocol"}
	nlbSGStatus  = Enum{Values: []string{"Creating", "Available", "Configuring"}, Source: sdkNLB + " ServerGroupStatus"}
	nlbSGType    = Enum{Values: []string{"Instance", "Ip"}, Source: sdkNLB + " ServerGroupType"}
	nlbSGProto   = Enum{Values: []string{"TCP", "UDP", "TCP_UDP", "TCPSSL"}, Source: sdkNLB + " CreateServerGroupRequest.Protocol (TCP, UDP, TCP_UDP) and the emulator's TCPSSL groups (listed as a guess)"}
	nlbScheduler = Enum{Values: []string{"Wrr", "Rr", "Sch", "Tch", "Qch", "Wlc"}, FoldCase: true, Source: sdkNLB + " Scheduler (documented as Wrr, rr, sch, tch, qch, Wlc: mixed case)"}
	nlbSrvStatus = Enum{Values: []string{"Adding", "Available", "Configuring", "Removing"}, Source: sdkNLB + " ListServerGroupServers Status"}
	nlbSrvType   = Enum{Values: []string{"Ecs", "Eni", "Eci", "Ip"}, Source: sdkNLB + " AddServersToServerGroup ServerType"}
	nlbJobStatus = Enum{Values: []string{"Succeeded", "processing", "Failed"}, FoldCase: true, Source: sdkNLB + " GetJobStatusResponseBody.Status (Succeeded, processing; the CCM compares without case); Failed: a guess, listed in docs/emulator.md"}

	nlbHealth = Enum{Values: []string{"Initial", "Unhealthy", "Unused", "Unavailable"}, Source: nlbHlth + " NonNormalServers Status"}
	nlbReason = Enum{Values: []string{"CONNECT_TIMEOUT", "CONNECT_FAIL", "RECV_TIMEOUT"}, Source: nlbHlth + " Reason.ReasonCode (the three the reference lists first; the emulator answers the first two)"}

	ecsStatus   = Enum{Values: []string{"Pending", "Running", "Starting", "Stopping", "Stopped"}, Source: ecsDocs}
	routeStatus = Enum{Values: []string{"Pending", "Available", "Modifying", "Creating", "Deleting"}, Source: vpcDocs}
)

// Expectations are keyed "product:Action".
var Expectations = map[string]Expectation{
	"slb:CreateLoadBalancer": {Required: []string{"LoadBalancerId", "Address", "AddressIPVersion", "VpcId", "NetworkType"},
		Enums: map[string]Enum{"AddressIPVersion": clbIPVersion, "NetworkType": clbNetwork}, Source: ccmCLB + "; " + tfSLB},
	"slb:DescribeLoadBalancers": {
		Required: []string{"TotalCount", "PageNumber", "PageSize", "LoadBalancers.LoadBalancer[].LoadBalancerId", "LoadBalancers.LoadBalancer[].LoadBalancerName",
			"LoadBalancers.LoadBalancer[].LoadBalancerStatus", "LoadBalancers.LoadBalancer[].Address", "LoadBalancers.LoadBalancer[].AddressType",
			"LoadBalancers.LoadBalancer[].NetworkType", "LoadBalancers.LoadBalancer[].VpcId", "LoadBalancers.LoadBalancer[].AddressIPVersion"},
		Enums: map[string]Enum{"LoadBalancers.LoadBalancer[].LoadBalancerStatus": clbLBStatus, "LoadBalancers.LoadBalancer[].AddressType": clbAddrType,
			"LoadBalancers.LoadBalancer[].NetworkType": clbNetwork, "LoadBalancers.LoadBalancer[].PayType": clbPayType,
			"LoadBalancers.LoadBalancer[].AddressIPVersion": clbIPVersion, "LoadBalancers.LoadBalancer[].InternetChargeType": clbCharge,
			"LoadBalancers.LoadBalancer[].DeleteProtection": clbOnOff},
		Source: ccmCLB + " (listing by tag and id); " + tfSLB},
	"slb:DescribeLoadBalancerAttribute": {
		Required: []string{"LoadBalancerId", "LoadBalancerName", "LoadBalancerStatus", "Address", "AddressType", "NetworkType", "VpcId", "VSwitchId",
			"InternetChargeType", "Bandwidth", "DeleteProtection", "ModificationProtectionStatus", "AddressIPVersion"},
		Enums: map[string]Enum{"LoadBalancerStatus": clbLBStatus, "AddressType": clbAddrType, "NetworkType": clbNetwork, "InternetChargeType": clbCharge,
			"PayType": clbPayType, "AddressIPVersion": clbIPVersion, "DeleteProtection": clbOnOff, "BackendServers.BackendServer[].Type": clbSrvType},
		Source: ccmCLB + "; " + tfSLB},
	"slb:DescribeLoadBalancerListeners": {
		Required: []string{"Listeners[].ListenerPort", "Listeners[].ListenerProtocol", "Listeners[].Status", "Listeners[].LoadBalancerId"},
		Enums:    map[string]Enum{"Listeners[].Status": clbLsnStatus, "Listeners[].ListenerProtocol": clbProtocol, "Listeners[].Scheduler": clbScheduler},
		Source:   ccmCLB + " (listener diff)"},
	"slb:DescribeLoadBalancerTCPListenerAttribute": {Required: []string{"ListenerPort", "Status", "Scheduler"},
		Enums: map[string]Enum{"Status": clbLsnStatus, "Scheduler": clbScheduler}, Source: tfSLB},
	"slb:DescribeLoadBalancerHTTPListenerAttribute": {Required: []string{"ListenerPort", "Status", "Scheduler"},
		Enums: map[string]Enum{"Status": clbLsnStatus, "Scheduler": clbScheduler}, Source: tfSLB},
	"slb:CreateVServerGroup":    {Required: []string{"VServerGroupId"}, Source: ccmCLB},
	"slb:DescribeVServerGroups": {Required: []string{"VServerGroups.VServerGroup[].VServerGroupId", "VServerGroups.VServerGroup[].VServerGroupName"}, Source: ccmCLB},
	"slb:DescribeVServerGroupAttribute": {
		Required: []string{"VServerGroupId", "VServerGroupName", "BackendServers.BackendServer[].ServerId", "BackendServers.BackendServer[].Port",
			"BackendServers.BackendServer[].Weight", "BackendServers.BackendServer[].Type"},
		Enums: map[string]Enum{"BackendServers.BackendServer[].Type": clbSrvType}, Source: ccmCLB + "; " + tfSLB},
	"slb:DescribeHealthStatus": {
		Required: []string{"BackendServers.BackendServer[].ServerId", "BackendServers.BackendServer[].ServerHealthStatus"},
		Enums:    map[string]Enum{"BackendServers.BackendServer[].ServerHealthStatus": clbHealth}, Source: tfSLB + " (data source alicloud_slb_backend_servers)"},

	"nlb:CreateLoadBalancer": {Required: []string{"LoadbalancerId", "JobId"}, Source: ccmNLB + "; " + tfNLB},
	"nlb:ListLoadBalancers": {
		Required: []string{"TotalCount", "LoadBalancers[].LoadBalancerId", "LoadBalancers[].LoadBalancerName", "LoadBalancers[].LoadBalancerStatus",
			"LoadBalancers[].AddressType", "LoadBalancers[].AddressIpVersion", "LoadBalancers[].VpcId", "LoadBalancers[].DNSName", "LoadBalancers[].ZoneMappings"},
		Enums: map[string]Enum{"LoadBalancers[].LoadBalancerStatus": nlbLBStatus, "LoadBalancers[].LoadBalancerBusinessStatus": nlbBusiness,
			"LoadBalancers[].AddressType": nlbAddrType, "LoadBalancers[].AddressIpVersion": nlbIPVersion},
		Source: ccmNLB + "; " + tfNLB},
	"nlb:GetLoadBalancerAttribute": {
		Required: []string{"LoadBalancerId", "LoadBalancerName", "LoadBalancerStatus", "AddressType", "AddressIpVersion", "VpcId", "DNSName", "ZoneMappings"},
		Enums: map[string]Enum{"LoadBalancerStatus": nlbLBStatus, "LoadBalancerBusinessStatus": nlbBusiness, "AddressType": nlbAddrType,
			"AddressIpVersion": nlbIPVersion},
		Source: ccmNLB + "; " + tfNLB},
	"nlb:CreateListener": {Required: []string{"ListenerId", "JobId"}, Source: ccmNLB},
	"nlb:ListListeners": {
		Required: []string{"Listeners[].ListenerId", "Listeners[].ListenerPort", "Listeners[].ListenerProtocol", "Listeners[].ListenerStatus",
			"Listeners[].ServerGroupId", "Listeners[].LoadBalancerId"},
		Enums:  map[string]Enum{"Listeners[].ListenerStatus": nlbLsnStatus, "Listeners[].ListenerProtocol": nlbProtocol},
		Source: ccmNLB + " (currentListener)"},
	"nlb:GetListenerAttribute": {Required: []string{"ListenerId", "ListenerPort", "ListenerProtocol", "ListenerStatus"},
		Enums: map[string]Enum{"ListenerStatus": nlbLsnStatus, "ListenerProtocol": nlbProtocol}, Source: tfNLB},
	"nlb:CreateServerGroup": {Required: []string{"ServerGroupId", "JobId"}, Source: ccmNLB},
	"nlb:ListServerGroups": {
		Required: []string{"ServerGroups[].ServerGroupId", "ServerGroups[].ServerGroupName", "ServerGroups[].ServerGroupStatus", "ServerGroups[].ServerGroupType",
			"ServerGroups[].Protocol", "ServerGroups[].Scheduler", "ServerGroups[].VpcId", "ServerGroups[].AddressIPVersion"},
		Enums: map[string]Enum{"ServerGroups[].ServerGroupStatus": nlbSGStatus, "ServerGroups[].ServerGroupType": nlbSGType,
			"ServerGroups[].Protocol": nlbSGProto, "ServerGroups[].Scheduler": nlbScheduler},
		Source: ccmNLB + "; " + tfNLB},
	"nlb:ListServerGroupServers": {
		Required: []string{"Servers[].ServerId", "Servers[].ServerType", "Servers[].Port", "Servers[].Weight", "Servers[].Status"},
		Enums:    map[string]Enum{"Servers[].Status": nlbSrvStatus, "Servers[].ServerType": nlbSrvType}, Source: ccmNLB},
	"nlb:AddServersToServerGroup":      {Required: []string{"JobId"}, Source: ccmNLB},
	"nlb:RemoveServersFromServerGroup": {Required: []string{"JobId"}, Source: ccmNLB},
	"nlb:DeleteLoadBalancer":           {Required: []string{"JobId"}, Source: ccmNLB},
	"nlb:TagResources":                 {Required: []string{"JobId"}, Source: "github.com/aliyun/alibaba-cloud-sdk-go services/nlb/tag_resources.go TagResourcesResponse.JobId"},
	"nlb:UntagResources":               {Required: []string{"JobId"}, Source: "github.com/aliyun/alibaba-cloud-sdk-go services/nlb/untag_resources.go UntagResourcesResponse.JobId"},
	"nlb:GetListenerHealthStatus": {
		Required: []string{"ListenerHealthStatus[].ListenerId", "ListenerHealthStatus[].ServerGroupInfos[].ServerGroupId",
			"ListenerHealthStatus[].ServerGroupInfos[].HeathCheckEnabled"},
		Enums: map[string]Enum{"ListenerHealthStatus[].ListenerProtocol": nlbProtocol,
			"ListenerHealthStatus[].ServerGroupInfos[].NonNormalServers[].Status":            nlbHealth,
			"ListenerHealthStatus[].ServerGroupInfos[].NonNormalServers[].Reason.ReasonCode": nlbReason},
		Source: nlbHlth},
	"nlb:GetJobStatus": {Required: []string{"Status"}, Enums: map[string]Enum{"Status": nlbJobStatus}, Source: ccmNLB + "; " + tfNLB},

	"ecs:DescribeInstances": {
		Required: []string{"Instances.Instance[].InstanceId", "Instances.Instance[].Status", "Instances.Instance[].ZoneId", "Instances.Instance[].RegionId",
			"Instances.Instance[].InstanceType", "Instances.Instance[].VpcAttributes.VpcId", "Instances.Instance[].VpcAttributes.PrivateIpAddress.IpAddress"},
		Enums: map[string]Enum{"Instances.Instance[].Status": ecsStatus}, Source: ccmNode},
	"vpc:DescribeRouteEntryList": {
		Required: []string{"RouteEntrys.RouteEntry[].RouteEntryId", "RouteEntrys.RouteEntry[].DestinationCidrBlock", "RouteEntrys.RouteEntry[].Status",
			"RouteEntrys.RouteEntry[].NextHops.NextHop[].NextHopId", "RouteEntrys.RouteEntry[].NextHops.NextHop[].NextHopType"},
		Enums: map[string]Enum{"RouteEntrys.RouteEntry[].Status": routeStatus}, Source: ccmRt},
	"vpc:DescribeRouteTableList": {Required: []string{"RouterTableList.RouterTableListType[].RouteTableId", "RouterTableList.RouterTableListType[].VpcId"}, Source: ccmRt},
}

// CheckExpectation reports the members of a successful answer of
// product:Action that are missing or carry a value outside their
// documented set; an action without an expectation has none.
func CheckExpectation(key string, data []byte) ([]Mismatch, error) {
	e, ok := Expectations[key]
	if !ok {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	var out []Mismatch
	for _, path := range e.Required {
		for _, miss := range missing(v, strings.Split(path, "."), "") {
			out = append(out, Mismatch{Path: miss, Problem: "missing (read by " + e.Source + ")"})
		}
	}
	paths := make([]string, 0, len(e.Enums))
	for p := range e.Enums {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		en := e.Enums[path]
		seen := map[string]bool{}
		for _, val := range collect(v, strings.Split(path, ".")) {
			s, isString := val.(string)
			if !isString {
				out = append(out, Mismatch{Path: path, Problem: fmt.Sprintf("%v is not a string", val)})
				continue
			}
			if seen[s] || en.allows(s) {
				continue
			}
			seen[s] = true
			out = append(out, Mismatch{Path: path, Problem: fmt.Sprintf("%q is not one of %s (%s)", s, strings.Join(en.Values, ", "), en.Source)})
		}
	}
	return out, nil
}

func (e Enum) allows(s string) bool {
	if e.FoldCase {
		return slices.ContainsFunc(e.Values, func(v string) bool { return strings.EqualFold(v, s) })
	}
	return slices.Contains(e.Values, s)
}

// missing lists the places under v where the rest of a path is absent
// (or null). An empty array has no items to lack anything.
func missing(v any, path []string, at string) []string {
	if len(path) == 0 {
		return nil
	}
	name, each := strings.CutSuffix(path[0], "[]")
	obj, ok := v.(map[string]any)
	if !ok {
		return []string{join(at, path[0])}
	}
	child, ok := obj[name]
	if !ok || child == nil {
		return []string{join(at, path[0])}
	}
	if !each {
		return missing(child, path[1:], join(at, name))
	}
	items, ok := child.([]any)
	if !ok {
		return []string{join(at, path[0])}
	}
	var out []string
	for _, it := range items {
		for _, m := range missing(it, path[1:], join(at, path[0])) {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// collect returns the values found at path (absent ones are skipped:
// missing reports those).
func collect(v any, path []string) []any {
	if len(path) == 0 {
		if v == nil {
			return nil
		}
		return []any{v}
	}
	name, each := strings.CutSuffix(path[0], "[]")
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	child := obj[name]
	if !each {
		return collect(child, path[1:])
	}
	items, _ := child.([]any)
	var out []any
	for _, it := range items {
		out = append(out, collect(it, path[1:])...)
	}
	return out
}

// ErrorAnswer is one documented error of an action: its HTTP status (0
// where no cited table gives it) and code.
type ErrorAnswer struct {
	Status int
	Code   string
	// Actions are the actions that may answer it; empty means every
	// action of the product.
	Actions []string
	Source  string
}

// commonErrors are the gateway's answers, which any action may give.
var commonErrors = []ErrorAnswer{
	{Status: 400, Code: "MissingParameter", Source: apiRef + " Gateway/common"},
	{Status: 400, Code: "InvalidParameter", Source: apiRef + " Gateway/common"},
	{Status: 400, Code: "SignatureDoesNotMatch", Source: apiRef + " Gateway/common"},
	{Status: 404, Code: "InvalidAccessKeyId.NotFound", Source: apiRef + " Gateway/common"},
	{Status: 400, Code: "IncompleteSignature", Source: apiRef + " Gateway/common"},
	{Status: 400, Code: "SignatureNonceUsed", Source: apiRef + " Gateway/common"},
	{Status: 400, Code: "InvalidTimeStamp.Expired", Source: apiRef + " Gateway/common"},
	{Status: 400, Code: "Throttling.User", Source: apiRef + " Gateway/common"},
	{Status: 400, Code: "Throttling.Api", Source: apiRef + " Gateway/common"},
	{Status: 404, Code: "InvalidApi.NotFound", Source: apiRef + " Gateway/common"},
	{Status: 403, Code: "Forbidden.RAM", Source: apiRef + " Gateway/common"},
	{Status: 500, Code: "InternalError", Source: apiRef + " Gateway/common"},
	{Status: 503, Code: "ServiceUnavailable", Source: apiRef + " Gateway/common"},
}

// ErrorTables are the documented error answers per product, beyond the
// common ones.
var ErrorTables = map[string][]ErrorAnswer{
	"ecs": {
		{Status: 0, Code: "InvalidRegionId.NotFound", Source: tfErr},
		{Status: 0, Code: "InvalidInstanceId.NotFound", Actions: []string{"DescribeInstanceAttribute", "StartInstances", "StopInstances", "DeleteInstance", "DeleteInstances", "TagResources", "ListTagResources", "UntagResources"}, Source: tfErr},
		{Status: 0, Code: "InvalidSecurityGroupId.NotFound", Actions: []string{"DescribeSecurityGroupAttribute", "AuthorizeSecurityGroup", "RevokeSecurityGroup", "ModifySecurityGroupRule", "ModifySecurityGroupAttribute", "DeleteSecurityGroup", "RunInstances"}, Source: tfErr},
		{Status: 0, Code: "InvalidVSwitchId.NotFound", Actions: []string{"RunInstances", "CreateSecurityGroup"}, Source: tfErr},
		{Status: 0, Code: "InvalidResourceType.NotFound", Actions: []string{"TagResources", "UntagResources", "ListTagResources", "DescribeTags"}, Source: "ECS API reference, TagResources error table"},
		{Status: 0, Code: "InvalidIpProtocol.Malformed", Actions: []string{"AuthorizeSecurityGroup", "RevokeSecurityGroup"}, Source: "ECS API reference, AuthorizeSecurityGroup error table"},
		{Status: 400, Code: "InvalidOperation.Conflict", Actions: []string{"ModifyNetworkInterfaceAttribute"}, Source: apiRef + " (retried by the existing CCM)"},
	},
	"vpc": {
		{Status: 0, Code: "InvalidRegionId.NotFound", Source: tfErr},
		{Status: 0, Code: "InvalidVpcId.NotFound", Source: tfErr},
		{Status: 0, Code: "InvalidVSwitchId.NotFound", Source: apiRef + " VPC"},
		{Status: 404, Code: "InvalidRouteTableId.NotFound", Source: apiRef + " VPC"},
		{Status: 0, Code: "InvalidRouteEntry.NotFound", Actions: []string{"DeleteRouteEntry", "DeleteRouteEntries", "ModifyRouteEntry"}, Source: apiRef + " VPC (treated as done by the existing CCM)"},
		{Status: 0, Code: "InvalidNextHop.NotFound", Actions: []string{"CreateRouteEntry", "CreateRouteEntries"}, Source: apiRef + " VPC"},
		{Status: 0, Code: "InvalidCIDRBlock.Duplicate", Actions: []string{"CreateRouteEntry", "CreateRouteEntries"}, Source: apiRef + " VPC"},
		{Status: 0, Code: "MissingParam.RouteEntryId", Actions: []string{"DeleteRouteEntry", "ModifyRouteEntry"}, Source: "VPC API reference, DeleteRouteEntry error table"},
		{Status: 0, Code: "TaskConflict", Source: apiRef + " VPC"},
		{Status: 0, Code: "IncorrectRouteEntryStatus", Source: apiRef + " VPC"},
	},
	"slb": {
		{Status: 0, Code: "InvalidRegionId.NotFound", Source: tfErr},
		{Status: 0, Code: "InvalidLoadBalancerId.NotFound", Source: apiRef + " SLB; " + tfErr + " (LoadBalancerNotFound)"},
		{Status: 404, Code: "ListenerNotFound", Source: apiRef + " SLB"},
		{Status: 400, Code: "ListenerAlreadyExists", Actions: []string{"CreateLoadBalancerTCPListener", "CreateLoadBalancerUDPListener", "CreateLoadBalancerHTTPListener", "CreateLoadBalancerHTTPSListener"}, Source: apiRef + " SLB"},
		{Status: 0, Code: "ListenerPortConflict", Source: apiRef + " SLB (per-API)"},
		{Status: 0, Code: "RspoolVipExist", Actions: []string{"DeleteVServerGroup"}, Source: apiRef + " SLB; " + tfErr},
		{Status: 0, Code: "OperationDenied.DeleteProtectionIsOn", Actions: []string{"DeleteLoadBalancer"}, Source: apiRef + " SLB (per-API)"},
		{Status: 0, Code: "InvalidServerId.NotFound", Source: apiRef + " SLB"},
		{Status: 0, Code: "InstanceBackendServerNumberOverLimit", Source: apiRef + " (the existing CCM reacts to it)"},
		{Status: 400, Code: "VServerGroupProcessing", Source: apiRef + " SLB busy codes"},
		{Status: 400, Code: "ServiceIsConfiguring", Source: apiRef + " SLB busy codes"},
		{Status: 400, Code: "OperationBusy", Source: apiRef + " SLB busy codes"},
		{Status: 0, Code: "VSwitchAvailableIpNotExist", Actions: []string{"CreateLoadBalancer"}, Source: apiRef + " (the existing CCM reacts to it)"},
		{Status: 0, Code: "IdempotentParameterMismatch", Actions: []string{"CreateLoadBalancer"}, Source: "CLB API reference, CreateLoadBalancer ClientToken"},
		{Status: 0, Code: "Operation.NotAllowed", Source: apiRef + " SLB (per-API)"},
	},
	"nlb": {
		{Status: 404, Code: "ResourceNotFound.loadBalancer", Source: apiRef + " NLB; " + tfErr},
		{Status: 404, Code: "ResourceNotFound.serverGroup", Source: apiRef + " NLB"},
		{Status: 404, Code: "ResourceNotFound.listener", Source: apiRef + " NLB"},
		{Status: 404, Code: "ResourceNotFound.BackendServer", Source: apiRef + " NLB"},
		{Status: 404, Code: "ResourceNotFound.VSwitch", Source: apiRef + " NLB"},
		{Status: 404, Code: "ResourceNotFound.Vpc", Source: apiRef + " NLB"},
		{Status: 404, Code: "ResourceNotFound.JobId", Actions: []string{"GetJobStatus"}, Source: apiRef + " NLB"},
		{Status: 400, Code: "ResourceInUse.ServerGroup", Actions: []string{"DeleteServerGroup"}, Source: apiRef + " NLB"},
		{Status: 400, Code: "OperationDenied.DeletionProtectionEnabled", Actions: []string{"DeleteLoadBalancer"}, Source: apiRef + " NLB"},
		{Status: 400, Code: "DryRunOperation", Source: apiRef + " NLB"},
		{Status: 0, Code: "Conflict.Port", Actions: []string{"CreateListener", "UpdateListenerAttribute"}, Source: apiRef + " NLB listeners"},
		{Status: 400, Code: "Conflict.Lock", Source: apiRef + " NLB"},
		{Status: 400, Code: "IncorrectStatus.loadbalancer", Source: apiRef + " NLB"},
		{Status: 0, Code: "IncorrectStatus.serverGroup", Source: apiRef + " NLB"},
		{Status: 0, Code: "IncorrectStatus.listener", Source: apiRef + " NLB"},
		{Status: 400, Code: "InvalidZones", Actions: []string{"CreateLoadBalancer", "UpdateLoadBalancerZones"}, Source: apiRef + " NLB"},
		{Status: 0, Code: "DuplicatedParam.Server", Source: apiRef + " NLB server groups"},
		{Status: 403, Code: "Forbidden.NoPermission", Source: apiRef + " NLB"},
		{Status: 400, Code: "SystemBusy", Source: apiRef + " NLB"},
	},
}

// ErrorTableOf returns the cited error answers of product ("any": the
// gateway's common ones).
func ErrorTableOf(product string) []ErrorAnswer {
	if product == "any" {
		return slices.Clone(commonErrors)
	}
	return slices.Clone(ErrorTables[product])
}

// CheckError reports an error answer of product:Action that no cited
// table lists: an unknown code, a code the action does not give, or a
// status other than the documented one.
func CheckError(product, action string, status int, code string) *Mismatch {
	tables := append(slices.Clone(commonErrors), ErrorTables[product]...)
	var statusWrong *ErrorAnswer
	for i, e := range tables {
		if e.Code != code && !(strings.HasSuffix(e.Code, ".") && strings.HasPrefix(code, e.Code)) {
			continue
		}
		if len(e.Actions) > 0 && !slices.Contains(e.Actions, action) {
			continue
		}
		if e.Status != 0 && e.Status != status {
			statusWrong = &tables[i]
			continue
		}
		return nil
	}
	m := &Mismatch{Path: "(error)"}
	switch {
	case statusWrong != nil:
		m.Problem = fmt.Sprintf("%d %s: documented as %d (%s)", status, code, statusWrong.Status, statusWrong.Source)
	default:
		m.Problem = fmt.Sprintf("%d %s: not in %s's error table for %s", status, code, product, action)
	}
	return m
}
