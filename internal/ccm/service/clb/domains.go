package clb

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

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
	resp, err := cloud.Do(ctx, a.c, cloud.SLB, "DescribeDomainExtensions", func(c *cloud.Clients) (*slb.DescribeDomainExtensionsResponse, error) {
		return c.SLB.DescribeDomainExtensions(req)
	})
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
		_, err := cloud.Do(ctx, a.c, cloud.SLB, "DeleteDomainExtension", func(c *cloud.Clients) (*slb.DeleteDomainExtensionResponse, error) {
			return c.SLB.DeleteDomainExtension(req)
		})
		if err != nil && !cloud.IsNotFound(err) {
			return fmt.Errorf("delete the domain extension %s (%s) of listener https:%d: %w", d.ID, d.Domain, port, err)
		}
	}
	for _, u := range plan.Update {
		req := slb.CreateSetDomainExtensionAttributeRequest()
		req.DomainExtensionId, req.ServerCertificateId = u.ID, u.CertID
		if _, err := cloud.Do(ctx, a.c, cloud.SLB, "SetDomainExtensionAttribute", func(c *cloud.Clients) (*slb.SetDomainExtensionAttributeResponse, error) {
			return c.SLB.SetDomainExtensionAttribute(req)
		}); err != nil {
			return fmt.Errorf("set the certificate of domain %s on listener https:%d to %s: %w", u.Domain, port, u.CertID, err)
		}
	}
	for _, d := range plan.Create {
		req := slb.CreateCreateDomainExtensionRequest()
		req.LoadBalancerId, req.ListenerPort = lbID, requests.NewInteger(int(port))
		req.Domain, req.ServerCertificateId = d.Domain, d.CertID
		if _, err := cloud.Do(ctx, a.c, cloud.SLB, "CreateDomainExtension", func(c *cloud.Clients) (*slb.CreateDomainExtensionResponse, error) {
			return c.SLB.CreateDomainExtension(req)
		}); err != nil {
			return fmt.Errorf("create the domain extension %s on listener https:%d: %w", d.Domain, port, err)
		}
	}
	return nil
}
