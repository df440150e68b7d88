package cloud

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
)

// Product names an Alibaba Cloud OpenAPI product.
type Product string

// The products the CCM calls.
const (
	ECS Product = "ecs"
	VPC Product = "vpc"
	SLB Product = "slb"
	NLB Product = "nlb"
)

func init() {
	// The SDK fills each product's endpoint map lazily and without a lock
	// the first time a client is built; building clients concurrently (two
	// controllers, credential rotation) would race on it. Fill them once here.
	ecs.GetEndpointMap()
	vpc.GetEndpointMap()
	slb.GetEndpointMap()
	nlb.GetEndpointMap()
}

// Products lists every product, in a stable order.
var Products = []Product{ECS, VPC, SLB, NLB}

// Endpoints are host[:port] overrides per product; empty uses the SDK's
// regional endpoint.
type Endpoints struct {
	// ECS, VPC, SLB and NLB are each product's API host[:port].
	ECS, VPC, SLB, NLB string
	// Scheme is HTTPS (default) or HTTP.
	Scheme string
}

// Options configure a Client.
type Options struct {
	// Region is the region id every call is signed for and sent to, e.g.
	// cn-hangzhou.
	Region string
	// Endpoints override the SDK's regional endpoints and set the scheme.
	Endpoints Endpoints
	// Credentials is asked for credentials before each call (AccessKey or
	// refreshed STS token); required.
	Credentials CredentialsProvider
	// QPS is each product's sustained call rate per second (default 20).
	QPS float64
	// Burst is each product's token-bucket size: calls that may go at once
	// above QPS (default 40).
	Burst int
	// Timeout bounds one HTTP attempt (default 20s).
	Timeout time.Duration
	// MaxAttempts bounds tries per call, first included (default 6).
	MaxAttempts int
	// BaseBackoff and MaxBackoff shape the jittered exponential backoff
	// between attempts (defaults 200ms and 10s).
	BaseBackoff, MaxBackoff time.Duration
	// UserAgent is appended to the SDK's user agent.
	UserAgent string
}

// Clients are the SDK clients signed with one set of credentials.
type Clients struct {
	// ECS is the ECS (2014-05-26) client.
	ECS *ecs.Client
	// VPC is the VPC (2016-04-28) client.
	VPC *vpc.Client
	// SLB is the CLB (SLB 2014-05-15) client.
	SLB *slb.Client
	// NLB is the NLB (2022-04-30) client.
	NLB *nlb.Client
}

// Client is the CCM's handle on the cloud. It is safe for concurrent use.
type Client struct {
	opts     Options
	limiters map[Product]*rate.Limiter

	mu      sync.Mutex
	creds   Credentials
	clients *Clients
}

// New returns a Client; credentials are fetched on the first call.
func New(opts Options) (*Client, error) {
	if opts.Region == "" {
		return nil, errors.New("cloud client: region is required")
	}
	if opts.Credentials == nil {
		return nil, errors.New("cloud client: a credentials provider is required")
	}
	if opts.QPS <= 0 {
		opts.QPS = 20
	}
	if opts.Burst <= 0 {
		opts.Burst = 40
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 20 * time.Second
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 6
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = 200 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 10 * time.Second
	}
	if opts.Endpoints.Scheme == "" {
		opts.Endpoints.Scheme = "HTTPS"
	}
	c := &Client{opts: opts, limiters: map[Product]*rate.Limiter{}}
	for _, p := range Products {
		c.limiters[p] = rate.NewLimiter(rate.Limit(opts.QPS), opts.Burst)
	}
	return c, nil
}

// Region returns the region the client calls.
func (c *Client) Region() string { return c.opts.Region }

