package service

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// Borrowing as a grant. Under loadBalancerReuse: tagged a namespace may use
// a cloud resource it did not create through the CCM (a load balancer by
// id, a user-made server group by vgroup-port, a certificate) only when an
// administrator granted it in the cloud, where the namespace's users
// cannot write: a tag on the resource naming the namespace.

// Event reasons of the grant rules (the load balancer's own refusal keeps
// EventReuseRefused).
const (
	// EventGroupNotGranted reports a vgroup-port group the Service may not
	// bind: made by the CCM for another Service, or (tagged) not granted.
	EventGroupNotGranted = "GroupNotGranted"
	// EventCertificateNotGranted reports a certificate the Service's
	// namespace is not granted (tagged).
	EventCertificateNotGranted = "CertificateNotGranted"
)

// TagReusablePrefix starts the per-namespace grant key
// kubernetes.reusable.<namespace>=true, for grant lists longer than one
// tag value (128 characters) holds.
const TagReusablePrefix = TagReusable + "."

// Granted reports whether tags grant the resource to namespace: the tag
// TagReusable whose comma-separated value lists the namespace, or is
// "true" or "*" (every namespace), or the tag TagReusablePrefix+namespace
// = "true". Keys are case-sensitive as the cloud stores them; "true" is
// not.
func Granted(tags map[string]string, namespace string) bool {
	if namespace == "" {
		return false
	}
	if v, ok := tags[TagReusable]; ok {
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if item == namespace || item == "*" || strings.EqualFold(item, "true") {
				return true
			}
		}
	}
	return strings.EqualFold(strings.TrimSpace(tags[TagReusablePrefix+namespace]), "true")
}

// grantHint is the tag an administrator adds to grant namespace a resource.
func grantHint(namespace string) string {
	return fmt.Sprintf("%s=%s (or %s%s=true)", TagReusable, namespace, TagReusablePrefix, namespace)
}

// NeedsGrant reports whether policy requires a grant for what a Service
// names besides its load balancer (groups, certificates): under tagged,
// and under none, which is stricter still.
func NeedsGrant(policy string) bool { return policy == ReuseTagged || policy == ReuseNone }

// GrantChecker is implemented by a provider whose Services can name cloud
// resources besides the load balancer (vgroup-port groups, certificates).
// The controller calls it after Bind and before any write, so a refusal
// changes nothing in the cloud.
type GrantChecker interface {
	// CheckGrants reads what req's Service names and returns a
	// *RefusedError for the first resource it may not use under grants;
	// it never writes. backendsOnly limits it to what a backend-only pass
	// uses (the vgroup-port groups).
	CheckGrants(ctx context.Context, req *Request, grants Grants, backendsOnly bool) error
}

// Grants are the grant rules of a sync: the reuse policy and the
// certificates the cluster's cloud config grants.
type Grants struct {
	// Policy is loadBalancerReuse: ReuseAny, ReuseTagged or ReuseNone.
	Policy string
	// Certificates are cloud-config certificateGrants.
	Certificates CertificateGrants
}

// CertificateGrants maps a certificate id to the namespaces an
// administrator granted it in the cloud config (AllNamespaces: every
// one). It is the grant of a certificate whose tags the CCM cannot read
// (NLB: SSL Certificates Service), and an alternative to the tag for one
// it can (CLB server certificates).
type CertificateGrants map[string][]string

// AllNamespaces in a certificate grant grants every namespace.
const AllNamespaces = "*"

// Allows reports whether the cloud config grants certificate id to
// namespace.
func (g CertificateGrants) Allows(id, namespace string) bool {
	for _, ns := range g[id] {
		if ns == namespace || ns == AllNamespaces {
			return namespace != ""
		}
	}
	return false
}

// configHint is what an administrator adds to the cloud config to grant
// certificate id to namespace, the namespaces granted already kept.
func (g CertificateGrants) configHint(id, namespace string) string {
	nss := append(append([]string(nil), g[id]...), namespace)
	return fmt.Sprintf("certificateGrants: {%q: %q} in the Global section", id, strings.Join(nss, ","))
}

// grants are the controller's grant rules under policy.
func (c *Controller) grants(policy string) Grants {
	return Grants{Policy: policy, Certificates: c.opts.CertificateGrants}
}

// Group is a server group named by vgroup-port, as the grant rules see it.
type Group struct {
	// ID is the group id.
	ID string
	// Name is its name; the CCM names its groups after their Service.
	Name string
	// Description is its description, when the kind has one.
	Description string
	// Tags are its cloud tags.
	Tags map[string]string
}

