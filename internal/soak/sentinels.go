package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
)

// sentinelPort is the port of the sentinel listeners; the attacks that
// borrow a sentinel load balancer ask for exactly this port.
const sentinelPort = 9000

// API versions the emulator routes by, as the official SDK sends them.
const (
	versionECS = "2014-05-26"
	versionVPC = "2016-04-28"
	versionSLB = "2014-05-15"
	versionNLB = "2022-04-30"
)

// sentinelIDs are the resources "someone else" in the account owns.
type sentinelIDs struct {
	clb, clbGroup, acl         string
	nlb, nlbGroup, nlbListener string
	securityGroup, route       string
	vm                         string
}

// sentinels are those resources and their Describe output when the soak
// began.
type sentinels struct {
	e    *env
	sdk  *ecs.Client
	ids  sentinelIDs
	vmIP string
	// before maps each describing call to its response body.
	before map[string]string
}

// call makes one signed RPC call through the official SDK's common
// request and returns the response body.
func (s *sentinels) call(version, action string, params map[string]string) (string, error) {
	r := requests.NewCommonRequest()
	r.Method, r.Scheme, r.Domain = "POST", "http", s.e.cloud.Addr()
	r.Version, r.ApiName = version, action
	r.QueryParams["RegionId"] = s.e.cloud.Region()
	for k, v := range params {
		r.QueryParams[k] = v
	}
	resp, err := s.sdk.ProcessCommonRequest(r)
	if err != nil {
		return "", fmt.Errorf("%s: %w", action, err)
	}
	return resp.GetHttpContentString(), nil
}

// field reads one top-level string field of a response body.
func field(body, name string) (string, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return "", fmt.Errorf("decode response: %w", err)
	}
	v, ok := m[name].(string)
	if !ok || v == "" {
		return "", fmt.Errorf("response has no %s: %s", name, body)
	}
	return v, nil
}

// create makes the call and returns the id field of its answer.
func (s *sentinels) create(version, action, idField string, params map[string]string) (string, error) {
	body, err := s.call(version, action, params)
	if err != nil {
		return "", err
	}
	return field(body, idField)
}

