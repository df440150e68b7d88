package nlb

import (
	"context"
	"strconv"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/google/uuid"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// The NLB server group and server calls of the cloud API.

func currentGroup(g nlb.ServerGroup) CurrentGroup {
	const hc = "HealthCheckConfig."
	h := g.HealthCheck
	return CurrentGroup{
		ID: g.ServerGroupId, Name: g.ServerGroupName, Protocol: g.Protocol, Type: g.ServerGroupType,
		AnyPort: g.AnyPortEnabled, RelatedLBs: g.RelatedLoadBalancerIds, AddressIPVersion: g.AddressIPVersion, Tags: groupTags(g.Tags),
		Params: map[string]string{
			"Scheduler":                      g.Scheduler,
			"ConnectionDrainEnabled":         boolStr(g.ConnectionDrainEnabled),
			"ConnectionDrainTimeout":         strconv.Itoa(g.ConnectionDrainTimeout),
			"PreserveClientIpEnabled":        boolStr(g.PreserveClientIpEnabled),
			hc + "HealthCheckEnabled":        boolStr(h.HealthCheckEnabled),
			hc + "HealthCheckType":           h.HealthCheckType,
			hc + "HealthCheckConnectPort":    strconv.Itoa(h.HealthCheckConnectPort),
			hc + "HealthyThreshold":          strconv.Itoa(h.HealthyThreshold),
			hc + "UnhealthyThreshold":        strconv.Itoa(h.UnhealthyThreshold),
			hc + "HealthCheckInterval":       strconv.Itoa(h.HealthCheckInterval),
			hc + "HealthCheckConnectTimeout": strconv.Itoa(h.HealthCheckConnectTimeout),
			hc + "HealthCheckUrl":            h.HealthCheckUrl,
			hc + "HealthCheckDomain":         h.HealthCheckDomain,
			hc + "HttpCheckMethod":           h.HttpCheckMethod,
			hc + "HealthCheckHttpCode":       strings.Join(h.HealthCheckHttpCode, ","),
		},
	}
}

// listGroups lists server groups, all pages, filtered by set.
func (a api) listGroups(ctx context.Context, set func(*nlb.ListServerGroupsRequest)) ([]CurrentGroup, error) {
	var out []CurrentGroup
	token := ""
	for {
		r := nlb.CreateListServerGroupsRequest()
		r.MaxResults = requests.NewInteger(pageSize)
		r.NextToken = token
		set(r)
		resp, err := cloud.Call(ctx, a.c, r, nlb.CreateListServerGroupsResponse)
		if err != nil {
			return nil, err
		}
		for _, g := range resp.ServerGroups {
			out = append(out, currentGroup(g))
		}
		if resp.NextToken == "" || len(resp.ServerGroups) == 0 {
			return out, nil
		}
		token = resp.NextToken
	}
}

// groupsByTag lists the groups carrying tag key=value.
func (a api) groupsByTag(ctx context.Context, key, value string) ([]CurrentGroup, error) {
	return a.listGroups(ctx, func(r *nlb.ListServerGroupsRequest) {
		r.Tag = &[]nlb.ListServerGroupsTag{{Key: key, Value: value}}
	})
}

// groupsByID lists the groups with these ids (at most 20 per call).
func (a api) groupsByID(ctx context.Context, ids []string) ([]CurrentGroup, error) {
	var out []CurrentGroup
	for _, part := range cloud.Chunks(ids, 20) {
		gs, err := a.listGroups(ctx, func(r *nlb.ListServerGroupsRequest) { r.ServerGroupIds = &part })
		if err != nil {
			return nil, err
		}
		out = append(out, gs...)
	}
	return out, nil
}

// setForm adds wire parameters to a typed request; the SDK keeps them
// when it adds the struct fields.
func setForm(form map[string]string, set map[string]string) {
	for k, v := range formParams(set) {
		form[k] = v
	}
}

func (a api) createGroup(ctx context.Context, vpcID string, g Group, tags []naming.Tag) (string, string, error) {
	r := nlb.CreateCreateServerGroupRequest()
	r.ServerGroupName, r.VpcId, r.ServerGroupType, r.Protocol = g.Name, vpcID, g.Type, g.Protocol
	if g.AnyPort {
		r.AnyPortEnabled = requests.NewBoolean(true)
	}
	if g.AddressIPVersion != "" && !strings.EqualFold(g.AddressIPVersion, ipv4) {
		// Sent only when not the default, so IPv4 creates stay as they were.
		r.AddressIPVersion = g.AddressIPVersion
	}
	ts := make([]nlb.CreateServerGroupTag, 0, len(tags))
	for _, t := range tags {
		ts = append(ts, nlb.CreateServerGroupTag{Key: t.Key, Value: t.Value})
	}
	r.Tag = &ts
	// A token per create (kept across cloud.Do's retries) makes a retry
	// after a lost response return the group already made.
	r.ClientToken = uuid.NewString()
	setForm(r.GetFormParams(), g.Set)
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateCreateServerGroupResponse)
	if err != nil {
		return "", "", err
	}
	return resp.ServerGroupId, resp.JobId, nil
}

