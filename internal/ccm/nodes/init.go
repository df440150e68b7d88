package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// NetworkUnavailable reasons; the route controller writes the same ones.
const (
	// ReasonNoRouteCreated goes with NetworkUnavailable=True until the
	// Node's routes exist.
	ReasonNoRouteCreated = "NoRouteCreated"
)

// InitOptions are the initialization steps the existing CCM takes before
// it removes a Node's uninitialized taint, beyond the upstream
// controller's providerID, labels and addresses.
type InitOptions struct {
	// ENIs, when set, turns off the source/destination check of the
	// instance's primary ENI (read first, written only when on): pod
	// traffic routed to the instance by the VPC route carries pod
	// addresses the check would drop. Nil skips the step
	// (--skip-disable-source-dest-check).
	ENIs ENIs
	// Kube patches Node status; with MarkNetworkUnavailable it sets
	// NetworkUnavailable=True/NoRouteCreated on a Node that has no such
	// condition yet, so nothing schedules pods needing the pod network
	// before the route controller has created the Node's route (it then
	// sets False/RouteCreated).
	Kube kubernetes.Interface
	// MarkNetworkUnavailable is on when routes are configured.
	MarkNetworkUnavailable bool
}

// SetInit sets the initialization steps; called once the kube client
// exists, before the controllers start.
func (s *Instances) SetInit(o InitOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init = o
}

// prepare runs the initialization steps for an uninitialized Node; any
// failure keeps the Node uninitialized, so it is retried.
func (s *Instances) prepare(ctx context.Context, n *v1.Node, in *Instance) error {
	s.mu.RLock()
	o := s.init
	s.mu.RUnlock()
	if o.ENIs != nil && in.PrimaryENI != "" {
		if err := s.disableSourceDestCheck(ctx, o.ENIs, n, in); err != nil {
			return err
		}
	}
	if o.MarkNetworkUnavailable && o.Kube != nil && networkCondition(n) == nil {
		patched, err := markNetworkUnavailable(ctx, o.Kube, n)
		if err != nil {
			return err
		}
		// The upstream controller next updates the Node as its informer
		// holds it: before that holds the patch, the update conflicts and
		// is retried after a backoff (half the Nodes of a burst did).
		s.awaitObserved(ctx, patched)
	}
	return nil
}

func (s *Instances) disableSourceDestCheck(ctx context.Context, enis ENIs, n *v1.Node, in *Instance) error {
	if _, done := s.checkedENIs.Load(in.PrimaryENI); done {
		return nil
	}
	on, listed := s.listedSourceDestCheck(ctx, enis, in.PrimaryENI)
	if !listed {
		var err error
		if on, err = enis.SourceDestCheck(ctx, in.PrimaryENI); err != nil {
			return err
		}
	}
	if on {
		if err := enis.DisableSourceDestCheck(ctx, in.PrimaryENI); err != nil {
			return err
		}
		klog.InfoS("Disabled the source/destination check of the Node's primary ENI", "node", klog.KObj(n), "instance", in.ID, "eni", in.PrimaryENI)
	}
	s.checkedENIs.Store(in.PrimaryENI, true)
	return nil
}

// listedSourceDestCheck answers eni's check from the shared listing of the
// VPC's primary ENIs under the rules of the instance index's lookups (ctx
// carries the Node's Since): Nodes joining together are served by one
// listing, and an ENI newer than the cached listing waits for the next one
// rather than cost a read of its own. False when the ENI is not in a
// listing that could hold it, or listing failed: a read of the one ENI
// decides then.
func (s *Instances) listedSourceDestCheck(ctx context.Context, enis ENIs, eni string) (on, ok bool) {
	if _, can := enis.(ENILister); !can {
		return false, false
	}
	hitSince, missSince := s.index.bounds(ctx, false)
	on, ok, err := lookupIn(ctx, s.eniChecks, hitSince, missSince, func(checks map[string]bool) (bool, bool) {
		v, found := checks[eni]
		return v, found
	})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Could not list the VPC's primary ENIs; reading the Node's alone", "err", err)
		return false, false
	}
	return on, ok
}

// listENIChecks lists the source/destination checks of the VPC's primary
// ENIs, with the ENIs of the initialization steps.
func (s *Instances) listENIChecks(ctx context.Context) (map[string]bool, error) {
	s.mu.RLock()
	lister, can := s.init.ENIs.(ENILister)
	s.mu.RUnlock()
	if !can {
		return nil, fmt.Errorf("the initialization steps list no ENIs")
	}
	return lister.PrimarySourceDestChecks(ctx, s.index.vpcID)
}

// networkCondition returns a Node's NetworkUnavailable condition.
func networkCondition(n *v1.Node) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeNetworkUnavailable {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func markNetworkUnavailable(ctx context.Context, kube kubernetes.Interface, n *v1.Node) (*v1.Node, error) {
	now := metav1.Now()
	cond := v1.NodeCondition{
		Type: v1.NodeNetworkUnavailable, Status: v1.ConditionTrue, Reason: ReasonNoRouteCreated,
		Message: "Node initialized; the route controller has not created its routes yet", LastTransitionTime: now, LastHeartbeatTime: now,
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.NodeCondition{cond}}})
	if err != nil {
		return nil, fmt.Errorf("encode the NetworkUnavailable patch: %w", err)
	}
	patched, err := kube.CoreV1().Nodes().PatchStatus(ctx, n.Name, patch)
	if err != nil {
		return nil, fmt.Errorf("set NetworkUnavailable=True on Node %s: %w", n.Name, err)
	}
	klog.V(2).InfoS("Set NetworkUnavailable until the Node's route exists", "node", klog.KObj(n), "reason", ReasonNoRouteCreated)
	return patched, nil
}

// observeTimeout bounds the wait for the Node informer to deliver a write.
const observeTimeout = 2 * time.Second

// awaitObserved returns once the Node informer holds n's resourceVersion,
// after observeTimeout (the informer skipped or has not reached it), or
// when ctx ends; at once when no informer is watched.
func (s *Instances) awaitObserved(ctx context.Context, n *v1.Node) {
	s.mu.Lock()
	store := s.nodes
	if store == nil {
		s.mu.Unlock()
		return
	}
	// Registered before the store is read: the handler that would signal
	// it runs after the store holds the write.
	w := &versionWait{version: n.ResourceVersion, seen: make(chan struct{})}
	s.versionWaits[n.Name] = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.versionWaits[n.Name] == w {
			delete(s.versionWaits, n.Name)
		}
	}()
	if obj, ok, err := store.GetByKey(n.Name); err == nil && ok {
		if cur, isNode := obj.(*v1.Node); isNode && cur.ResourceVersion == n.ResourceVersion {
			return
		}
	}
	t := time.NewTimer(observeTimeout)
	defer t.Stop()
	select {
	case <-w.seen:
	case <-t.C:
		klog.FromContext(ctx).V(2).Info("The Node informer did not deliver a write in time; the controller's update may conflict and be retried",
			"node", klog.KObj(n), "resourceVersion", n.ResourceVersion, "waited", observeTimeout)
	case <-ctx.Done():
	}
}

// versionWait is a lookup waiting for the informer to deliver a Node's
// resourceVersion.
type versionWait struct {
	version string
	seen    chan struct{}
}

// delivered ends the wait for n's resourceVersion, if any; called by the
// Node informer's handler for each Node it delivers.
func (s *Instances) delivered(n *v1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.versionWaits[n.Name]; w != nil && w.version == n.ResourceVersion {
		close(w.seen)
		delete(s.versionWaits, n.Name)
	}
}
