package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// The passes of a sync: the full sync (ensure), the hash-gated backend
// pass (syncBackends, syncFrozen) and the release (cleanup), each binding
// the load balancer first and handing the provider a bound Request.

// checkGrants applies the grant rules to what req's Service names besides
// its load balancer b (GrantChecker), under the cluster's reuse policy:
// reads only, before any write of the sync.
func (c *Controller) checkGrants(ctx context.Context, p Provider, req *Request, b *Binding, backendsOnly bool) error {
	g, ok := p.(GrantChecker)
	if !ok {
		return nil
	}
	r := *req
	r.Binding = b
	return g.CheckGrants(ctx, &r, c.grants(c.opts.ReusePolicy), backendsOnly)
}

// reuseRules are p's reuse rules under the cluster's reuse policy.
func (c *Controller) reuseRules(p Provider) ReuseRules {
	r := p.Descriptor().Reuse
	r.Policy = c.opts.ReusePolicy
	return r
}

// verifyDue reports whether the Service's load balancer was last fully
// synced VerifyPeriod ago. A Service first seen on a gated pass (after a
// restart) counts as synced at a random point of the last period, so the
// verifications of many Services spread out instead of all coming due at
// once.
func (c *Controller) verifyDue(uid types.UID) bool {
	now := time.Now()
	v, ok := c.verified.Load(uid)
	if !ok {
		c.verified.Store(uid, now.Add(-time.Duration(rand.Int64N(int64(c.opts.VerifyPeriod)))))
		return false
	}
	return now.Sub(v.(time.Time)) >= c.opts.VerifyPeriod
}

// backendSettings parses svc for the backend computation: ok when the
// settings backends depend on are valid, even if others are not.
func (c *Controller) backendSettings(svc *corev1.Service, p Provider) (*annotations.Settings, bool) {
	s, err := annotations.Parse(svc, c.defaultsFor(p))
	if err == nil {
		return s, true
	}
	var inv *annotations.InvalidError
	return s, errors.As(err, &inv) && inv.BackendsUsable()
}

// prove binds the load balancer named by the Service's label, from the
// proven cache when this process already proved it; nil when the label
// does not name a load balancer proven the Service's.
func (c *Controller) prove(ctx context.Context, p Provider, svc *corev1.Service, req *Request) (*Binding, error) {
	if v, ok := c.proven.Load(svc.UID); ok && v.(string) == req.LoadBalancerID {
		return &Binding{LB: &LoadBalancer{ID: req.LoadBalancerID}, Reused: req.Settings.Reused()}, nil
	}
	if !req.Settings.Reused() {
		// After a start, the listing's tags prove it as a read would.
		if lb := c.listed(ctx, p, req.LoadBalancerID); lb != nil && req.Identity.Owns(lb.Tags) {
			c.proven.Store(svc.UID, lb.ID)
			return &Binding{LB: lb}, nil
		}
	}
	b, warnings, err := Bind(ctx, p, c.reuseRules(p), req)
	if IsRefused(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.warn(svc, &Result{Warnings: warnings})
	if b.ID() != req.LoadBalancerID {
		return nil, nil
	}
	c.proven.Store(svc.UID, b.ID())
	return b, nil
}

// syncBackends is the hash-gated pass: only backends, on a load balancer
// proven the Service's. ErrFullSyncNeeded asks for a full sync.
func (c *Controller) syncBackends(ctx context.Context, p Provider, svc *corev1.Service, req *Request, frozen bool) error {
	start := time.Now()
	b, err := c.prove(ctx, p, svc, req)
	if err != nil {
		observe(p.Descriptor().Kind, VerbUpdate, start, err)
		c.failed(svc, err)
		return err
	}
	if b == nil {
		return ErrFullSyncNeeded
	}
	if err := c.checkGrants(ctx, p, req, b, true); err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			// The binding was granted once and is not now: its members
			// are left as they are until the grant or the Service changes.
			c.warnOnce(svc, cache.MetaObjectToName(svc).String(), refused.Reason, refused.Message)
			return nil
		}
		observe(p.Descriptor().Kind, VerbUpdate, start, err)
		c.failed(svc, err)
		return err
	}
	req.Binding = b
	c.share(svc, b)
	if err := c.backends.prove(ctx, req); err != nil {
		observe(p.Descriptor().Kind, VerbUpdate, start, err)
		c.failed(svc, err)
		return err
	}
	res, err := p.SyncBackends(ctx, req)
	if errors.Is(err, ErrFullSyncNeeded) {
		return err
	}
	observe(p.Descriptor().Kind, VerbUpdate, start, err)
	if err != nil {
		c.failed(svc, err)
		return err
	}
	c.warn(svc, res)
	c.noBackends(svc, req.Backends)
	w := writeBack{labels: map[string]string{naming.LabelBackendsHash: BackendsHash(b.ID(), req.Backends)}}
	if res != nil && res.Ingress != nil && !frozen {
		// A status that can change without the Service changing (EIPs
		// bound to the load balancer) is refreshed here; not while the
		// annotations are invalid, since the status settings may be among
		// the invalid ones.
		w.status, w.ingress = true, res.Ingress
	}
	if err := c.write(ctx, svc, w); err != nil {
		return err
	}
	if err := c.markRegistered(ctx, svc, req); err != nil {
		return err
	}
	return c.awaitENIs(ctx, svc, req)
}

