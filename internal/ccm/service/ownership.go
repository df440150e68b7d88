package service

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// Ownership: a load balancer is the Service's only when the cloud says so.
// The loadbalancer-id label and the Service status are written by us but
// can be set by anyone with `kubectl label`/`patch`, so they are hints to
// find a load balancer faster, never proof. Proof is one of:
//
//   - our tags naming the Service: kubernetes.do.not.delete=<"a"+UID> (a
//     UID is never reused) and, when present, ack.aliyun.com=<clusterID>;
//   - the id annotation, under the reuse rules (ReuseRules): the load
//     balancer is then only borrowed, never deleted, and only listeners and
//     groups named after the Service are ever changed on it.
//
// Every provider reads the cloud through a Finder and the framework applies
// the same rules to CLB and NLB here.

// Event reasons of the ownership rules.
const (
	// EventNotOwned reports a loadbalancer-id label naming a load balancer
	// that the cloud does not show as the Service's; it is ignored.
	EventNotOwned = "LoadBalancerNotOwned"
	// EventReuseRefused reports an id annotation the reuse rules refuse; the
	// cloud is left unchanged until the annotation is fixed.
	EventReuseRefused = "ReuseLoadBalancerRefused"
)

// LoadBalancer is what the ownership rules need to know about a cloud load
// balancer, read by a provider's Finder.
type LoadBalancer struct {
	// ID is the load balancer id.
	ID string
	// Tags are its cloud tags.
	Tags map[string]string
	// VpcID is its VPC ("" for a classic-network internet CLB).
	VpcID string
	// AddressType is "internet" or "intranet" (lower case).
	AddressType string
	// ResourceGroupID is its resource group.
	ResourceGroupID string
	// Addresses are the IPs or DNS names it answers on.
	Addresses []string
	// Created is when it was created (zero when unknown): of several
	// load balancers tagged for one Service the oldest is kept.
	Created time.Time
	// Attributes are those it was created with and cannot change, which
	// the immutable annotations are checked against.
	Attributes annotations.CloudLBAttributes
	// Native is the provider's own description of it, handed back to the
	// provider so it need not read the load balancer twice.
	Native any
}

// Finder reads load balancers for the ownership rules.
type Finder interface {
	// Describe reads one load balancer; nil, nil when it does not exist.
	Describe(ctx context.Context, id string) (*LoadBalancer, error)
	// FindTagged returns the load balancer tagged
	// kubernetes.do.not.delete=<defaultName>, the oldest when several are;
	// nil, nil when there is none.
	FindTagged(ctx context.Context, defaultName string) (*LoadBalancer, error)
}

// ReuseRules are the cluster's and the provider's parts of the reuse rules.
type ReuseRules struct {
	// VpcID, when set, refuses reusing a load balancer in another VPC (CLB:
	// its backends must be in the cluster's VPC).
	VpcID string
	// Policy is the administrator's reuse policy (cloud-config
	// loadBalancerReuse): ReuseAny ("" too), ReuseTagged or ReuseNone.
	Policy string
}

// Reuse policies of the cloud config.
const (
	// ReuseAny lets a Service borrow any load balancer the other rules allow.
	ReuseAny = "any"
	// ReuseTagged allows only load balancers (and vgroup-port groups and
	// certificates) granted to the Service's namespace (Granted).
	ReuseTagged = "tagged"
	// ReuseNone refuses every id annotation.
	ReuseNone = "none"
	// TagReusable is the tag by which an administrator grants namespaces a
	// load balancer, group or certificate under ReuseTagged (Granted).
	TagReusable = "kubernetes.reusable"
)

