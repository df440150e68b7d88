package clb

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// api wraps the SLB calls the provider makes; every call goes through
// cloud.Do (rate limit, retries, classification, metrics).
type api struct {
	c *cloud.Client
}

func (a api) describeLBs(ctx context.Context, set func(*slb.DescribeLoadBalancersRequest)) ([]slb.LoadBalancer, error) {
	req := slb.CreateDescribeLoadBalancersRequest()
	req.PageSize = requests.NewInteger(100)
	set(req)
	resp, err := cloud.Do(ctx, a.c, cloud.SLB, "DescribeLoadBalancers", func(c *cloud.Clients) (*slb.DescribeLoadBalancersResponse, error) {
		return c.SLB.DescribeLoadBalancers(req)
	})
	if err != nil {
		return nil, err
	}
	return resp.LoadBalancers.LoadBalancer, nil
}

func (a api) lbByID(ctx context.Context, id string) (*slb.LoadBalancer, error) {
	lbs, err := a.describeLBs(ctx, func(r *slb.DescribeLoadBalancersRequest) { r.LoadBalancerId = id })
	if err != nil {
		if cloud.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	for i := range lbs {
		if lbs[i].LoadBalancerId == id {
			return &lbs[i], nil
		}
	}
	return nil, nil
}

// lbByTag returns every load balancer tagged key=value: a lost create
// answer and a crash can leave two for one Service.
func (a api) lbByTag(ctx context.Context, key, value string) ([]*slb.LoadBalancer, error) {
	lbs, err := a.lbsByTag(ctx, key, value)
	if err != nil {
		return nil, err
	}
	out := make([]*slb.LoadBalancer, 0, len(lbs))
	for i := range lbs {
		out = append(out, &lbs[i])
	}
	return out, nil
}

func (a api) lbByName(ctx context.Context, name string) (*slb.LoadBalancer, error) {
	lbs, err := a.describeLBs(ctx, func(r *slb.DescribeLoadBalancersRequest) { r.LoadBalancerName = name })
	if err != nil {
		return nil, err
	}
	for i := range lbs {
		if lbs[i].LoadBalancerName == name {
			return &lbs[i], nil
		}
	}
	return nil, nil
}

func tagValue(lb *slb.LoadBalancer, key string) (string, bool) {
	for _, t := range lb.Tags.Tag {
		if t.TagKey == key {
			return t.TagValue, true
		}
	}
	return "", false
}

// groups lists the load balancer's vServer groups with the number of
// listeners using each.
func (a api) groups(ctx context.Context, lbID string) ([]CurrentGroup, error) {
	req := slb.CreateDescribeVServerGroupsRequest()
	req.LoadBalancerId = lbID
	req.IncludeListener = requests.NewBoolean(true)
	resp, err := cloud.Do(ctx, a.c, cloud.SLB, "DescribeVServerGroups", func(c *cloud.Clients) (*slb.DescribeVServerGroupsResponse, error) {
		return c.SLB.DescribeVServerGroups(req)
	})
	if err != nil {
		return nil, err
	}
	var out []CurrentGroup
	for _, g := range resp.VServerGroups.VServerGroup {
		out = append(out, CurrentGroup{ID: g.VServerGroupId, Name: g.VServerGroupName, Listeners: len(g.AssociatedObjects.Listeners.Listener), Tags: tagMap(g.Tags.Tag)})
	}
	return out, nil
}

func (a api) members(ctx context.Context, groupID string) ([]Backend, error) {
	req := slb.CreateDescribeVServerGroupAttributeRequest()
	req.VServerGroupId = groupID
	resp, err := cloud.Do(ctx, a.c, cloud.SLB, "DescribeVServerGroupAttribute", func(c *cloud.Clients) (*slb.DescribeVServerGroupAttributeResponse, error) {
		return c.SLB.DescribeVServerGroupAttribute(req)
	})
	if err != nil {
		return nil, err
	}
	var out []Backend
	for _, b := range resp.BackendServers.BackendServer {
		t := strings.ToLower(b.Type)
		if t == "" {
			t = "ecs"
		}
		m := Backend{ServerID: b.ServerId, Type: t, Port: int32(b.Port), Weight: b.Weight, Description: b.Description}
		if t == "eni" {
			m.IP = b.ServerIp
		}
		out = append(out, m)
	}
	return out, nil
}

// backendJSON encodes members as the BackendServers parameter.
func backendJSON(bs []Backend, withWeight bool) string {
	type server struct {
		ServerID    string `json:"ServerId"`
		ServerIP    string `json:"ServerIp,omitempty"`
		Type        string `json:"Type"`
		Port        string `json:"Port"`
		Weight      string `json:"Weight,omitempty"`
		Description string `json:"Description,omitempty"`
	}
	out := make([]server, 0, len(bs))
	for _, b := range bs {
		s := server{ServerID: b.ServerID, ServerIP: b.IP, Type: b.Type, Port: strconv.Itoa(int(b.Port)), Description: b.Description}
		if withWeight {
			s.Weight = strconv.Itoa(b.Weight)
		}
		out = append(out, s)
	}
	data, _ := json.Marshal(out)
	return string(data)
}

func (a api) createGroup(ctx context.Context, lbID, name string, first []Backend) (string, error) {
	req := slb.CreateCreateVServerGroupRequest()
	req.LoadBalancerId = lbID
	req.VServerGroupName = name
	if len(first) > 0 {
		req.BackendServers = backendJSON(first, true)
	}
	resp, err := cloud.Do(ctx, a.c, cloud.SLB, "CreateVServerGroup", func(c *cloud.Clients) (*slb.CreateVServerGroupResponse, error) {
		return c.SLB.CreateVServerGroup(req)
	})
	if err != nil {
		return "", err
	}
	return resp.VServerGroupId, nil
}

func (a api) deleteGroup(ctx context.Context, id string) error {
	req := slb.CreateDeleteVServerGroupRequest()
	req.VServerGroupId = id
	_, err := cloud.Do(ctx, a.c, cloud.SLB, "DeleteVServerGroup", func(c *cloud.Clients) (*slb.DeleteVServerGroupResponse, error) {
		return c.SLB.DeleteVServerGroup(req)
	})
	if cloud.IsNotFound(err) {
		return nil
	}
	return err
}

// applyMembers applies a backend plan in batches of at most batch members
// per call: removals, then weight updates, then additions.
func (a api) applyMembers(ctx context.Context, groupID string, plan BackendPlan, batch int) error {
	for _, part := range cloud.Chunks(plan.Remove, batch) {
		req := slb.CreateRemoveVServerGroupBackendServersRequest()
		req.VServerGroupId, req.BackendServers = groupID, backendJSON(part, false)
		if _, err := cloud.Do(ctx, a.c, cloud.SLB, "RemoveVServerGroupBackendServers", func(c *cloud.Clients) (*ack, error) {
			return writeAck(c.SLB, req)
		}); err != nil {
			return err
		}
	}
	for _, part := range cloud.Chunks(plan.Update, batch) {
		req := slb.CreateSetVServerGroupAttributeRequest()
		req.VServerGroupId, req.BackendServers = groupID, backendJSON(part, true)
		if _, err := cloud.Do(ctx, a.c, cloud.SLB, "SetVServerGroupAttribute", func(c *cloud.Clients) (*ack, error) {
			return writeAck(c.SLB, req)
		}); err != nil {
			return err
		}
	}
	for _, part := range cloud.Chunks(plan.Add, batch) {
		req := slb.CreateAddVServerGroupBackendServersRequest()
		req.VServerGroupId, req.BackendServers = groupID, backendJSON(part, true)
		if _, err := cloud.Do(ctx, a.c, cloud.SLB, "AddVServerGroupBackendServers", func(c *cloud.Clients) (*ack, error) {
			return writeAck(c.SLB, req)
		}); err != nil {
			return err
		}
	}
	return nil
}

// listeners reads every listener of the load balancer, all pages.
func (a api) listeners(ctx context.Context, lbID string) ([]CurrentListener, error) {
	var out []CurrentListener
	token := ""
	for {
		req := slb.CreateDescribeLoadBalancerListenersRequest()
		req.LoadBalancerId = &[]string{lbID}
		req.MaxResults = requests.NewInteger(100)
		req.NextToken = token
		resp, err := cloud.Do(ctx, a.c, cloud.SLB, "DescribeLoadBalancerListeners", func(c *cloud.Clients) (*slb.DescribeLoadBalancerListenersResponse, error) {
			return c.SLB.DescribeLoadBalancerListeners(req)
		})
		if err != nil {
			return nil, err
		}
		for _, l := range resp.Listeners {
			out = append(out, currentListener(l))
		}
		if resp.NextToken == "" || len(resp.Listeners) == 0 {
			return out, nil
		}
		token = resp.NextToken
	}
}

// currentListener flattens a listener into API parameter names: the JSON
// keys of the SDK's listener structs are the parameter names.
func currentListener(l slb.ListenerInDescribeLoadBalancerListeners) CurrentListener {
	proto := strings.ToLower(l.ListenerProtocol)
	params := map[string]string{
		"Scheduler": l.Scheduler, "Bandwidth": strconv.Itoa(l.Bandwidth),
		"AclId": l.AclId, "AclStatus": l.AclStatus, "AclType": l.AclType,
	}
	var cfg any
	switch proto {
	case "tcp":
		cfg = l.TCPListenerConfig
	case "udp":
		cfg = l.UDPListenerConfig
	case "http":
		cfg = l.HTTPListenerConfig
	case "https":
		cfg = l.HTTPSListenerConfig
	}
	if cfg != nil {
		data, _ := json.Marshal(cfg)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		for k, v := range m {
			switch x := v.(type) {
			case string:
				params[k] = x
			case float64:
				params[k] = strconv.FormatFloat(x, 'f', -1, 64)
			case bool:
				params[k] = strconv.FormatBool(x)
			}
		}
	}
	return CurrentListener{
		Port: int32(l.ListenerPort), Protocol: proto, Description: l.Description,
		Status: l.Status, VServerGroupID: l.VServerGroupId, Params: params,
	}
}

// listenerRequest returns the typed request and response of a listener
// action for a protocol.
func listenerRequest(verb, proto string) (requests.AcsRequest, responses.AcsResponse, string, error) {
	switch verb + "/" + proto {
	case "create/tcp":
		return slb.CreateCreateLoadBalancerTCPListenerRequest(), slb.CreateCreateLoadBalancerTCPListenerResponse(), "CreateLoadBalancerTCPListener", nil
	case "create/udp":
		return slb.CreateCreateLoadBalancerUDPListenerRequest(), slb.CreateCreateLoadBalancerUDPListenerResponse(), "CreateLoadBalancerUDPListener", nil
	case "create/http":
		return slb.CreateCreateLoadBalancerHTTPListenerRequest(), slb.CreateCreateLoadBalancerHTTPListenerResponse(), "CreateLoadBalancerHTTPListener", nil
	case "create/https":
		return slb.CreateCreateLoadBalancerHTTPSListenerRequest(), slb.CreateCreateLoadBalancerHTTPSListenerResponse(), "CreateLoadBalancerHTTPSListener", nil
	case "set/tcp":
		return slb.CreateSetLoadBalancerTCPListenerAttributeRequest(), slb.CreateSetLoadBalancerTCPListenerAttributeResponse(), "SetLoadBalancerTCPListenerAttribute", nil
	case "set/udp":
		return slb.CreateSetLoadBalancerUDPListenerAttributeRequest(), slb.CreateSetLoadBalancerUDPListenerAttributeResponse(), "SetLoadBalancerUDPListenerAttribute", nil
	case "set/http":
		return slb.CreateSetLoadBalancerHTTPListenerAttributeRequest(), slb.CreateSetLoadBalancerHTTPListenerAttributeResponse(), "SetLoadBalancerHTTPListenerAttribute", nil
	case "set/https":
		return slb.CreateSetLoadBalancerHTTPSListenerAttributeRequest(), slb.CreateSetLoadBalancerHTTPSListenerAttributeResponse(), "SetLoadBalancerHTTPSListenerAttribute", nil
	}
	return nil, nil, "", fmt.Errorf("unsupported listener protocol %q", proto)
}

// listenerCall sends a create or set listener action with params. The
// typed SDK request carries the settings in its query parameters, which
// the SDK keeps when it adds the struct fields.
func (a api) listenerCall(ctx context.Context, verb, proto, lbID string, port int32, params map[string]string) error {
	_, _, action, err := listenerRequest(verb, proto)
	if err != nil {
		return err
	}
	_, err = cloud.Do(ctx, a.c, cloud.SLB, action, func(c *cloud.Clients) (responses.AcsResponse, error) {
		req, resp, _, _ := listenerRequest(verb, proto)
		q := req.GetQueryParams()
		for k, v := range params {
			// Listener creation spells the TCP/UDP interval in lower camel case.
			if k == "HealthCheckInterval" && verb == "create" && (proto == "tcp" || proto == "udp") {
				k = "healthCheckInterval"
			}
			q[k] = v
		}
		q["LoadBalancerId"] = lbID
		q["ListenerPort"] = strconv.Itoa(int(port))
		return resp, c.SLB.DoAction(req, resp)
	})
	return err
}

func (a api) startListener(ctx context.Context, lbID string, port int32, proto string) error {
	req := slb.CreateStartLoadBalancerListenerRequest()
	req.LoadBalancerId, req.ListenerPort, req.ListenerProtocol = lbID, requests.NewInteger(int(port)), proto
	_, err := cloud.Do(ctx, a.c, cloud.SLB, "StartLoadBalancerListener", func(c *cloud.Clients) (*slb.StartLoadBalancerListenerResponse, error) {
		return c.SLB.StartLoadBalancerListener(req)
	})
	return err
}

func (a api) deleteListener(ctx context.Context, lbID string, port int32, proto string) error {
	req := slb.CreateDeleteLoadBalancerListenerRequest()
	req.LoadBalancerId, req.ListenerPort, req.ListenerProtocol = lbID, requests.NewInteger(int(port)), proto
	_, err := cloud.Do(ctx, a.c, cloud.SLB, "DeleteLoadBalancerListener", func(c *cloud.Clients) (*slb.DeleteLoadBalancerListenerResponse, error) {
		return c.SLB.DeleteLoadBalancerListener(req)
	})
	if cloud.IsNotFound(err) {
		return nil
	}
	return err
}

func (a api) tag(ctx context.Context, lbID string, tags []naming.Tag) error {
	if len(tags) == 0 {
		return nil
	}
	req := slb.CreateTagResourcesRequest()
	req.ResourceType = "instance"
	req.ResourceId = &[]string{lbID}
	ts := make([]slb.TagResourcesTag, 0, len(tags))
	for _, t := range tags {
		ts = append(ts, slb.TagResourcesTag{Key: t.Key, Value: t.Value})
	}
	req.Tag = &ts
	_, err := cloud.Do(ctx, a.c, cloud.SLB, "TagResources", func(c *cloud.Clients) (*slb.TagResourcesResponse, error) {
		return c.SLB.TagResources(req)
	})
	return err
}

func (a api) untag(ctx context.Context, lbID string, keys []string) error {
	req := slb.CreateUntagResourcesRequest()
	req.ResourceType = "instance"
	req.ResourceId = &[]string{lbID}
	req.TagKey = &keys
	_, err := cloud.Do(ctx, a.c, cloud.SLB, "UntagResources", func(c *cloud.Clients) (*slb.UntagResourcesResponse, error) {
		return c.SLB.UntagResources(req)
	})
	return err
}

func (a api) setDeleteProtection(ctx context.Context, lbID, v string) error {
	req := slb.CreateSetLoadBalancerDeleteProtectionRequest()
	req.LoadBalancerId, req.DeleteProtection = lbID, v
	_, err := cloud.Do(ctx, a.c, cloud.SLB, "SetLoadBalancerDeleteProtection", func(c *cloud.Clients) (*slb.SetLoadBalancerDeleteProtectionResponse, error) {
		return c.SLB.SetLoadBalancerDeleteProtection(req)
	})
	return err
}

func (a api) setModificationProtection(ctx context.Context, lbID, v string) error {
	req := slb.CreateSetLoadBalancerModificationProtectionRequest()
	req.LoadBalancerId, req.ModificationProtectionStatus = lbID, v
	if v == "ConsoleProtection" {
		req.ModificationProtectionReason = modificationReason
	}
	_, err := cloud.Do(ctx, a.c, cloud.SLB, "SetLoadBalancerModificationProtection", func(c *cloud.Clients) (*slb.SetLoadBalancerModificationProtectionResponse, error) {
		return c.SLB.SetLoadBalancerModificationProtection(req)
	})
	return err
}

func (a api) deleteLB(ctx context.Context, lbID string) error {
	req := slb.CreateDeleteLoadBalancerRequest()
	req.LoadBalancerId = lbID
	_, err := cloud.Do(ctx, a.c, cloud.SLB, "DeleteLoadBalancer", func(c *cloud.Clients) (*slb.DeleteLoadBalancerResponse, error) {
		return c.SLB.DeleteLoadBalancer(req)
	})
	if cloud.IsNotFound(err) {
		return nil
	}
	return err
}

// lbsByTag lists every load balancer tagged key=value, page by page.
func (a api) lbsByTag(ctx context.Context, key, value string) ([]slb.LoadBalancer, error) {
	tags, _ := json.Marshal([]map[string]string{{"TagKey": key, "TagValue": value}})
	var out []slb.LoadBalancer
	for page := 1; ; page++ {
		req := slb.CreateDescribeLoadBalancersRequest()
		req.PageSize = requests.NewInteger(listPageSize)
		req.PageNumber = requests.NewInteger(page)
		req.Tags = string(tags)
		resp, err := cloud.Do(ctx, a.c, cloud.SLB, "DescribeLoadBalancers", func(c *cloud.Clients) (*slb.DescribeLoadBalancersResponse, error) {
			return c.SLB.DescribeLoadBalancers(req)
		})
		if err != nil {
			return nil, fmt.Errorf("list load balancers tagged %s=%s, page %d: %w", key, value, page, err)
		}
		got := resp.LoadBalancers.LoadBalancer
		out = append(out, got...)
		if len(got) < listPageSize || len(out) >= resp.TotalCount {
			return out, nil
		}
	}
}

// listPageSize is the API's largest DescribeLoadBalancers page.
const listPageSize = 100
