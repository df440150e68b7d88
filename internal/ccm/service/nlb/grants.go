package nlb

import (
	"context"
	"fmt"
	"slices"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

var _ service.GrantChecker = (*Provider)(nil)

// CheckGrants implements service.GrantChecker. vgroup-port groups: one
// ListServerGroups of the named ids (their tags included); a group no
// listener of the bound load balancer uses is left to planGroups, which
// reports it missing before any write. Certificates (cert-id, cacert-id,
// additional-cert-ids) are checked on full syncs without a cloud call:
// NLB listeners take certificates of the SSL Certificates Service, whose
// tags this CCM cannot read (the SDK's cas client has no tag listing), so
// their only grant is the cloud config's certificateGrants.
func (p *Provider) CheckGrants(ctx context.Context, req *service.Request, grants service.Grants, backendsOnly bool) error {
	if err := p.checkGroupGrants(ctx, req, grants.Policy); err != nil {
		return err
	}
	if backendsOnly {
		return nil
	}
	return service.CheckCertificates(nil, namedCertificates(req.Settings), req, grants, false)
}

// checkGroupGrants applies the vgroup-port rules to the groups the
// Service names.
func (p *Provider) checkGroupGrants(ctx context.Context, req *service.Request, policy string) error {
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

// namedCertificates maps every certificate the Service's annotations name
// to the annotation keys naming it. All of them are checked, used by a
// TCPSSL listener or not, so that a grant never depends on a protocol
// the namespace can change.
func namedCertificates(s *annotations.Settings) map[string][]string {
	named := map[string][]string{}
	add := func(name string, ids []string) {
		k := s.Key(name)
		for _, id := range ids {
			if id != "" && !slices.Contains(named[id], k) {
				named[id] = append(named[id], k)
			}
		}
	}
	l := s.Listener
	add("cert-id", l.CertIDs)
	add("cacert-id", l.CACertIDs)
	add("additional-cert-ids", l.AdditionalCertIDs)
	return named
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