// Binding is the load balancer a Service is proven to use.
type Binding struct {
	// LB is the load balancer; nil when the Service has none yet (Ensure
	// creates it).
	LB *LoadBalancer
	// Reused is true when LB is borrowed through the id annotation.
	Reused bool
	// Gone is the id of a load balancer the Service had that no longer
	// exists; it seeds the next create token, so recreating it is a new
	// create rather than a replay of the first.
	Gone string
	// Release, for Delete, are the borrowed load balancers the Service may
	// hold listeners and groups on (ReleaseSet): the provider removes from
	// each only what is named after the Service, and one that no longer
	// exists counts as released.
	Release []string
	// Keep, for Delete, keeps the Service's own load balancers
	// (preserve-lb-on-delete): they lose only their protections and our
	// tags, and nothing borrowed is released (ReleaseSet decides it).
	Keep bool
	// SharedWith are the other Services (namespace/name) that borrow LB
	// too, sorted; the controller fills it in once per sync (share). While
	// it is not empty no Service changes LB's own settings.
	SharedWith []string
	// Duplicates are further load balancers tagged for the Service besides
	// LB (a create whose answer was lost, then a crash): Delete deletes
	// them with it.
	Duplicates []*LoadBalancer
}

// Own returns the bound load balancer only when its tags prove it was
// created for the Service: the one Delete may delete or preserve. A
// borrowed load balancer is never returned, whoever built the Binding.
func (b *Binding) Own(req *Request) *LoadBalancer {
	if b == nil || b.LB == nil || b.LB.Tags == nil || !req.Identity.Owns(b.LB.Tags) {
		return nil
	}
	return b.LB
}

// OwnAll returns Own and every duplicate proven the Service's by its tags:
// the load balancers Delete deletes (or preserves).
func (b *Binding) OwnAll(req *Request) []*LoadBalancer {
	var out []*LoadBalancer
	if lb := b.Own(req); lb != nil {
		out = append(out, lb)
	}
	if b == nil {
		return out
	}
	for _, d := range b.Duplicates {
		if d != nil && d.Tags != nil && req.Identity.Owns(d.Tags) && (len(out) == 0 || d.ID != out[0].ID) {
			out = append(out, d)
		}
	}
	return out
}

// Previous returns Gone, "" on a nil Binding.
func (b *Binding) Previous() string {
	if b == nil {
		return ""
	}
	return b.Gone
}

// ID returns the bound load balancer id, "" when none.
func (b *Binding) ID() string {
	if b == nil || b.LB == nil {
		return ""
	}
	return b.LB.ID
}

// RefusedError is an ownership or reuse rule that forbids the sync; the
// controller reports it as a Warning event and changes nothing in the cloud.
type RefusedError struct {
	// Reason is the event reason.
	Reason string
	// Message explains what was refused and how to fix it.
	Message string
}

// Error implements error.
func (e *RefusedError) Error() string { return e.Message }

// IsRefused reports whether err is a *RefusedError.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// Bind finds the load balancer req's Service is proven to use, applying
// the ownership and reuse rules; it never writes to the cloud. A refusal is
// a *RefusedError; a label naming a load balancer that is not proven the
// Service's is ignored with a Warning.
func Bind(ctx context.Context, f Finder, rules ReuseRules, req *Request) (*Binding, []Warning, error) {
	self, s := req.Identity, req.Settings
	label := req.LoadBalancerID
	var warnings []Warning
	if s != nil && s.Reused() {
		return bindReused(ctx, f, rules, req)
	}
	b := &Binding{}
	if label != "" {
		lb, err := f.Describe(ctx, label)
		if err != nil {
			return nil, nil, fmt.Errorf("read load balancer %s named by label %s: %w", label, naming.LabelLoadBalancerID, err)
		}
		switch {
		case lb == nil:
			b.Gone = label
		case self.Owns(lb.Tags):
			b.LB = lb
			return b, nil, nil
		case lb.Tags[naming.TagKeyReused] != "":
			// The label records a borrowed binding and id is gone: a new
			// load balancer now would leave the Service's listeners on the
			// borrowed one, forwarding to node ports Kubernetes may hand
			// to another Service. A forged label only stops its forger.
			return nil, nil, refuse("the Service is bound to borrowed load balancer %s (label %s) and has no id annotation any more; creating its own is refused (its listeners on %s would be left behind): set %s back to %s, or delete and recreate the Service",
				label, naming.LabelLoadBalancerID, label, idKey(req), label)
		default:
			warnings = append(warnings, notOwnedWarning(label))
		}
	}
	all, err := tagged(ctx, f, self)
	if err != nil {
		return nil, nil, fmt.Errorf("find load balancer by tag %s=%s: %w", naming.TagKeyDefaultName, self.Name, err)
	}
	var owned []*LoadBalancer
	for _, lb := range all {
		if self.Owns(lb.Tags) {
			owned = append(owned, lb)
		}
	}
	if len(owned) == 0 && len(all) > 0 {
		lb := all[0]
		return nil, warnings, &RefusedError{Reason: EventNotOwned, Message: fmt.Sprintf(
			"load balancer %s is tagged %s=%s for this Service but %s=%s, not this cluster's %q; refusing to manage it (was cloud-config clusterID changed?)",
			lb.ID, naming.TagKeyDefaultName, self.Name, naming.TagKeyCluster, lb.Tags[naming.TagKeyCluster], self.ClusterID)}
	}
	if len(owned) > 0 {
		// The oldest is kept, whichever order the cloud lists them in; the
		// others are reported and deleted with the Service (ReleaseSet).
		b.LB, b.Duplicates = owned[0], owned[1:]
		if len(b.Duplicates) > 0 {
			warnings = append(warnings, duplicatesWarning(b.LB, b.Duplicates))
		}
	}
	return b, warnings, nil
}

