package gateway

import (
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// Invoke runs a read-only action in process, as a signed call of the default
// account would run it, and returns the body the SDK would receive
// (RequestId included). It is for the web console, which shows the API's own
// answers instead of a second rendering of the state; the call bypasses
// authentication, throttles and faults, and is not written to the request
// log, so that looking at the log does not change it.
func (g *Gateway) Invoke(product, action, region string, params map[string]string) (map[string]any, error) {
	var prod *api.Product
	for i := range g.cfg.Products {
		if g.cfg.Products[i].Name == product {
			prod = &g.cfg.Products[i]
		}
	}
	if prod == nil {
		return nil, fmt.Errorf("invoke %s/%s: no product %q", product, action, product)
	}
	act, ok := prod.Actions[action]
	if !ok {
		return nil, fmt.Errorf("invoke %s/%s: no such action", product, action)
	}
	// The console must never change state: only actions that run under
	// the read lock are served.
	if !act.ReadOnly {
		return nil, fmt.Errorf("invoke %s/%s: only read-only actions can be invoked", product, action)
	}
	if region == "" {
		region = g.cfg.Region
	}
	if g.cfg.Regions != nil {
		if _, ok := g.cfg.Regions.Lookup(region); !ok {
			return nil, fmt.Errorf("invoke %s/%s: unknown region %q", product, action, region)
		}
	}
	p := api.Params{}
	maps.Copy(p, params)
	p["Action"], p["Version"] = action, prod.Version
	p["RegionId"] = region
	req := &api.Request{
		Product: prod.Name, Action: action, Version: prod.Version, RegionID: region, Regions: g.cfg.Regions,
		AccountID: g.cfg.DefaultAccountID, RequestID: g.newRequestID(), Now: time.Now(), Params: p,
	}
	body, err := g.run(act, req)
	if err != nil {
		return nil, fmt.Errorf("invoke %s/%s: %w", product, action, err)
	}
	if body == nil {
		body = map[string]any{}
	}
	body["RequestId"] = req.RequestID
	return body, nil
}

// RegionIDs returns the regions the emulated cloud offers, sorted (only
// the default region when the gateway accepts every region).
func (g *Gateway) RegionIDs() []string {
	if g.cfg.Regions == nil {
		return []string{g.cfg.Region}
	}
	var out []string
	for _, r := range g.cfg.Regions.List() {
		out = append(out, r.ID)
	}
	return out
}

// DefaultRegion returns the region of calls without RegionId.
func (g *Gateway) DefaultRegion() string { return g.cfg.Region }

// Handle serves h for pattern (a net/http ServeMux pattern under
// ControlPrefix, e.g. "GET /_emulator/ui/"), beside the control API; the
// emulator mounts its web console this way so that every server of the
// gateway serves it.
func (g *Gateway) Handle(pattern string, h http.Handler) { g.control.Handle(pattern, h) }
