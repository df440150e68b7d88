package conformance_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"
)

// xmlActions are the reads the CCM makes (and the SDKs' models describe):
// each is asked again with Format=XML, which the legacy SDK decodes with
// encoding/xml into the same model, and must decode to what the JSON
// answer decodes to.
var xmlActions = []string{
	"slb:DescribeLoadBalancers", "slb:DescribeLoadBalancerAttribute", "slb:DescribeLoadBalancerListeners",
	"slb:DescribeLoadBalancerTCPListenerAttribute", "slb:DescribeVServerGroups", "slb:DescribeVServerGroupAttribute",
	"slb:DescribeHealthStatus", "slb:DescribeTags",
	"nlb:ListLoadBalancers", "nlb:GetLoadBalancerAttribute", "nlb:ListListeners", "nlb:ListServerGroups",
	"nlb:ListServerGroupServers", "nlb:GetJobStatus", "nlb:ListTagResources",
	"ecs:DescribeInstances", "ecs:DescribeNetworkInterfaces", "ecs:DescribeSecurityGroups",
	"vpc:DescribeRouteTableList", "vpc:DescribeRouteEntryList", "vpc:DescribeVpcs", "vpc:DescribeVSwitches",
}

// TestXMLAnswersDecodeAsJSONOnes asks the scenarios' reads in both
// formats through the SDK's typed requests and compares the decoded
// models.
func TestXMLAnswersDecodeAsJSONOnes(t *testing.T) {
	env := newWorld(t)
	r := &runner{t: t, vars: map[string]string{}, results: map[string]*tally{}, codes: map[string]map[string]bool{},
		answers: map[string][]byte{}, asked: map[string]map[string]string{},
		clients: map[string]*sdk.Client{"ecs": &env.ECS(t).Client, "vpc": &env.VPC(t).Client, "slb": &env.SLB(t).Client, "nlb": &env.NLB(t).Client}}
	compared := map[string]int{}
	r.after = func(product, action string, params map[string]string) {
		key := product + ":" + action
		if !slices.Contains(xmlActions, key) {
			return
		}
		compared[key]++
		asJSON := askIn(t, r.clients[product], product, action, params, "JSON")
		asXML := askIn(t, r.clients[product], product, action, params, "XML")
		if !reflect.DeepEqual(asJSON, asXML) {
			j, _ := json.Marshal(asJSON)
			x, _ := json.Marshal(asXML)
			t.Errorf("%s: XML decodes differently:\n json %s\n  xml %s", key, j, x)
		}
	}
	for _, sc := range scenarios(t) {
		r.run(sc)
	}
	for _, key := range xmlActions {
		if compared[key] == 0 {
			t.Errorf("the scenarios make no successful %s call", key)
		}
	}
	t.Logf("compared %d answers of %d actions in JSON and XML", sum(compared), len(compared))
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// askIn calls action in format and returns its decoded model, normalized:
// RequestId dropped, and empty lists and objects as absent (XML cannot
// tell an empty list from a missing one).
func askIn(t *testing.T, c *sdk.Client, product, action string, params map[string]string, format string) any {
	t.Helper()
	mdl, ok := sdkModels[product][action]
	if !ok {
		mdl = extraModels[product][action]
	}
	req, resp := mdl.req(), mdl.resp()
	reflect.ValueOf(req).Elem().FieldByName("AcceptFormat").SetString(format)
	target := req.GetQueryParams()
	if product == "nlb" {
		target = req.GetFormParams()
	}
	for k, v := range params {
		target[k] = v
	}
	if err := c.DoAction(req, resp); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return normalize(t, resp)
}

func normalize(t *testing.T, resp responses.AcsResponse) any {
	t.Helper()
	data, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	var prune func(any) any
	prune = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if k == "RequestId" {
					continue
				}
				if p := prune(e); p != nil {
					out[k] = p
				}
			}
			if len(out) == 0 {
				return nil
			}
			return out
		case []any:
			var out []any
			for _, e := range x {
				out = append(out, prune(e))
			}
			if len(out) == 0 {
				return nil
			}
			return out
		}
		return v
	}
	return prune(v)
}
