package cloud

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	sdkrequests "github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
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
	// UseVPC sends products without a host override to their VPC-internal
	// endpoint, <product>-vpc.<region>.aliyuncs.com, which is reachable only
	// from inside a VPC but spares public bandwidth and NAT.
	UseVPC bool
}

// sdkNetworkVPC is the SDK client's Network value that selects the
// <product>-vpc.<region> endpoints.
const sdkNetworkVPC = "vpc"

// Hosts returns the host[:port] each product's calls go to: the override,
// else the endpoint the SDK resolves for region (its regional endpoint
// data, or <product>[-vpc].<region>.aliyuncs.com), for logs and docs.
func (e Endpoints) Hosts(region string) map[Product]string {
	out := map[Product]string{}
	for p, host := range map[Product]string{ECS: e.ECS, VPC: e.VPC, SLB: e.SLB, NLB: e.NLB} {
		switch {
		case host != "":
			out[p] = host
		case e.UseVPC:
			out[p] = string(p) + "-" + sdkNetworkVPC + "." + region + ".aliyuncs.com"
		default:
			out[p] = endpointMaps[p]()[region]
			if out[p] == "" {
				out[p] = string(p) + "." + region + ".aliyuncs.com"
			}
		}
	}
	return out
}

// endpointMaps are the SDK's per-product regional endpoint data.
var endpointMaps = map[Product]func() map[string]string{
	ECS: ecs.GetEndpointMap, VPC: vpc.GetEndpointMap, SLB: slb.GetEndpointMap, NLB: nlb.GetEndpointMap,
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
	// QPS is the starting call rate per second of each action (default
	// 20); the Throttle paces an action at the quota its Throttling answers
	// advertise and raises it above QPS while the cloud does not refuse.
	QPS float64
	// ProductQPS is the starting and highest call rate per second of each
	// product, all actions together, and the highest rate of any action
	// (default 100; at least QPS); it is lowered only when the cloud
	// throttles the account's product scope.
	ProductQPS float64
	// Burst is each limiter's token-bucket size at its starting rate:
	// calls that may go at once (default 40); it shrinks with a lowered
	// rate and to half an advertised Limit.
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
	// Transport, when set, carries every HTTP request (a proxy, or a test
	// recording where calls go); nil is the SDK's own transport.
	Transport http.RoundTripper
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
	throttle *Throttle
	// transport carries every SDK client's requests; the SDK never sees
	// an *http.Transport, so it leaves it alone (see sdkTransport).
	transport http.RoundTripper

	mu    sync.Mutex
	creds Credentials
	// idle are SDK clients signed with creds that no call is using. An SDK
	// client writes its http.Client's timeout on every call, so a client
	// serves one call at a time; concurrent calls use one set each.
	idle []*Clients
	// generation changes with creds, so sets signed with older
	// credentials are dropped when their call ends.
	generation uint64
}

// maxIdleClients bounds the SDK client sets kept between calls.
const maxIdleClients = 64

// sdkTransport hides the transport from the SDK. On every call, the SDK
// writes the dial function, TLS settings and proxy of its http.Client's
// transport when that is an *http.Transport, which races with the calls in
// flight on it; it leaves any other RoundTripper as it is. The settings it
// would write are set once, in New.
type sdkTransport struct{ http.RoundTripper }

// newTransport is the transport every SDK client shares: the proxy from
// the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, as the SDK reads
// them), a 5-second connect timeout, certificates verified and HTTP/1.1
// (as the SDK's own transport), and idle connections kept for concurrent
// calls.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = http.ProxyFromEnvironment
	t.DialContext = (&net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.ForceAttemptHTTP2 = false
	t.MaxIdleConnsPerHost = maxIdleClients
	return t
}

// connectTimeout bounds the TCP connection of one attempt.
const connectTimeout = 5 * time.Second

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
	if opts.ProductQPS <= 0 {
		opts.ProductQPS = DefaultProductQPS
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
	var rt http.RoundTripper = newTransport()
	if opts.Transport != nil {
		rt = opts.Transport
	}
	return &Client{opts: opts, throttle: NewThrottle(opts.QPS, opts.ProductQPS, opts.Burst), transport: sdkTransport{rt}}, nil
}

// SetUserAgent replaces Options.UserAgent for the calls that follow: the
// CCM learns its cluster id from the cloud, through this client, when the
// cloud-config does not set it.
func (c *Client) SetUserAgent(ua string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts.UserAgent = ua
	// Idle sets carry the old agent: retire them as rotated credentials
	// do, so the next calls build sets with the new one.
	c.idle = nil
	c.generation++
}

// Throttle returns the client's adaptive rate limiter (for its rates).
func (c *Client) Throttle() *Throttle { return c.throttle }

// Region returns the region the client calls.
func (c *Client) Region() string { return c.opts.Region }

