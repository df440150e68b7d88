// Package emulator assembles alicloud-emulator: the state store, the four
// products, the gateway and the read-only web console, served on one HTTP
// listener.
package emulator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/console"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/ecs"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/nlb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/slb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/sts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

// DefaultRegion is the region of an emulator started without --region.
const DefaultRegion = "cn-hangzhou"

// AccessKey is a key pair the emulator accepts, with its account.
type AccessKey = gateway.AccessKey

// Config configures an Emulator.
type Config struct {
	// Region is the default region (cn-hangzhou when empty).
	Region string
	// Regions are the region ids the emulated cloud offers (default
	// api.DefaultRegionIDs()); Region is always among them. A call naming
	// another region is refused with its product's code.
	Regions []string
	// StatePath, when set, persists the state in a bbolt file.
	StatePath string
	// AccessKeys are the key pairs signed calls must use.
	AccessKeys []AccessKey
	// DisableAuth accepts unsigned and wrongly signed calls.
	DisableAuth bool
	// AccountID is the account of unauthenticated calls and of the
	// metadata role (default: the first key's account).
	AccountID string
	// RequestLogSize is how many calls the request log keeps.
	RequestLogSize int
	// MetadataInstanceID is the instance the metadata service describes
	// ("" = the first instance).
	MetadataInstanceID string
	// MetadataRoleName is the RAM role of the metadata service.
	MetadataRoleName string
	// MetadataCredentialTTL is the lifetime of the role's STS credentials.
	MetadataCredentialTTL time.Duration
	// MetadataRequireToken makes the metadata service demand IMDSv2 tokens.
	MetadataRequireToken bool
	// QuotaProfile, when set, limits every action to the profile's rate
	// (gateway.QuotaProfileRules), as the cloud's API rate limits do.
	QuotaProfile string
	// Timing is the timing mode of the asynchronous delays: store.TimingCloud
	// (the default, "") or store.TimingZero (every transition immediate).
	Timing string
	// QuotaScale multiplies every limit of QuotaProfile (default 1).
	QuotaScale float64
	// STS holds the OIDC providers and roles AssumeRoleWithOIDC (RRSA)
	// accepts; its account defaults to AccountID's.
	STS sts.Config
}

// Emulator is a running or ready-to-run emulated cloud.
type Emulator struct {
	// Store is the cloud state.
	Store *store.Store
	// Gateway serves the OpenAPI.
	Gateway *gateway.Gateway
	// VPC, ECS, SLB and NLB are the products.
	VPC *vpc.Service
	// ECS is the ECS product (instances, ENIs, security groups).
	ECS *ecs.Service
	// SLB is the CLB product (load balancers, listeners, vServer groups).
	SLB *slb.Service
	// NLB is the NLB product (load balancers, listeners, server groups).
	NLB *nlb.Service
	// STS is the Security Token Service (AssumeRoleWithOIDC for RRSA).
	STS *sts.Service

	region   string
	listener net.Listener
	// servers are the HTTP listener's and StartTLS's.
	servers   []*http.Server
	closeOnce sync.Once
	closeErr  error
}

