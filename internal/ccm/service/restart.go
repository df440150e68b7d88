package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Restart cost. A process that starts knows nothing it proved before, so
// every converged Service would cost a read of its load balancer (to prove
// the loadbalancer-id label) and of its groups and members. Instead, the
// first pass proves all of them with one paged listing per provider of the
// load balancers tagged with the cluster's id (Lister), and skips the
// backend reads of a Service whose backends are those of its last
// successful sync (the backends-hash label). The listing only replaces the
// read of each load balancer: a load balancer is still proven the
// Service's only by its tags (Identity.Owns), and the labels remain hints. Drift
// made in the cloud while the CCM was down is found at the next periodic
// re-check, which reads as before.

// StartupProofWindow is how long after it was taken the start-up listing
// may prove a Service; later first syncs read their load balancer.
const StartupProofWindow = 2 * time.Minute

// Lister is a Finder that can also list the load balancers carrying one
// tag, all pages.
type Lister interface {
	// ListTagged returns every load balancer tagged key=value, with its tags.
	ListTagged(ctx context.Context, key, value string) ([]*LoadBalancer, error)
}

// startupListing is one provider's start-up listing, taken once in the
// background (takeListing) and shared by every worker.
type startupListing struct {
	once sync.Once
	// first is closed when the first attempt has ended, whatever its
	// outcome: workers wait for it, not for the retries.
	first chan struct{}
	mu    sync.Mutex
	at    time.Time
	byID  map[string]*LoadBalancer
}

// Retry of a failed start-up listing: the first wait, doubled after each
// failure up to listingRetryMax. Variables for tests.
var (
	listingRetry    = time.Second
	listingRetryMax = 30 * time.Second
)

// listed returns the load balancer id from p's start-up listing, taking
// the listing on first use; nil when it is not listed, the window is over,
// the listing failed (each Service then reads its own) or p cannot list.
// Workers that need it meanwhile wait for the first attempt, each for no
// longer than its own sync may. The listing runs on the controller's run
// context, not on the first caller's: a caller whose sync ends (deadline,
// shutdown of its worker) must not end the listing every other Service
// waits for.
func (c *Controller) listed(ctx context.Context, p Provider, id string) *LoadBalancer {
	lister, ok := p.(Lister)
	if !ok {
		return nil
	}
	v, _ := c.listings.LoadOrStore(p.Descriptor().Kind, &startupListing{first: make(chan struct{})})
	l := v.(*startupListing)
	l.once.Do(func() {
		run := c.runCtx
		if run == nil {
			// Single passes (plan) have no run context: the caller's
			// values, not its deadline.
			run = context.WithoutCancel(ctx)
		}
		go c.takeListing(run, p.Descriptor().Kind, lister, l)
	})
	select {
	case <-l.first:
	case <-ctx.Done():
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byID == nil || time.Since(l.at) > StartupProofWindow {
		l.byID = nil
		return nil
	}
	return l.byID[id]
}

// takeListing takes l, each attempt with a sync's deadline and retry
// budget. A failed attempt is retried with backoff while a listing could
// still prove something (StartupProofWindow from the first attempt: by
// then the Services have synced, reading their own load balancers), until
// ctx ends.
func (c *Controller) takeListing(ctx context.Context, kind string, lister Lister, l *startupListing) {
	logger := klog.FromContext(ctx).WithValues("kind", kind)
	released := false
	release := func() {
		if !released {
			released = true
			close(l.first)
		}
	}
	defer release()
	budget, timeout := c.opts.RetryBudget, c.opts.SyncTimeout
	if budget <= 0 {
		budget = DefaultRetryBudget
	}
	if timeout <= 0 {
		timeout = DefaultSyncTimeout
	}
	began, wait := time.Now(), listingRetry
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(cloud.WithRetryBudget(ctx, budget), timeout)
		start := time.Now()
		lbs, err := lister.ListTagged(actx, naming.TagKeyCluster, c.opts.ClusterID)
		cancel()
		if err == nil {
			byID := make(map[string]*LoadBalancer, len(lbs))
			for _, lb := range lbs {
				byID[lb.ID] = lb
			}
			l.mu.Lock()
			l.at, l.byID = time.Now(), byID
			l.mu.Unlock()
			logger.Info("Listed the cluster's load balancers to prove Services after start", "loadBalancers", len(lbs), "took", time.Since(start), "attempt", attempt)
			return
		}
		release()
		if ctx.Err() != nil || time.Since(began)+wait > StartupProofWindow {
			logger.Info("Could not list the cluster's load balancers at start; each Service reads its own", "err", err, "attempts", attempt)
			return
		}
		logger.Info("Could not list the cluster's load balancers at start; retrying, each Service reads its own meanwhile", "err", err, "attempt", attempt, "retryIn", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, listingRetryMax)
	}
}

