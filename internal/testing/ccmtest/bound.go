package ccmtest

import (
	"context"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// The controller binds every Request before it calls a provider (the
// ownership rules, service.Bind and service.ReleaseSet); these helpers do
// the same for the tests that drive a provider directly, whichever it is.

// EnsureBound binds req as the controller would and calls p.Ensure.
func EnsureBound(ctx context.Context, p service.Provider, req *service.Request) (*service.Result, error) {
	r, err := service.Ready(ctx, p, req, false)
	if err != nil {
		return nil, err
	}
	return p.Ensure(ctx, r)
}

// SyncBound binds req as the controller would and calls p.SyncBackends.
func SyncBound(ctx context.Context, p service.Provider, req *service.Request) (*service.Result, error) {
	r, err := service.Ready(ctx, p, req, false)
	if err != nil {
		return nil, err
	}
	return p.SyncBackends(ctx, r)
}

// DeleteBound binds req for a deletion as the controller would and calls
// p.Delete.
func DeleteBound(ctx context.Context, p service.Provider, req *service.Request) (string, error) {
	r, err := service.Ready(ctx, p, req, true)
	if err != nil {
		return "", err
	}
	return p.Delete(ctx, r)
}

// WithENIs sets on req's targets the ENIs of enis (by target IP), as the
// backends resolver hands them to a provider.
func WithENIs(req *service.Request, enis map[string]string) *service.Request {
	for _, ts := range req.Backends {
		for i := range ts {
			ts[i].ENI = enis[ts[i].IP]
		}
	}
	return req
}
