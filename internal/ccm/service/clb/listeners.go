package clb

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Listeners and the domain extensions of HTTPS ones: read, diffed
// (PlanListeners, PlanDomains) and applied; a listener is ours only by its
// description.

// CurrentListener is a listener as read from the cloud.
type CurrentListener struct {
	// Port and Protocol identify it on its load balancer.
	Port     int32
	Protocol string
	// Description is the ownership mark.
	Description string
	// Status is running, stopped, starting, ...
	Status string
	// VServerGroupID is the group it forwards to.
	VServerGroupID string
	// Params are its settings under their API parameter names.
	Params map[string]string
}

// ListenerUpdate is a change to an existing listener.
type ListenerUpdate struct {
	// Listener is the desired listener.
	Listener Listener
	// Params are only the parameters to send (the changed ones).
	Params map[string]string
}

// ListenerPlan is what must happen to a load balancer's listeners, in
// order: Delete, Create, Update, Start.
type ListenerPlan struct {
	// Delete are our listeners that are no longer wanted or must be
	// recreated with another protocol.
	Delete []CurrentListener
	// Create are missing listeners.
	Create []Listener
	// Update are listeners whose settings or group differ.
	Update []ListenerUpdate
	// Start are stopped listeners that must run.
	Start []CurrentListener
	// Conflicts describe desired ports held by listeners we must not touch.
	Conflicts []string
}

// Empty reports whether the plan changes nothing.
func (p ListenerPlan) Empty() bool {
	return len(p.Delete) == 0 && len(p.Create) == 0 && len(p.Update) == 0 && len(p.Start) == 0
}

func tcpFamily(proto string) bool { return proto == "tcp" || proto == "http" || proto == "https" }

// samePort reports whether two listeners compete for one port: UDP may
// share a port number with the TCP family, nothing else may.
func samePort(port int32, proto string, c CurrentListener) bool {
	return c.Port == port && (c.Protocol == proto || tcpFamily(c.Protocol) && tcpFamily(proto))
}

// PlanListeners compares the desired listeners with the load balancer's.
// Only listeners whose description proves they belong to ref are ever
// deleted; a listener of someone else on a desired port is reported, or
// with force (force-override-listeners) taken over: its update carries our
// description with the other changes, so from then on it is ours like one
// we created (deleted when its port or the Service goes) instead of a
// listener we change but never clean up. Listeners on ports no Service
// port wants are never touched unless ours. groupIDs maps PortKeys to the
// id of the group serving them.
func PlanListeners(desired []Listener, current []CurrentListener, ref naming.Ref, force bool, groupIDs map[PortKey]string) ListenerPlan {
	var plan ListenerPlan
	matched := map[int]bool{}
	for _, d := range desired {
		idx := -1
		for i, c := range current {
			if !matched[i] && samePort(d.Port, d.Protocol, c) {
				idx = i
				break
			}
		}
		if idx < 0 {
			plan.Create = append(plan.Create, d)
			continue
		}
		matched[idx] = true
		c := current[idx]
		parsed, named := naming.ParseCLB(c.Description)
		_, owned := ref.OwnsCLB(c.Description)
		if !owned && named {
			// Another Service's listener (of this cluster or another) is
			// never taken over, force or not: two namespaces borrowing one
			// load balancer must not hijack each other's ports.
			plan.Conflicts = append(plan.Conflicts, fmt.Sprintf("listener %s:%d belongs to Service %s/%s (cluster %s) and is never taken over, even with force-override-listeners", c.Protocol, c.Port, parsed.Namespace, parsed.Name, parsed.ClusterID))
			continue
		}
		if !owned && !force {
			plan.Conflicts = append(plan.Conflicts, fmt.Sprintf("listener %s:%d (description %q) is not managed by this Service; set force-override-listeners to \"true\" to manage it", c.Protocol, c.Port, c.Description))
			continue
		}
		if c.Protocol != d.Protocol {
			plan.Delete = append(plan.Delete, c)
			plan.Create = append(plan.Create, d)
			continue
		}
		changed := map[string]string{}
		for k, v := range d.Set {
			if !strings.EqualFold(strings.TrimSpace(c.Params[k]), v) {
				changed[k] = v
			}
		}
		if kubeProxyShaped(c.Protocol, c.Params) {
			for k, v := range d.ResetKubeProxy {
				if !strings.EqualFold(strings.TrimSpace(c.Params[k]), v) {
					changed[k] = v
				}
			}
		}
		if d.ServicePort != 0 {
			if id := groupIDs[d.ServicePort]; id != "" && id != c.VServerGroupID {
				changed["VServerGroup"] = "on"
				changed["VServerGroupId"] = id
			}
		}
		if c.Description != d.Description {
			changed["Description"] = d.Description
		}
		if len(changed) > 0 {
			plan.Update = append(plan.Update, ListenerUpdate{Listener: d, Params: changed})
		}
		if c.Status == "stopped" {
			plan.Start = append(plan.Start, c)
		}
	}
	for i, c := range current {
		if matched[i] {
			continue
		}
		if _, owned := ref.OwnsCLB(c.Description); owned {
			plan.Delete = append(plan.Delete, c)
		}
	}
	// A forwarding HTTP listener must go before the HTTPS one it targets.
	sort.SliceStable(plan.Delete, func(i, j int) bool {
		return plan.Delete[i].Protocol == "http" && plan.Delete[j].Protocol != "http"
	})
	return plan
}

