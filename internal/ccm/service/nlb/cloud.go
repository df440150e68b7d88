package nlb

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/google/uuid"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// apiVersion is the NLB OpenAPI version.
const apiVersion = "2022-04-30"

// pageSize is the page size of every list call (the API maximum).
const pageSize = 100

// api wraps the NLB (and the few ECS) calls the provider makes; every call
// goes through cloud.Call or cloud.Do (rate limit, retries, classification,
// metrics).
type api struct {
	c *cloud.Client
}

// zone is one zone mapping of a load balancer.
type zone struct {
	ZoneID, VSwitchID string
}

// lbInfo is a load balancer as the provider needs it, from either
// GetLoadBalancerAttribute or ListLoadBalancers.
type lbInfo struct {
	ID, Name, Status, DNSName             string
	AddressType, AddressIPVersion         string
	Ipv6AddressType, VpcID, ResourceGroup string
	BandwidthPackageID                    string
	CrossZone                             bool
	SecurityGroupIDs                      []string
	DeletionProtection                    bool
	ModificationProtection                string
	Zones                                 []zone
	Tags                                  map[string]string
	// Created is the CreateTime (zero when unknown or unparsable).
	Created time.Time
}

// fromAttribute describes the load balancer GetLoadBalancerAttribute
// answered with, as fromInfo describes a listed one: the answer carries the
// same fields, but its tags may come as TagKey/TagValue.
func fromAttribute(r *nlb.GetLoadBalancerAttributeResponse) *lbInfo {
	lb := fromInfo(nlb.LoadbalancerInfo{
		LoadBalancerId: r.LoadBalancerId, LoadBalancerName: r.LoadBalancerName, LoadBalancerStatus: r.LoadBalancerStatus,
		DNSName: r.DNSName, AddressType: r.AddressType, AddressIpVersion: r.AddressIpVersion, Ipv6AddressType: r.Ipv6AddressType,
		VpcId: r.VpcId, ResourceGroupId: r.ResourceGroupId, BandwidthPackageId: r.BandwidthPackageId,
		CrossZoneEnabled: r.CrossZoneEnabled, SecurityGroupIds: r.SecurityGroupIds, CreateTime: r.CreateTime,
		DeletionProtectionConfig: r.DeletionProtectionConfig, ModificationProtectionConfig: r.ModificationProtectionConfig,
		ZoneMappings: r.ZoneMappings,
	})
	for _, t := range r.Tags {
		k, v := t.TagKey, t.TagValue
		if k == "" {
			k, v = t.Key, t.Value
		}
		lb.Tags[k] = v
	}
	return lb
}

// fromInfo describes a load balancer ListLoadBalancers listed.
func fromInfo(r nlb.LoadbalancerInfo) *lbInfo {
	lb := &lbInfo{
		ID: r.LoadBalancerId, Name: r.LoadBalancerName, Status: r.LoadBalancerStatus, DNSName: r.DNSName,
		AddressType: r.AddressType, AddressIPVersion: r.AddressIpVersion, Ipv6AddressType: r.Ipv6AddressType,
		VpcID: r.VpcId, ResourceGroup: r.ResourceGroupId, BandwidthPackageID: r.BandwidthPackageId,
		CrossZone: r.CrossZoneEnabled, SecurityGroupIDs: r.SecurityGroupIds,
		DeletionProtection: r.DeletionProtectionConfig.Enabled, ModificationProtection: r.ModificationProtectionConfig.Status,
		Tags: map[string]string{}, Created: parseTime(r.CreateTime),
	}
	for _, z := range r.ZoneMappings {
		lb.Zones = append(lb.Zones, zone{ZoneID: z.ZoneId, VSwitchID: z.VSwitchId})
	}
	for _, t := range r.Tags {
		lb.Tags[t.Key] = t.Value
	}
	return lb
}

// parseTime reads an NLB time (ISO 8601, UTC); zero when it does not parse.
func parseTime(v string) time.Time {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04Z"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t
		}
	}
	return time.Time{}
}

// getLB reads one load balancer; nil when it does not exist.
func (a api) getLB(ctx context.Context, id string) (*lbInfo, error) {
	r := nlb.CreateGetLoadBalancerAttributeRequest()
	r.LoadBalancerId = id
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateGetLoadBalancerAttributeResponse)
	if cloud.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return fromAttribute(resp), nil
}

// findLB returns the first load balancer a filtered list returns (the
// filters used identify at most one), nil when none.
func (a api) findLB(ctx context.Context, set func(*nlb.ListLoadBalancersRequest)) (*lbInfo, error) {
	r := nlb.CreateListLoadBalancersRequest()
	r.MaxResults = requests.NewInteger(pageSize)
	set(r)
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateListLoadBalancersResponse)
	if err != nil || len(resp.LoadBalancers) == 0 {
		return nil, err
	}
	return fromInfo(resp.LoadBalancers[0]), nil
}

