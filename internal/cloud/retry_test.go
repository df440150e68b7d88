package cloud_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// offlineClient is a client whose calls never leave the test: fn returns
// what the test wants.
func offlineClient(t *testing.T, maxAttempts int) *cloud.Client {
	t.Helper()
	c, err := cloud.New(cloud.Options{
		Region:      "cn-hangzhou",
		Credentials: cloud.StaticProvider{Creds: cloud.NewCredentials("LTAIoffline", "offline-secret", "", time.Time{})},
		Endpoints:   cloud.Endpoints{ECS: "127.0.0.1:1", VPC: "127.0.0.1:1", SLB: "127.0.0.1:1", NLB: "127.0.0.1:1", Scheme: "HTTP"},
		MaxAttempts: maxAttempts, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

const signedURL = "http://slb.example/?AccessKeyId=LTAIx&Action=DescribeLoadBalancers&Signature=c2lnbmF0dXJl&SecurityToken=sts-token-value"

func urlErr(err error) error { return &url.Error{Op: "Post", URL: signedURL, Err: err} }

// TestClassifiesFailuresByTypeAndCode: client-side SDK errors are final,
// transport failures are retried and say whether the request may have been
// applied, server errors are classified by Code; a read is retried as long
// as the class allows.
func TestClassifiesFailuresByTypeAndCode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		class     cloud.Class
		unknown   bool
		wantCalls int
	}{
		{"sdk invalid param", sdkerrors.NewClientError(sdkerrors.InvalidParamErrorCode, "bad", nil), cloud.ClassInvalid, false, 1},
		{"sdk missing param", sdkerrors.NewClientError(sdkerrors.MissingParamErrorCode, "missing", nil), cloud.ClassInvalid, false, 1},
		{"sdk json unmarshal of a 2xx", sdkerrors.NewClientError(sdkerrors.JsonUnmarshalErrorCode, sdkerrors.JsonUnmarshalErrorMessage, &json.SyntaxError{}), cloud.ClassInvalid, false, 1},
		{"sdk unsupported credential", sdkerrors.NewClientError(sdkerrors.UnsupportedCredentialErrorCode, "x", nil), cloud.ClassInvalid, false, 1},
		{"sdk default client error", sdkerrors.NewClientError("", "x", nil), cloud.ClassInvalid, false, 1},
		{"sdk endpoint not resolved", sdkerrors.NewClientError(sdkerrors.CanNotResolveEndpointErrorCode, "x", io.EOF), cloud.ClassInvalid, false, 1},
		{"sdk timeout", sdkerrors.NewClientError(sdkerrors.TimeoutErrorCode, "timed out", timeoutError{}), cloud.ClassUnavailable, true, 3},
		{"EOF", urlErr(io.EOF), cloud.ClassUnavailable, true, 3},
		{"unexpected EOF reading the body", io.ErrUnexpectedEOF, cloud.ClassUnavailable, true, 3},
		{"connection reset", urlErr(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), cloud.ClassUnavailable, true, 3},
		{"broken pipe", urlErr(&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}), cloud.ClassUnavailable, true, 3},
		{"client timeout", urlErr(timeoutError{}), cloud.ClassUnavailable, true, 3},
		{"connection refused", urlErr(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), cloud.ClassUnavailable, false, 3},
		{"dns failure", urlErr(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "slb.example"}}), cloud.ClassUnavailable, false, 3},
		{"unknown certificate authority", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), cloud.ClassInvalid, false, 1},
		{"https to an http server", urlErr(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), cloud.ClassInvalid, false, 1},
		{"url error wrapping a configuration error", urlErr(errors.New("unsupported protocol scheme \"\"")), cloud.ClassOther, false, 1},
		{"caller's decode error", fmt.Errorf("decode ListAsynJobs: %w", &json.SyntaxError{}), cloud.ClassOther, false, 1},
		{"server 503", sdkerrors.NewServerError(503, `{"Code":"ServiceUnavailable","Message":"m","RequestId":"r"}`, ""), cloud.ClassUnavailable, true, 3},
		{"server bare 502", sdkerrors.NewServerError(502, `<html>bad gateway</html>`, ""), cloud.ClassUnavailable, true, 3},
		{"server throttling", sdkerrors.NewServerError(400, `{"Code":"Throttling.User","Message":"m","RequestId":"r"}`, ""), cloud.ClassThrottled, false, 3},
		{"server busy", sdkerrors.NewServerError(400, `{"Code":"TaskConflict","Message":"m","RequestId":"r"}`, ""), cloud.ClassConflict, false, 3},
		{"server invalid parameter", sdkerrors.NewServerError(400, `{"Code":"InvalidParameter","Message":"m","RequestId":"r"}`, ""), cloud.ClassInvalid, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := offlineClient(t, 3)
			calls := 0
			_, err := cloud.Do(context.Background(), c, cloud.SLB, "DescribeLoadBalancers", func(*cloud.Clients) (struct{}, error) {
				calls++
				return struct{}{}, tc.err
			})
			var ce *cloud.Error
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not *cloud.Error: %v", err, err)
			}
			if ce.Class != tc.class || ce.OutcomeUnknown != tc.unknown || cloud.IsOutcomeUnknown(err) != tc.unknown {
				t.Errorf("class %v unknown %v, want %v %v", ce.Class, ce.OutcomeUnknown, tc.class, tc.unknown)
			}
			if calls != tc.wantCalls {
				t.Errorf("%d attempts, want %d", calls, tc.wantCalls)
			}
			// The redacted copy of a *url.Error still wraps its cause.
			cause := tc.err
			if ue, ok := tc.err.(*url.Error); ok {
				cause = ue.Err
			}
			if !errors.Is(err, cause) {
				t.Errorf("the error %v does not wrap %v", err, cause)
			}
			if msg := err.Error(); strings.Contains(msg, "Signature=") || strings.Contains(msg, "sts-token-value") {
				t.Errorf("the error shows the signed URL: %s", msg)
			}
		})
	}
}