// AllTagged is a Finder that can return every load balancer tagged for a
// Service, not only one.
type AllTagged interface {
	// FindAllTagged returns every load balancer tagged
	// kubernetes.do.not.delete=<defaultName>.
	FindAllTagged(ctx context.Context, defaultName string) ([]*LoadBalancer, error)
}

// tagged returns the load balancers tagged for the Service self, oldest
// first (the id breaks ties): all of them from an AllTagged Finder, else
// FindTagged's.
func tagged(ctx context.Context, f Finder, self Identity) ([]*LoadBalancer, error) {
	name := self.Name
	if l, ok := f.(AllTagged); ok {
		lbs, err := l.FindAllTagged(ctx, name)
		if err != nil {
			return nil, err
		}
		var out []*LoadBalancer
		for _, lb := range lbs {
			if lb != nil && lb.Tags[naming.TagKeyDefaultName] == name {
				out = append(out, lb)
			}
		}
		oldestFirst(out)
		return out, nil
	}
	lb, err := f.FindTagged(ctx, name)
	if err != nil || lb == nil {
		return nil, err
	}
	return []*LoadBalancer{lb}, nil
}

// oldestFirst sorts load balancers by creation time, unknown times last,
// then by id.
func oldestFirst(lbs []*LoadBalancer) {
	sort.SliceStable(lbs, func(i, j int) bool {
		a, b := lbs[i], lbs[j]
		if !a.Created.Equal(b.Created) {
			if a.Created.IsZero() || b.Created.IsZero() {
				return b.Created.IsZero()
			}
			return a.Created.Before(b.Created)
		}
		return a.ID < b.ID
	})
}

func duplicatesWarning(kept *LoadBalancer, dups []*LoadBalancer) Warning {
	ids := make([]string, 0, len(dups))
	for _, d := range dups {
		ids = append(ids, d.ID)
	}
	return Warning{Reason: EventDuplicateLoadBalancers, Message: fmt.Sprintf(
		"Load balancers %s are tagged %s for this Service besides %s (a create whose answer was lost); %s is used, the others are deleted with the Service",
		strings.Join(ids, ", "), naming.TagKeyDefaultName, kept.ID, kept.ID)}
}

func notOwnedWarning(id string) Warning {
	return Warning{Reason: EventNotOwned, Message: fmt.Sprintf(
		"Ignoring label %s=%s: load balancer %s is not tagged %s for this Service, so it is not this Service's to change or delete",
		naming.LabelLoadBalancerID, id, id, naming.TagKeyDefaultName)}
}