// acquire returns SDK clients signed with the current credentials for one
// call's use alone, and the function that gives them back when the call
// has ended; credentials that have rotated retire the older sets.
func (c *Client) acquire(ctx context.Context) (*Clients, func(), error) {
	creds, err := c.opts.Credentials.Credentials(ctx)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	if creds.AccessKeyID != c.creds.AccessKeyID || creds.SecurityToken != c.creds.SecurityToken || creds.Secret() != c.creds.Secret() {
		c.creds, c.idle = creds, nil
		c.generation++
	}
	generation := c.generation
	var out *Clients
	if n := len(c.idle); n > 0 {
		out, c.idle = c.idle[n-1], c.idle[:n-1]
	}
	c.mu.Unlock()
	if out == nil {
		if out, err = c.newClients(creds); err != nil {
			return nil, nil, err
		}
	}
	release := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.generation == generation && len(c.idle) < maxIdleClients {
			c.idle = append(c.idle, out)
		}
	}
	return out, release, nil
}

// newClients builds one set of SDK clients signed with creds.
func (c *Client) newClients(creds Credentials) (*Clients, error) {
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
		conf.Transport = c.transport
		return conf
	}
	out := &Clients{}
	var err error
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
		} else if e.UseVPC {
			d.client.Network = sdkNetworkVPC
		}
		d.client.SetReadTimeout(c.opts.Timeout)
		d.client.SetConnectTimeout(connectTimeout)
		if c.opts.UserAgent != "" {
			d.client.AppendUserAgent("alicloud-ccm", c.opts.UserAgent)
		}
	}
	return out, nil
}

// Do runs one API call: it waits for the product's rate limiter, calls fn
// with the current SDK clients, retries transient failures (throttling,
// busy resources, 5xx and transport errors) with jittered exponential
// backoff, records metrics, and returns a classified *Error on failure.
//
// fn must make one SDK call; it runs in a goroutine of its own so that Do
// returns as soon as ctx is done, even mid-attempt. A failure whose outcome
// is unknown is not retried when the call is unsafe to replay (see
// NotIdempotent, ClientTokenOf and NoReplay), and retries are drawn from
// ctx's retry budget when it has one (see WithRetryBudget).
func Do[T any](ctx context.Context, c *Client, product Product, action string, fn func(*Clients) (T, error), opts ...CallOption) (T, error) {
	var o callOptions
	for _, opt := range opts {
		opt(&o)
	}
	budget := budgetFrom(ctx)
	var zero T
	var last *Error
	for attempt := 1; ; attempt++ {
		// Never start an attempt nobody waits for any more.
		if err := ctx.Err(); err != nil {
			if last != nil {
				return zero, fmt.Errorf("%w (retry abandoned: %w)", last, err)
			}
			return zero, fmt.Errorf("%s %s: not attempted: %w", product, action, err)
		}
		if err := c.throttle.Wait(ctx, product, action); err != nil {
			return zero, fmt.Errorf("%s %s: waiting for the rate limiter: %w", product, action, err)
		}
		clients, release, err := c.acquire(ctx)
		if err != nil {
			return zero, fmt.Errorf("%s %s: credentials: %w", product, action, err)
		}
		r := runAttempt(ctx, product, action, clients, release, fn)
		if r.abandoned {
			observe(product, action, codeAbandoned, r.elapsed)
			return zero, &Error{Product: product, Action: action, Class: ClassUnavailable, OutcomeUnknown: true,
				Err: fmt.Errorf("attempt abandoned after %v, its outcome is unknown: %w", r.elapsed.Round(time.Millisecond), ctx.Err())}
		}
		if r.err == nil {
			observe(product, action, codeOK, r.elapsed)
			c.throttle.Succeeded(product, action)
			return r.resp, nil
		}
		last = wrap(product, action, r.err)
		observe(product, action, metricCode(last), r.elapsed)
		c.learn(product, action, last, r.err)
		if !last.Class.Retryable() || attempt >= c.opts.MaxAttempts {
			break
		}
		if last.OutcomeUnknown && !o.replaySafe(product, action) {
			notReplayed.WithLabelValues(string(product), action).Inc()
			klog.V(2).InfoS("Not replaying a cloud write whose outcome is unknown; the next reconcile re-reads",
				"product", product, "action", action, "class", last.Class, "code", metricCode(last), "requestID", last.RequestID, "attempt", attempt)
			break
		}
		d := c.backoff(attempt)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
			// Sleeping past the deadline would only delay the same error.
			return zero, fmt.Errorf("%w (retry abandoned: the context deadline comes before the %v backoff)", last, d)
		}
		if !budget.take() {
			budgetExhausted.WithLabelValues(string(product), action).Inc()
			klog.V(2).InfoS("Retry budget spent; not retrying cloud call",
				"product", product, "action", action, "class", last.Class, "code", metricCode(last), "attempt", attempt)
			break
		}
		retries.WithLabelValues(string(product), action, last.Class.String()).Inc()
		kv := []any{"product", product, "action", action, "class", last.Class, "code", metricCode(last), "requestID", last.RequestID, "attempt", attempt, "after", d}
		if left, ok := RetryBudgetLeft(ctx); ok {
			kv = append(kv, "retryBudgetLeft", left)
		}
		klog.V(2).InfoS("Retrying cloud call", kv...)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, fmt.Errorf("%w (retry abandoned: %w)", last, ctx.Err())
		case <-t.C:
		}
	}
	return zero, last
}