// TestTransportErrorKeepsItsCause: redacting the URL keeps errors.Is.
func TestTransportErrorKeepsItsCause(t *testing.T) {
	c := offlineClient(t, 1)
	_, err := cloud.Do(context.Background(), c, cloud.SLB, "DescribeLoadBalancers", func(*cloud.Clients) (struct{}, error) {
		return struct{}{}, fmt.Errorf("attempt: %w", urlErr(io.EOF))
	})
	if !errors.Is(err, io.EOF) || strings.Contains(err.Error(), "SecurityToken") || !strings.Contains(err.Error(), "slb.example") {
		t.Fatalf("got %v", err)
	}
}

func createLB(ctx context.Context, c *cloud.Client, name, token string) error {
	r := slb.CreateCreateLoadBalancerRequest()
	r.LoadBalancerName = name
	r.ClientToken = token
	_, err := cloud.Do(ctx, c, cloud.SLB, "CreateLoadBalancer", func(cl *cloud.Clients) (*slb.CreateLoadBalancerResponse, error) {
		return cl.SLB.CreateLoadBalancer(r)
	}, cloud.ClientTokenOf(r))
	return err
}

func countLBs(t *testing.T, env *emulatortest.Env, name string) int {
	t.Helper()
	r := slb.CreateDescribeLoadBalancersRequest()
	r.LoadBalancerName = name
	resp, err := env.SLB(t).DescribeLoadBalancers(r)
	emulatortest.NoError(t, err)
	return len(resp.LoadBalancers.LoadBalancer)
}

// TestUnsafeCreateIsNotReplayed: a create without a ClientToken whose
// connection drops (before or after it was applied) is attempted exactly
// once, and a lost response leaves exactly one resource; with a ClientToken
// it is replayed and the cloud answers with the same resource; a read is
// retried; a throttled create, which was refused, is retried.
func TestUnsafeCreateIsNotReplayed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fault     gateway.FaultRule
		token     string
		wantCalls int
		wantLBs   int
		wantErr   bool
	}{
		{"dropped before, no token", gateway.FaultRule{Drop: true}, "", 1, 0, true},
		{"lost response, no token", gateway.FaultRule{Drop: true, After: true}, "", 1, 1, true},
		{"lost response, with token", gateway.FaultRule{Drop: true, After: true}, "tok-lost-response", 2, 1, false},
		{"5xx, no token", gateway.FaultRule{Error: &gateway.FaultError{Code: "ServiceUnavailable"}}, "", 1, 0, true},
		{"throttled, no token", gateway.FaultRule{Error: &gateway.FaultError{Code: "Throttling.User"}}, "", 2, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := emulatortest.Start(t)
			c := newClient(t, env, cloud.Options{MaxAttempts: 4})
			f := tc.fault
			f.Product, f.Action, f.Count = "slb", "CreateLoadBalancer", 1
			if _, err := env.Emulator.Gateway.AddFault(f); err != nil {
				t.Fatal(err)
			}
			err := createLB(context.Background(), c, lbName(tc.name), tc.token)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !cloud.IsOutcomeUnknown(err) {
				t.Errorf("%v: the outcome of a dropped or 5xx create is unknown", err)
			}
			if calls := len(env.Emulator.Requests(gateway.RequestFilter{Product: "slb", Action: "CreateLoadBalancer"})); calls != tc.wantCalls {
				t.Errorf("%d CreateLoadBalancer calls, want %d", calls, tc.wantCalls)
			}
			if n := countLBs(t, env, lbName(tc.name)); n != tc.wantLBs {
				t.Errorf("%d load balancers, want %d", n, tc.wantLBs)
			}
		})
	}
}