// convergedAtStart reports whether a hash-gated Service needs no cloud call
// on this pass: this process has not proven it yet, the start-up listing
// shows the load balancer of its label with our tags for it, and its
// backends are those its label says were last applied. It then remembers
// the proof, as a full sync would.
func (c *Controller) convergedAtStart(ctx context.Context, p Provider, svc *corev1.Service, req *Request) bool {
	if _, ok := c.proven.Load(svc.UID); ok {
		return false
	}
	s := req.Settings
	if s.Reused() || wantsEIPStatus(s) {
		// A borrowed load balancer is proven by the reuse rules, and an
		// EIP status can change without the Service: both read as before.
		return false
	}
	if svc.Labels[naming.LabelBackendsHash] != BackendsHash(req.LoadBalancerID, req.Backends) {
		return false
	}
	lb := c.listed(ctx, p, req.LoadBalancerID)
	if lb == nil || !req.Identity.Owns(lb.Tags) {
		return false
	}
	c.proven.Store(svc.UID, lb.ID)
	klog.FromContext(ctx).V(2).Info("Service converged before start; no cloud call", "loadBalancer", lb.ID)
	return true
}

// wantsEIPStatus reports a status made of the EIPs bound to the load
// balancer, which the gated pass re-reads.
func wantsEIPStatus(s *annotations.Settings) bool {
	return s.LoadBalancer.Hostname == nil && s.LoadBalancer.ExternalIPType != nil && strings.EqualFold(*s.LoadBalancer.ExternalIPType, "eip")
}

// backendKey is the part of a Target the cloud sees.
type backendKey struct {
	InstanceID string `json:"i,omitempty"`
	IP         string `json:"a,omitempty"`
	Port       int32  `json:"p"`
	Weight     int    `json:"w"`
}

// BackendsHash is the value of the backends-hash label: SHA-256 over the
// load balancer id and the backends of each port, in a stable order, cut
// to 56 hex characters to fit a label value.
func BackendsHash(lbID string, backends map[int32][]Target) string {
	in := struct {
		LB    string                 `json:"lb"`
		Ports map[int32][]backendKey `json:"ports"`
	}{LB: lbID, Ports: make(map[int32][]backendKey, len(backends))}
	for port, ts := range backends {
		keys := make([]backendKey, 0, len(ts))
		for _, t := range ts {
			keys = append(keys, backendKey{InstanceID: t.InstanceID, IP: t.IP, Port: t.Port, Weight: t.Weight})
		}
		slices.SortFunc(keys, func(a, b backendKey) int {
			if c := strings.Compare(a.InstanceID, b.InstanceID); c != 0 {
				return c
			}
			if c := strings.Compare(a.IP, b.IP); c != 0 {
				return c
			}
			if a.Port != b.Port {
				return int(a.Port - b.Port)
			}
			return a.Weight - b.Weight
		})
		in.Ports[port] = keys
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic("service: encode backends hash input: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:28])
}
