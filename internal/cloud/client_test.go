package cloud_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

func newClient(t *testing.T, env *emulatortest.Env, opts cloud.Options) *cloud.Client {
	t.Helper()
	opts.Region = env.Region
	opts.Credentials = cloud.StaticProvider{Creds: cloud.NewCredentials(emulatortest.AccessKeyID, emulatortest.AccessKeySecret, "", time.Time{})}
	opts.Endpoints = cloud.Endpoints{ECS: env.Endpoint, VPC: env.Endpoint, SLB: env.Endpoint, NLB: env.Endpoint, Scheme: "HTTP"}
	if opts.BaseBackoff == 0 {
		opts.BaseBackoff = 5 * time.Millisecond
	}
	c, err := cloud.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func describeInstances(ctx context.Context, c *cloud.Client) error {
	_, err := cloud.Do(ctx, c, cloud.ECS, "DescribeInstances", func(cl *cloud.Clients) (*ecs.DescribeInstancesResponse, error) {
		return cl.ECS.DescribeInstances(ecs.CreateDescribeInstancesRequest())
	})
	return err
}

// TestRetriesTransientErrorsOnly: transient codes are retried until they
// clear; a request error is returned at once, classified, with its RequestId.
func TestRetriesTransientErrorsOnly(t *testing.T) {
	for _, tc := range []struct {
		name      string
		code      string
		status    int
		failures  int
		wantCalls int
		wantClass cloud.Class
		wantErr   bool
	}{
		{"throttling clears", "Throttling.User", 400, 2, 3, 0, false},
		{"task conflict clears", "TaskConflict", 400, 3, 4, 0, false},
		{"conflict lock clears", "Conflict.Lock", 400, 1, 2, 0, false},
		{"5xx clears", "ServiceUnavailable", 503, 2, 3, 0, false},
		{"system busy clears", "SystemBusy", 449, 1, 2, 0, false},
		{"invalid parameter is final", "InvalidParameter", 400, 1, 1, cloud.ClassInvalid, true},
		{"quota is final", "QuotaExceeded.Instances", 400, 1, 1, cloud.ClassQuota, true},
		{"not found is final", "InvalidInstanceId.NotFound", 404, 1, 1, cloud.ClassNotFound, true},
		{"throttling that never clears gives up", "Throttling", 400, 100, 4, cloud.ClassThrottled, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := emulatortest.Start(t)
			c := newClient(t, env, cloud.Options{MaxAttempts: 4})
			if _, err := env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "ecs", Action: "DescribeInstances", Count: tc.failures,
				Error: &gateway.FaultError{Code: tc.code, Status: tc.status, Message: "injected"}}); err != nil {
				t.Fatal(err)
			}
			err := describeInstances(context.Background(), c)
			if calls := env.Emulator.Calls("ecs", "DescribeInstances"); calls != tc.wantCalls {
				t.Errorf("%d calls, want %d", calls, tc.wantCalls)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil {
				return
			}
			var ce *cloud.Error
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not *cloud.Error", err)
			}
			if ce.Class != tc.wantClass || ce.Code != tc.code || ce.HTTPStatus != tc.status {
				t.Errorf("got class %v code %s status %d", ce.Class, ce.Code, ce.HTTPStatus)
			}
			if ce.RequestID == "" || !strings.Contains(err.Error(), ce.RequestID) {
				t.Errorf("the error %q does not carry the RequestId", err)
			}
		})
	}
}

// TestClassifyByCodeNotMessage pins the classification table.
func TestClassifyByCodeNotMessage(t *testing.T) {
	for code, want := range map[string]cloud.Class{
		"Throttling": cloud.ClassThrottled, "Throttling.Api": cloud.ClassThrottled,
		"InvalidLoadBalancerId.NotFound": cloud.ClassNotFound, "ResourceNotFound.loadBalancer": cloud.ClassNotFound,
		"InvalidRouteEntry.NotFound": cloud.ClassNotFound, "ListenerNotFound": cloud.ClassNotFound,
		"TaskConflict": cloud.ClassConflict, "Conflict.Lock": cloud.ClassConflict, "VServerGroupProcessing": cloud.ClassConflict,
		"QuotaExceeded": cloud.ClassQuota, "QuotaExceeded.Routes": cloud.ClassQuota, "InstanceBackendServerNumberOverLimit": cloud.ClassQuota,
		"InvalidParameter": cloud.ClassInvalid, "MissingParameter": cloud.ClassInvalid, "OperationDenied.DeleteProtectionIsOn": cloud.ClassInvalid,
		"SignatureDoesNotMatch": cloud.ClassAuth, "InvalidAccessKeyId.NotFound": cloud.ClassAuth,
		"InternalError": cloud.ClassUnavailable,
	} {
		if got := cloud.Classify(code, 400); got != want {
			t.Errorf("Classify(%s) = %v, want %v", code, got, want)
		}
	}
	if cloud.Classify("", 502) != cloud.ClassUnavailable {
		t.Error("a bare 5xx is transient")
	}
}