// TestCreateVServerGroupLostResponseMakesOneGroup: a create that has no
// ClientToken at all in the SDK is never replayed after a lost response.
func TestCreateVServerGroupLostResponseMakesOneGroup(t *testing.T) {
	env := emulatortest.Start(t)
	c := newClient(t, env, cloud.Options{})
	lb, err := env.SLB(t).CreateLoadBalancer(slb.CreateCreateLoadBalancerRequest())
	emulatortest.NoError(t, err)
	if _, err := env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "CreateVServerGroup", Drop: true, After: true, Count: 1}); err != nil {
		t.Fatal(err)
	}
	r := slb.CreateCreateVServerGroupRequest()
	r.LoadBalancerId, r.VServerGroupName = lb.LoadBalancerId, "k8s-80"
	_, err = cloud.Do(context.Background(), c, cloud.SLB, "CreateVServerGroup", func(cl *cloud.Clients) (*slb.CreateVServerGroupResponse, error) {
		return cl.SLB.CreateVServerGroup(r)
	}, cloud.ClientTokenOf(r))
	if !cloud.IsOutcomeUnknown(err) {
		t.Fatalf("want an unknown outcome, got %v", err)
	}
	if calls := env.Emulator.Calls("slb", "CreateVServerGroup"); calls != 1 {
		t.Fatalf("%d CreateVServerGroup calls, want 1", calls)
	}
	dr := slb.CreateDescribeVServerGroupsRequest()
	dr.LoadBalancerId = lb.LoadBalancerId
	groups, err := env.SLB(t).DescribeVServerGroups(dr)
	emulatortest.NoError(t, err)
	if n := len(groups.VServerGroups.VServerGroup); n != 1 {
		t.Fatalf("%d vServer groups, want 1", n)
	}
}

// TestNoReplayAndReadRetry: NoReplay stops the replay of any call; the
// same dropped read without it is retried.
func TestNoReplayAndReadRetry(t *testing.T) {
	env := emulatortest.Start(t)
	c := newClient(t, env, cloud.Options{})
	describe := func(opts ...cloud.CallOption) error {
		_, err := cloud.Do(context.Background(), c, cloud.SLB, "DescribeLoadBalancers", func(cl *cloud.Clients) (*slb.DescribeLoadBalancersResponse, error) {
			return cl.SLB.DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
		}, opts...)
		return err
	}
	for _, tc := range []struct {
		name      string
		opts      []cloud.CallOption
		wantCalls int
	}{{"read", nil, 2}, {"no replay", []cloud.CallOption{cloud.NoReplay()}, 1}} {
		env.Emulator.Gateway.ResetRequests()
		if _, err := env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "DescribeLoadBalancers", Drop: true, Count: 1}); err != nil {
			t.Fatal(err)
		}
		err := describe(tc.opts...)
		if calls := len(env.Emulator.Requests(gateway.RequestFilter{Product: "slb", Action: "DescribeLoadBalancers"})); calls != tc.wantCalls {
			t.Errorf("%s: %d calls, want %d (err %v)", tc.name, calls, tc.wantCalls, err)
		}
	}
}

