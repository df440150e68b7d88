package nlb_test

import (
	"net/http"
	"testing"

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