// lbByTag returns every load balancer tagged key=value: a lost create
// answer and a crash can leave two for one Service.
func (a api) lbByTag(ctx context.Context, key, value string) ([]*lbInfo, error) {
	return a.lbsByTag(ctx, key, value)
}

func (a api) lbByName(ctx context.Context, name string) (*lbInfo, error) {
	lb, err := a.findLB(ctx, func(r *nlb.ListLoadBalancersRequest) { r.LoadBalancerNames = &[]string{name} })
	if lb != nil && lb.Name != name {
		return nil, err
	}
	return lb, err
}

func (a api) createLB(ctx context.Context, r *nlb.CreateLoadBalancerRequest) (string, error) {
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateCreateLoadBalancerResponse)
	if err != nil {
		return "", err
	}
	return resp.LoadbalancerId, nil
}

// updateLBAttribute changes the name and cross-zone setting ("" / nil = keep).
func (a api) updateLBAttribute(ctx context.Context, id, name string, crossZone *bool) (string, error) {
	r := nlb.CreateUpdateLoadBalancerAttributeRequest()
	r.LoadBalancerId, r.LoadBalancerName = id, name
	if crossZone != nil {
		r.CrossZoneEnabled = requests.NewBoolean(*crossZone)
	}
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateUpdateLoadBalancerAttributeResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

func (a api) updateZones(ctx context.Context, id string, zones []nlb.UpdateLoadBalancerZonesZoneMappings) (string, error) {
	r := nlb.CreateUpdateLoadBalancerZonesRequest()
	r.LoadBalancerId, r.ZoneMappings = id, &zones
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateUpdateLoadBalancerZonesResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

func (a api) updateAddressType(ctx context.Context, id, addressType string) (string, error) {
	r := nlb.CreateUpdateLoadBalancerAddressTypeConfigRequest()
	r.LoadBalancerId, r.AddressType = id, addressType
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateUpdateLoadBalancerAddressTypeConfigResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

// securityGroups joins (join true) or leaves security groups.
func (a api) securityGroups(ctx context.Context, id string, ids []string, join bool) (string, error) {
	if join {
		r := nlb.CreateLoadBalancerJoinSecurityGroupRequest()
		r.LoadBalancerId, r.SecurityGroupIds = id, &ids
		resp, err := cloud.Call(ctx, a.c, r, nlb.CreateLoadBalancerJoinSecurityGroupResponse)
		if err != nil {
			return "", err
		}
		return resp.JobId, nil
	}
	r := nlb.CreateLoadBalancerLeaveSecurityGroupRequest()
	r.LoadBalancerId, r.SecurityGroupIds = id, &ids
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateLoadBalancerLeaveSecurityGroupResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

// bandwidthPackage attaches (attach true) or detaches a common bandwidth package.
func (a api) bandwidthPackage(ctx context.Context, id, pkg string, attach bool) (string, error) {
	if attach {
		r := nlb.CreateAttachCommonBandwidthPackageToLoadBalancerRequest()
		r.LoadBalancerId, r.BandwidthPackageId = id, pkg
		resp, err := cloud.Call(ctx, a.c, r, nlb.CreateAttachCommonBandwidthPackageToLoadBalancerResponse)
		if err != nil {
			return "", err
		}
		return resp.JobId, nil
	}
	r := nlb.CreateDetachCommonBandwidthPackageFromLoadBalancerRequest()
	r.LoadBalancerId, r.BandwidthPackageId = id, pkg
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateDetachCommonBandwidthPackageFromLoadBalancerResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

// ipv6Internet makes a dual-stack load balancer's IPv6 address public or private.
func (a api) ipv6Internet(ctx context.Context, id string, internet bool) error {
	if internet {
		r := nlb.CreateEnableLoadBalancerIpv6InternetRequest()
		r.LoadBalancerId = id
		_, err := cloud.Call(ctx, a.c, r, nlb.CreateEnableLoadBalancerIpv6InternetResponse)
		return err
	}
	r := nlb.CreateDisableLoadBalancerIpv6InternetRequest()
	r.LoadBalancerId = id
	_, err := cloud.Call(ctx, a.c, r, nlb.CreateDisableLoadBalancerIpv6InternetResponse)
	return err
}

// protection turns deletion protection off and modification protection to
// NonProtection, or both on (synchronous).
func (a api) protection(ctx context.Context, id string, on bool) error {
	r := nlb.CreateUpdateLoadBalancerProtectionRequest()
	r.LoadBalancerId = id
	r.DeletionProtectionEnabled = requests.NewBoolean(on)
	r.ModificationProtectionStatus = "NonProtection"
	if on {
		r.DeletionProtectionReason = protectionReason
		r.ModificationProtectionStatus, r.ModificationProtectionReason = "ConsoleProtection", protectionReason
	}
	_, err := cloud.Call(ctx, a.c, r, nlb.CreateUpdateLoadBalancerProtectionResponse)
	return err
}

func (a api) tag(ctx context.Context, resourceType, id string, tags []naming.Tag) error {
	if len(tags) == 0 {
		return nil
	}
	r := nlb.CreateTagResourcesRequest()
	r.ResourceType, r.ResourceId = resourceType, &[]string{id}
	ts := make([]nlb.TagResourcesTag, 0, len(tags))
	for _, t := range tags {
		ts = append(ts, nlb.TagResourcesTag{Key: t.Key, Value: t.Value})
	}
	r.Tag = &ts
	_, err := cloud.Call(ctx, a.c, r, nlb.CreateTagResourcesResponse)
	return err
}

func (a api) untag(ctx context.Context, resourceType, id string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	r := nlb.CreateUntagResourcesRequest()
	r.ResourceType, r.ResourceId, r.TagKey = resourceType, &[]string{id}, &keys
	_, err := cloud.Call(ctx, a.c, r, nlb.CreateUntagResourcesResponse)
	return err
}

// deleteLB deletes a load balancer; "" job when it was already gone.
func (a api) deleteLB(ctx context.Context, id string) (string, error) {
	r := nlb.CreateDeleteLoadBalancerRequest()
	r.LoadBalancerId = id
	// Deletion is a job that locks the load balancer: a replay after a
	// lost response would get Conflict.Lock; with the same token it gets
	// the first answer, the job to wait for.
	r.ClientToken = uuid.NewString()
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateDeleteLoadBalancerResponse)
	if cloud.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

func currentListener(l nlb.ListenerInfo) CurrentListener {
	start, _ := strconv.Atoi(l.StartPort)
	end, _ := strconv.Atoi(l.EndPort)
	c := CurrentListener{
		ID: l.ListenerId, Port: int32(l.ListenerPort), StartPort: int32(start), EndPort: int32(end),
		Protocol: strings.ToUpper(l.ListenerProtocol), Description: l.ListenerDescription, Status: l.ListenerStatus,
		ServerGroupID: l.ServerGroupId,
		Params: map[string]string{
			"IdleTimeout": strconv.Itoa(l.IdleTimeout), "ProxyProtocolEnabled": boolStr(l.ProxyProtocolEnabled),
			"Cps": strconv.Itoa(l.Cps), "SecurityPolicyId": l.SecurityPolicyId, "CaEnabled": boolStr(l.CaEnabled),
			"AlpnEnabled": boolStr(l.AlpnEnabled), "AlpnPolicy": l.AlpnPolicy,
			"CertificateIds": strings.Join(l.CertificateIds, ","), "CaCertificateIds": strings.Join(l.CaCertificateIds, ","),
		},
	}
	if c.Port != 0 {
		c.StartPort, c.EndPort = 0, 0
	}
	return c
}

// listeners reads every listener of the load balancer, all pages.
func (a api) listeners(ctx context.Context, lbID string) ([]CurrentListener, error) {
	var out []CurrentListener
	token := ""
	for {
		r := nlb.CreateListListenersRequest()
		r.LoadBalancerIds = &[]string{lbID}
		r.MaxResults = requests.NewInteger(pageSize)
		r.NextToken = token
		resp, err := cloud.Call(ctx, a.c, r, nlb.CreateListListenersResponse)
		if err != nil {
			return nil, err
		}
		ppv2 := ppv2Params(resp.GetHttpContentBytes())
		for _, l := range resp.Listeners {
			c := currentListener(l)
			for k, v := range ppv2[l.ListenerId] {
				c.Params[k] = v
			}
			out = append(out, c)
		}
		if resp.NextToken == "" || len(resp.Listeners) == 0 {
			return out, nil
		}
		token = resp.NextToken
	}
}

// createListener returns the new listener's id and its job.
func (a api) createListener(ctx context.Context, lbID string, l Listener, groupID string) (string, string, error) {
	r := nlb.CreateCreateListenerRequest()
	r.LoadBalancerId, r.ListenerProtocol, r.ServerGroupId, r.ListenerDescription = lbID, l.Protocol, groupID, l.Description
	r.ListenerPort = requests.NewInteger(int(l.Port))
	if l.Port == 0 {
		r.StartPort, r.EndPort = requests.NewInteger(int(l.StartPort)), requests.NewInteger(int(l.EndPort))
	}
	r.ClientToken = uuid.NewString()
	setForm(r.GetFormParams(), l.Set)
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateCreateListenerResponse)
	if err != nil {
		return "", "", err
	}
	return resp.ListenerId, resp.JobId, nil
}

func (a api) updateListener(ctx context.Context, id string, params map[string]string, groupID string) (string, error) {
	r := nlb.CreateUpdateListenerAttributeRequest()
	r.ListenerId, r.ServerGroupId = id, groupID
	setForm(r.GetFormParams(), params)
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateUpdateListenerAttributeResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

func (a api) startListener(ctx context.Context, id string) (string, error) {
	r := nlb.CreateStartListenerRequest()
	r.ListenerId = id
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateStartListenerResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

// deleteListener deletes a listener; "" job when it was already gone.
func (a api) deleteListener(ctx context.Context, id string) (string, error) {
	r := nlb.CreateDeleteListenerRequest()
	r.ListenerId = id
	// As for deleteLB: a replay after a lost response gets the job.
	r.ClientToken = uuid.NewString()
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateDeleteListenerResponse)
	if cloud.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

// jobStatuses reads up to 20 jobs in one ListAsynJobs call, which the
// typed SDK lacks, through the same client's CommonRequest. Unknown ids
// are absent from the result.
func (a api) jobStatuses(ctx context.Context, ids []string) (map[string]string, error) {
	var body struct {
		Jobs []struct {
			ID     string `json:"Id"`
			Status string `json:"Status"`
		} `json:"Jobs"`
	}
	_, err := cloud.Do(ctx, a.c, cloud.NLB, "ListAsynJobs", func(c *cloud.Clients) (struct{}, error) {
		r := requests.NewCommonRequest()
		r.Method = "POST"
		r.Product = "Nlb"
		r.Version = apiVersion
		r.ApiName = "ListAsynJobs"
		if c.NLB.Domain == "" {
			r.Domain = "nlb." + a.c.Region() + ".aliyuncs.com"
		}
		for i, id := range ids {
			r.FormParams["JobIds."+strconv.Itoa(i+1)] = id
		}
		resp, err := c.NLB.ProcessCommonRequest(r)
		if err != nil {
			return struct{}{}, err
		}
		if err := json.Unmarshal(resp.GetHttpContentBytes(), &body); err != nil {
			return struct{}{}, fmt.Errorf("decode ListAsynJobs: %w", err)
		}
		return struct{}{}, nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(body.Jobs))
	for _, j := range body.Jobs {
		out[j.ID] = j.Status
	}
	return out, nil
}

// instanceIPs maps instance ids to their primary private IPs, and to their
// primary ENI's first IPv6 address when they have one, 100 a call.
func (a api) instanceIPs(ctx context.Context, ids []string) (map[string]string, map[string]string, error) {
	out, v6 := map[string]string{}, map[string]string{}
	for _, part := range cloud.Chunks(ids, 100) {
		data, _ := json.Marshal(part)
		r := ecs.CreateDescribeInstancesRequest()
		r.InstanceIds = string(data)
		r.PageSize = requests.NewInteger(100)
		resp, err := cloud.Call(ctx, a.c, r, ecs.CreateDescribeInstancesResponse)
		if err != nil {
			return nil, nil, err
		}
		for _, in := range resp.Instances.Instance {
			if ips := in.VpcAttributes.PrivateIpAddress.IpAddress; len(ips) > 0 {
				out[in.InstanceId] = ips[0]
			}
			if ip := primaryIPv6(in); ip != "" {
				v6[in.InstanceId] = ip
			}
		}
	}
	return out, v6, nil
}

// lbsByTag lists every load balancer tagged key=value, page by page.
func (a api) lbsByTag(ctx context.Context, key, value string) ([]*lbInfo, error) {
	var out []*lbInfo
	token := ""
	for page := 1; ; page++ {
		r := nlb.CreateListLoadBalancersRequest()
		r.MaxResults = requests.NewInteger(pageSize)
		r.NextToken = token
		r.Tag = &[]nlb.ListLoadBalancersTag{{Key: key, Value: value}}
		resp, err := cloud.Call(ctx, a.c, r, nlb.CreateListLoadBalancersResponse)
		if err != nil {
			return nil, fmt.Errorf("list load balancers tagged %s=%s, page %d: %w", key, value, page, err)
		}
		for _, lb := range resp.LoadBalancers {
			out = append(out, fromInfo(lb))
		}
		if resp.NextToken == "" || resp.NextToken == token {
			return out, nil
		}
		token = resp.NextToken
	}
}