// TestNotIdempotentTable pins which actions are not replayed without a
// ClientToken.
func TestNotIdempotentTable(t *testing.T) {
	for _, a := range []struct {
		p      cloud.Product
		action string
	}{
		{cloud.SLB, "CreateLoadBalancer"}, {cloud.SLB, "CreateVServerGroup"}, {cloud.SLB, "CreateLoadBalancerTCPListener"},
		{cloud.SLB, "CreateLoadBalancerUDPListener"}, {cloud.SLB, "CreateLoadBalancerHTTPListener"}, {cloud.SLB, "CreateLoadBalancerHTTPSListener"},
		{cloud.SLB, "CreateDomainExtension"}, {cloud.SLB, "CreateAccessControlList"}, {cloud.SLB, "AddVServerGroupBackendServers"},
		{cloud.SLB, "UploadServerCertificate"}, {cloud.VPC, "CreateRouteEntries"}, {cloud.VPC, "AllocateEipAddress"},
		{cloud.ECS, "RunInstances"}, {cloud.ECS, "CreateNetworkInterface"}, {cloud.ECS, "AssignPrivateIpAddresses"},
		{cloud.NLB, "CreateLoadBalancer"}, {cloud.NLB, "CreateServerGroup"}, {cloud.NLB, "CreateListener"}, {cloud.NLB, "AddServersToServerGroup"},
	} {
		if !cloud.NotIdempotent(a.p, a.action) {
			t.Errorf("%s %s must not be replayed without a ClientToken", a.p, a.action)
		}
	}
	for _, a := range []struct {
		p      cloud.Product
		action string
	}{
		{cloud.SLB, "DescribeLoadBalancers"}, {cloud.SLB, "SetVServerGroupAttribute"}, {cloud.SLB, "DeleteLoadBalancer"},
		{cloud.SLB, "RemoveVServerGroupBackendServers"}, {cloud.SLB, "AddTags"}, {cloud.SLB, "TagResources"},
		{cloud.VPC, "DeleteRouteEntries"}, {cloud.ECS, "DescribeInstances"}, {cloud.NLB, "ListListeners"}, {cloud.NLB, "UpdateListenerAttribute"},
	} {
		if cloud.NotIdempotent(a.p, a.action) {
			t.Errorf("%s %s converges and may be replayed", a.p, a.action)
		}
	}
}

