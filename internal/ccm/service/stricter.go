package service

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// WouldRefuse says why the Service of key would be refused under the
// reuse policy policy, which the cluster does not run yet, and "" when it
// would not be or is refused already under the policy the cluster runs.
// It applies the ownership and reuse rules (Bind) and the grant rules
// (GrantChecker) and only reads. Only Services that name something they
// may not own are evaluated: an id, a vgroup-port group or a certificate.
func (c *Controller) WouldRefuse(ctx context.Context, key, policy string) (string, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return "", fmt.Errorf("service key %q: %w", key, err)
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	p, ambiguous := c.decide(svc)
	if p == nil || ambiguous != "" || svc.DeletionTimestamp != nil {
		return "", nil
	}
	settings, err := annotations.Parse(svc, c.defaultsFor(p))
	if err != nil || !namesBorrowed(settings) {
		// Invalid annotations are reported by the Service's own pass.
		return "", nil
	}
	req := &Request{Service: svc, Settings: settings, ClusterID: c.opts.ClusterID, LoadBalancerID: svc.Labels[naming.LabelLoadBalancerID], Identity: IdentityOf(svc, c.opts.ClusterID)}
	msg, err := c.refusal(ctx, p, req, policy)
	if msg == "" || err != nil {
		return "", err
	}
	now, err := c.refusal(ctx, p, req, c.opts.ReusePolicy)
	if err != nil || now == msg {
		return "", err
	}
	return msg, nil
}

// refusal is the message of the refusal req's Service meets under policy,
// "" when none.
func (c *Controller) refusal(ctx context.Context, p Provider, req *Request, policy string) (string, error) {
	rules := p.Descriptor().Reuse
	rules.Policy = policy
	b, _, err := Bind(ctx, p, rules, req)
	if err == nil {
		if g, ok := p.(GrantChecker); ok {
			r := *req
			r.Binding = b
			err = g.CheckGrants(ctx, &r, c.grants(policy), false)
		}
	}
	var refused *RefusedError
	if errors.As(err, &refused) {
		return refused.Message, nil
	}
	return "", err
}

// namesBorrowed reports whether s names a cloud resource the Service may
// use without owning it.
func namesBorrowed(s *annotations.Settings) bool {
	l := s.Listener
	if s.Reused() || (l.CertID != nil && *l.CertID != "") || len(l.CertIDs)+len(l.CACertIDs)+len(l.AdditionalCertIDs)+len(l.DomainExtensions) > 0 {
		return true
	}
	for _, port := range s.Ports {
		if port.VGroupID != "" {
			return true
		}
	}
	return false
}
