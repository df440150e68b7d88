package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// get fetches a console path and returns the status and body.
func get(t *testing.T, env *emulatortest.Env, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(env.URL() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return resp.StatusCode, string(data)
}

// TestRawViewIsTheAPIAnswer: the raw view of DescribeLoadBalancerAttribute
// decodes into the same SDK response as the SDK's own call.
func TestRawViewIsTheAPIAnswer(t *testing.T) {
	t.Parallel()
	w := buildWorld(t)
	req := slb.CreateDescribeLoadBalancerAttributeRequest()
	req.RegionId, req.LoadBalancerId = w.env.Region, w.lbID
	want, err := w.env.SLB(t).DescribeLoadBalancerAttribute(req)
	emulatortest.NoError(t, err)

	q := url.Values{"RegionId": {w.env.Region}, "LoadBalancerId": {w.lbID}, "format": {"json"}}
	status, body := get(t, w.env, "/_emulator/ui/raw/slb/DescribeLoadBalancerAttribute?"+q.Encode())
	if status != http.StatusOK {
		t.Fatalf("raw view: %d %s", status, body)
	}
	got := slb.CreateDescribeLoadBalancerAttributeResponse()
	if err := json.Unmarshal([]byte(body), got); err != nil {
		t.Fatalf("raw view is not the SDK's JSON: %v", err)
	}
	got.RequestId, want.RequestId = "", ""
	// The SDK keeps the raw HTTP response in unexported fields; compare
	// the decoded models only.
	if g, x := mustJSON(t, got), mustJSON(t, want); g != x {
		t.Errorf("raw view decodes to\n%s\nthe SDK got\n%s", g, x)
	}
	if len(got.ListenerPortsAndProtocol.ListenerPortAndProtocol) != 1 {
		t.Errorf("raw view lost the listener: %+v", got.ListenerPortsAndProtocol)
	}

	status, page := get(t, w.env, "/_emulator/ui/raw/slb/DescribeLoadBalancerAttribute?"+url.Values{"LoadBalancerId": {w.lbID}}.Encode())
	if status != http.StatusOK || !strings.Contains(page, `id="raw-json"`) || !strings.Contains(page, w.lbID) {
		t.Errorf("raw HTML view: %d, lacks the answer", status)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	emulatortest.NoError(t, err)
	return string(data)
}

// TestConsoleNeverWrites: write actions cannot be invoked through the raw
// view, non-GET methods are refused, and the console's own reads are not
// in the request log.
func TestConsoleNeverWrites(t *testing.T) {
	t.Parallel()
	w := buildWorld(t)
	before := len(w.env.Emulator.Requests())
	q := url.Values{"RegionId": {w.env.Region}, "LoadBalancerId": {w.lbID}}
	if status, body := get(t, w.env, "/_emulator/ui/raw/slb/DeleteLoadBalancer?"+q.Encode()); status != http.StatusBadRequest || !strings.Contains(body, "read-only") {
		t.Errorf("DeleteLoadBalancer through the console: %d %s", status, body)
	}
	resp, err := http.Post(w.env.URL()+"/_emulator/ui/raw/slb/DescribeLoadBalancers", "application/x-www-form-urlencoded", strings.NewReader("RegionId=cn-hangzhou"))
	emulatortest.NoError(t, err)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("POST to the console answered 200")
	}
	for _, p := range []string{"/_emulator/ui/", "/_emulator/ui/region/" + w.env.Region, "/_emulator/ui/faults"} {
		if status, _ := get(t, w.env, p); status != http.StatusOK {
			t.Errorf("GET %s: %d", p, status)
		}
	}
	if after := len(w.env.Emulator.Requests()); after != before {
		t.Errorf("the console's reads changed the request log: %d calls, then %d", before, after)
	}
	d := slb.CreateDescribeLoadBalancersRequest()
	d.RegionId = w.env.Region
	lbs, err := w.env.SLB(t).DescribeLoadBalancers(d)
	emulatortest.NoError(t, err)
	if lbs.TotalCount != 1 {
		t.Errorf("load balancers after the console's visits: %d, want 1", lbs.TotalCount)
	}
}

// TestRequestLogFilters: the form's filters select calls by action, by
// product and by outcome.
func TestRequestLogFilters(t *testing.T) {
	t.Parallel()
	w := buildWorld(t)
	bad := vpc.CreateDescribeVSwitchAttributesRequest()
	bad.RegionId, bad.VSwitchId = w.env.Region, "vsw-missing"
	if _, err := w.env.VPC(t).DescribeVSwitchAttributes(bad); err == nil {
		t.Fatal("DescribeVSwitchAttributes of a missing vSwitch succeeded")
	}
	rowsOf := func(query string) map[string]int {
		t.Helper()
		status, page := get(t, w.env, "/_emulator/ui/requests?"+query)
		if status != http.StatusOK {
			t.Fatalf("requests?%s: %d", query, status)
		}
		out := map[string]int{}
		for _, part := range strings.Split(page, `data-action="`)[1:] {
			out[part[:strings.IndexByte(part, '"')]]++
		}
		return out
	}
	if got := rowsOf("action=CreateVServerGroup"); !reflect.DeepEqual(got, map[string]int{"CreateVServerGroup": 1}) {
		t.Errorf("action filter: %v", got)
	}
	if got := rowsOf("errors=1&product=vpc"); got["DescribeVSwitchAttributes"] != 1 || got["CreateVpc"] != 0 {
		t.Errorf("errors-only vpc filter: %v", got)
	}
	if got := rowsOf("product=nlb"); got["CreateVpc"] != 0 || got["CreateServerGroup"] == 0 {
		t.Errorf("product filter: %v", got)
	}
	if got := rowsOf("since=1h&accessKeyId=" + emulatortest.AccessKeyID); got["RunInstances"] != 3 {
		t.Errorf("since and access key filter: %v", got)
	}
	if got := rowsOf("accessKeyId=LTAIsomeoneelse"); len(got) != 0 {
		t.Errorf("another key's calls: %v", got)
	}
	if _, page := get(t, w.env, "/_emulator/ui/requests?since=yesterday"); !strings.Contains(page, "neither a duration") {
		t.Errorf("a bad since is not reported")
	}
}

// TestPagesEscape: names chosen by API callers are escaped, not markup.
func TestPagesEscape(t *testing.T) {
	t.Parallel()
	env := emulatortest.Start(t)
	cv := vpc.CreateCreateVpcRequest()
	cv.RegionId, cv.CidrBlock, cv.VpcName = env.Region, "10.0.0.0/8", `<script>alert(1)</script>`
	cv.Description = "x"
	_, err := env.VPC(t).CreateVpc(cv)
	emulatortest.NoError(t, err)
	_, page := get(t, env, "/_emulator/ui/region/"+env.Region)
	if strings.Contains(page, "<script>alert(1)") || !strings.Contains(page, "&lt;script&gt;alert(1)") {
		t.Errorf("the VPC name is not escaped")
	}
	if status, _ := get(t, env, "/_emulator/ui/region/xx-nowhere-1"); status != http.StatusNotFound {
		t.Errorf("unknown region: %d, want 404", status)
	}
}

// TestFaultsPage lists the active fault and throttle rules.
func TestFaultsPage(t *testing.T) {
	t.Parallel()
	env := emulatortest.Start(t)
	f, err := env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "CreateLoadBalancer", Error: &gateway.FaultError{Code: "ServiceUnavailable"}, Count: 2})
	emulatortest.NoError(t, err)
	th, err := env.Emulator.Gateway.AddThrottle(gateway.ThrottleRule{Scope: gateway.ThrottleScopeAPI, Product: "ecs", QPS: 5})
	emulatortest.NoError(t, err)
	_, page := get(t, env, "/_emulator/ui/faults")
	for _, want := range []string{f.ID, "ServiceUnavailable (503)", th.ID, "Fault rules (1)", "Throttle rules (1)"} {
		if !strings.Contains(page, want) {
			t.Errorf("faults page lacks %q", want)
		}
	}
}
