package emulator_test

import (
	"math"
	"strings"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestQuotaProfileThrottlesThroughTheSDK: under the alibaba profile, scaled
// down so that every bucket holds one call, the second call of an action in
// a row is refused with the real gateway's Throttling.Api (HTTP 400), each
// action has its own bucket, and the limits are the published ones.
func TestQuotaProfileThrottlesThroughTheSDK(t *testing.T) {
	// 0.01: the fastest action (3000/60 s) refills one token per 2 s, so
	// the test's two back-to-back calls always meet an empty bucket.
	const scale = 0.01
	env := emulatortest.StartWith(t, emulator.Config{QuotaProfile: gateway.QuotaProfileAlibaba, QuotaScale: scale})
	slbc, nlbc, vpcc := env.SLB(t), env.NLB(t), env.VPC(t)
	cases := []struct {
		name string
		// call makes one call; its own error (not found, missing
		// parameter) does not matter, only whether it was throttled.
		call func() error
	}{
		{"slb/DescribeLoadBalancers", func() error {
			_, err := slbc.DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
			return err
		}},
		{"slb/CreateVServerGroup", func() error { _, err := slbc.CreateVServerGroup(slb.CreateCreateVServerGroupRequest()); return err }},
		{"slb/CreateLoadBalancerTCPListener", func() error {
			_, err := slbc.CreateLoadBalancerTCPListener(slb.CreateCreateLoadBalancerTCPListenerRequest())
			return err
		}},
		{"nlb/ListLoadBalancers", func() error { _, err := nlbc.ListLoadBalancers(nlb.CreateListLoadBalancersRequest()); return err }},
		{"nlb/CreateListener", func() error { _, err := nlbc.CreateListener(nlb.CreateCreateListenerRequest()); return err }},
		{"vpc/CreateRouteEntries", func() error { _, err := vpcc.CreateRouteEntries(vpc.CreateCreateRouteEntriesRequest()); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); isThrottled(err) {
				t.Fatalf("first call throttled: %v", err)
			}
			emulatortest.WantServerError(t, tc.call(), "Throttling.Api", 400)
		})
	}
	// Buckets are per action: every action above is now empty, yet
	// another action of the same products still passes.
	if _, err := slbc.DescribeVServerGroups(slb.CreateDescribeVServerGroupsRequest()); isThrottled(err) {
		t.Fatalf("DescribeVServerGroups shares a bucket with another action: %v", err)
	}
	rules := env.Emulator.Gateway.Throttles()
	byAction := map[string]gateway.ThrottleRule{}
	for _, r := range rules {
		byAction[r.Product+"/"+r.Action] = r
	}
	for _, want := range []struct {
		action    string
		perMinute float64
	}{
		{"slb/DescribeLoadBalancers", 3000},
		{"slb/CreateLoadBalancerTCPListener", 90},
		{"slb/AddVServerGroupBackendServers", 90},
		{"nlb/CreateListener", 200},
		{"nlb/ListLoadBalancers", 1200},
		{"vpc/ModifyRouteEntry", 300},
		{"vpc/DescribeRouteEntryList", 600},
	} {
		r, ok := byAction[want.action]
		if !ok {
			t.Errorf("%s has no throttle rule", want.action)
			continue
		}
		if got := r.QPS / scale * 60; math.Abs(got-want.perMinute) > 1e-6 || r.Scope != gateway.ThrottleScopeAPI {
			t.Errorf("%s: %v calls/min (scope %s), want %v (api)", want.action, got, r.Scope, want.perMinute)
		}
	}
}

// TestQuotaProfileUnknown: a misspelt profile is refused at start, naming
// the known ones, rather than running unlimited.
func TestQuotaProfileUnknown(t *testing.T) {
	_, err := emulator.New(emulator.Config{DisableAuth: true, QuotaProfile: "alibabacloud"})
	if err == nil || !containsAll(err.Error(), "alibabacloud", gateway.QuotaProfileAlibaba) {
		t.Fatalf("want an error naming the profile and the known ones, got %v", err)
	}
}

func isThrottled(err error) bool {
	return err != nil && containsAll(err.Error(), "Throttling")
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