// TestMissingVServerGroupIsNotFound: CLB answers a missing vServer group
// with InvalidParameter ("does not exist"), the one code whose meaning
// needs the message; a delete retried after a lost answer must see it as
// not found, through the SDK.
func TestMissingVServerGroupIsNotFound(t *testing.T) {
	env := emulatortest.Start(t)
	c := newClient(t, env, cloud.Options{})
	_, err := cloud.Do(context.Background(), c, cloud.SLB, "DeleteVServerGroup", func(cl *cloud.Clients) (*slb.DeleteVServerGroupResponse, error) {
		r := slb.CreateDeleteVServerGroupRequest()
		r.VServerGroupId = "rsp-missing"
		return cl.SLB.DeleteVServerGroup(r)
	})
	if !cloud.IsNotFound(err) {
		t.Fatalf("deleting a missing vServer group: %v (class %v), want not found", err, cloud.ClassOf(err))
	}
}

// TestDroppedConnectionIsRetried: a transport failure is transient.
func TestDroppedConnectionIsRetried(t *testing.T) {
	env := emulatortest.Start(t)
	c := newClient(t, env, cloud.Options{})
	if _, err := env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "DescribeLoadBalancers", Count: 1, Drop: true}); err != nil {
		t.Fatal(err)
	}
	_, err := cloud.Do(context.Background(), c, cloud.SLB, "DescribeLoadBalancers", func(cl *cloud.Clients) (*slb.DescribeLoadBalancersResponse, error) {
		return cl.SLB.DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
	})
	if err != nil {
		t.Fatalf("a dropped connection must be retried: %v", err)
	}
}

// TestRateLimiterBoundsCallRate: 11 calls at 20 QPS with burst 1 take about
// half a second.
func TestRateLimiterBoundsCallRate(t *testing.T) {
	env := emulatortest.Start(t)
	c := newClient(t, env, cloud.Options{QPS: 20, Burst: 1})
	start := time.Now()
	for i := 0; i < 11; i++ {
		if err := describeInstances(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took < 450*time.Millisecond {
		t.Fatalf("11 calls at 20 QPS took %v; the limiter is not applied", took)
	}
}

// TestCredentialsErrorNeverShowsTheSecret: a wrong secret fails with an
// auth-class error whose text holds no secret.
func TestCredentialsErrorNeverShowsTheSecret(t *testing.T) {
	env := emulatortest.Start(t)
	const wrong = "definitely-wrong-secret-value"
	c, err := cloud.New(cloud.Options{
		Region:      env.Region,
		Credentials: cloud.StaticProvider{Creds: cloud.NewCredentials(emulatortest.AccessKeyID, wrong, "", time.Time{})},
		Endpoints:   cloud.Endpoints{ECS: env.Endpoint, Scheme: "HTTP"},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = describeInstances(context.Background(), c)
	if cloud.ClassOf(err) != cloud.ClassAuth {
		t.Fatalf("want an auth error, got %v", err)
	}
	if strings.Contains(err.Error(), wrong) {
		t.Fatal("the error text contains the secret")
	}
}

// TestConcurrentCallsUseTheirOwnSDKClients: the SDK writes its client's
// HTTP timeout on every call, so calls in flight together must each hold
// SDK clients no other call uses; once they end, their clients serve the
// next calls instead of new ones being built.
func TestConcurrentCallsUseTheirOwnSDKClients(t *testing.T) {
	env := emulatortest.Start(t)
	c := newClient(t, env, cloud.Options{})
	const n = 8
	var (
		mu      sync.Mutex
		entered sync.WaitGroup
		seen    = map[*cloud.Clients]int{}
	)
	entered.Add(n)
	call := func(hold bool) error {
		_, err := cloud.Do(context.Background(), c, cloud.ECS, "DescribeInstances", func(cl *cloud.Clients) (*ecs.DescribeInstancesResponse, error) {
			mu.Lock()
			seen[cl]++
			mu.Unlock()
			if hold {
				// Every call is in flight before any makes its request.
				entered.Done()
				entered.Wait()
			}
			return cl.ECS.DescribeInstances(ecs.CreateDescribeInstancesRequest())
		})
		return err
	}
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() { errs <- call(true) }()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d calls in flight together used %d sets of SDK clients, want one each", n, len(seen))
	}
	for i := 0; i < n; i++ {
		if err := call(false); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != n {
		t.Fatalf("sequential calls after them built %d new sets, want them to reuse the idle ones", len(seen)-n)
	}
}
