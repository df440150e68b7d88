package nlb

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// The rules of the source-ranges security group are the existing CCM's,
// so that a group it left is adopted without a write: every range is
// accepted on all protocols and ports at priority 1 and everything else is
// dropped at priority 100. All ports are enough because the group is joined
// to this load balancer only, whose only open ports are its listeners.
const (
	sgAllowPriority = "1"
	sgDenyPriority  = "100"
	sgAllProtocols  = "ALL"
	sgAllPorts      = "-1/-1"
	// sgType is the existing CCM's choice: enterprise groups deny by
	// default and hold many more members.
	sgType = "enterprise"
	// sgRulesPerCall bounds Permissions.N and SecurityGroupRuleId.N.
	sgRulesPerCall = 100
)

// SecurityGroupRuleDescription marks the rules (and the group) the CCM
// manages for a Service: k8s.<namespace>.<name>.<clusterID>, as the existing
// CCM writes it. Rules without it are never revoked.
func SecurityGroupRuleDescription(namespace, name, clusterID string) string {
	return fmt.Sprintf("k8s.%s.%s.%s", namespace, name, naming.ClusterID(clusterID))
}

// sgRule is the part of an ingress rule the CCM compares.
type sgRule struct {
	// ID is the SecurityGroupRuleId (current rules only).
	ID string
	// Policy is accept or drop (lower case).
	Policy string
	// Priority is 1–100.
	Priority string
	// CIDR is the source block, canonical.
	CIDR string
	// IPv6 says CIDR goes in Ipv6SourceCidrIp.
	IPv6 bool
	// Protocol and Ports are ALL and -1/-1 for ours.
	Protocol, Ports string
}

func (r sgRule) key() string {
	return strings.Join([]string{r.Policy, r.Priority, r.Protocol, r.Ports, r.CIDR}, "|")
}

// desiredRules are the rules of a set of ranges.
func desiredRules(prefixes []netip.Prefix, dualStack bool) []sgRule {
	var out []sgRule
	v6 := dualStack
	for _, p := range prefixes {
		out = append(out, sgRule{Policy: "accept", Priority: sgAllowPriority, CIDR: p.String(), IPv6: !p.Addr().Is4(), Protocol: sgAllProtocols, Ports: sgAllPorts})
		if !p.Addr().Is4() {
			v6 = true
		}
	}
	out = append(out, sgRule{Policy: "drop", Priority: sgDenyPriority, CIDR: "0.0.0.0/0", Protocol: sgAllProtocols, Ports: sgAllPorts})
	if v6 {
		out = append(out, sgRule{Policy: "drop", Priority: sgDenyPriority, CIDR: "::/0", IPv6: true, Protocol: sgAllProtocols, Ports: sgAllPorts})
	}
	return out
}

// planRules returns the rules to authorize and the ids of our rules to
// revoke; current holds only rules carrying our description.
func planRules(want, current []sgRule) (add []sgRule, revoke []string) {
	have := map[string]bool{}
	for _, c := range current {
		have[c.key()] = true
	}
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.key()] = true
		if !have[w.key()] {
			add = append(add, w)
		}
	}
	for _, c := range current {
		if !wanted[c.key()] {
			revoke = append(revoke, c.ID)
		}
	}
	sort.Strings(revoke)
	return add, revoke
}

// ownSecurityGroups finds the groups tagged with every one of tags (the
// Service's default-name tag and the cluster tag: the proof they are ours).
func (a api) ownSecurityGroups(ctx context.Context, tags []naming.Tag) ([]string, error) {
	var out []string
	for page := 1; ; page++ {
		r := ecs.CreateDescribeSecurityGroupsRequest()
		ts := make([]ecs.DescribeSecurityGroupsTag, 0, len(tags))
		for _, t := range tags {
			ts = append(ts, ecs.DescribeSecurityGroupsTag{Key: t.Key, Value: t.Value})
		}
		r.Tag = &ts
		r.PageNumber, r.PageSize = requests.NewInteger(page), requests.NewInteger(50)
		resp, err := cloud.Call(ctx, a.c, r, ecs.CreateDescribeSecurityGroupsResponse)
		if err != nil {
			return nil, err
		}
		for _, g := range resp.SecurityGroups.SecurityGroup {
			have := map[string]string{}
			for _, t := range g.Tags.Tag {
				k, v := t.TagKey, t.TagValue
				if k == "" {
					k, v = t.Key, t.Value
				}
				have[k] = v
			}
			mine := true
			for _, t := range tags {
				if v, ok := have[t.Key]; !ok || v != t.Value {
					mine = false
				}
			}
			if mine {
				out = append(out, g.SecurityGroupId)
			}
		}
		if len(resp.SecurityGroups.SecurityGroup) == 0 || page*50 >= resp.TotalCount {
			return out, nil
		}
	}
}

