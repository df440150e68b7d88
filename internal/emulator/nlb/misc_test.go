package nlb_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/alibabacloud-go/tea/tea"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
)

func TestTags(t *testing.T) {
	f := newFixture(t)
	lb := f.createLB(t, lbRequest("tagged"))
	sg := f.createSG(t, "grp", "vpc-a", "Instance", "TCP", false)
	lsn := f.createListener(t, lb, sg, "TCP", 80)

	tag := func(typ string, ids []string, tags ...nlb.TagResourcesTag) error {
		r := nlb.CreateTagResourcesRequest()
		r.ResourceType, r.ResourceId, r.Tag = typ, &ids, &tags
		_, err := f.c.TagResources(r)
		return err
	}
	noErr(t, tag("loadbalancer", []string{lb}, nlb.TagResourcesTag{Key: "env", Value: "prod"}, nlb.TagResourcesTag{Key: "team", Value: "a"}))
	noErr(t, tag("loadbalancer", []string{lb}, nlb.TagResourcesTag{Key: "env", Value: "staging"}))
	noErr(t, tag("servergroup", []string{sg}, nlb.TagResourcesTag{Key: "env", Value: "prod"}))
	noErr(t, tag("listener", []string{lsn}, nlb.TagResourcesTag{Key: "env", Value: "prod"}))
	if got := f.getLB(t, lb).Tags; len(got) != 2 || got[0].TagKey != "env" || got[0].TagValue != "staging" {
		t.Fatalf("LB tags: %+v", got)
	}

	list := func(typ string, ids []string, filter ...nlb.ListTagResourcesTag) []nlb.TagResultModelList {
		r := nlb.CreateListTagResourcesRequest()
		r.ResourceType = typ
		if len(ids) > 0 {
			r.ResourceId = &ids
		}
		if len(filter) > 0 {
			r.Tag = &filter
		}
		resp, err := f.c.ListTagResources(r)
		noErr(t, err)
		return resp.TagResources
	}
	rows := list("loadbalancer", []string{lb})
	if len(rows) != 2 || rows[0].ResourceId != lb || rows[0].ResourceType != "loadbalancer" || rows[1].TagKey != "team" || rows[1].TagValue != "a" {
		t.Fatalf("ListTagResources by id: %+v", rows)
	}
	if rows := list("servergroup", nil, nlb.ListTagResourcesTag{Key: "env", Value: "prod"}); len(rows) != 1 || rows[0].ResourceId != sg {
		t.Fatalf("ListTagResources by tag: %+v", rows)
	}
	if rows := list("listener", []string{lsn}); len(rows) != 1 || rows[0].TagKey != "env" {
		t.Fatalf("listener tags: %+v", rows)
	}

	u := nlb.CreateUntagResourcesRequest()
	u.ResourceType, u.ResourceId, u.TagKey = "loadbalancer", &[]string{lb}, &[]string{"env"}
	_, err := f.c.UntagResources(u)
	noErr(t, err)
	if rows := list("loadbalancer", []string{lb}); len(rows) != 1 || rows[0].TagKey != "team" {
		t.Fatalf("after untag: %+v", rows)
	}
	all := nlb.CreateUntagResourcesRequest()
	all.ResourceType, all.ResourceId, all.All = "servergroup", &[]string{sg}, "true"
	_, err = f.c.UntagResources(all)
	noErr(t, err)
	if rows := list("servergroup", []string{sg}); len(rows) != 0 {
		t.Fatalf("after untag all: %+v", rows)
	}

	many := make([]nlb.TagResourcesTag, 0, 21)
	for i := 0; i < 21; i++ {
		many = append(many, nlb.TagResourcesTag{Key: "k" + string(rune('a'+i)), Value: "v"})
	}
	cases := []struct {
		name   string
		err    error
		code   string
		status int
	}{
		{"unknown lb", tag("loadbalancer", []string{"nlb-none"}, nlb.TagResourcesTag{Key: "a", Value: "b"}), "ResourceNotFound.loadBalancer", 404},
		{"unknown listener", tag("listener", []string{"lsn-none"}, nlb.TagResourcesTag{Key: "a", Value: "b"}), "ResourceNotFound.listener", 404},
		{"bad type", tag("instance", []string{lb}, nlb.TagResourcesTag{Key: "a", Value: "b"}), "InvalidParameter", 400},
		{"no tags", tag("loadbalancer", []string{lb}), "MissingParameter", 400},
		{"too many tags", tag("loadbalancer", []string{lb}, many...), "QuotaExceeded.TagsNum", 400},
		{"reserved key", tag("loadbalancer", []string{lb}, nlb.TagResourcesTag{Key: "acs:x", Value: "b"}), "IllegalParam.TagKey", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, tc.err, tc.code, tc.status) })
	}
	r := nlb.CreateListTagResourcesRequest()
	r.ResourceType = "loadbalancer"
	_, err = f.c.ListTagResources(r)
	wantErr(t, err, "MissingParameter", http.StatusBadRequest)
}