// Call sends one typed SDK request through Do, as the SDK's typed method
// for it would (DoAction with a fresh response from newResp, the SDK's
// CreateXResponse, at each attempt). The product and action are the
// request's own, and a ClientToken it carries is honoured as ClientTokenOf
// says.
func Call[Resp responses.AcsResponse](ctx context.Context, c *Client, req sdkrequests.AcsRequest, newResp func() Resp, opts ...CallOption) (Resp, error) {
	product, action := Product(strings.ToLower(req.GetProduct())), req.GetActionName()
	return Do(ctx, c, product, action, func(cs *Clients) (Resp, error) {
		client := cs.product(product)
		if client == nil {
			var zero Resp
			return zero, fmt.Errorf("%s %s: no client for product %q", product, action, req.GetProduct())
		}
		resp := newResp()
		return resp, client.DoAction(req, resp)
	}, append(opts, ClientTokenOf(req))...)
}

// product is the SDK client of p; nil for a product the CCM does not call.
func (cs *Clients) product(p Product) *sdk.Client {
	switch p {
	case ECS:
		return &cs.ECS.Client
	case VPC:
		return &cs.VPC.Client
	case SLB:
		return &cs.SLB.Client
	case NLB:
		return &cs.NLB.Client
	}
	return nil
}

// learn tells the throttle what a failed attempt (e, classified from the
// SDK's raw error) says about the action's quota.
func (c *Client) learn(product Product, action string, e *Error, raw error) {
	switch e.Class {
	case ClassThrottled:
		c.throttle.Throttled(product, action, e.Code, hintOf(raw))
	case ClassUnavailable:
		// No answer, or the cloud failing: nothing learned about its quota.
	default:
		// The cloud served the call (it refused the request, not its
		// rate): the quota took it without throttling.
		c.throttle.Succeeded(product, action)
	}
}

// codeOK is the requests_total code of a successful call.
const codeOK = "OK"

// codeAbandoned is the requests_total code of an attempt Do stopped
// waiting for because its context was done.
const codeAbandoned = "Abandoned"

// metricCode is the requests_total code of a failed attempt: the API's
// code, the SDK's client error code, or ClientError for a transport error.
func metricCode(e *Error) string {
	if e.Code != "" {
		return e.Code
	}
	var ce *sdkerrors.ClientError
	if errors.As(e.Err, &ce) {
		return ce.ErrorCode()
	}
	return "ClientError"
}

// attempt is the result of one call of fn.
type attempt[T any] struct {
	resp      T
	err       error
	elapsed   time.Duration
	abandoned bool
}

// runAttempt calls fn in a goroutine and waits for it or for ctx. The SDK
// takes no context, so an abandoned attempt runs on until the SDK client's
// timeout (Options.Timeout) ends it; it then logs what became of it. The
// clients are released when fn returns, not before, as an abandoned
// attempt still uses them. A panic in fn is raised again in the caller's
// goroutine.
func runAttempt[T any](ctx context.Context, product Product, action string, clients *Clients, release func(), fn func(*Clients) (T, error)) attempt[T] {
	type result struct {
		resp     T
		err      error
		panicked any
		stack    []byte
	}
	// Unbuffered, with abandon closed when Do stops waiting: the goroutine
	// either hands its result over or knows for sure nobody will read it.
	results := make(chan result)
	abandon := make(chan struct{})
	start := time.Now()
	go func() {
		var r result
		func() {
			defer func() {
				if p := recover(); p != nil {
					r.panicked, r.stack = p, debug.Stack()
				}
			}()
			r.resp, r.err = fn(clients)
		}()
		release()
		select {
		case results <- r:
		case <-abandon:
			switch {
			case r.panicked != nil:
				klog.ErrorS(nil, "Abandoned cloud call panicked", "product", product, "action", action, "panic", r.panicked, "stack", string(r.stack))
			case r.err != nil:
				e := wrap(product, action, r.err)
				klog.V(2).InfoS("Abandoned cloud call finished", "product", product, "action", action, "code", metricCode(e), "requestID", e.RequestID, "took", time.Since(start))
			default:
				klog.V(2).InfoS("Abandoned cloud call finished", "product", product, "action", action, "code", codeOK, "took", time.Since(start))
			}
		}
	}()
	select {
	case r := <-results:
		if r.panicked != nil {
			klog.ErrorS(nil, "Cloud call panicked", "product", product, "action", action, "panic", r.panicked, "stack", string(r.stack))
			panic(r.panicked)
		}
		return attempt[T]{resp: r.resp, err: r.err, elapsed: time.Since(start)}
	case <-ctx.Done():
		close(abandon)
		return attempt[T]{elapsed: time.Since(start), abandoned: true}
	}
}

// backoff is full-jitter exponential: uniform in [0, min(max, base*2^n)].
func (c *Client) backoff(attempt int) time.Duration {
	d := c.opts.BaseBackoff << (attempt - 1)
	if d <= 0 || d > c.opts.MaxBackoff {
		d = c.opts.MaxBackoff
	}
	return time.Duration(rand.Int64N(int64(d))) + time.Millisecond
}
