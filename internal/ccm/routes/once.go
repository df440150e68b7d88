package routes

import (
	"context"

	"k8s.io/client-go/tools/cache"
)

// WaitForCacheSync blocks until the Node informer has listed every Node,
// for a caller that drives single passes (ReconcileOnce) instead of Run;
// false when ctx ended first.
func (c *Controller) WaitForCacheSync(ctx context.Context) bool {
	return cache.WaitForNamedCacheSync(ControllerName, ctx.Done(), c.nodesSynced)
}

// ReconcileOnce runs the pass Run's worker runs, once: every route table
// listed, compared with the Nodes, and the differences written. The plan
// command runs it over a cloud client that records instead of writing.
func (c *Controller) ReconcileOnce(ctx context.Context) error {
	return c.reconcile(ctx)
}