// syncFrozen updates only the backends of a Service whose load balancer
// settings are invalid, on the load balancer it is already bound to.
func (c *Controller) syncFrozen(ctx context.Context, p Provider, svc *corev1.Service, settings *annotations.Settings) error {
	req, err := c.backends.candidates(ctx, svc, settings)
	if err != nil {
		return err
	}
	if req.LoadBalancerID == "" || !hasFinalizer(svc, p.Descriptor().Finalizer) {
		return nil
	}
	err = c.syncBackends(ctx, p, svc, req, true)
	if errors.Is(err, ErrFullSyncNeeded) {
		klog.FromContext(ctx).Info("Load balancer needs a full sync, which waits for valid annotations", "loadBalancer", req.LoadBalancerID)
		return nil
	}
	return err
}

// ensure runs a full sync: the ownership rules, the finalizer (so nothing
// created can leak), the Provider, then labels and status. A periodic
// verification (verify) records no Normal events: it usually changes
// nothing, and the Warnings say what it found.
func (c *Controller) ensure(ctx context.Context, p Provider, svc *corev1.Service, req *Request, hash string, verify bool) error {
	key := cache.MetaObjectToName(svc).String()
	verb := VerbUpdate
	if req.LoadBalancerID == "" {
		verb = VerbCreation
	}
	start := time.Now()
	fail := func(err error) error {
		observe(p.Descriptor().Kind, verb, start, err)
		c.failed(svc, err)
		return err
	}
	bound, err := c.bind(ctx, p, svc, req)
	if err != nil {
		return fail(err)
	}
	if !bound {
		return nil
	}
	// No EnsuringLoadBalancer event up front: each event is an API write
	// under the same client rate as the Service's patches. A sync that
	// finishes says EnsuredLoadBalancer; one that waits for the cloud or
	// fails says so (failed).
	if err := c.addFinalizer(ctx, svc, p.Descriptor().Finalizer); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventFinalizerFailed, "Adding finalizer %s: %v", p.Descriptor().Finalizer, err)
		observe(p.Descriptor().Kind, verb, start, err)
		return err
	}
	if err := c.backends.prove(ctx, req); err != nil {
		return fail(err)
	}
	c.noBackends(svc, req.Backends)
	res, err := p.Ensure(ctx, req)
	var refused *RefusedError
	if errors.As(err, &refused) {
		// A reuse rule only the provider can judge (an NLB of another
		// VPC), found before any write: refused as Bind refuses, once.
		c.warnOnce(svc, key, refused.Reason, refused.Message)
		return nil
	}
	if err != nil {
		return fail(err)
	}
	if err := c.record(ctx, svc, req, res, hash); err != nil {
		observe(p.Descriptor().Kind, verb, start, err)
		return err
	}
	observe(p.Descriptor().Kind, verb, start, nil)
	if !verify {
		c.recorder.Eventf(svc, corev1.EventTypeNormal, EventEnsured, "Ensured load balancer %s", res.LoadBalancerID)
	}
	klog.FromContext(ctx).V(2).Info("Ensured load balancer", "loadBalancer", res.LoadBalancerID, "took", time.Since(start))
	if err := c.markRegistered(ctx, svc, req); err != nil {
		return err
	}
	return c.awaitENIs(ctx, svc, req)
}

