// Package nlb emulates the NLB (Network Load Balancer) OpenAPI (version 2022-04-30): load balancers, server groups, listeners, security groups, tags and asynchronous jobs.
package nlb

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/ecs"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/facts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

// Version is the API version this package serves.
const Version = "2022-04-30"

// Service is the emulated nlb product.
type Service struct {
	st    *store.Store
	ecs   *ecs.Service
	vpc   *vpc.Service
	state *State
}

// State is the NLB part of the emulated cloud; exported fields only so it
// round-trips through encoding/json for --state persistence.
type State struct {
	// LoadBalancers are the NLB instances by id (nlb-...).
	LoadBalancers map[string]*LoadBalancer `json:"loadBalancers"`
	// ServerGroups are the server groups by id (sgp-...).
	ServerGroups map[string]*ServerGroup `json:"serverGroups"`
	// Listeners are the listeners of every load balancer by id (lsn-...).
	Listeners map[string]*Listener `json:"listeners"`
	// Jobs are the asynchronous jobs by JobId, kept for GetJobStatus and
	// ListAsynJobs.
	Jobs map[string]*Job `json:"jobs"`
	// Tokens remember the response of each call made with a ClientToken, so
	// a retry gets the same answer instead of a second resource.
	Tokens map[string]*TokenRecord `json:"tokens"`
	// Seq orders resources by creation, for stable listings.
	Seq int64 `json:"seq"`
	// AddrSeq numbers the public and IPv6 addresses handed out.
	AddrSeq int64 `json:"addrSeq"`
}

// TokenRecord is the answer to a call made with a ClientToken.
type TokenRecord struct {
	// Fingerprint is api.Fingerprint of the first call's parameters; a retry
	// with another one is refused.
	Fingerprint string `json:"fingerprint"`
	// Response is the first call's response body, returned again to a retry.
	Response map[string]any `json:"response"`
	// At is when the first call was made; records expire tokenTTL later.
	At time.Time `json:"at"`
}

// Reset empties the state, as on a fresh account.
func (st *State) Reset() {
	st.LoadBalancers = map[string]*LoadBalancer{}
	st.ServerGroups = map[string]*ServerGroup{}
	st.Listeners = map[string]*Listener{}
	st.Jobs = map[string]*Job{}
	st.Tokens = map[string]*TokenRecord{}
	st.Seq = 0
	st.AddrSeq = 0
}

func (st *State) next() int64 {
	st.Seq++
	return st.Seq
}

// New registers the nlb state with st.
func New(st *store.Store, e *ecs.Service, v *vpc.Service) (*Service, error) {
	s := &Service{st: st, ecs: e, vpc: v, state: &State{}}
	if err := st.Register("nlb", s.state); err != nil {
		return nil, fmt.Errorf("register nlb state: %w", err)
	}
	if e != nil {
		e.AddSecurityGroupUsers(s.securityGroupUsers)
	}
	return s, nil
}

// Product returns the action table.
func (s *Service) Product() api.Product {
	handlers := map[string]api.Handler{
		"CreateLoadBalancer":                             s.createLoadBalancer,
		"GetLoadBalancerAttribute":                       s.getLoadBalancerAttribute,
		"ListLoadBalancers":                              s.listLoadBalancers,
		"DeleteLoadBalancer":                             s.deleteLoadBalancer,
		"UpdateLoadBalancerAttribute":                    s.updateLoadBalancerAttribute,
		"UpdateLoadBalancerZones":                        s.updateLoadBalancerZones,
		"UpdateLoadBalancerAddressTypeConfig":            s.updateLoadBalancerAddressTypeConfig,
		"UpdateLoadBalancerProtection":                   s.updateLoadBalancerProtection,
		"EnableLoadBalancerIpv6Internet":                 s.enableIpv6Internet,
		"DisableLoadBalancerIpv6Internet":                s.disableIpv6Internet,
		"LoadBalancerJoinSecurityGroup":                  s.joinSecurityGroup,
		"LoadBalancerLeaveSecurityGroup":                 s.leaveSecurityGroup,
		"AttachCommonBandwidthPackageToLoadBalancer":     s.attachBandwidthPackage,
		"DetachCommonBandwidthPackageFromLoadBalancer":   s.detachBandwidthPackage,
		"CreateServerGroup":                              s.createServerGroup,
		"ListServerGroups":                               s.listServerGroups,
		"UpdateServerGroupAttribute":                     s.updateServerGroupAttribute,
		"DeleteServerGroup":                              s.deleteServerGroup,
		"ListServerGroupServers":                         s.listServerGroupServers,
		"AddServersToServerGroup":                        s.addServers,
		"RemoveServersFromServerGroup":                   s.removeServers,
		"UpdateServerGroupServersAttribute":              s.updateServers,
		"CreateListener":                                 s.createListener,
		"ListListeners":                                  s.listListeners,
		"GetListenerHealthStatus":                        s.getListenerHealthStatus,
		"GetListenerAttribute":                           s.getListenerAttribute,
		"UpdateListenerAttribute":                        s.updateListenerAttribute,
		"DeleteListener":                                 s.deleteListener,
		"StartListener":                                  s.startListener,
		"StopListener":                                   s.stopListener,
		"ListListenerCertificates":                       s.listListenerCertificates,
		"AssociateAdditionalCertificatesWithListener":    s.associateCertificates,
		"DisassociateAdditionalCertificatesWithListener": s.disassociateCertificates,
		"TagResources":                                   s.tagResources,
		"UntagResources":                                 s.untagResources,
		"ListTagResources":                               s.listTagResources,
		"DescribeZones":                                  s.describeZones,
		"DescribeRegions":                                s.describeRegions,
		"GetJobStatus":                                   s.getJobStatus,
		"ListAsynJobs":                                   s.listAsynJobs,
	}
	return api.Product{Name: "nlb", Version: Version, Host: "nlb.aliyuncs.com", Actions: api.Actions(handlers, s.mutating),
		UnknownRegion: api.NLBUnknownRegion}
}