func (a api) updateGroup(ctx context.Context, id string, params map[string]string) (string, error) {
	r := nlb.CreateUpdateServerGroupAttributeRequest()
	r.ServerGroupId = id
	setForm(r.GetFormParams(), params)
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateUpdateServerGroupAttributeResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

// deleteGroup deletes a group; "" job when it was already gone.
func (a api) deleteGroup(ctx context.Context, id string) (string, error) {
	r := nlb.CreateDeleteServerGroupRequest()
	r.ServerGroupId = id
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateDeleteServerGroupResponse)
	if cloud.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

// servers lists a group's members, all pages.
func (a api) servers(ctx context.Context, groupID string) ([]Server, error) {
	var out []Server
	token := ""
	for {
		r := nlb.CreateListServerGroupServersRequest()
		r.ServerGroupId, r.NextToken = groupID, token
		r.MaxResults = requests.NewInteger(pageSize)
		resp, err := cloud.Call(ctx, a.c, r, nlb.CreateListServerGroupServersResponse)
		if err != nil {
			return nil, err
		}
		for _, s := range resp.Servers {
			out = append(out, Server{ServerID: s.ServerId, IP: s.ServerIp, Type: s.ServerType, Port: int32(s.Port), Weight: s.Weight, Description: s.Description})
		}
		if resp.NextToken == "" || len(resp.Servers) == 0 {
			return out, nil
		}
		token = resp.NextToken
	}
}

// serverIP is the ServerIp to send: Ecs servers are identified by id alone.
func serverIP(s Server) string {
	if s.Type == ServerEcs {
		return ""
	}
	return s.IP
}

func (a api) addServers(ctx context.Context, groupID string, ss []Server) (string, error) {
	r := nlb.CreateAddServersToServerGroupRequest()
	r.ServerGroupId = groupID
	list := make([]nlb.AddServersToServerGroupServers, 0, len(ss))
	for _, s := range ss {
		list = append(list, nlb.AddServersToServerGroupServers{
			ServerId: s.ServerID, ServerType: s.Type, ServerIp: serverIP(s), Port: strconv.Itoa(int(s.Port)),
			Weight: strconv.Itoa(s.Weight), Description: s.Description,
		})
	}
	r.Servers = &list
	r.ClientToken = uuid.NewString()
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateAddServersToServerGroupResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

func (a api) removeServers(ctx context.Context, groupID string, ss []Server) (string, error) {
	r := nlb.CreateRemoveServersFromServerGroupRequest()
	r.ServerGroupId = groupID
	list := make([]nlb.RemoveServersFromServerGroupServers, 0, len(ss))
	for _, s := range ss {
		list = append(list, nlb.RemoveServersFromServerGroupServers{ServerId: s.ServerID, ServerType: s.Type, ServerIp: serverIP(s), Port: strconv.Itoa(int(s.Port))})
	}
	r.Servers = &list
	r.ClientToken = uuid.NewString()
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateRemoveServersFromServerGroupResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

func (a api) updateServers(ctx context.Context, groupID string, ss []Server) (string, error) {
	r := nlb.CreateUpdateServerGroupServersAttributeRequest()
	r.ServerGroupId = groupID
	list := make([]nlb.UpdateServerGroupServersAttributeServers, 0, len(ss))
	for _, s := range ss {
		list = append(list, nlb.UpdateServerGroupServersAttributeServers{
			ServerId: s.ServerID, ServerType: s.Type, ServerIp: serverIP(s), Port: strconv.Itoa(int(s.Port)),
			Weight: strconv.Itoa(s.Weight), Description: s.Description,
		})
	}
	r.Servers = &list
	r.ClientToken = uuid.NewString()
	resp, err := cloud.Call(ctx, a.c, r, nlb.CreateUpdateServerGroupServersAttributeResponse)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}