// sgRules reads the ingress rules of a group that carry description.
func (a api) sgRules(ctx context.Context, id, description string) ([]sgRule, error) {
	var out []sgRule
	token := ""
	for {
		r := ecs.CreateDescribeSecurityGroupAttributeRequest()
		r.SecurityGroupId, r.Direction, r.MaxResults, r.NextToken = id, "ingress", requests.NewInteger(1000), token
		resp, err := cloud.Call(ctx, a.c, r, ecs.CreateDescribeSecurityGroupAttributeResponse)
		if err != nil {
			return nil, err
		}
		for _, p := range resp.Permissions.Permission {
			if p.Description != description {
				continue
			}
			rule := sgRule{ID: p.SecurityGroupRuleId, Policy: strings.ToLower(p.Policy), Priority: p.Priority,
				Protocol: strings.ToUpper(p.IpProtocol), Ports: p.PortRange, CIDR: p.SourceCidrIp}
			if p.Ipv6SourceCidrIp != "" {
				rule.CIDR, rule.IPv6 = p.Ipv6SourceCidrIp, true
			}
			if pr, err := netip.ParsePrefix(rule.CIDR); err == nil {
				rule.CIDR = pr.Masked().String()
			}
			out = append(out, rule)
		}
		if resp.NextToken == "" {
			return out, nil
		}
		token = resp.NextToken
	}
}

func (a api) createSecurityGroup(ctx context.Context, name, description, vpcID, resourceGroup string, tags []naming.Tag) (string, error) {
	r := ecs.CreateCreateSecurityGroupRequest()
	r.SecurityGroupName, r.Description, r.VpcId, r.SecurityGroupType, r.ResourceGroupId = name, description, vpcID, sgType, resourceGroup
	ts := make([]ecs.CreateSecurityGroupTag, 0, len(tags))
	for _, t := range tags {
		ts = append(ts, ecs.CreateSecurityGroupTag{Key: t.Key, Value: t.Value})
	}
	r.Tag = &ts
	resp, err := cloud.Call(ctx, a.c, r, ecs.CreateCreateSecurityGroupResponse)
	if err != nil {
		return "", err
	}
	return resp.SecurityGroupId, nil
}

func (a api) authorize(ctx context.Context, id, description string, rules []sgRule) error {
	for len(rules) > 0 {
		n := min(len(rules), sgRulesPerCall)
		part := rules[:n]
		rules = rules[n:]
		perms := make([]ecs.AuthorizeSecurityGroupPermissions, 0, len(part))
		for _, rule := range part {
			p := ecs.AuthorizeSecurityGroupPermissions{Policy: rule.Policy, Priority: rule.Priority, IpProtocol: rule.Protocol,
				PortRange: rule.Ports, Description: description}
			if rule.IPv6 {
				p.Ipv6SourceCidrIp = rule.CIDR
			} else {
				p.SourceCidrIp = rule.CIDR
			}
			perms = append(perms, p)
		}
		r := ecs.CreateAuthorizeSecurityGroupRequest()
		r.SecurityGroupId, r.Permissions = id, &perms
		if _, err := cloud.Call(ctx, a.c, r, ecs.CreateAuthorizeSecurityGroupResponse); err != nil {
			return err
		}
	}
	return nil
}

