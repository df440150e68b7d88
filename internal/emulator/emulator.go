// Package emulator assembles alicloud-emulator: the state store, the four
// products and the gateway, served on one HTTP listener.
package emulator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/ecs"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/nlb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/slb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

// DefaultRegion is the region of an emulator started without --region.
const DefaultRegion = "cn-hangzhou"

// Config configures an Emulator.
type Config struct {
	// Region is the default region (cn-hangzhou when empty).
	Region string
	// StatePath, when set, persists the state in a bbolt file.
	StatePath string
}

// Emulator is a running or ready-to-run emulated cloud.
type Emulator struct {
	// Store is the cloud state.
	Store *store.Store
	// Gateway serves the OpenAPI.
	Gateway *gateway.Gateway
	// VPC, ECS, SLB and NLB are the products.
	VPC *vpc.Service
	ECS *ecs.Service
	SLB *slb.Service
	NLB *nlb.Service

	region   string
	server   *http.Server
	listener net.Listener
}

// New builds an emulator; call Start to serve it.
func New(cfg Config) (*Emulator, error) {
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	st := store.New()
	if cfg.StatePath != "" {
		var err error
		if st, err = store.Open(cfg.StatePath); err != nil {
			return nil, err
		}
	}
	e := &Emulator{Store: st, region: cfg.Region}
	var err error
	if e.VPC, err = vpc.New(st); err != nil {
		return nil, fmt.Errorf("vpc: %w", err)
	}
	if e.ECS, err = ecs.New(st, e.VPC); err != nil {
		return nil, fmt.Errorf("ecs: %w", err)
	}
	if e.SLB, err = slb.New(st, e.ECS, e.VPC); err != nil {
		return nil, fmt.Errorf("slb: %w", err)
	}
	if e.NLB, err = nlb.New(st, e.ECS, e.VPC); err != nil {
		return nil, fmt.Errorf("nlb: %w", err)
	}
	e.Gateway, err = gateway.New(gateway.Config{
		Region:   cfg.Region,
		Store:    st,
		Products: []api.Product{e.ECS.Product(), e.VPC.Product(), e.SLB.Product(), e.NLB.Product()},
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Region returns the default region.
func (e *Emulator) Region() string { return e.region }

// Seed creates the seed's resources, product by product.
func (e *Emulator) Seed(s *api.Seed) (map[string][]string, error) {
	e.Store.Lock()
	defer e.Store.Unlock()
	out := map[string][]string{}
	for _, p := range []any{e.VPC, e.ECS, e.SLB, e.NLB} {
		sd, ok := p.(api.Seeder)
		if !ok {
			continue
		}
		ids, err := sd.Seed(e.region, s)
		if err != nil {
			return nil, err
		}
		for k, v := range ids {
			out[k] = append(out[k], v...)
		}
	}
	if err := e.Store.SaveLocked(); err != nil {
		return nil, err
	}
	return out, nil
}

// Start serves on addr (e.g. 127.0.0.1:0) and returns the host:port bound.
func (e *Emulator) Start(addr string) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	e.listener = l
	e.server = &http.Server{Handler: e.Gateway, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := e.server.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return l.Addr().String(), nil
}

// Close stops serving and closes the state file.
func (e *Emulator) Close() error {
	if e.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.server.Shutdown(ctx)
	}
	return e.Store.Close()
}
