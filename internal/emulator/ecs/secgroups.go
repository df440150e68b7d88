package ecs

import (
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// maxRulesPerGroup is the documented limit of rules in one security group.
const maxRulesPerGroup = 200

func errSGNotFound(id string) error {
	return api.NotFound("InvalidSecurityGroupId.NotFound", "The specified security group %s does not exist.", id)
}

func errSGVpcMismatch(id, vpcID string) error {
	return api.Errorf(http.StatusBadRequest, "InvalidSecurityGroup.VpcMismatch", "The security group %s does not belong to VPC %s.", id, vpcID)
}

func (s *Service) regionSG(req *api.Request, id string) (*SecurityGroup, error) {
	return api.InRegion(req, s.state.SecurityGroups, id, func(g *SecurityGroup) string { return g.RegionID }, errSGNotFound)
}

// requestSG returns the group named by the SecurityGroupId parameter, which
// every per-group action requires.
func (s *Service) requestSG(req *api.Request) (*SecurityGroup, error) {
	return api.Lookup(req, "SecurityGroupId", s.regionSG)
}

func (s *Service) sortedSGs() []*SecurityGroup {
	return store.ByCreation(s.state.SecurityGroups, func(g *SecurityGroup) int64 { return g.Seq })
}

// addSG creates a security group in a VPC (classic groups are not emulated).
func (s *Service) addSG(region, id, name, desc, vpcID, typ string, tags []api.Tag, now time.Time) (*SecurityGroup, error) {
	v, ok := s.vpc.VPC(vpcID)
	if !ok || v.RegionID != region {
		return nil, api.NotFound("InvalidVpcId.NotFound", "The specified VPC %s does not exist.", vpcID)
	}
	if id == "" {
		id = store.NewID("sg")
	}
	if _, dup := s.state.SecurityGroups[id]; dup {
		return nil, api.InvalidParameter("SecurityGroupId", "The security group %s already exists.", id)
	}
	g := &SecurityGroup{ID: id, Name: name, Description: desc, VpcID: vpcID, RegionID: region, Type: typ, Rules: []*Rule{}, Tags: tags, CreatedAt: now, Seq: s.state.Next()}
	s.state.SecurityGroups[id] = g
	return g, nil
}

func (s *Service) createSecurityGroup(req *api.Request) (map[string]any, error) {
	alive := func(id string) bool { _, ok := s.state.SecurityGroups[id]; return ok }
	if out, done, err := s.state.Tokens.ReplayID(req, alive, "SecurityGroupId"); done {
		return out, err
	}
	p := req.Params
	vpcID, err := p.Required("VpcId")
	if err != nil {
		return nil, err
	}
	typ, err := p.Enum("SecurityGroupType", "normal", "normal", "enterprise")
	if err != nil {
		return nil, err
	}
	name := p.String("SecurityGroupName")
	if len(name) > 128 || strings.HasPrefix(name, "http://") || strings.HasPrefix(name, "https://") {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidSecurityGroupName.Malformed", "The specified SecurityGroupName %q is not valid.", name)
	}
	tags := p.Tags()
	if len(tags) > s.st.Settings().Quota(store.QuotaTagsPerResource) {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidTagCount", "The specified tags are beyond the permitted range.")
	}
	if err := checkTagKeys(tags); err != nil {
		return nil, err
	}
	g, err := s.addSG(req.RegionID, "", name, p.String("Description"), vpcID, typ, tags, req.Now)
	if err != nil {
		return nil, err
	}
	g.ResourceGroupID = api.ResourceGroupOr(p.String("ResourceGroupId"))
	s.state.Tokens.Remember(req, g.ID)
	return map[string]any{"SecurityGroupId": g.ID}, nil
}

// sgInstances counts the instances whose network interfaces use a group.
func (s *Service) sgInstances(id string) int {
	seen := map[string]bool{}
	for _, e := range s.state.ENIs {
		if e.InstanceID != "" && slices.Contains(e.SecurityGroupIDs, id) {
			seen[e.InstanceID] = true
		}
	}
	return len(seen)
}

func (s *Service) sgView(g *SecurityGroup) map[string]any {
	return map[string]any{
		"SecurityGroupId": g.ID, "SecurityGroupName": g.Name, "Description": g.Description, "SecurityGroupType": g.Type,
		"VpcId": g.VpcID, "CreationTime": ecsTime(g.CreatedAt), "EcsCount": s.sgInstances(g.ID),
		"AvailableInstanceAmount": 2000 - s.sgInstances(g.ID), "RuleCount": len(g.Rules), "ServiceManaged": false,
		"ResourceGroupId": api.ResourceGroupOr(g.ResourceGroupID), "Tags": map[string]any{"Tag": api.TagMaps(g.Tags, "TagKey", "TagValue")},
	}
}

func (s *Service) describeSecurityGroups(req *api.Request) (map[string]any, error) {
	p := req.Params
	ids, err := jsonIDs(p, "SecurityGroupIds", 100)
	if err != nil {
		return nil, err
	}
	netType, err := p.Enum("NetworkType", "", "vpc", "classic")
	if err != nil {
		return nil, err
	}
	vpcID, id, name, typ := p.String("VpcId"), p.String("SecurityGroupId"), p.String("SecurityGroupName"), p.String("SecurityGroupType")
	fuzzy, err := p.Bool("FuzzyQuery", false)
	if err != nil {
		return nil, err
	}
	tags := p.Tags()
	var list []*SecurityGroup
	for _, g := range s.sortedSGs() {
		nameOK := name == "" || g.Name == name || (fuzzy && strings.Contains(g.Name, name))
		if g.RegionID != req.RegionID || netType == "classic" || (vpcID != "" && g.VpcID != vpcID) || (id != "" && g.ID != id) ||
			(len(ids) > 0 && !slices.Contains(ids, g.ID)) || !nameOK || (typ != "" && g.Type != typ) || !api.MatchTags(g.Tags, tags) {
			continue
		}
		list = append(list, g)
	}
	out, err := pagedList(p, list, func(g *SecurityGroup) int64 { return g.Seq }, 50, 100, "SecurityGroups", "SecurityGroup", s.sgView)
	if err != nil {
		return nil, err
	}
	out["RegionId"] = req.RegionID
	return out, nil
}

func (s *Service) ruleView(r *Rule) map[string]any {
	srcName := ""
	if g, ok := s.state.SecurityGroups[r.SourceGroupID]; ok {
		srcName = g.Name
	}
	return map[string]any{
		"SecurityGroupRuleId": r.ID, "Direction": r.Direction, "IpProtocol": r.IPProtocol, "PortRange": r.PortRange,
		"SourceCidrIp": r.SourceCidrIP, "Ipv6SourceCidrIp": r.Ipv6SourceCidrIP, "SourceGroupId": r.SourceGroupID,
		"SourceGroupName": srcName, "SourcePrefixListId": r.SourcePrefixListID, "DestCidrIp": r.DestCidrIP,
		"SourcePortRange": r.SourcePortRange, "Policy": r.Policy, "Priority": r.Priority, "NicType": r.NicType,
		"Description": r.Description, "CreateTime": r.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"),
	}
}

func (s *Service) describeSecurityGroupAttribute(req *api.Request) (map[string]any, error) {
	p := req.Params
	g, err := s.requestSG(req)
	if err != nil {
		return nil, err
	}
	dir, err := p.Enum("Direction", "all", "all", "ingress", "egress")
	if err != nil {
		return nil, err
	}
	nic, err := p.Enum("NicType", "", "internet", "intranet")
	if err != nil {
		return nil, err
	}
	var rules []*Rule
	for _, r := range g.Rules {
		if (dir != "all" && r.Direction != dir) || (nic != "" && r.NicType != nic) {
			continue
		}
		rules = append(rules, r)
	}
	start, end, next := 0, len(rules), ""
	if p.Has("MaxResults") || p.String("NextToken") != "" {
		// By rule id: a cursor that survives rules added or revoked
		// between pages.
		var keys []string
		rules, keys = api.SortByKey(rules, func(r *Rule) string { return r.ID })
		if _, start, end, next, err = p.Cursor(keys, 10, 1000, "MaxResults"); err != nil {
			return nil, err
		}
	}
	perms := []map[string]any{}
	for _, r := range rules[start:end] {
		perms = append(perms, s.ruleView(r))
	}
	return map[string]any{
		"SecurityGroupId": g.ID, "SecurityGroupName": g.Name, "Description": g.Description, "VpcId": g.VpcID,
		"RegionId": g.RegionID, "InnerAccessPolicy": "Accept", "NextToken": next,
		"Permissions": map[string]any{"Permission": perms},
	}, nil
}

// ruleSpec parses one ingress rule from top-level or Permissions.N fields.
func (s *Service) ruleSpec(req *api.Request, p api.Params) (*Rule, error) {
	proto := strings.ToUpper(p.String("IpProtocol"))
	switch proto {
	case "":
		return nil, api.MissingParameter("IpProtocol")
	case "TCP", "UDP", "ICMP", "ICMPV6", "GRE", "ALL":
	default:
		return nil, api.Errorf(http.StatusBadRequest, "InvalidIpProtocol.Malformed", "The specified IpProtocol %q is not valid.", p.String("IpProtocol"))
	}
	if proto == "ICMPV6" {
		proto = "ICMPv6"
	}
	ports := p.String("PortRange")
	if ports == "" {
		return nil, api.MissingParameter("PortRange")
	}
	if err := checkPorts(proto, ports); err != nil {
		return nil, err
	}
	policy := strings.ToLower(p.String("Policy"))
	switch policy {
	case "":
		policy = "accept"
	case "accept", "drop":
	default:
		return nil, api.Errorf(http.StatusBadRequest, "InvalidPolicy.Malformed", "The specified Policy %q is not valid.", p.String("Policy"))
	}
	prio := p.String("Priority")
	if prio == "" {
		prio = "1"
	}
	if n, err := strconv.Atoi(prio); err != nil || n < 1 || n > 100 {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidPriority.Malformed", "The specified Priority %q must be between 1 and 100.", prio)
	}
	nic := strings.ToLower(p.String("NicType"))
	switch nic {
	case "":
		nic = "intranet"
	case "intranet", "internet":
	default:
		return nil, api.Errorf(http.StatusBadRequest, "InvalidNicType.ValueNotSupported", "The specified NicType %q is not valid.", p.String("NicType"))
	}
	r := &Rule{
		Direction: "ingress", IPProtocol: proto, PortRange: ports, Policy: policy, Priority: prio, NicType: nic,
		SourceCidrIP: p.String("SourceCidrIp"), Ipv6SourceCidrIP: p.String("Ipv6SourceCidrIp"),
		SourceGroupID: p.String("SourceGroupId"), SourcePrefixListID: p.String("SourcePrefixListId"),
		DestCidrIP: p.String("DestCidrIp"), SourcePortRange: p.String("SourcePortRange"), Description: p.String("Description"),
	}
	if r.SourceCidrIP == "" && r.Ipv6SourceCidrIP == "" && r.SourceGroupID == "" && r.SourcePrefixListID == "" {
		return nil, api.MissingParameter("SourceCidrIp")
	}
	if r.SourceCidrIP != "" && !validCIDR(r.SourceCidrIP) {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidSourceCidrIp.Malformed", "The specified SourceCidrIp %q is not valid.", r.SourceCidrIP)
	}
	if r.DestCidrIP != "" && !validCIDR(r.DestCidrIP) {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidDestCidrIp.Malformed", "The specified DestCidrIp %q is not valid.", r.DestCidrIP)
	}
	if r.SourceGroupID != "" {
		if _, err := s.regionSG(req, r.SourceGroupID); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func validCIDR(v string) bool {
	if _, err := netip.ParsePrefix(v); err == nil {
		return true
	}
	_, err := netip.ParseAddr(v)
	return err == nil
}

// checkPorts applies the protocol's port-range rules: 1-65535 ranges for
// TCP and UDP, -1/-1 for the others.
func checkPorts(proto, ports string) error {
	bad := api.Errorf(http.StatusBadRequest, "InvalidPortRange.Malformed", "The specified PortRange %q is not valid for protocol %s.", ports, proto)
	parts := strings.Split(ports, "/")
	if len(parts) != 2 {
		return bad
	}
	lo, err1 := strconv.Atoi(parts[0])
	hi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return bad
	}
	if proto == "TCP" || proto == "UDP" {
		if lo < 1 || hi > 65535 || lo > hi {
			return bad
		}
		return nil
	}
	if lo != -1 || hi != -1 {
		return bad
	}
	return nil
}

// key identifies a rule for duplicate detection and revocation by value.
func (r *Rule) key() string {
	return strings.Join([]string{r.Direction, r.IPProtocol, r.PortRange, r.SourceCidrIP, r.Ipv6SourceCidrIP, r.SourceGroupID,
		r.SourcePrefixListID, r.DestCidrIP, r.SourcePortRange, r.Policy, r.Priority, r.NicType}, "|")
}

// ruleSpecs reads Permissions.N, or the legacy top-level rule fields.
func (s *Service) ruleSpecs(req *api.Request) ([]*Rule, error) {
	objs := req.Params.Objects("Permissions")
	if len(objs) == 0 {
		objs = []api.Params{req.Params}
	}
	var out []*Rule
	for _, o := range objs {
		r, err := s.ruleSpec(req, o)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *Service) authorizeSecurityGroup(req *api.Request) (map[string]any, error) {
	g, err := s.requestSG(req)
	if err != nil {
		return nil, err
	}
	rules, err := s.ruleSpecs(req)
	if err != nil {
		return nil, err
	}
	var add []*Rule
	for _, r := range rules {
		dup := false
		for _, o := range append(g.Rules, add...) {
			if o.key() == r.key() {
				dup = true
			}
		}
		if !dup {
			add = append(add, r)
		}
	}
	if len(g.Rules)+len(add) > maxRulesPerGroup {
		return nil, api.Errorf(http.StatusForbidden, "AuthorizationLimitExceed", "The number of rules in security group %s would exceed the limit of %d.", g.ID, maxRulesPerGroup)
	}
	for _, r := range add {
		r.ID, r.CreatedAt = store.NewID("sgr"), req.Now
		g.Rules = append(g.Rules, r)
	}
	return map[string]any{}, nil
}

func (s *Service) revokeSecurityGroup(req *api.Request) (map[string]any, error) {
	g, err := s.requestSG(req)
	if err != nil {
		return nil, err
	}
	drop := map[string]bool{}
	if ruleIDs := req.Params.List("SecurityGroupRuleId"); len(ruleIDs) > 0 {
		for _, rid := range ruleIDs {
			found := false
			for _, r := range g.Rules {
				if r.ID == rid && r.Direction == "ingress" {
					found = true
				}
			}
			if !found {
				return nil, api.NotFound("InvalidSecurityGroupRuleId.NotFound", "The specified security group rule %s does not exist.", rid)
			}
			drop[rid] = true
		}
	} else {
		specs, err := s.ruleSpecs(req)
		if err != nil {
			return nil, err
		}
		for _, sp := range specs {
			for _, r := range g.Rules {
				if r.key() == sp.key() {
					drop[r.ID] = true
				}
			}
		}
	}
	kept := []*Rule{}
	for _, r := range g.Rules {
		if !drop[r.ID] {
			kept = append(kept, r)
		}
	}
	g.Rules = kept
	return map[string]any{}, nil
}

func (s *Service) modifySecurityGroupRule(req *api.Request) (map[string]any, error) {
	p := req.Params
	g, err := s.requestSG(req)
	if err != nil {
		return nil, err
	}
	var target *Rule
	if rid := p.String("SecurityGroupRuleId"); rid != "" {
		for _, r := range g.Rules {
			if r.ID == rid {
				target = r
			}
		}
		if target == nil {
			return nil, api.NotFound("InvalidSecurityGroupRuleId.NotFound", "The specified security group rule %s does not exist.", rid)
		}
		// Unspecified fields keep their values; validate the merged rule.
		merged := api.Params{}
		for k, v := range map[string]string{
			"IpProtocol": target.IPProtocol, "PortRange": target.PortRange, "Policy": target.Policy, "Priority": target.Priority,
			"NicType": target.NicType, "SourceCidrIp": target.SourceCidrIP, "Ipv6SourceCidrIp": target.Ipv6SourceCidrIP,
			"SourceGroupId": target.SourceGroupID, "SourcePrefixListId": target.SourcePrefixListID, "DestCidrIp": target.DestCidrIP,
			"SourcePortRange": target.SourcePortRange, "Description": target.Description,
		} {
			merged[k] = v
			if nv, ok := p.Get(k); ok && nv != "" {
				merged[k] = nv
			}
		}
		nr, err := s.ruleSpec(req, merged)
		if err != nil {
			return nil, err
		}
		nr.ID, nr.CreatedAt = target.ID, target.CreatedAt
		*target = *nr
		return map[string]any{}, nil
	}
	spec, err := s.ruleSpec(req, p)
	if err != nil {
		return nil, err
	}
	// Without a rule id the rule is matched by everything but Policy,
	// Priority and Description, which are what this call changes.
	match := func(r *Rule) bool {
		a, b := *r, *spec
		a.Policy, a.Priority, b.Policy, b.Priority = "", "", "", ""
		return a.key() == b.key()
	}
	for _, r := range g.Rules {
		if match(r) {
			target = r
		}
	}
	if target == nil {
		return nil, api.NotFound("InvalidSecurityGroupRule.RuleNotExist", "No rule of security group %s matches the given protocol, ports and source.", g.ID)
	}
	target.Policy, target.Priority = spec.Policy, spec.Priority
	if p.Has("Description") {
		target.Description = spec.Description
	}
	return map[string]any{}, nil
}

func (s *Service) modifySecurityGroupAttribute(req *api.Request) (map[string]any, error) {
	g, err := s.requestSG(req)
	if err != nil {
		return nil, err
	}
	p := req.Params
	if name := p.String("SecurityGroupName"); name != "" {
		if len(name) > 128 || strings.HasPrefix(name, "http://") || strings.HasPrefix(name, "https://") {
			return nil, api.Errorf(http.StatusBadRequest, "InvalidSecurityGroupName.Malformed", "The specified SecurityGroupName %q is not valid.", name)
		}
		g.Name = name
	}
	if p.Has("Description") {
		g.Description = p.String("Description")
	}
	return map[string]any{}, nil
}

func (s *Service) deleteSecurityGroup(req *api.Request) (map[string]any, error) {
	g, err := s.requestSG(req)
	if err != nil {
		return nil, err
	}
	id := g.ID
	for _, e := range s.state.ENIs {
		if slices.Contains(e.SecurityGroupIDs, id) {
			return nil, api.Errorf(http.StatusForbidden, "DependencyViolation", "There is still instance(s) or network interface(s) in the specified security group %s.", id)
		}
	}
	for _, users := range s.sgUsers {
		if in := users(id); len(in) > 0 {
			return nil, api.Errorf(http.StatusForbidden, "DependencyViolation", "The security group %s is still used by %s.", id, strings.Join(in, ", "))
		}
	}
	for _, o := range s.state.SecurityGroups {
		for _, r := range o.Rules {
			if o.ID != id && r.SourceGroupID == id {
				return nil, api.Errorf(http.StatusForbidden, "DependencyViolation", "The security group %s is referenced by a rule of security group %s.", id, o.ID)
			}
		}
	}
	delete(s.state.SecurityGroups, g.ID)
	return map[string]any{}, nil
}
