package clb_test

import (
	"context"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
)

// The controller binds every Request before it calls a provider (the
// ownership rules, service.Bind and service.ReleaseSet); these helpers do
// the same for the tests that drive the provider directly.

func ensureBound(ctx context.Context, p *clb.Provider, req *service.Request) (*service.Result, error) {
	r, err := service.Ready(ctx, p, req, false)
	if err != nil {
		return nil, err
	}
	return p.Ensure(ctx, r)
}

func syncBound(ctx context.Context, p *clb.Provider, req *service.Request) (*service.Result, error) {
	r, err := service.Ready(ctx, p, req, false)
	if err != nil {
		return nil, err
	}
	return p.SyncBackends(ctx, r)
}

func deleteBound(ctx context.Context, p *clb.Provider, req *service.Request) (string, error) {
	r, err := service.Ready(ctx, p, req, true)
	if err != nil {
		return "", err
	}
	return p.Delete(ctx, r)
}

// withENIs sets on req's targets the ENIs of enis, as the backends
// resolver hands them to a provider.
func withENIs(req *service.Request, enis map[string]string) *service.Request {
	for _, ts := range req.Backends {
		for i := range ts {
			ts[i].ENI = enis[ts[i].IP]
		}
	}
	return req
}
