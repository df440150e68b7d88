package routes

import "context"

// VanishedAmong exposes the existence check to the integration tests.
func (c *Controller) VanishedAmong(ctx context.Context, ids []string) map[string]bool {
	return c.vanishedAmong(ctx, ids)
}
