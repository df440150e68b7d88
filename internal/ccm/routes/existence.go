package routes

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// existence remembers what ECS said about the next-hop instances of
// unmarked entries: a missing instance stays missing (ids are never
// reused), an existing one is asked about again after a resync period, so
// that a table full of the user's routes to other instances costs one
// DescribeInstances per resync, not one per pass.
type existence struct {
	mu sync.Mutex
	// vanished are instances DescribeInstances did not return.
	vanished map[string]bool
	// seen is when an instance was last returned.
	seen map[string]time.Time
}

// vanishedAmong returns which of ids no longer exist, asking ECS only about
// those neither known gone nor seen within the resync period. When the
// call fails, the ids it asked about count as existing for this pass.
func (c *Controller) vanishedAmong(ctx context.Context, ids []string) map[string]bool {
	x := &c.instances
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.vanished == nil {
		x.vanished, x.seen = map[string]bool{}, map[string]time.Time{}
	}
	now := time.Now()
	out := map[string]bool{}
	var ask []string
	for _, id := range ids {
		switch t, ok := x.seen[id]; {
		case x.vanished[id]:
			out[id] = true
		case !ok || now.Sub(t) >= c.opts.ResyncPeriod:
			ask = append(ask, id)
		}
	}
	// Forget instances no entry points at any more.
	wanted := map[string]bool{}
	for _, id := range ids {
		wanted[id] = true
	}
	for id := range x.vanished {
		if !wanted[id] {
			delete(x.vanished, id)
		}
	}
	for id := range x.seen {
		if !wanted[id] {
			delete(x.seen, id)
		}
	}
	if len(ask) == 0 {
		return out
	}
	logger := klog.FromContext(ctx)
	found, err := c.cloud.ExistingInstances(ctx, ask)
	if err != nil {
		// Only cleanup waits: the next pass past the resync asks again.
		logger.Error(err, "Cannot tell whether the next hops of unmarked routes exist; leaving those routes in place for now", "instances", ask)
		for _, id := range ask {
			x.seen[id] = now
		}
		return out
	}
	for _, id := range ask {
		if found[id] {
			x.seen[id] = now
			continue
		}
		x.vanished[id] = true
		out[id] = true
		logger.Info("Next-hop instance of unmarked routes inside the cluster CIDR no longer exists; deleting those routes", "instance", id)
	}
	return out
}