// New builds an emulator; call Start to serve it.
func New(cfg Config) (*Emulator, error) {
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if _, err := store.DelaysFor(cfg.Timing); err != nil {
		return nil, err
	}
	st := store.New()
	if cfg.StatePath != "" {
		var err error
		if st, err = store.Open(cfg.StatePath); err != nil {
			return nil, err
		}
	}
	if err := st.Settings().SetTiming(cfg.Timing); err != nil {
		_ = st.Close()
		return nil, err
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
	stsCfg := cfg.STS
	if stsCfg.AccountID == "" {
		stsCfg.AccountID = gateway.DefaultAccount(cfg.AccountID, cfg.AccessKeys)
	}
	// The gateway is built after the products; STS reaches it when it
	// issues, never before Start.
	if e.STS, err = sts.New(stsCfg, func(account string, now time.Time, ttl time.Duration) (string, string, string, time.Time) {
		return e.Gateway.IssueSTS(account, now, ttl)
	}); err != nil {
		_ = st.Close()
		return nil, err
	}
	regions := cfg.Regions
	if len(regions) == 0 {
		regions = api.DefaultRegionIDs()
	}
	e.Gateway, err = gateway.New(gateway.Config{
		Region:                cfg.Region,
		Regions:               api.NewRegions(append([]string{cfg.Region}, regions...)),
		Store:                 st,
		Products:              []api.Product{e.ECS.Product(), e.VPC.Product(), e.SLB.Product(), e.NLB.Product(), e.STS.Product()},
		AccessKeys:            cfg.AccessKeys,
		DisableAuth:           cfg.DisableAuth,
		DefaultAccountID:      cfg.AccountID,
		RequestLogSize:        cfg.RequestLogSize,
		Identity:              e.ECS.Identity,
		MetadataInstanceID:    cfg.MetadataInstanceID,
		MetadataRoleName:      cfg.MetadataRoleName,
		MetadataCredentialTTL: cfg.MetadataCredentialTTL,
		MetadataRequireToken:  cfg.MetadataRequireToken,
		Seed:                  e.Seed,
	})
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	ui, err := console.New(e.Gateway)
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("console: %w", err)
	}
	e.Gateway.Handle("GET "+console.Prefix, ui)
	e.Gateway.Handle("PUT "+ListeningPath, http.HandlerFunc(e.serveListening))
	if cfg.QuotaProfile != "" {
		scale := cfg.QuotaScale
		if scale == 0 {
			scale = 1
		}
		if _, err := e.Gateway.ApplyQuotaProfile(cfg.QuotaProfile, scale); err != nil {
			_ = st.Close()
			return nil, err
		}
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

// SeedIfEmpty applies s only when the state is empty, so that a restart
// with a state file keeps what earlier runs built; it reports whether it
// seeded.
func (e *Emulator) SeedIfEmpty(s *api.Seed) (bool, error) {
	empty, err := e.Store.IsEmpty()
	if err != nil {
		return false, err
	}
	if !empty {
		return false, nil
	}
	if _, err := e.Seed(s); err != nil {
		return false, err
	}
	return true, nil
}

// Requests returns the logged API calls, oldest first: all of them, or
// those matching any of the filters given.
func (e *Emulator) Requests(filters ...gateway.RequestFilter) []gateway.RequestRecord {
	if len(filters) == 0 {
		return e.Gateway.Requests(gateway.RequestFilter{})
	}
	var out []gateway.RequestRecord
	seen := map[uint64]bool{}
	for _, f := range filters {
		for _, r := range e.Gateway.Requests(f) {
			if !seen[r.Seq] {
				seen[r.Seq] = true
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// Counters returns the per-action call and error counts.
func (e *Emulator) Counters() []gateway.Counter { return e.Gateway.Counters() }

// Calls returns how many times product's action was called (errors included).
func (e *Emulator) Calls(product, action string) int { return e.Gateway.Counter(product, action).Calls }

// Addr returns the host:port being served ("" before Start).
func (e *Emulator) Addr() string {
	if e.listener == nil {
		return ""
	}
	return e.listener.Addr().String()
}

// Start serves on addr (e.g. 127.0.0.1:0) and returns the host:port bound.
func (e *Emulator) Start(addr string) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	e.listener = l
	e.serve(l)
	return l.Addr().String(), nil
}

// serve runs the gateway on l until Close.
func (e *Emulator) serve(l net.Listener) {
	srv := &http.Server{Handler: e.Gateway, ReadHeaderTimeout: 10 * time.Second}
	e.servers = append(e.servers, srv)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
}

// Close stops serving and closes the state file; it is safe to call twice.
func (e *Emulator) Close() error {
	e.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, srv := range e.servers {
			_ = srv.Shutdown(ctx)
		}
		e.closeErr = e.Store.Close()
	})
	return e.closeErr
}
