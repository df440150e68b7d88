package nlb

import (
	"context"
	"fmt"
	"slices"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

var _ service.GrantChecker = (*Provider)(nil)

// CheckGrants implements service.GrantChecker for vgroup-port groups: one
// ListServerGroups of the named ids (their tags included). A group no
// listener of the bound load balancer uses is left to planGroups, which
// reports it missing before any write.
//
// Certificates are not checked here: NLB listeners take certificates of
// the SSL Certificates Service, whose tags this CCM cannot read (the
// SDK's cas client has no tag listing), so under tagged they are used as
// under any.
func (p *Provider) CheckGrants(ctx context.Context, req *service.Request, policy string, _ bool) error {
	var bound []string
	for _, port := range req.Settings.Ports {
		if port.VGroupID != "" && !slices.Contains(bound, port.VGroupID) {
			bound = append(bound, port.VGroupID)
		}
	}
	lbID := req.Binding.ID()
	if len(bound) == 0 || lbID == "" {
		return nil
	}
	groups, err := p.api.groupsByID(ctx, bound)
	if err != nil {
		return fmt.Errorf("list server groups %v: %w", bound, err)
	}
	for _, g := range groups {
		if !slices.Contains(g.RelatedLBs, lbID) {
			continue
		}
		if err := service.CheckGroup(service.Group{ID: g.ID, Name: g.Name, Tags: g.Tags}, "server group", lbID, req, policy, naming.ParseNLB); err != nil {
			return err
		}
	}
	return nil
}

// groupTags turns a server group's tag list into a map.
func groupTags(tags []nlb.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		k, v := t.TagKey, t.TagValue
		if k == "" {
			k, v = t.Key, t.Value
		}
		m[k] = v
	}
	return m
}