// bind proves which load balancer req's Service uses (Bind) and that the
// grants it names hold, reports what that found, and fills req with the
// Binding and what follows from it. False with no error: a rule refused
// the sync, and its Warning says why; nothing is changed until the Service
// or the cloud changes.
func (c *Controller) bind(ctx context.Context, p Provider, svc *corev1.Service, req *Request) (bool, error) {
	key := cache.MetaObjectToName(svc).String()
	b, warnings, err := Bind(ctx, p, c.reuseRules(p), req)
	if err == nil {
		err = c.checkGrants(ctx, p, req, b, false)
	}
	c.warn(svc, &Result{Warnings: warnings})
	var refused *RefusedError
	if errors.As(err, &refused) {
		// The Warning is repeated at the resync interval.
		c.warnOnce(svc, key, refused.Reason, refused.Message)
		klog.FromContext(ctx).Info("Refused to sync the load balancer", "reason", refused.Reason, "message", refused.Message)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, reason := range []string{EventReuseRefused, EventNotOwned, EventGroupNotGranted, EventCertificateNotGranted} {
		c.notes.Delete(noteKey(key, reason))
	}
	req.Binding = b
	req.LoadBalancerID = b.ID()
	if b != nil && b.LB != nil {
		req.Immutable = annotations.ImmutableChanges(b.LB.Attributes, req.Settings)
	}
	c.share(svc, b)
	return true, nil
}

// record remembers the load balancer a full sync proved, reports its
// Warnings and writes the Service's labels and status, in one write.
func (c *Controller) record(ctx context.Context, svc *corev1.Service, req *Request, res *Result, hash string) error {
	c.proven.Store(svc.UID, res.LoadBalancerID)
	c.verified.Store(svc.UID, time.Now())
	c.warn(svc, res)
	labels := map[string]string{naming.LabelHash: hash, naming.LabelLoadBalancerID: res.LoadBalancerID,
		naming.LabelBackendsHash: BackendsHash(res.LoadBalancerID, req.Backends)}
	for k, v := range res.Labels {
		labels[k] = v
	}
	if err := c.write(ctx, svc, writeBack{labels: labels, status: true, ingress: res.Ingress}); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventStatusFailed, "Updating status: %v", err)
		return err
	}
	return nil
}

// MaxENIWaits bounds the passes that wait for pod addresses no ENI holds
// yet, after one change of the Service or its endpoints: with the default
// backoff (2 s doubling to 1 min) about four minutes, longer than a CNI
// takes to attach an address, and an address that never appears (not a
// VPC address at all) costs no more than that.
const MaxENIWaits = 8

// awaitENIs asks for another pass while some pod addresses are held by no
// ENI yet. The CNI attaches an address to an ENI after the pod has it, and
// nothing the controller watches changes when it does: without the retry
// such a pod waits, unregistered and with its readiness gate unset, for
// the next unrelated change of its Service.
func (c *Controller) awaitENIs(ctx context.Context, svc *corev1.Service, req *Request) error {
	if len(req.Unregistered) == 0 {
		return nil
	}
	key := cache.MetaObjectToName(svc).String()
	if n := c.conflicts.NumRequeues(key); n >= MaxENIWaits {
		klog.FromContext(ctx).Info("Pod addresses still held by no ENI; waiting for the next change of the Service or its endpoints",
			"addresses", req.Unregistered, "passes", n)
		return nil
	}
	return &RetryError{Err: fmt.Errorf("%d pod address(es) held by no ENI yet: %s", len(req.Unregistered), strings.Join(req.Unregistered, ", "))}
}

// cleanup removes the cloud resources p made for svc, then p's finalizer
// and, when the Service stays, its labels and status. It must always be
// able to complete: invalid annotations are read as far as they parse (an
// id or preserve annotation that does not parse is not acted on, and
// preserve-lb-on-delete counts as set whatever its value), and a label
// naming a load balancer that is not proven the Service's is ignored.
func (c *Controller) cleanup(ctx context.Context, p Provider, svc *corev1.Service) error {
	start := time.Now()
	s, _ := annotations.Parse(svc, c.defaultsFor(p))
	req := &Request{Service: svc, Settings: s, ClusterID: c.opts.ClusterID, LoadBalancerID: svc.Labels[naming.LabelLoadBalancerID], Identity: IdentityOf(svc, c.opts.ClusterID)}
	b, warnings, err := ReleaseSet(ctx, p, req)
	if err != nil {
		observe(p.Descriptor().Kind, VerbDeletion, start, err)
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventDeleteFailed, "Deleting load balancer: %s", cloud.StableMessage(err))
		return err
	}
	c.warn(svc, &Result{Warnings: warnings})
	req.Binding = b
	what, err := p.Delete(ctx, req)
	observe(p.Descriptor().Kind, VerbDeletion, start, err)
	if err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, EventDeleteFailed, "Deleting load balancer: %s", cloud.StableMessage(err))
		return err
	}
	c.proven.Delete(svc.UID)
	c.verified.Delete(svc.UID)
	// The finalizer goes with the labels and the status in one write.
	w := writeBack{dropFinalizer: p.Descriptor().Finalizer}
	if svc.DeletionTimestamp == nil {
		w.status, w.labels = true, map[string]string{}
		for _, k := range OwnedLabels {
			w.labels[k] = ""
		}
	}
	if err := c.write(ctx, svc, w); err != nil {
		return err
	}
	reason := EventDeleted
	if b.Keep {
		reason = EventPreserved
	}
	c.recorder.Event(svc, corev1.EventTypeNormal, reason, what)
	return nil
}