// kubeProxyShaped reports whether a listener's current check is the one
// kubeProxyCheck sets.
func kubeProxyShaped(proto string, have map[string]string) bool {
	if have["HealthCheckURI"] != annotations.KubeProxyHealthPath || have["HealthCheckConnectPort"] == "" || have["HealthCheckConnectPort"] == "0" {
		return false
	}
	if proto == "tcp" {
		return strings.EqualFold(have["HealthCheckType"], "http")
	}
	return strings.EqualFold(have["HealthCheck"], "on")
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
		resp, err := cloud.Call(ctx, a.c, req, slb.CreateDescribeLoadBalancerListenersResponse)
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

// listenerRequest returns the typed request of a listener action for a
// protocol, and the constructor of its response.
func listenerRequest(verb, proto string) (requests.AcsRequest, func() responses.AcsResponse, error) {
	switch verb + "/" + proto {
	case "create/tcp":
		return slb.CreateCreateLoadBalancerTCPListenerRequest(), response(slb.CreateCreateLoadBalancerTCPListenerResponse), nil
	case "create/udp":
		return slb.CreateCreateLoadBalancerUDPListenerRequest(), response(slb.CreateCreateLoadBalancerUDPListenerResponse), nil
	case "create/http":
		return slb.CreateCreateLoadBalancerHTTPListenerRequest(), response(slb.CreateCreateLoadBalancerHTTPListenerResponse), nil
	case "create/https":
		return slb.CreateCreateLoadBalancerHTTPSListenerRequest(), response(slb.CreateCreateLoadBalancerHTTPSListenerResponse), nil
	case "set/tcp":
		return slb.CreateSetLoadBalancerTCPListenerAttributeRequest(), response(slb.CreateSetLoadBalancerTCPListenerAttributeResponse), nil
	case "set/udp":
		return slb.CreateSetLoadBalancerUDPListenerAttributeRequest(), response(slb.CreateSetLoadBalancerUDPListenerAttributeResponse), nil
	case "set/http":
		return slb.CreateSetLoadBalancerHTTPListenerAttributeRequest(), response(slb.CreateSetLoadBalancerHTTPListenerAttributeResponse), nil
	case "set/https":
		return slb.CreateSetLoadBalancerHTTPSListenerAttributeRequest(), response(slb.CreateSetLoadBalancerHTTPSListenerAttributeResponse), nil
	}
	return nil, nil, fmt.Errorf("unsupported listener protocol %q", proto)
}

// response makes a typed response constructor an untyped one.
func response[R responses.AcsResponse](create func() R) func() responses.AcsResponse {
	return func() responses.AcsResponse { return create() }
}

// listenerCall sends a create or set listener action with params. The
// typed SDK request carries the settings in its query parameters, which
// the SDK keeps when it adds the struct fields.
func (a api) listenerCall(ctx context.Context, verb, proto, lbID string, port int32, params map[string]string) error {
	req, newResp, err := listenerRequest(verb, proto)
	if err != nil {
		return err
	}
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
	_, err = cloud.Call(ctx, a.c, req, newResp)
	return err
}

func (a api) startListener(ctx context.Context, lbID string, port int32, proto string) error {
	req := slb.CreateStartLoadBalancerListenerRequest()
	req.LoadBalancerId, req.ListenerPort, req.ListenerProtocol = lbID, requests.NewInteger(int(port)), proto
	_, err := cloud.Call(ctx, a.c, req, slb.CreateStartLoadBalancerListenerResponse)
	return err
}

func (a api) deleteListener(ctx context.Context, lbID string, port int32, proto string) error {
	req := slb.CreateDeleteLoadBalancerListenerRequest()
	req.LoadBalancerId, req.ListenerPort, req.ListenerProtocol = lbID, requests.NewInteger(int(port)), proto
	_, err := cloud.Call(ctx, a.c, req, slb.CreateDeleteLoadBalancerListenerResponse)
	if cloud.IsNotFound(err) {
		return nil
	}
	return err
}

// ensureListeners brings the listeners (with their source-range ACLs and
// domain extensions) to the model, when the Service manages them;
// listeners holds the current ones when they were read already.
func (p *Provider) ensureListeners(ctx context.Context, req *service.Request, lb *slb.LoadBalancer, model *Model, gplan GroupPlan, listeners []CurrentListener, created bool) ([]service.Warning, error) {
	s := req.Settings
	manages := s.ManagesListeners()
	var err error
	if manages && !created && !req.Binding.Shared() {
		if listeners, err = p.api.listeners(ctx, lb.LoadBalancerId); err != nil {
			return nil, fmt.Errorf("list listeners of %s: %w", lb.LoadBalancerId, err)
		}
	}
	ranges := service.ParseSourceRanges(req.Service)
	if !manages {
		if ranges.Empty() {
			return nil, nil
		}
		return []service.Warning{{Reason: service.EventSourceRangesIgnored, Message: fmt.Sprintf(
			"loadBalancerSourceRanges are not applied: the listeners of reused load balancer %s are not managed without %s", lb.LoadBalancerId, s.Key("force-override-listeners"))}}, nil
	}
	aclCleanup, out, err := p.syncSourceRanges(ctx, req, ranges, lb, model, listeners)
	if err != nil {
		return out, err
	}
	lplan := PlanListeners(model.Listeners, listeners, model.Ref, s.LoadBalancer.ForceOverrideListeners, gplan.IDs)
	for _, c := range lplan.Conflicts {
		out = append(out, service.Warning{Reason: EventListenerConflict, Message: c})
	}
	if err := p.applyListeners(ctx, lb.LoadBalancerId, lplan, gplan.IDs); err != nil {
		return out, err
	}
	ports := httpsPorts(model.Listeners, listeners, model.Ref, s.LoadBalancer.ForceOverrideListeners)
	if err := p.syncDomains(ctx, lb.LoadBalancerId, s.Listener.DomainExtensions, ports); err != nil {
		return out, err
	}
	return out, aclCleanup(ctx)
}

// deleteListeners deletes listeners in order (a plan's Delete).
func (p *Provider) deleteListeners(ctx context.Context, lbID string, listeners []CurrentListener) error {
	for _, c := range listeners {
		if err := p.api.deleteListener(ctx, lbID, c.Port, c.Protocol); err != nil {
			return fmt.Errorf("delete listener %s:%d: %w", c.Protocol, c.Port, err)
		}
	}
	return nil
}

// applyListeners applies a listener plan in its order: Delete, Create
// (each started), Update, Start.
func (p *Provider) applyListeners(ctx context.Context, lbID string, plan ListenerPlan, groupIDs map[int32]string) error {
	if err := p.deleteListeners(ctx, lbID, plan.Delete); err != nil {
		return err
	}
	for _, l := range plan.Create {
		params := map[string]string{"Description": l.Description}
		for k, v := range l.CreateDefaults {
			params[k] = v
		}
		for k, v := range l.Set {
			params[k] = v
		}
		if l.ServicePort != 0 {
			params["VServerGroupId"] = groupIDs[l.ServicePort]
		}
		if err := p.api.listenerCall(ctx, "create", l.Protocol, lbID, l.Port, params); err != nil {
			return fmt.Errorf("create listener %s:%d: %w", l.Protocol, l.Port, err)
		}
		if err := p.api.startListener(ctx, lbID, l.Port, l.Protocol); err != nil {
			return fmt.Errorf("start listener %s:%d: %w", l.Protocol, l.Port, err)
		}
	}
	for _, u := range plan.Update {
		if err := p.api.listenerCall(ctx, "set", u.Listener.Protocol, lbID, u.Listener.Port, u.Params); err != nil {
			return fmt.Errorf("update listener %s:%d: %w", u.Listener.Protocol, u.Listener.Port, err)
		}
	}
	for _, c := range plan.Start {
		if err := p.api.startListener(ctx, lbID, c.Port, c.Protocol); err != nil {
			return fmt.Errorf("start listener %s:%d: %w", c.Protocol, c.Port, err)
		}
	}
	return nil
}

// CurrentDomain is a domain extension (SNI certificate) of an HTTPS
// listener as read from the cloud.
type CurrentDomain struct {
	// ID is the DomainExtensionId.
	ID string
	// Domain is the server name it answers.
	Domain string
	// CertID is its server certificate.
	CertID string
}

// DomainUpdate points an existing extension at another certificate.
type DomainUpdate struct {
	// ID is the extension to change.
	ID string
	// Domain is its server name (for logs and errors).
	Domain string
	// CertID is the certificate it must use.
	CertID string
}

// DomainPlan is the change to one HTTPS listener's domain extensions,
// applied in the order Delete, Update, Create.
type DomainPlan struct {
	// Delete are extensions for domains the annotation no longer lists.
	Delete []CurrentDomain
	// Update are extensions whose certificate differs.
	Update []DomainUpdate
	// Create are domains without an extension.
	Create []annotations.DomainExtension
}

// Empty reports whether the plan changes nothing.
func (p DomainPlan) Empty() bool { return len(p.Delete)+len(p.Update)+len(p.Create) == 0 }

// PlanDomains compares the domain-extensions annotation with a listener's
// extensions. Domains are DNS names, so they match case-insensitively.
// The annotation is the whole truth for a listener it applies to: an
// extension of a domain it does not list is deleted.
func PlanDomains(desired []annotations.DomainExtension, current []CurrentDomain) DomainPlan {
	var plan DomainPlan
	byDomain := map[string]CurrentDomain{}
	for _, c := range current {
		byDomain[strings.ToLower(c.Domain)] = c
	}
	wanted := map[string]bool{}
	for _, d := range desired {
		key := strings.ToLower(d.Domain)
		wanted[key] = true
		c, ok := byDomain[key]
		switch {
		case !ok:
			plan.Create = append(plan.Create, d)
		case c.CertID != d.CertID:
			plan.Update = append(plan.Update, DomainUpdate{ID: c.ID, Domain: c.Domain, CertID: d.CertID})
		}
	}
	for _, c := range current {
		if !wanted[strings.ToLower(c.Domain)] {
			plan.Delete = append(plan.Delete, c)
		}
	}
	sort.Slice(plan.Delete, func(i, j int) bool { return plan.Delete[i].Domain < plan.Delete[j].Domain })
	return plan
}

// httpsPorts are the ports of the desired HTTPS listeners this Service may
// configure: those that were just created or whose current listener is
// ours (or anyone's, with force-override-listeners).
func httpsPorts(desired []Listener, current []CurrentListener, ref naming.Ref, force bool) []int32 {
	var out []int32
	for _, d := range desired {
		if d.Protocol != string(annotations.ProtocolHTTPS) {
			continue
		}
		mine := true
		for _, c := range current {
			if c.Port == d.Port && tcpFamily(c.Protocol) {
				_, owned := ref.OwnsCLB(c.Description)
				mine = owned || force
			}
		}
		if mine {
			out = append(out, d.Port)
		}
	}
	return out
}

// syncDomains makes each HTTPS listener's domain extensions match the
// domain-extensions annotation. Without the annotation nothing is read or
// written, so extensions a user added by hand (or an adopted listener's)
// are left alone.
func (p *Provider) syncDomains(ctx context.Context, lbID string, desired []annotations.DomainExtension, ports []int32) error {
	if len(desired) == 0 {
		return nil
	}
	for _, port := range ports {
		cur, err := p.api.domains(ctx, lbID, port)
		if err != nil {
			return fmt.Errorf("list the domain extensions of listener https:%d: %w", port, err)
		}
		plan := PlanDomains(desired, cur)
		if plan.Empty() {
			continue
		}
		klog.FromContext(ctx).V(2).Info("Updating domain extensions", "loadBalancer", lbID, "port", port,
			"create", len(plan.Create), "update", len(plan.Update), "delete", len(plan.Delete))
		if err := p.api.applyDomains(ctx, lbID, port, plan); err != nil {
			return err
		}
	}
	return nil
}

func (a api) domains(ctx context.Context, lbID string, port int32) ([]CurrentDomain, error) {
	req := slb.CreateDescribeDomainExtensionsRequest()
	req.LoadBalancerId = lbID
	req.ListenerPort = requests.NewInteger(int(port))
	resp, err := cloud.Call(ctx, a.c, req, slb.CreateDescribeDomainExtensionsResponse)
	if err != nil {
		return nil, err
	}
	var out []CurrentDomain
	for _, d := range resp.DomainExtensions.DomainExtension {
		out = append(out, CurrentDomain{ID: d.DomainExtensionId, Domain: d.Domain, CertID: d.ServerCertificateId})
	}
	return out, nil
}

func (a api) applyDomains(ctx context.Context, lbID string, port int32, plan DomainPlan) error {
	for _, d := range plan.Delete {
		req := slb.CreateDeleteDomainExtensionRequest()
		req.DomainExtensionId = d.ID
		_, err := cloud.Call(ctx, a.c, req, slb.CreateDeleteDomainExtensionResponse)
		if err != nil && !cloud.IsNotFound(err) {
			return fmt.Errorf("delete the domain extension %s (%s) of listener https:%d: %w", d.ID, d.Domain, port, err)
		}
	}
	for _, u := range plan.Update {
		req := slb.CreateSetDomainExtensionAttributeRequest()
		req.DomainExtensionId, req.ServerCertificateId = u.ID, u.CertID
		if _, err := cloud.Call(ctx, a.c, req, slb.CreateSetDomainExtensionAttributeResponse); err != nil {
			return fmt.Errorf("set the certificate of domain %s on listener https:%d to %s: %w", u.Domain, port, u.CertID, err)
		}
	}
	for _, d := range plan.Create {
		req := slb.CreateCreateDomainExtensionRequest()
		req.LoadBalancerId, req.ListenerPort = lbID, requests.NewInteger(int(port))
		req.Domain, req.ServerCertificateId = d.Domain, d.CertID
		if _, err := cloud.Call(ctx, a.c, req, slb.CreateCreateDomainExtensionResponse); err != nil {
			return fmt.Errorf("create the domain extension %s on listener https:%d: %w", d.Domain, port, err)
		}
	}
	return nil
}