// untilReady repeats fn while the resource it needs is still being prepared
// (an NLB provisions asynchronously).
func untilReady(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// createSentinels creates, through the official SDK with the soak's own
// key, a CLB with a vServer group and listener, an access control list,
// an NLB with a server group and listener, a security group and a route
// entry, all serving a VM that is no Node, and records their Describe
// output once it is stable.
func createSentinels(ctx context.Context, e *env) (*sentinels, error) {
	c, err := e.sdk.NewECS()
	if err != nil {
		return nil, err
	}
	s := &sentinels{e: e, sdk: c}
	s.ids.vm = e.instances[len(e.instances)-1]
	s.vmIP = e.ips[s.ids.vm]
	port := strconv.Itoa(sentinelPort)
	steps := []func() error{
		func() (err error) {
			s.ids.clb, err = s.create(versionSLB, "CreateLoadBalancer", "LoadBalancerId", map[string]string{
				"LoadBalancerName": "someone-elses-clb", "AddressType": "intranet", "VpcId": e.vpcID, "VSwitchId": e.vswitches[0],
			})
			return err
		},
		func() (err error) {
			s.ids.clbGroup, err = s.create(versionSLB, "CreateVServerGroup", "VServerGroupId", map[string]string{
				"LoadBalancerId": s.ids.clb, "VServerGroupName": "someone-elses-group",
				"BackendServers": `[{"ServerId":"` + s.ids.vm + `","Port":` + port + `,"Weight":100,"Type":"ecs"}]`,
			})
			return err
		},
		func() error {
			_, err := s.call(versionSLB, "CreateLoadBalancerTCPListener", map[string]string{
				"LoadBalancerId": s.ids.clb, "ListenerPort": port, "Bandwidth": "-1", "VServerGroupId": s.ids.clbGroup,
			})
			return err
		},
		func() (err error) {
			s.ids.acl, err = s.create(versionSLB, "CreateAccessControlList", "AclId", map[string]string{"AclName": "someone-elses-acl"})
			return err
		},
		func() error {
			_, err := s.call(versionSLB, "AddAccessControlListEntry", map[string]string{
				"AclId": s.ids.acl, "AclEntrys": `[{"entry":"10.0.0.0/8","comment":"office"}]`,
			})
			return err
		},
		func() (err error) {
			s.ids.nlb, err = s.create(versionNLB, "CreateLoadBalancer", "LoadbalancerId", map[string]string{
				"LoadBalancerName": "someone-elses-nlb", "AddressType": "Intranet", "AddressIpVersion": "ipv4", "VpcId": e.vpcID,
				"ZoneMappings.1.ZoneId": e.zones[0], "ZoneMappings.1.VSwitchId": e.vswitches[0],
				"ZoneMappings.2.ZoneId": e.zones[1], "ZoneMappings.2.VSwitchId": e.vswitches[1],
			})
			return err
		},
		func() (err error) {
			s.ids.nlbGroup, err = s.create(versionNLB, "CreateServerGroup", "ServerGroupId", map[string]string{
				"ServerGroupName": "someone-elses-server-group", "ServerGroupType": "Instance", "VpcId": e.vpcID, "Protocol": "TCP",
			})
			return err
		},
		func() error {
			return untilReady(ctx, func() error {
				_, err := s.call(versionNLB, "AddServersToServerGroup", map[string]string{
					"ServerGroupId": s.ids.nlbGroup, "Servers.1.ServerId": s.ids.vm, "Servers.1.ServerType": "Ecs", "Servers.1.Port": port,
				})
				return err
			})
		},
		func() error {
			return untilReady(ctx, func() (err error) {
				s.ids.nlbListener, err = s.create(versionNLB, "CreateListener", "ListenerId", map[string]string{
					"LoadBalancerId": s.ids.nlb, "ListenerProtocol": "TCP", "ListenerPort": port, "ServerGroupId": s.ids.nlbGroup,
				})
				return err
			})
		},
		func() (err error) {
			s.ids.securityGroup, err = s.create(versionECS, "CreateSecurityGroup", "SecurityGroupId", map[string]string{
				"SecurityGroupName": "someone-elses-sg", "VpcId": e.vpcID,
			})
			return err
		},
		func() error {
			_, err := s.call(versionECS, "AuthorizeSecurityGroup", map[string]string{
				"SecurityGroupId": s.ids.securityGroup, "IpProtocol": "tcp", "PortRange": "5432/5432", "SourceCidrIp": "192.168.0.0/16", "Policy": "accept",
			})
			return err
		},
		func() (err error) {
			s.ids.route, err = s.create(versionVPC, "CreateRouteEntry", "RouteEntryId", map[string]string{
				"RouteTableId": e.table, "DestinationCidrBlock": "172.31.0.0/24", "NextHopType": "Instance", "NextHopId": s.ids.vm,
			})
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("create sentinels: %w", err)
		}
	}
	// Wait until the asynchronous parts (NLB provisioning, route entry
	// becoming available) are done: two equal snapshots in a row.
	var last map[string]string
	deadline := time.Now().Add(90 * time.Second)
	for {
		snap, err := s.snapshot()
		if err == nil && last != nil && len(diffSnapshots(last, snap)) == 0 {
			s.before = snap
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("sentinels not stable after 90s (last error: %v)", err)
		}
		last = snap
		if err := sleep(ctx, 2*time.Second); err != nil {
			return nil, err
		}
	}
}

// describeCall is one read that shows a sentinel and what hangs on it.
type describeCall struct {
	version, action string
	params          map[string]string
}

func (s *sentinels) reads() []describeCall {
	id := s.ids
	return []describeCall{
		{versionSLB, "DescribeLoadBalancerAttribute", map[string]string{"LoadBalancerId": id.clb}},
		{versionSLB, "DescribeVServerGroups", map[string]string{"LoadBalancerId": id.clb}},
		{versionSLB, "DescribeVServerGroupAttribute", map[string]string{"VServerGroupId": id.clbGroup}},
		{versionSLB, "DescribeLoadBalancerTCPListenerAttribute", map[string]string{"LoadBalancerId": id.clb, "ListenerPort": strconv.Itoa(sentinelPort)}},
		{versionSLB, "DescribeAccessControlListAttribute", map[string]string{"AclId": id.acl}},
		{versionSLB, "ListTagResources", map[string]string{"ResourceType": "instance", "ResourceId.1": id.clb}},
		{versionNLB, "GetLoadBalancerAttribute", map[string]string{"LoadBalancerId": id.nlb}},
		{versionNLB, "ListListeners", map[string]string{"LoadBalancerIds.1": id.nlb}},
		{versionNLB, "GetListenerAttribute", map[string]string{"ListenerId": id.nlbListener}},
		{versionNLB, "ListServerGroups", map[string]string{"ServerGroupIds.1": id.nlbGroup}},
		{versionNLB, "ListServerGroupServers", map[string]string{"ServerGroupId": id.nlbGroup}},
		{versionECS, "DescribeSecurityGroupAttribute", map[string]string{"SecurityGroupId": id.securityGroup}},
		{versionECS, "DescribeSecurityGroups", map[string]string{"SecurityGroupIds": `["` + id.securityGroup + `"]`}},
		{versionVPC, "DescribeRouteEntryList", map[string]string{"RouteTableId": s.e.table, "RouteEntryId": id.route}},
	}
}

// requestID is the only part of an answer that differs between two
// identical reads.
var requestID = regexp.MustCompile(`"RequestId":"[^"]*"`)

// snapshot reads every sentinel; keys name the call.
func (s *sentinels) snapshot() (map[string]string, error) {
	out := map[string]string{}
	for _, r := range s.reads() {
		body, err := s.call(r.version, r.action, r.params)
		if err != nil {
			return nil, err
		}
		key := r.action
		for _, k := range slices.Sorted(maps.Keys(r.params)) {
			key += " " + k + "=" + r.params[k]
		}
		out[key] = requestID.ReplaceAllString(body, `"RequestId":""`)
	}
	return out, nil
}

// diffSnapshots lists the reads whose answer changed, with both answers.
func diffSnapshots(before, after map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if before[k] != after[k] {
			out = append(out, fmt.Sprintf("%s\n      before: %s\n      after:  %s", k, before[k], after[k]))
		}
	}
	return out
}