// bindReused applies the reuse rules to the id annotation.
func bindReused(ctx context.Context, f Finder, rules ReuseRules, req *Request) (*Binding, []Warning, error) {
	self, s := req.Identity, req.Settings
	id := s.LoadBalancer.ID
	key := s.Key("id")
	label := req.LoadBalancerID
	var warnings []Warning
	if label != id {
		// A Service already bound to another load balancer must not be
		// silently re-pointed: the old one (ours, or borrowed with our
		// listeners on it) would leak.
		if label != "" {
			old, err := f.Describe(ctx, label)
			if err != nil {
				return nil, nil, fmt.Errorf("read load balancer %s named by label %s: %w", label, naming.LabelLoadBalancerID, err)
			}
			switch {
			case old == nil:
			case self.Owns(old.Tags) || old.Tags[naming.TagKeyReused] != "":
				return nil, nil, refuse("the Service is bound to load balancer %s; changing %s to %s is refused (it would leak %s): set %s back to %s, or delete and recreate the Service", label, key, id, label, key, label)
			default:
				warnings = append(warnings, notOwnedWarning(label))
			}
		}
		own, err := f.FindTagged(ctx, self.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("find load balancer by tag %s=%s: %w", naming.TagKeyDefaultName, self.Name, err)
		}
		if own != nil && own.ID != id && self.Owns(own.Tags) {
			return nil, nil, refuse("the Service already has load balancer %s created for it; adding %s=%s is refused (it would leak %s): remove %s, or delete and recreate the Service", own.ID, key, id, own.ID, key)
		}
	}
	lb, err := f.Describe(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("read load balancer %s named by %s: %w", id, key, err)
	}
	if lb == nil {
		return nil, warnings, fmt.Errorf("the load balancer %s named by %s does not exist", id, key)
	}
	if err := checkReuse(lb, rules, req, label == id); err != nil {
		return nil, warnings, err
	}
	return &Binding{LB: lb, Reused: true}, warnings, nil
}

// checkReuse refuses what the existing CCM and the cloud documentation
// refuse to reuse: a load balancer created by a CCM (for any Service, or the
// cluster's API server, which carries the cluster tag), one in another VPC,
// of another address type or resource group than the annotations say, or a
// new binding whose address differs from the one the Service already
// published.
func checkReuse(lb *LoadBalancer, rules ReuseRules, req *Request, established bool) error {
	s := req.Settings
	key := s.Key("id")
	switch rules.Policy {
	case ReuseNone:
		return refuse("the cluster's cloud config (loadBalancerReuse: none) does not let Services reuse load balancers; remove %s", key)
	case ReuseTagged:
		// The grant first: a namespace without one learns nothing more
		// about the load balancer (not its tags, not whose it is), even
		// if the hint to add the tag cannot help for a CCM's own LB.
		if ns := req.Service.Namespace; !Granted(lb.Tags, ns) {
			return refuse("load balancer %s is not granted to namespace %s: an administrator grants it with the tag %s; the cluster's cloud config (loadBalancerReuse: tagged) requires it for %s", lb.ID, ns, grantHint(ns), key)
		}
	}
	if v, ok := lb.Tags[naming.TagKeyDefaultName]; ok {
		return refuse("load balancer %s was created by a cloud controller manager (tag %s=%s) and cannot be reused through %s", lb.ID, naming.TagKeyDefaultName, v, key)
	}
	if v, ok := lb.Tags[naming.TagKeyCluster]; ok {
		return refuse("load balancer %s carries the cluster tag %s=%s (a cluster's API server load balancer, or one a cloud controller manager created) and cannot be reused through %s", lb.ID, naming.TagKeyCluster, v, key)
	}
	if rules.VpcID != "" && lb.VpcID != "" && lb.VpcID != rules.VpcID {
		return refuse("load balancer %s is in VPC %s, not the cluster's VPC %s; it cannot reach the cluster's nodes and cannot be reused", lb.ID, lb.VpcID, rules.VpcID)
	}
	if at := s.LoadBalancer.AddressType; at != nil && lb.AddressType != "" && !strings.EqualFold(*at, lb.AddressType) {
		return refuse("load balancer %s is %s but %s says %s; it cannot be reused", lb.ID, lb.AddressType, s.Key("address-type"), *at)
	}
	if rg := s.LoadBalancer.ResourceGroupID; rg != nil && lb.ResourceGroupID != "" && *rg != lb.ResourceGroupID {
		return refuse("load balancer %s is in resource group %s, not %s as %s says; it cannot be reused", lb.ID, lb.ResourceGroupID, *rg, s.Key("resource-group-id"))
	}
	if !established {
		if in := req.Service.Status.LoadBalancer.Ingress; len(in) > 0 && !servesIngress(lb, in) {
			return refuse("the Service already publishes address %s; binding it to load balancer %s through %s is refused: delete and recreate the Service to move it", ingressString(in[0]), lb.ID, key)
		}
	}
	return nil
}

