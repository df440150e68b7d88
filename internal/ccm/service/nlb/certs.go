package nlb

import (
	"context"
	"fmt"
	"slices"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/google/uuid"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// additionalCerts is the additional (non-default) server certificate set a
// TCPSSL listener must carry: every cert-id after the first, then
// additional-cert-ids, without duplicates or the default one. ok is false
// when the annotations say nothing about additional certificates: the
// listener's set is then not managed, so certificates added in the console
// stay (as with CLB domain-extensions).
func additionalCerts(s *annotations.Settings, proto string) (certs []string, ok bool) {
	l := s.Listener
	if proto != "TCPSSL" || (len(l.CertIDs) < 2 && !s.IsSet("additional-cert-ids")) {
		return nil, false
	}
	certs = []string{}
	for _, c := range append(append([]string{}, l.CertIDs[min(1, len(l.CertIDs)):]...), l.AdditionalCertIDs...) {
		if c == "" || (len(l.CertIDs) > 0 && c == l.CertIDs[0]) || slices.Contains(certs, c) {
			continue
		}
		certs = append(certs, c)
	}
	return certs, true
}

// CertPlan is the change to one listener's additional certificates.
type CertPlan struct {
	// Associate are certificates to add.
	Associate []string
	// Disassociate are certificates to remove.
	Disassociate []string
}

// PlanCerts diffs the desired additional certificates with the current
// ones (the listener's default certificate excluded from both).
func PlanCerts(want, have []string) CertPlan {
	var p CertPlan
	for _, c := range want {
		if !slices.Contains(have, c) {
			p.Associate = append(p.Associate, c)
		}
	}
	for _, c := range have {
		if !slices.Contains(want, c) {
			p.Disassociate = append(p.Disassociate, c)
		}
	}
	return p
}

// syncCerts brings the additional certificates of the listeners whose set
// the annotations manage in line: one ListListenerCertificates per such
// listener that existed before (a new one has none), then at most one
// Associate and one Disassociate call, each waited for (the job locks the
// load balancer). ids maps Service ports to the listener now serving them.
func (p *Provider) syncCerts(ctx context.Context, m *Model, ids map[PortKey]string, created map[PortKey]bool) error {
	for _, l := range m.Listeners {
		if !l.ManageCerts || ids[l.ServicePort] == "" {
			continue
		}
		id := ids[l.ServicePort]
		var have []string
		if !created[l.ServicePort] {
			var err error
			if have, err = p.api.additionalCerts(ctx, id); err != nil {
				return fmt.Errorf("list certificates of listener %s: %w", id, err)
			}
		}
		plan := PlanCerts(l.AdditionalCerts, have)
		if len(plan.Disassociate) > 0 {
			job, err := p.api.certificates(ctx, id, plan.Disassociate, false)
			if err != nil {
				return fmt.Errorf("disassociate certificates %v from listener %s: %w", plan.Disassociate, id, err)
			}
			if err := p.wait(ctx, "disassociate certificates from listener "+id, job); err != nil {
				return err
			}
		}
		if len(plan.Associate) > 0 {
			job, err := p.api.certificates(ctx, id, plan.Associate, true)
			if err != nil {
				return fmt.Errorf("associate certificates %v with listener %s: %w", plan.Associate, id, err)
			}
			if err := p.wait(ctx, "associate certificates with listener "+id, job); err != nil {
				return err
			}
		}
	}
	return nil
}

// additionalCerts lists a listener's server certificates other than its
// default one, all pages.
func (a api) additionalCerts(ctx context.Context, listenerID string) ([]string, error) {
	var out []string
	token := ""
	for {
		r := nlb.CreateListListenerCertificatesRequest()
		r.ListenerId, r.CertType, r.NextToken = listenerID, "Server", token
		r.MaxResults = requests.NewInteger(pageSize)
		resp, err := cloud.Do(ctx, a.c, cloud.NLB, "ListListenerCertificates", func(c *cloud.Clients) (*nlb.ListListenerCertificatesResponse, error) {
			return c.NLB.ListListenerCertificates(r)
		})
		if err != nil {
			return nil, err
		}
		for _, c := range resp.Certificates {
			if !c.IsDefault {
				out = append(out, c.CertificateId)
			}
		}
		if resp.NextToken == "" || len(resp.Certificates) == 0 {
			return out, nil
		}
		token = resp.NextToken
	}
}

// certificates associates (add true) or disassociates additional
// certificates; a token per call makes a retried associate harmless.
func (a api) certificates(ctx context.Context, listenerID string, ids []string, add bool) (string, error) {
	if add {
		r := nlb.CreateAssociateAdditionalCertificatesWithListenerRequest()
		r.ListenerId, r.AdditionalCertificateIds, r.ClientToken = listenerID, &ids, uuid.NewString()
		resp, err := cloud.Do(ctx, a.c, cloud.NLB, "AssociateAdditionalCertificatesWithListener", func(c *cloud.Clients) (*nlb.AssociateAdditionalCertificatesWithListenerResponse, error) {
			return c.NLB.AssociateAdditionalCertificatesWithListener(r)
		}, cloud.ClientTokenOf(r))
		if err != nil {
			return "", err
		}
		return resp.JobId, nil
	}
	r := nlb.CreateDisassociateAdditionalCertificatesWithListenerRequest()
	r.ListenerId, r.AdditionalCertificateIds, r.ClientToken = listenerID, &ids, uuid.NewString()
	resp, err := cloud.Do(ctx, a.c, cloud.NLB, "DisassociateAdditionalCertificatesWithListener", func(c *cloud.Clients) (*nlb.DisassociateAdditionalCertificatesWithListenerResponse, error) {
		return c.NLB.DisassociateAdditionalCertificatesWithListener(r)
	}, cloud.ClientTokenOf(r))
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}