// TestRetryBudgetIsSharedAcrossCalls: under a budget of 2, a first call
// that needs one retry leaves one for a second call, whose next retry is
// refused; without the budget the second call runs to MaxAttempts.
func TestRetryBudgetIsSharedAcrossCalls(t *testing.T) {
	env := emulatortest.Start(t)
	c := newClient(t, env, cloud.Options{MaxAttempts: 5})
	describeLBs := func(ctx context.Context) error {
		_, err := cloud.Do(ctx, c, cloud.SLB, "DescribeLoadBalancers", func(cl *cloud.Clients) (*slb.DescribeLoadBalancersResponse, error) {
			return cl.SLB.DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
		})
		return err
	}
	gw := env.Emulator.Gateway
	if _, err := gw.AddFault(gateway.FaultRule{Product: "ecs", Action: "DescribeInstances", Count: 1, Error: &gateway.FaultError{Code: "Throttling.User"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.AddFault(gateway.FaultRule{Product: "slb", Action: "DescribeLoadBalancers", Error: &gateway.FaultError{Code: "ServiceUnavailable"}}); err != nil {
		t.Fatal(err)
	}

	ctx := cloud.WithRetryBudget(context.Background(), 2)
	if err := describeInstances(ctx, c); err != nil {
		t.Fatalf("one retry is within the budget: %v", err)
	}
	if left, ok := cloud.RetryBudgetLeft(ctx); !ok || left != 1 {
		t.Fatalf("budget left %d %v, want 1", left, ok)
	}
	start := time.Now()
	err := describeLBs(ctx)
	if cloud.ClassOf(err) != cloud.ClassUnavailable {
		t.Fatalf("want the unavailable error, got %v", err)
	}
	if left, _ := cloud.RetryBudgetLeft(ctx); left != 0 {
		t.Fatalf("budget left %d, want 0", left)
	}
	ecsCalls := len(env.Emulator.Requests(gateway.RequestFilter{Product: "ecs", Action: "DescribeInstances"}))
	slbCalls := len(env.Emulator.Requests(gateway.RequestFilter{Product: "slb", Action: "DescribeLoadBalancers"}))
	if ecsCalls != 2 || slbCalls != 2 {
		t.Fatalf("DescribeInstances %d and DescribeLoadBalancers %d calls, want 2 and 2 (3 retries out of a budget of 2?)", ecsCalls, slbCalls)
	}
	// Spent: a further call under the same context gets no retry at all.
	_ = describeLBs(ctx)
	if n := len(env.Emulator.Requests(gateway.RequestFilter{Product: "slb", Action: "DescribeLoadBalancers"})); n != 3 {
		t.Fatalf("%d calls, want 3: a spent budget allows first attempts only", n)
	}
	t.Logf("the budgeted call failed after %v", time.Since(start))

	gw.ResetRequests()
	_ = describeLBs(context.Background())
	if n := len(env.Emulator.Requests(gateway.RequestFilter{Product: "slb", Action: "DescribeLoadBalancers"})); n != 5 {
		t.Fatalf("without a budget: %d calls, want MaxAttempts 5", n)
	}
}

// TestNestedRetryBudgetSpendsTheOuterOne: an inner budget cannot lift the
// outer bound.
func TestNestedRetryBudgetSpendsTheOuterOne(t *testing.T) {
	c := offlineClient(t, 10)
	outer := cloud.WithRetryBudget(context.Background(), 1)
	inner := cloud.WithRetryBudget(outer, 5)
	calls := 0
	_, _ = cloud.Do(inner, c, cloud.SLB, "DescribeLoadBalancers", func(*cloud.Clients) (struct{}, error) {
		calls++
		return struct{}{}, urlErr(io.EOF)
	})
	if calls != 2 {
		t.Fatalf("%d attempts, want 2 (one retry from the outer budget)", calls)
	}
	if left, _ := cloud.RetryBudgetLeft(inner); left != 0 {
		t.Fatalf("left %d", left)
	}
	if _, ok := cloud.RetryBudgetLeft(context.Background()); ok {
		t.Fatal("a context without a budget reports one")
	}
}

func runAttemptGoroutines() int {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	return strings.Count(b.String(), "cloud.runAttempt")
}

// TestCancelledContextReturnsPromptly: Do returns soon after the context is
// done although the emulator holds the call for 5 s; the call arrived once,
// and the abandoned attempt's goroutine ends by the SDK timeout.
func TestCancelledContextReturnsPromptly(t *testing.T) {
	env := emulatortest.Start(t)
	c := newClient(t, env, cloud.Options{Timeout: time.Second})
	if _, err := env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "ecs", Action: "DescribeInstances", Latency: gateway.Duration(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	err := describeInstances(ctx, c)
	took := time.Since(start)
	if took > 500*time.Millisecond {
		t.Fatalf("Do returned %v after the start, 50ms after a cancel: want ~50ms", took)
	}
	t.Logf("returned after %v", took)
	if !errors.Is(err, context.Canceled) || !cloud.IsOutcomeUnknown(err) || cloud.ClassOf(err) != cloud.ClassUnavailable {
		t.Fatalf("want an abandoned, unknown-outcome error wrapping context.Canceled, got %v", err)
	}
	// The emulator logs the call when the SDK's 1 s timeout closes it.
	emulatortest.Eventually(t, "the abandoned call to be logged", func() bool {
		return len(env.Emulator.Requests(gateway.RequestFilter{Product: "ecs", Action: "DescribeInstances"})) == 1
	})
	emulatortest.Eventually(t, "the abandoned attempt's goroutine to end", func() bool { return runAttemptGoroutines() == 0 })
	if n := env.Emulator.Calls("ecs", "DescribeInstances"); n != 1 {
		t.Fatalf("%d calls, want 1: nothing is retried after a cancel", n)
	}

	// A context already done starts nothing.
	if err := describeInstances(ctx, c); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if n := env.Emulator.Calls("ecs", "DescribeInstances"); n != 1 {
		t.Fatalf("%d calls: an attempt started under a done context", n)
	}
}

// TestPanicInCallIsRaisedToTheCaller: running fn in a goroutine must not
// turn its panic into a crash the caller cannot recover.
func TestPanicInCallIsRaisedToTheCaller(t *testing.T) {
	c := offlineClient(t, 1)
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want boom", p)
		}
	}()
	_, _ = cloud.Do(context.Background(), c, cloud.ECS, "DescribeInstances", func(*cloud.Clients) (*ecs.DescribeInstancesResponse, error) {
		panic("boom")
	})
	t.Fatal("no panic")
}

// TestSignatureMismatchDoesNotEchoTheToken: the cloud's signature mismatch
// message (ECS: IncompleteSignature) echoes the string to sign, which holds
// the STS SecurityToken.
func TestSignatureMismatchDoesNotEchoTheToken(t *testing.T) {
	env := emulatortest.Start(t)
	id, _, token, exp := env.Emulator.Gateway.RoleCredentials()
	c, err := cloud.New(cloud.Options{
		Region:      env.Region,
		Credentials: cloud.StaticProvider{Creds: cloud.NewCredentials(id, "not-the-secret", token, exp)},
		Endpoints:   cloud.Endpoints{ECS: env.Endpoint, Scheme: "HTTP"},
	})
	emulatortest.NoError(t, err)
	err = describeInstances(context.Background(), c)
	if cloud.CodeOf(err) != "IncompleteSignature" || cloud.ClassOf(err) != cloud.ClassAuth {
		t.Fatalf("want IncompleteSignature (an auth error), got %v", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Fatalf("the error shows the security token: %v", err)
	}
}

// lbName turns a case name into a load balancer name the CLB API accepts
// (letters, digits, '.', '_', '-', '/'; see the slb:LoadBalancerName rule of internal/emulator/facts).
func lbName(caseName string) string {
	return "lb-" + strings.NewReplacer(" ", "", ",", "_").Replace(caseName)
}