func servesIngress(lb *LoadBalancer, in []corev1.LoadBalancerIngress) bool {
	for _, i := range in {
		for _, a := range lb.Addresses {
			if a != "" && (i.IP == a || i.Hostname == a) {
				return true
			}
		}
		if i.IP == "" && i.Hostname != "" {
			// A hostname annotation hides the address; it proves nothing.
			return true
		}
	}
	return false
}

func ingressString(i corev1.LoadBalancerIngress) string {
	if i.IP != "" {
		return i.IP
	}
	return i.Hostname
}

func refuse(format string, args ...any) error {
	return &RefusedError{Reason: EventReuseRefused, Message: fmt.Sprintf(format, args...)}
}

// ownAndLabelled finds the load balancer created for the Service, proven
// by its tags (the labelled one when the label names one, else the
// oldest; nil when there is none), the further ones tagged for it (dups),
// and the load balancer the label names when it is not the Service's own
// (nil when there is none or it no longer exists). Every load balancer
// tagged for the Service is listed even when the label names one: a lost
// create answer and a crash can leave two, and Delete must delete both.
func ownAndLabelled(ctx context.Context, p Finder, req *Request) (own, labelled *LoadBalancer, dups []*LoadBalancer, warnings []Warning, err error) {
	self := req.Identity
	if id := req.LoadBalancerID; id != "" {
		lb, err := p.Describe(ctx, id)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("read load balancer %s named by label %s: %w", id, naming.LabelLoadBalancerID, err)
		}
		if lb != nil && self.Owns(lb.Tags) {
			own = lb
		} else {
			labelled = lb
		}
	}
	all, err := tagged(ctx, p, self)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("find load balancer by tag %s=%s: %w", naming.TagKeyDefaultName, self.Name, err)
	}
	for _, lb := range all {
		switch {
		case !self.Owns(lb.Tags):
			warnings = append(warnings, Warning{Reason: EventNotOwned, Message: fmt.Sprintf(
				"Not deleting load balancer %s: it is tagged for this Service but %s=%s names another cluster", lb.ID, naming.TagKeyCluster, lb.Tags[naming.TagKeyCluster])})
		case own == nil:
			own = lb
		case lb.ID != own.ID:
			dups = append(dups, lb)
		}
	}
	return own, labelled, dups, warnings, nil
}

// ReleaseSet is what Delete must release for req's Service, whatever its
// annotations say now: its own load balancer (proven by tags, deleted or
// preserved) and every borrowed load balancer it may hold listeners and
// groups on. The borrowed ones are the id annotation's and the one the
// loadbalancer-id label names when it is not the Service's own: the label
// records the binding the last successful sync proved, so an id edited
// after binding (refused for Ensure) still releases the load balancer the
// Service really used. A forged label cannot hurt another Service: on a
// borrowed load balancer only listeners and groups named after this
// Service (namespace, name and cluster in their description) are removed.
// One that no longer exists is released already. With
// preserve-lb-on-delete nothing borrowed is released, as before.
func ReleaseSet(ctx context.Context, f Finder, req *Request) (*Binding, []Warning, error) {
	own, labelled, dups, warnings, err := ownAndLabelled(ctx, f, req)
	if err != nil {
		return nil, nil, err
	}
	b := &Binding{LB: own, Duplicates: dups, Reused: req.Settings != nil && req.Settings.Reused(),
		Keep: req.Settings != nil && req.Settings.LoadBalancer.PreserveOnDelete}
	if b.Keep {
		return b, warnings, nil
	}
	if req.Settings != nil && req.Settings.Reused() {
		if id := req.Settings.LoadBalancer.ID; id != own.id() && (labelled == nil || labelled.ID != id) {
			lb, err := f.Describe(ctx, id)
			if err != nil {
				return nil, nil, fmt.Errorf("read load balancer %s named by %s: %w", id, req.Settings.Key("id"), err)
			}
			if lb != nil {
				b.Release = append(b.Release, id)
			}
		}
	}
	if labelled != nil {
		// Read above already: not read again when the id names it too.
		b.Release = append(b.Release, labelled.ID)
	}
	return b, warnings, nil
}