func TestDescribeZonesAndRegions(t *testing.T) {
	f := newFixture(t)
	z, err := f.c.DescribeZones(nlb.CreateDescribeZonesRequest())
	noErr(t, err)
	var zones []string
	for _, zone := range z.Zones {
		zones = append(zones, zone.ZoneId)
	}
	if !strings.Contains(strings.Join(zones, ","), zoneH) || len(zones) < 2 {
		t.Fatalf("zones: %v", zones)
	}
	r, err := f.c.DescribeRegions(nlb.CreateDescribeRegionsRequest())
	noErr(t, err)
	found := false
	for _, reg := range r.Regions {
		if reg.RegionId == "cn-hangzhou" {
			found = reg.RegionEndpoint == "nlb.cn-hangzhou.aliyuncs.com" && reg.LocalName != ""
		}
	}
	if !found {
		t.Fatalf("regions: %+v", r.Regions)
	}
}

// TestSignatureV3 drives NLB with the darabonba generic client, which signs
// with ACS3-HMAC-SHA256 and sends the parameters in the form body, as the
// existing CCM does.
func TestSignatureV3(t *testing.T) {
	f := newFixture(t)
	call := func(action string, body map[string]any) (map[string]any, error) {
		return f.env.CallV3(t, action, "2022-04-30", nil, body)
	}
	out, err := call("CreateLoadBalancer", map[string]any{
		"AddressType": "Intranet", "VpcId": "vpc-a", "LoadBalancerName": "v3",
		"ZoneMappings": []map[string]any{{"ZoneId": zoneH, "VSwitchId": "vsw-h"}, {"ZoneId": zoneI, "VSwitchId": "vsw-i"}},
	})
	noErr(t, err)
	body, _ := out["body"].(map[string]any)
	id, _ := body["LoadbalancerId"].(string)
	if !strings.HasPrefix(id, "nlb-") {
		t.Fatalf("V3 CreateLoadBalancer: %v", out)
	}
	out, err = call("GetLoadBalancerAttribute", map[string]any{"LoadBalancerId": id})
	noErr(t, err)
	body, _ = out["body"].(map[string]any)
	if body["LoadBalancerName"] != "v3" || body["VpcId"] != "vpc-a" {
		t.Fatalf("V3 GetLoadBalancerAttribute: %v", body)
	}
	_, err = call("GetLoadBalancerAttribute", map[string]any{"LoadBalancerId": "nlb-none"})
	var se *tea.SDKError
	if !asSDKError(err, &se) || tea.IntValue(se.StatusCode) != http.StatusNotFound || tea.StringValue(se.Code) != "ResourceNotFound.loadBalancer" {
		t.Fatalf("V3 not found: %v", err)
	}
}

func asSDKError(err error, target **tea.SDKError) bool {
	se, ok := err.(*tea.SDKError)
	if ok {
		*target = se
	}
	return ok
}

// TestStateRoundTrip checks that the NLB state survives the JSON dump and
// restore that --state persistence relies on.
func TestStateRoundTrip(t *testing.T) {
	f := newFixture(t)
	lb := f.createLB(t, lbRequest("kept"))
	sg := f.createSG(t, "grp", "vpc-a", "Instance", "TCP", false)
	lsn := f.createListener(t, lb, sg, "TCP", 80)
	st := f.env.Emulator.Store
	dump, err := st.Dump()
	noErr(t, err)
	noErr(t, st.Reset())
	g := nlb.CreateGetLoadBalancerAttributeRequest()
	g.LoadBalancerId = lb
	_, err = f.c.GetLoadBalancerAttribute(g)
	wantErr(t, err, "ResourceNotFound.loadBalancer", http.StatusNotFound)
	noErr(t, st.Restore(dump))
	if got := f.getLB(t, lb); got.LoadBalancerName != "kept" || got.LoadBalancerStatus != "Active" {
		t.Fatalf("restored LB: %+v", got)
	}
	if got := f.getListener(t, lsn); got.ServerGroupId != sg || got.ListenerStatus != "Running" {
		t.Fatalf("restored listener: %+v", got)
	}
}
