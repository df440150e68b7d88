package conformance_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/conformance"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// editItems applies edit to every object under the dotted path of a
// JSON answer (Name[] for an array's items) and returns the new answer.
func editItems(t *testing.T, data []byte, path string, edit func(map[string]any)) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any, []string) int
	walk = func(v any, path []string) int {
		obj, ok := v.(map[string]any)
		if !ok {
			return 0
		}
		if len(path) == 0 {
			edit(obj)
			return 1
		}
		name, each := strings.CutSuffix(path[0], "[]")
		if !each {
			return walk(obj[name], path[1:])
		}
		n := 0
		items, _ := obj[name].([]any)
		for _, it := range items {
			n += walk(it, path[1:])
		}
		return n
	}
	var parts []string
	if path != "" {
		parts = strings.Split(path, ".")
	}
	if walk(v, parts) == 0 {
		t.Fatalf("nothing at %s in %s", path, data)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPlantedFaultsAreCaught records the emulator's answers through the
// SDK, plants in them the faults the model check alone cannot see, and
// shows that the model check still passes each while the expectation
// check reports it; then it checks error answers against the cited
// tables, including the vServer group answer the emulator used to give.
func TestPlantedFaultsAreCaught(t *testing.T) {
	env := newWorld(t)
	r := &runner{t: t, vars: map[string]string{}, results: map[string]*tally{}, codes: map[string]map[string]bool{}, answers: map[string][]byte{}, asked: map[string]map[string]string{},
		clients: map[string]*sdk.Client{"ecs": &env.ECS(t).Client, "vpc": &env.VPC(t).Client, "slb": &env.SLB(t).Client, "nlb": &env.NLB(t).Client}}
	for _, sc := range scenarios(t) {
		r.run(sc)
	}
	for _, tc := range []struct {
		name, key, path string
		model           any
		edit            func(map[string]any)
		want            string
	}{
		{"CLB status removed", "slb:DescribeLoadBalancers", "LoadBalancers.LoadBalancer[]", slb.CreateDescribeLoadBalancersResponse(),
			func(o map[string]any) { delete(o, "LoadBalancerStatus") }, "LoadBalancers.LoadBalancer[].LoadBalancerStatus: missing"},
		{"NLB status lower-cased", "nlb:ListLoadBalancers", "LoadBalancers[]", nlb.CreateListLoadBalancersResponse(),
			func(o map[string]any) { o["LoadBalancerStatus"] = strings.ToLower(o["LoadBalancerStatus"].(string)) }, `LoadBalancers[].LoadBalancerStatus: "active" is not one of`},
		{"NLB attribute status lower-cased", "nlb:GetLoadBalancerAttribute", "", nlb.CreateGetLoadBalancerAttributeResponse(),
			func(o map[string]any) { o["LoadBalancerStatus"] = "active" }, `LoadBalancerStatus: "active" is not one of`},
		{"NLB TagResources without JobId", "nlb:TagResources", "", nlb.CreateTagResourcesResponse(),
			func(o map[string]any) { delete(o, "JobId") }, "JobId: missing"},
		{"CLB listener status upper-cased", "slb:DescribeLoadBalancerListeners", "Listeners[]", slb.CreateDescribeLoadBalancerListenersResponse(),
			func(o map[string]any) { o["Status"] = "Running" }, `Listeners[].Status: "Running" is not one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer, ok := r.answers[tc.key]
			if !ok {
				t.Fatalf("no recorded answer of %s", tc.key)
			}
			if got := check(t, tc.key, answer); len(got) != 0 {
				t.Fatalf("the recorded answer already fails: %v", got)
			}
			faulty := editItems(t, answer, tc.path, tc.edit)
			if res, err := conformance.Check(faulty, reflect.TypeOf(tc.model)); err != nil || len(res.Mismatches) != 0 {
				t.Fatalf("model check: %v %v (the fault should be invisible to it)", res.Mismatches, err)
			}
			got := strings.Join(check(t, tc.key, faulty), "\n")
			if !strings.Contains(got, tc.want) {
				t.Errorf("planted fault not reported; want %q in:\n%s", tc.want, got)
			}
			t.Logf("reported: %s", got)
		})
	}

	t.Run("error answers", func(t *testing.T) {
		// What the emulator answers for an unknown vServer group now.
		q := slb.CreateDescribeVServerGroupAttributeRequest()
		q.VServerGroupId = "rsp-unknown"
		_, err := env.SLB(t).DescribeVServerGroupAttribute(q)
		se := emulatortest.WantServerError(t, err, "InvalidParameter", 400)
		if m := conformance.CheckError("slb", "DescribeVServerGroupAttribute", se.HttpStatus(), se.ErrorCode()); m != nil {
			t.Errorf("the emulator's answer %d %s fails: %s", se.HttpStatus(), se.ErrorCode(), m)
		}
		for _, bad := range []struct {
			product, action string
			status          int
			code, want      string
		}{
			{"slb", "DescribeVServerGroupAttribute", 404, "InvalidParameter", "documented as 400"},
			{"slb", "DescribeVServerGroupAttribute", 404, "VServerGroupNotFound", "not in slb's error table"},
			{"nlb", "ListLoadBalancers", 404, "ResourceNotFound.JobId", "not in nlb's error table for ListLoadBalancers"},
			{"slb", "CreateVServerGroup", 400, "ListenerAlreadyExists", "not in slb's error table"},
		} {
			m := conformance.CheckError(bad.product, bad.action, bad.status, bad.code)
			if m == nil || !strings.Contains(m.Problem, bad.want) {
				t.Errorf("%s:%s %d %s: got %v, want %q", bad.product, bad.action, bad.status, bad.code, m, bad.want)
				continue
			}
			t.Logf("reported: %s", m)
		}
	})
}

func check(t *testing.T, key string, data []byte) []string {
	t.Helper()
	ms, err := conformance.CheckExpectation(key, data)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.String())
	}
	return out
}