func (lb *LoadBalancer) id() string {
	if lb == nil {
		return ""
	}
	return lb.ID
}

// Ready returns req with its Binding filled, as the controller fills it
// before every provider call: Bind for Ensure and SyncBackends, ReleaseSet
// for Delete. Providers never call it (they are never called unbound); it
// serves the tests and tools that drive a provider directly. The caller's
// Request is not changed, so a reused Request is bound afresh each time.
func Ready(ctx context.Context, p Provider, req *Request, forDelete bool) (*Request, error) {
	if req.Binding != nil {
		return req, nil
	}
	r := *req
	if forDelete {
		b, _, err := ReleaseSet(ctx, p, req)
		if err != nil {
			return nil, err
		}
		r.Binding = b
		return &r, nil
	}
	b, _, err := Bind(ctx, p, p.Descriptor().Reuse, req)
	if err != nil {
		return nil, err
	}
	r.Binding = b
	return &r, nil
}

// TaggedFinder is a Finder that also lists load balancers by tag, as
// Lookups makes it: a provider that embeds one is a Lister and AllTagged
// without writing either.
type TaggedFinder interface {
	Finder
	Lister
	AllTagged
}

// Lookups makes a Finder of a provider's two reads (one load balancer by
// id, every load balancer tagged key=value) and its conversion to
// LoadBalancer; a nil result from the read by id means "none".
func Lookups[T any](byID func(context.Context, string) (*T, error), byTag func(context.Context, string, string) ([]*T, error), facts func(*T) *LoadBalancer) TaggedFinder {
	return lookups[T]{byID, byTag, facts}
}

type lookups[T any] struct {
	byID  func(context.Context, string) (*T, error)
	byTag func(context.Context, string, string) ([]*T, error)
	facts func(*T) *LoadBalancer
}

// Describe implements Finder.
func (l lookups[T]) Describe(ctx context.Context, id string) (*LoadBalancer, error) {
	lb, err := l.byID(ctx, id)
	if err != nil || lb == nil {
		return nil, err
	}
	return l.facts(lb), nil
}

// FindTagged implements Finder: the oldest of the load balancers tagged
// for the Service, so every sync picks the same one.
func (l lookups[T]) FindTagged(ctx context.Context, defaultName string) (*LoadBalancer, error) {
	out, err := l.FindAllTagged(ctx, defaultName)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	oldestFirst(out)
	return out[0], nil
}

// FindAllTagged implements AllTagged, in the one read FindTagged makes.
func (l lookups[T]) FindAllTagged(ctx context.Context, defaultName string) ([]*LoadBalancer, error) {
	return l.ListTagged(ctx, naming.TagKeyDefaultName, defaultName)
}

// ListTagged implements Lister with the provider's read by tag (all pages).
func (l lookups[T]) ListTagged(ctx context.Context, key, value string) ([]*LoadBalancer, error) {
	lbs, err := l.byTag(ctx, key, value)
	if err != nil {
		return nil, err
	}
	out := make([]*LoadBalancer, 0, len(lbs))
	for _, lb := range lbs {
		out = append(out, l.facts(lb))
	}
	return out, nil
}

// idKey is the id annotation's key as the Service's provider spells it.
func idKey(req *Request) string {
	if req.Settings != nil {
		return req.Settings.Key("id")
	}
	return annotations.Key("id")
}
