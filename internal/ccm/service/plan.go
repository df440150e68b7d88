package service

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// WaitForCacheSync blocks until the controller's informers have listed
// everything, for a caller that drives single passes (SyncFull) instead of
// Run; false when ctx ended first.
func (c *Controller) WaitForCacheSync(ctx context.Context) bool {
	return cache.WaitForNamedCacheSync(ControllerName, ctx.Done(), c.synced...)
}

// Keys are the Services the controller has a reason to sync (they want a
// load balancer, or carry a provider's finalizer), as namespace/name keys.
func (c *Controller) Keys() ([]string, error) {
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	var out []string
	for _, svc := range svcs {
		if !c.interesting(svc) {
			continue
		}
		key, err := cache.MetaNamespaceKeyFunc(svc)
		if err != nil {
			return nil, err
		}
		out = append(out, key)
	}
	return out, nil
}

// SyncFull runs the worker's sync of one Service with its periodic
// verification due, so a converged Service gets the full pass (load
// balancer attributes and listeners compared, not just backends): the
// plan command lists what that pass would write. The retry budget and
// deadline are the worker's.
func (c *Controller) SyncFull(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return fmt.Errorf("service key %q: %w", key, err)
	}
	if svc, err := c.services.Services(ns).Get(name); err == nil {
		// Verified at the zero time: VerifyPeriod has passed.
		c.verified.Store(svc.UID, time.Time{})
	}
	sctx, cancel := context.WithTimeout(cloud.WithRetryBudget(ctx, c.opts.RetryBudget), c.opts.SyncTimeout)
	defer cancel()
	return c.sync(sctx, key)
}
