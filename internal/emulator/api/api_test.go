package api_test

import (
	"reflect"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// TestFingerprint pins the fingerprint format: products persist fingerprints
// in their state, so a change here would break ClientToken retries across a
// restart with --state.
func TestFingerprint(t *testing.T) {
	p := api.Params{
		"Action": "CreateVpc", "Version": "2016-04-28", "Signature": "x", "SignatureNonce": "n", "Timestamp": "t",
		"AccessKeyId": "ak", "Format": "JSON", "SignatureMethod": "HMAC-SHA1", "SignatureVersion": "1.0",
		"RegionId": "cn-hangzhou", "ClientToken": "tok", "VpcName": "a&b", "CidrBlock": "10.0.0.0/8",
	}
	for _, tc := range []struct {
		name   string
		ignore []string
		want   string
	}{
		{"ecs and vpc", nil, "CidrBlock=10.0.0.0/8&ClientToken=tok&RegionId=cn-hangzhou&VpcName=a&b&"},
		{"nlb", []string{"regionid"}, "CidrBlock=10.0.0.0/8&ClientToken=tok&VpcName=a&b&"},
		{"slb", []string{"clienttoken"}, "CidrBlock=10.0.0.0/8&RegionId=cn-hangzhou&VpcName=a&b&"},
	} {
		if got := api.Fingerprint(p, tc.ignore...); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestTags(t *testing.T) {
	have := []api.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}
	for _, tc := range []struct {
		filter []api.Tag
		want   bool
	}{
		{nil, true},
		{[]api.Tag{{Key: "a"}}, true},
		{[]api.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}, true},
		{[]api.Tag{{Key: "a", Value: "2"}}, false},
		{[]api.Tag{{Key: "c"}}, false},
	} {
		if got := api.MatchTags(have, tc.filter); got != tc.want {
			t.Errorf("MatchTags(%v) = %v, want %v", tc.filter, got, tc.want)
		}
	}
	merged := api.MergeTags(have, []api.Tag{{Key: "b", Value: "3"}, {Key: "c", Value: "4"}})
	if want := []api.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "3"}, {Key: "c", Value: "4"}}; !reflect.DeepEqual(merged, want) {
		t.Errorf("MergeTags = %v, want %v", merged, want)
	}
	if have[1].Value != "2" {
		t.Errorf("MergeTags changed its input: %v", have)
	}
	if m := api.MergeTags(nil, nil); m == nil || len(m) != 0 {
		t.Errorf("MergeTags(nil, nil) = %#v, want empty non-nil", m)
	}
	if got := api.TagsFromMap(map[string]string{"z": "1", "a": "2"}); !reflect.DeepEqual(got, []api.Tag{{Key: "a", Value: "2"}, {Key: "z", Value: "1"}}) {
		t.Errorf("TagsFromMap = %v", got)
	}
	if got := api.RemoveTags(have, []string{"a", "x"}, false); !reflect.DeepEqual(got, []api.Tag{{Key: "b", Value: "2"}}) {
		t.Errorf("RemoveTags = %v", got)
	}
	if got := api.RemoveTags(have, nil, true); got == nil || len(got) != 0 {
		t.Errorf("RemoveTags(all) = %#v, want empty non-nil", got)
	}
	if got := api.TagMaps(nil, "Key", "Value"); got == nil || len(got) != 0 {
		t.Errorf("TagMaps(nil) = %#v, want empty non-nil", got)
	}
	if got := api.TagMaps(have[:1], "TagKey", "TagValue"); !reflect.DeepEqual(got, []map[string]any{{"TagKey": "a", "TagValue": "1"}}) {
		t.Errorf("TagMaps = %v", got)
	}
}