func (a api) revoke(ctx context.Context, id string, ruleIDs []string) error {
	for len(ruleIDs) > 0 {
		n := min(len(ruleIDs), sgRulesPerCall)
		part := append([]string(nil), ruleIDs[:n]...)
		ruleIDs = ruleIDs[n:]
		r := ecs.CreateRevokeSecurityGroupRequest()
		r.SecurityGroupId, r.SecurityGroupRuleId = id, &part
		_, err := cloud.Call(ctx, a.c, r, ecs.CreateRevokeSecurityGroupResponse)
		switch {
		case err == nil:
		case !cloud.IsNotFound(err):
			return err
		case len(part) > 1:
			// A replay of a call whose answer was lost finds its rules
			// gone, but the cloud refuses a whole batch for one missing
			// rule: revoke the batch's rules one by one, where a rule
			// already gone is done.
			for _, rule := range part {
				if err := a.revoke(ctx, id, []string{rule}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (a api) deleteSecurityGroup(ctx context.Context, id string) error {
	r := ecs.CreateDeleteSecurityGroupRequest()
	r.SecurityGroupId = id
	_, err := cloud.Call(ctx, a.c, r, ecs.CreateDeleteSecurityGroupResponse)
	return err
}

// sourceRanges is what Ensure knows about the Service's source-ranges
// security group before it changes the load balancer's groups.
type sourceRanges struct {
	ranges service.SourceRanges
	// owned are the groups tagged for the Service.
	owned []string
	// label is the group to record in the Service's security-group-id
	// label ("" removes it); nil leaves the label alone (nothing known).
	label *string
}

// labels are the Service labels the sync determined.
func (sr *sourceRanges) labels() map[string]string {
	if sr.label == nil {
		return nil
	}
	return map[string]string{naming.LabelSecurityGroupID: *sr.label}
}

// findSourceRangeGroups reads the Service's own groups when it may have
// one: it has ranges, or its load balancer is in any group.
func (p *Provider) findSourceRangeGroups(ctx context.Context, req *service.Request, lb *lbInfo) (*sourceRanges, error) {
	sr := &sourceRanges{ranges: service.ParseSourceRanges(req.Service)}
	// Frozen ranges still read when the load balancer is in groups: the
	// security-group-ids plan must know which of them is ours to keep.
	if !p.owedGroups.Has(req.Service.UID) && len(sr.ranges.Prefixes) == 0 && len(lb.SecurityGroupIDs) == 0 {
		return sr, nil
	}
	owned, err := p.api.ownSecurityGroups(ctx, req.Identity.Tags)
	if err != nil {
		return nil, fmt.Errorf("find the security group of loadBalancerSourceRanges: %w", err)
	}
	sr.owned = owned
	return sr, nil
}

// userGroups are the load balancer's groups minus ours: the set the
// security-group-ids annotation governs.
func (sr *sourceRanges) userGroups(current []string) []string {
	var out []string
	for _, id := range current {
		if !slices.Contains(sr.owned, id) {
			out = append(out, id)
		}
	}
	return out
}

// syncSourceRanges makes the Service's security group k8s-nlb-<name> hold
// exactly the rules of loadBalancerSourceRanges and keeps the load
// balancer in it; without ranges it leaves and deletes the group. Groups
// are ours only by their tags and rules only by their description: a
// user's group or rule is never changed, left or deleted here.
func (p *Provider) syncSourceRanges(ctx context.Context, req *service.Request, lb *lbInfo, sr *sourceRanges) ([]service.Warning, error) {
	if sr.ranges.Frozen() {
		return []service.Warning{sr.ranges.Warning()}, nil
	}
	log := klog.FromContext(ctx)
	joined := func(id string) bool { return slices.Contains(lb.SecurityGroupIDs, id) }
	var warnings []service.Warning
	if req.Settings.Reused() && len(sr.ranges.Prefixes) > 0 {
		// Our group drops everything but the ranges on every port of the
		// load balancer, its owner's listeners included: refused, as the
		// existing CCM refuses it.
		warnings = append(warnings, service.Warning{Reason: service.EventSourceRangesIgnored, Message: fmt.Sprintf(
			"loadBalancerSourceRanges are not applied to reused load balancer %s: its security group would filter every port of it, not only this Service's; use a load balancer of the Service's own", lb.ID)})
		sr.ranges.Prefixes = nil
	}
	if len(sr.ranges.Prefixes) == 0 {
		none := ""
		sr.label = &none
		return warnings, p.dropSourceRangeGroups(ctx, req, lb.ID, sr.owned, joined)
	}
	self := req.Identity.Ref
	desc := SecurityGroupRuleDescription(self.Namespace, self.Name, self.ClusterID)
	owned := append([]string(nil), sr.owned...)
	sort.SliceStable(owned, func(i, j int) bool { return joined(owned[i]) && !joined(owned[j]) })
	var keep string
	var extra []string
	if len(owned) > 0 {
		keep, extra = owned[0], owned[1:]
	}
	var current []sgRule
	if keep == "" {
		// No ClientToken: a group deleted when the ranges went would be
		// replayed by a token derived from the Service. A lost response is
		// caught by the lookup by tag at the next sync instead.
		vpcID := lb.VpcID
		if vpcID == "" {
			vpcID = p.opts.VpcID
		}
		id, err := p.api.createSecurityGroup(ctx, naming.NLBSecurityGroupName(req.Identity.Name), desc, vpcID, lb.ResourceGroup, req.Identity.Tags)
		if err != nil {
			return nil, fmt.Errorf("create the security group of loadBalancerSourceRanges: %w", err)
		}
		keep = id
		log.Info("Created the security group of loadBalancerSourceRanges", "securityGroup", id)
	} else {
		var err error
		if current, err = p.api.sgRules(ctx, keep, desc); err != nil {
			return nil, fmt.Errorf("read the rules of security group %s: %w", keep, err)
		}
	}
	add, revoke := planRules(desiredRules(sr.ranges.Prefixes, strings.EqualFold(lb.AddressIPVersion, "DualStack")), current)
	// Authorize before revoking, so that no moment allows less than both
	// the old and the new ranges together.
	if err := p.api.authorize(ctx, keep, desc, add); err != nil {
		return nil, fmt.Errorf("authorize %d rules in security group %s: %w", len(add), keep, err)
	}
	if err := p.api.revoke(ctx, keep, revoke); err != nil {
		return nil, fmt.Errorf("revoke %d rules of security group %s: %w", len(revoke), keep, err)
	}
	if !joined(keep) {
		job, err := p.api.securityGroups(ctx, lb.ID, []string{keep}, true)
		if err != nil {
			return nil, fmt.Errorf("join %s to security group %s: %w", lb.ID, keep, err)
		}
		if err := p.wait(ctx, "security group join", job); err != nil {
			return nil, err
		}
	}
	sr.label = &keep
	return nil, p.dropSourceRangeGroups(ctx, req, lb.ID, extra, joined)
}

// dropSourceRangeGroups takes the load balancer out of groups of ours and
// deletes them. A group still used elsewhere is kept (logged): the next
// full sync tries again. A delete that fails on a retryable error fails
// the sync, and the Service's next sync looks for the group although the
// load balancer left it (owedGroups).
func (p *Provider) dropSourceRangeGroups(ctx context.Context, req *service.Request, lbID string, ids []string, joined func(string) bool) error {
	var leave []string
	for _, id := range ids {
		if joined(id) {
			leave = append(leave, id)
		}
	}
	if len(leave) > 0 {
		job, err := p.api.securityGroups(ctx, lbID, leave, false)
		if err != nil && !cloud.IsNotFound(err) {
			return fmt.Errorf("take %s out of security groups %s: %w", lbID, strings.Join(leave, ", "), err)
		}
		if err == nil {
			if err := p.wait(ctx, "security group leave", job); err != nil {
				return err
			}
		}
	}
	log := klog.FromContext(ctx)
	for _, id := range ids {
		if err := p.api.deleteSecurityGroup(ctx, id); err != nil {
			if cloud.IsNotFound(err) {
				continue
			}
			if cloud.ClassOf(err).Retryable() {
				p.owedGroups.Mark(req.Service.UID)
				return fmt.Errorf("delete security group %s: %w", id, err)
			}
			log.Info("Keeping a security group of ours still in use", "securityGroup", id, "err", err)
			continue
		}
		log.Info("Deleted the security group of loadBalancerSourceRanges", "securityGroup", id)
	}
	p.owedGroups.Clear(req.Service.UID)
	return nil
}

// deleteSourceRangeGroups deletes the Service's groups when the Service is
// deleted, after its load balancer; reusedID is the id annotation's load
// balancer, which leaves them first. Every Service reads, with ranges or
// not: a group whose ranges were removed goes in the sync after the
// removal, and a Service deleted before that sync completed would
// otherwise leave it for good. One read per deletion.
func (p *Provider) deleteSourceRangeGroups(ctx context.Context, req *service.Request, reused []string) (int, error) {
	owned, err := p.api.ownSecurityGroups(ctx, req.Identity.Tags)
	if err != nil {
		return 0, fmt.Errorf("find the security group of loadBalancerSourceRanges: %w", err)
	}
	if len(owned) == 0 {
		p.owedGroups.Clear(req.Service.UID)
		return 0, nil
	}
	for _, reusedID := range reused {
		lb, err := p.api.getLB(ctx, reusedID)
		if err != nil && !cloud.IsNotFound(err) {
			return 0, fmt.Errorf("read reused load balancer %s: %w", reusedID, err)
		}
		if err == nil {
			var leave []string
			for _, id := range owned {
				if slices.Contains(lb.SecurityGroupIDs, id) {
					leave = append(leave, id)
				}
			}
			if len(leave) > 0 {
				job, err := p.api.securityGroups(ctx, reusedID, leave, false)
				if err != nil {
					return 0, fmt.Errorf("take %s out of security groups %s: %w", reusedID, strings.Join(leave, ", "), err)
				}
				if err := p.wait(ctx, "security group leave", job); err != nil {
					return 0, err
				}
			}
		}
	}
	for _, id := range owned {
		if err := p.api.deleteSecurityGroup(ctx, id); err != nil && !cloud.IsNotFound(err) {
			return 0, fmt.Errorf("delete security group %s: %w", id, err)
		}
	}
	p.owedGroups.Clear(req.Service.UID)
	return len(owned), nil
}