// CheckGroup applies the rules of vgroup-port to group g on load balancer
// lbID: in every mode, a group the CCM made for a Service (named after it,
// per parse, or tagged for it) is bindable only by that Service; under a
// policy that needs grants, a user-made group must be granted to the
// Service's namespace. A grant on the load balancer does not grant its
// groups. kind names the group in messages ("vServer group").
func CheckGroup(g Group, kind, lbID string, req *Request, policy string, parse func(string) (naming.Parsed, bool)) error {
	svc, self := req.Service, req.Identity
	key := idKeyOf(req, "vgroup-port")
	for _, s := range []string{g.Name, g.Description} {
		if p, ok := parse(s); ok && !self.IsSelf(p.Ref) {
			return &RefusedError{Reason: EventGroupNotGranted, Message: fmt.Sprintf(
				"%s %s on load balancer %s was made by a cloud controller manager for Service %s/%s (cluster %s); only that Service may bind it, so %s naming it is refused",
				kind, g.ID, lbID, p.Ref.Namespace, p.Ref.Name, p.Ref.ClusterID, key)}
		}
	}
	if v, ok := g.Tags[naming.TagKeyDefaultName]; ok && v != self.Name {
		return &RefusedError{Reason: EventGroupNotGranted, Message: fmt.Sprintf(
			"%s %s on load balancer %s was made by a cloud controller manager for another Service (tag %s=%s); only that Service may bind it, so %s naming it is refused",
			kind, g.ID, lbID, naming.TagKeyDefaultName, v, key)}
	}
	if NeedsGrant(policy) && !Granted(g.Tags, svc.Namespace) && !madeFor(g, req, parse) {
		return &RefusedError{Reason: EventGroupNotGranted, Message: fmt.Sprintf(
			"%s %s on load balancer %s is not granted to namespace %s: an administrator grants it with the tag %s; the cluster's cloud config (loadBalancerReuse: %s) requires it for %s",
			kind, g.ID, lbID, svc.Namespace, grantHint(svc.Namespace), policy, key)}
	}
	return nil
}

// madeFor reports whether g was made by the CCM for req's own Service.
func madeFor(g Group, req *Request, parse func(string) (naming.Parsed, bool)) bool {
	self := req.Identity
	if g.Tags[naming.TagKeyDefaultName] == self.Name {
		return true
	}
	p, ok := parse(g.Name)
	return ok && self.IsSelf(p.Ref)
}

// Certificate is a certificate a Service names, as the grant rules see it.
type Certificate struct {
	// ID is the certificate id.
	ID string
	// Tags are its cloud tags.
	Tags map[string]string
	// Found is false when the cloud shows no such certificate to the
	// account's certificate listing.
	Found bool
}

// CheckCertificates refuses, under a policy that needs grants, the first
// certificate (in id order) not granted to the Service's namespace; named
// maps each certificate id to the annotation keys that name it. The cloud
// config's certificateGrants grant a certificate whatever its tags. When
// tagged is true, certs holds the tags the cloud shows for every
// certificate of the account (CLB): one granted by them passes, and one
// the listing does not show is refused, since no grant of it can be read.
// When tagged is false the certificates' tags cannot be read (NLB: the
// SSL Certificates Service) and the cloud config is the only grant.
func CheckCertificates(certs map[string]Certificate, named map[string][]string, req *Request, grants Grants, tagged bool) error {
	if !NeedsGrant(grants.Policy) {
		return nil
	}
	ids := make([]string, 0, len(named))
	for id := range named {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	ns := req.Service.Namespace
	for _, id := range ids {
		if grants.Certificates.Allows(id, ns) {
			continue
		}
		keys, cfg := strings.Join(named[id], ", "), grants.Certificates.configHint(id, ns)
		if !tagged {
			return &RefusedError{Reason: EventCertificateNotGranted, Message: fmt.Sprintf(
				"certificate %s named by %s is not granted to namespace %s: certificates of the SSL Certificates Service carry no tag this cloud controller manager can read, so an administrator grants it in the cluster's cloud config with %s; the cloud config (loadBalancerReuse: %s) requires it",
				id, keys, ns, cfg, grants.Policy)}
		}
		c := certs[id]
		if !c.Found {
			return &RefusedError{Reason: EventCertificateNotGranted, Message: fmt.Sprintf(
				"certificate %s named by %s does not exist in this region, so its grant to namespace %s cannot be checked; the cluster's cloud config (loadBalancerReuse: %s) requires one (tag %s, or %s)",
				id, keys, ns, grants.Policy, grantHint(ns), cfg)}
		}
		if Granted(c.Tags, ns) {
			continue
		}
		return &RefusedError{Reason: EventCertificateNotGranted, Message: fmt.Sprintf(
			"certificate %s named by %s is not granted to namespace %s: an administrator grants it with the tag %s on the certificate, or in the cluster's cloud config with %s; the cloud config (loadBalancerReuse: %s) requires it",
			id, keys, ns, grantHint(ns), cfg, grants.Policy)}
	}
	return nil
}

// idKeyOf is annotation name's key as the Service's provider spells it.
func idKeyOf(req *Request, name string) string {
	if req.Settings != nil {
		return req.Settings.Key(name)
	}
	return name
}