// tokenTTL is how long a ClientToken answer is replayed; the cloud keeps
// tokens for a limited time, and keeping them forever would grow the state.
const tokenTTL = 24 * time.Hour

// jobTTL is how long a finished job stays queryable.
const jobTTL = 24 * time.Hour

// mutating wraps a state-changing handler with the housekeeping every such
// call shares: pruning expired jobs and tokens, and ClientToken replay.
func (s *Service) mutating(h api.Handler) api.Handler {
	return func(req *api.Request) (map[string]any, error) {
		s.prune(req.Now)
		s.sweep(req.Now)
		tok := req.Params.String("ClientToken")
		dry, _ := req.Params.Bool("DryRun", false)
		if tok == "" || dry {
			return s.apply(h, req)
		}
		key := req.Action + "/" + tok
		fp := fingerprint(req.Params)
		if rec, ok := s.state.Tokens[key]; ok {
			if rec.Fingerprint != fp {
				return nil, api.Errorf(http.StatusBadRequest, "IdempotentParameterMismatch", "The request uses the same client token as a previous, but non-identical request.")
			}
			return copyResponse(rec.Response), nil
		}
		resp, err := s.apply(h, req)
		if err != nil {
			return nil, err
		}
		s.state.Tokens[key] = &TokenRecord{Fingerprint: fp, Response: copyResponse(resp), At: req.Now}
		return resp, nil
	}
}

// apply runs a mutating handler; with req.FailJob (a failJob fault) the
// call answers as usual but its job fails: the state goes back to what it
// was before the call, the job's resource stays locked until the job ends,
// and a resource the call created is kept only as the failed create leaves
// it (a CreateFailed load balancer; a server group that disappears when
// the job ends). A synchronous action (no JobId) is not affected.
func (s *Service) apply(h api.Handler, req *api.Request) (map[string]any, error) {
	if !req.FailJob {
		return h(req)
	}
	before, err := cloneState(s.state)
	if err != nil {
		return nil, api.Errorf(http.StatusInternalServerError, "InternalError", "The request processing has failed due to some unknown error: %v", err)
	}
	resp, err := h(req)
	if err != nil {
		return nil, err
	}
	id, _ := resp["JobId"].(string)
	j := s.state.Jobs[id]
	if j == nil {
		return resp, nil
	}
	after := *s.state
	seq, addrSeq := s.state.Seq, s.state.AddrSeq
	*s.state = *before
	s.state.Seq, s.state.AddrSeq = seq, addrSeq
	j.Fails = true
	s.state.Jobs[j.ID] = j
	switch j.ResourceType {
	case "loadbalancer":
		if lb, ok := s.state.LoadBalancers[j.ResourceID]; ok {
			lb.BusyUntil = j.DoneAt
		} else if lb, ok := after.LoadBalancers[j.ResourceID]; ok {
			lb.CreateFailed, lb.BusyUntil = true, j.DoneAt
			s.state.LoadBalancers[lb.ID] = lb
		}
	case "servergroup":
		if g, ok := s.state.ServerGroups[j.ResourceID]; ok {
			g.BusyUntil = j.DoneAt
		} else if g, ok := after.ServerGroups[j.ResourceID]; ok && req.Action == "CreateServerGroup" {
			g.DeletedAt = j.DoneAt
			s.state.ServerGroups[g.ID] = g
		}
	}
	return resp, nil
}

