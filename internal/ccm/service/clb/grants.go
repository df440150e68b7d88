package clb

import (
	"context"
	"fmt"
	"slices"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

var _ service.GrantChecker = (*Provider)(nil)

// CheckGrants implements service.GrantChecker. vgroup-port groups are read
// with their tags in one DescribeVServerGroups of the bound load balancer
// (a group the cloud does not show there is left to Ensure, which reports
// it missing); under a policy that needs grants, the server certificates
// of cert-id and domain-extensions are read in one DescribeServerCertificates
// (the region's whole list, with tags), not once per id; one the cloud
// config's certificateGrants grants needs no read.
func (p *Provider) CheckGrants(ctx context.Context, req *service.Request, grants service.Grants, backendsOnly bool) error {
	s := req.Settings
	var bound []string
	for _, port := range s.Ports {
		if port.VGroupID != "" {
			bound = append(bound, port.VGroupID)
		}
	}
	if lbID := req.Binding.ID(); len(bound) > 0 && lbID != "" {
		groups, err := p.api.groups(ctx, lbID)
		if err != nil && !cloud.IsNotFound(err) {
			return fmt.Errorf("list vServer groups of %s: %w", lbID, err)
		}
		byID := make(map[string]CurrentGroup, len(groups))
		for _, g := range groups {
			byID[g.ID] = g
		}
		for _, id := range bound {
			g, ok := byID[id]
			if !ok {
				continue
			}
			if err := service.CheckGroup(service.Group{ID: g.ID, Name: g.Name, Tags: g.Tags}, "vServer group", lbID, req, grants.Policy, naming.ParseCLB); err != nil {
				return err
			}
		}
	}
	if backendsOnly || !service.NeedsGrant(grants.Policy) {
		return nil
	}
	named := map[string][]string{}
	if c := s.Listener.CertID; c != nil && *c != "" {
		named[*c] = append(named[*c], s.Key("cert-id"))
	}
	for _, d := range s.Listener.DomainExtensions {
		if k := s.Key("domain-extensions"); d.CertID != "" && !slices.Contains(named[d.CertID], k) {
			named[d.CertID] = append(named[d.CertID], k)
		}
	}
	read := false
	for id := range named {
		read = read || !grants.Certificates.Allows(id, req.Service.Namespace)
	}
	if !read {
		// Granted in the cloud config, or nothing named: no listing.
		return nil
	}
	certs, err := p.api.serverCertificates(ctx)
	if err != nil {
		return fmt.Errorf("list server certificates: %w", err)
	}
	return service.CheckCertificates(certs, named, req, grants, true)
}

// serverCertificates lists the region's server certificates with their
// tags; the API has no paging.
func (a api) serverCertificates(ctx context.Context) (map[string]service.Certificate, error) {
	req := slb.CreateDescribeServerCertificatesRequest()
	resp, err := cloud.Call(ctx, a.c, req, slb.CreateDescribeServerCertificatesResponse)
	if err != nil {
		return nil, err
	}
	out := make(map[string]service.Certificate, len(resp.ServerCertificates.ServerCertificate))
	for _, c := range resp.ServerCertificates.ServerCertificate {
		out[c.ServerCertificateId] = service.Certificate{ID: c.ServerCertificateId, Tags: tagMap(c.Tags.Tag), Found: true}
	}
	return out, nil
}