// sdkClients returns clients signed with the current credentials,
// rebuilding them when the provider has rotated the credentials.
func (c *Client) sdkClients(ctx context.Context) (*Clients, error) {
	creds, err := c.opts.Credentials.Credentials(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients != nil && creds.AccessKeyID == c.creds.AccessKeyID && creds.SecurityToken == c.creds.SecurityToken && creds.Secret() == c.creds.Secret() {
		return c.clients, nil
	}
	var cred auth.Credential
	if creds.SecurityToken != "" {
		cred = credentials.NewStsTokenCredential(creds.AccessKeyID, creds.Secret(), creds.SecurityToken)
	} else {
		cred = credentials.NewAccessKeyCredential(creds.AccessKeyID, creds.Secret())
	}
	cfg := func() *sdk.Config {
		conf := sdk.NewConfig()
		conf.Scheme = c.opts.Endpoints.Scheme
		conf.Timeout = c.opts.Timeout
		conf.AutoRetry = false
		return conf
	}
	out := &Clients{}
	if out.ECS, err = ecs.NewClientWithOptions(c.opts.Region, cfg(), cred); err != nil {
		return nil, fmt.Errorf("ecs client: %w", err)
	}
	if out.VPC, err = vpc.NewClientWithOptions(c.opts.Region, cfg(), cred); err != nil {
		return nil, fmt.Errorf("vpc client: %w", err)
	}
	if out.SLB, err = slb.NewClientWithOptions(c.opts.Region, cfg(), cred); err != nil {
		return nil, fmt.Errorf("slb client: %w", err)
	}
	if out.NLB, err = nlb.NewClientWithOptions(c.opts.Region, cfg(), cred); err != nil {
		return nil, fmt.Errorf("nlb client: %w", err)
	}
	e := c.opts.Endpoints
	for _, d := range []struct {
		client *sdk.Client
		host   string
	}{{&out.ECS.Client, e.ECS}, {&out.VPC.Client, e.VPC}, {&out.SLB.Client, e.SLB}, {&out.NLB.Client, e.NLB}} {
		if d.host != "" {
			d.client.Domain = d.host
		}
		d.client.SetReadTimeout(c.opts.Timeout)
		d.client.SetConnectTimeout(5 * time.Second)
		if c.opts.UserAgent != "" {
			d.client.AppendUserAgent("alicloud-ccm", c.opts.UserAgent)
		}
	}
	c.creds, c.clients = creds, out
	return out, nil
}

// Do runs one API call: it waits for the product's rate limiter, calls fn
// with the current SDK clients, retries transient failures (throttling,
// busy resources, 5xx and transport errors) with jittered exponential
// backoff, records metrics, and returns a classified *Error on failure.
func Do[T any](ctx context.Context, c *Client, product Product, action string, fn func(*Clients) (T, error)) (T, error) {
	var zero T
	var last *Error
	for attempt := 1; attempt <= c.opts.MaxAttempts; attempt++ {
		if err := c.limiters[product].Wait(ctx); err != nil {
			return zero, fmt.Errorf("%s %s: waiting for the rate limiter: %w", product, action, err)
		}
		clients, err := c.sdkClients(ctx)
		if err != nil {
			return zero, fmt.Errorf("%s %s: credentials: %w", product, action, err)
		}
		start := time.Now()
		resp, err := fn(clients)
		elapsed := time.Since(start)
		if err == nil {
			observe(product, action, "OK", elapsed)
			return resp, nil
		}
		last = wrap(product, action, err)
		code := last.Code
		if code == "" {
			code = "ClientError"
		}
		observe(product, action, code, elapsed)
		if !last.Class.Retryable() || attempt == c.opts.MaxAttempts {
			break
		}
		retries.WithLabelValues(string(product), action, last.Class.String()).Inc()
		d := c.backoff(attempt)
		klog.V(4).InfoS("Retrying cloud call", "product", product, "action", action, "code", last.Code, "attempt", attempt, "after", d)
		select {
		case <-ctx.Done():
			return zero, fmt.Errorf("%w (retry abandoned: %v)", last, ctx.Err())
		case <-time.After(d):
		}
	}
	return zero, last
}

// backoff is full-jitter exponential: uniform in [0, min(max, base*2^n)].
func (c *Client) backoff(attempt int) time.Duration {
	d := c.opts.BaseBackoff << (attempt - 1)
	if d <= 0 || d > c.opts.MaxBackoff {
		d = c.opts.MaxBackoff
	}
	return time.Duration(rand.Int64N(int64(d))) + time.Millisecond
}