// cloneState deep-copies the NLB state through JSON, the form it is
// persisted in.
func cloneState(st *State) (*State, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	out := &State{}
	out.Reset()
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

// copyResponse deep-copies a response through JSON so that the stored copy
// looks the same in memory as after a reload from the state file.
func copyResponse(m map[string]any) map[string]any {
	data, err := json.Marshal(m)
	if err != nil {
		return m
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		return m
	}
	return out
}

// prune drops finished jobs and spent tokens past their retention.
func (s *Service) prune(now time.Time) {
	for id, j := range s.state.Jobs {
		if now.Sub(j.DoneAt) > jobTTL {
			delete(s.state.Jobs, id)
		}
	}
	for k, t := range s.state.Tokens {
		if now.Sub(t.At) > tokenTTL {
			delete(s.state.Tokens, k)
		}
	}
}

// fingerprint identifies a call's business parameters for ClientToken
// replay; NLB leaves RegionId out as well, which persisted tokens rely on.
func fingerprint(p api.Params) string { return api.Fingerprint(p, "regionid") }

// dryRun answers a DryRun call whose validation passed; callers invoke it
// after validating and before changing anything.
func dryRun(req *api.Request) error {
	dry, err := req.Params.Bool("DryRun", false)
	if err != nil {
		return err
	}
	if dry {
		return api.Errorf(http.StatusBadRequest, "DryRunOperation", "Request validation has been passed with DryRun flag set.")
	}
	return nil
}

// nlbTime is the timestamp format of NLB responses.
func nlbTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// aliUID renders an account id as the numeric AliUid the SDK decodes.
func aliUID(account string) int64 {
	n, _ := strconv.ParseInt(account, 10, 64)
	return n
}

// Error constructors for the NLB error catalog.

func errLBNotFound(id string) error {
	return api.NotFound("ResourceNotFound.loadBalancer", "The specified resource %s is not found.", id)
}

func errServerGroupNotFound(id string) error {
	return api.NotFound("ResourceNotFound.serverGroup", "The specified resource %s is not found.", id)
}

func errListenerNotFound(id string) error {
	return api.NotFound("ResourceNotFound.listener", "The specified resource %s is not found.", id)
}

func errVpcNotFound(id string) error {
	return api.NotFound("ResourceNotFound.Vpc", "The specified resource %s is not found.", id)
}

// requestedVPCID returns the request's required VpcId once it names a VPC of
// the request's region.
func (s *Service) requestedVPCID(req *api.Request) (string, error) {
	vpcID, err := req.Params.Required("VpcId")
	if err != nil {
		return "", err
	}
	if v, ok := s.vpc.VPC(vpcID); !ok || v.RegionID != req.RegionID {
		return "", errVpcNotFound(vpcID)
	}
	return vpcID, nil
}

func errVSwitchNotFound(id string) error {
	return api.NotFound("ResourceNotFound.VSwitch", "The specified resource %s is not found.", id)
}

func errServerNotFound(id string) error {
	return api.NotFound("ResourceNotFound.BackendServer", "The specified resource %s is not found.", id)
}

func errLock(id string) error {
	return api.Errorf(http.StatusBadRequest, "Conflict.Lock", "The Lock [%s] is conflict.", id)
}

func errIncorrectStatus(kind, id string) error {
	return api.Errorf(http.StatusBadRequest, "IncorrectStatus."+kind, "The status of %s [%s] is incorrect.", kind, id)
}

// validName checks a load balancer or server group name (param) by the
// emulator's name rule of that parameter.
func validName(param, name string) error {
	if name == "" || facts.ValidName("nlb:"+param, name) {
		return nil
	}
	return api.Errorf(http.StatusBadRequest, "IllegalParam."+param, "The param %s [%s] is illegal: %s.", param, name, facts.NameRule("nlb:"+param))
}

// Ranges of the emulator's facts used in more than one place.
var (
	cpsMin, cpsMax         = facts.Range("nlb:Cps")
	drainMin, drainMax     = facts.Range("nlb:ConnectionDrainTimeout")
	persistMin, persistMax = facts.Range("nlb:PersistenceTimeout")
)

// canonical returns the allowed value equal to v ignoring case, so that
// "sch" and "Sch" both map to the documented spelling.
func canonical(p api.Params, key, def string, allowed ...string) (string, error) {
	v := strings.TrimSpace(p.String(key))
	if v == "" {
		return def, nil
	}
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a, nil
		}
	}
	return "", api.InvalidParameter(key, "The parameter %s must be one of %s, got %q.", key, strings.Join(allowed, ", "), v)
}

// requiredCanonical is canonical for a required parameter: missing is
// MissingParameter, before any check of the value.
func requiredCanonical(p api.Params, key string, allowed ...string) (string, error) {
	if _, err := p.Required(key); err != nil {
		return "", err
	}
	return canonical(p, key, "", allowed...)
}

// nonNil turns a nil slice into an empty one, so JSON shows [] not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// securityGroupUsers lists the load balancers in a security group (sorted).
func (s *Service) securityGroupUsers(sgID string) []string {
	var out []string
	// ECS asks from its own handler, whose clock is the wall clock too.
	now := time.Now()
	for id, lb := range s.state.LoadBalancers {
		if !lb.gone(now) && slices.Contains(lb.SecurityGroupIDs, sgID) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// cursorList answers a List* action: items in key order, paged by
// MaxResults/NextToken (20 by default, at most 100), their views under
// field with the total and the paging fields.
func cursorList[T any](p api.Params, items []T, key func(T) string, field string, view func(T) map[string]any) (map[string]any, error) {
	items, keys := api.SortByKey(items, key)
	maxResults, start, end, next, err := p.Cursor(keys, 20, 100, "")
	if err != nil {
		return nil, err
	}
	page := make([]map[string]any, 0, end-start)
	for _, t := range items[start:end] {
		page = append(page, view(t))
	}
	return map[string]any{field: page, "TotalCount": len(items), "MaxResults": maxResults, "NextToken": next}, nil
}
