package plan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

func sample() *Report {
	r := &Report{}
	r.add(Item{Kind: "Service", Name: "default/web", Cloud: []CloudWrite{
		{Product: "slb", Action: "CreateLoadBalancer", Fields: map[string]string{"LoadBalancerName": "web", "AddressType": "internet"}, Creates: "<new LoadBalancer>"},
		{Product: "slb", Action: "SetLoadBalancerName", Fields: map[string]string{"LoadBalancerId": "lb-1", "LoadBalancerName": "web renamed"}},
	}, Kubernetes: []KubeWrite{{Verb: "PATCH", Path: "/api/v1/namespaces/default/services/web", Body: `{"metadata":{}}`}},
		Warnings: []string{"ImmutableAttributeChanged: address-type"}})
	r.add(Item{Kind: "Service", Name: "default/quiet"})
	r.add(Item{Kind: "Node", Name: "node-1", Error: "boom"})
	return r
}

// TestRenderTable: one line per write under its item, "no writes" for an
// item without any, warnings and errors on their own lines, fields in key
// order (quoted when they hold spaces), the create's placeholder after
// them, and the summary.
func TestRenderTable(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, sample(), FormatTable); err != nil {
		t.Fatal(err)
	}
	want := `KIND     NAME           TARGET      ACTION                                         FIELDS
Service  default/web    slb         CreateLoadBalancer                             AddressType=internet LoadBalancerName=web => <new LoadBalancer>
Service  default/web    slb         SetLoadBalancerName                            LoadBalancerId=lb-1 LoadBalancerName="web renamed"
Service  default/web    kubernetes  PATCH /api/v1/namespaces/default/services/web  {"metadata":{}}
Service  default/web    -           warning                                        ImmutableAttributeChanged: address-type
Service  default/quiet  -           no writes                                      
Node     node-1         -           error                                          boom

2 cloud writes, 1 Kubernetes writes over 3 items; 1 items could not be planned.
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

// TestRenderJSON: the JSON is the Report, round-trip, with the counts.
func TestRenderJSON(t *testing.T) {
	var b bytes.Buffer
	r := sample()
	if err := Render(&b, r, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, r) {
		t.Errorf("round trip:\n%+v\nwant:\n%+v", back, *r)
	}
	for _, key := range []string{`"cloudWrites": 2`, `"kubernetesWrites": 1`, `"errors": 1`, `"creates": "\u003cnew LoadBalancer\u003e"`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("JSON lacks %s:\n%s", key, b.String())
		}
	}
	if err := Render(&b, r, "yaml"); err == nil {
		t.Error("an unknown format was accepted")
	}
}

// TestExitCode: errors win, then writes of either kind.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		r    Report
		want int
	}{
		{Report{}, ExitNoWrites},
		{Report{KubeWrites: 1}, ExitNoWrites},
		{Report{CloudWrites: 1}, ExitWrites},
		{Report{CloudWrites: 1, Errors: 1}, ExitError},
	} {
		if got := tc.r.ExitCode(); got != tc.want {
			t.Errorf("%+v: exit %d, want %d", tc.r, got, tc.want)
		}
	}
	if s := summary(&Report{Items: []Item{{}}}); !strings.HasSuffix(s, "nothing would be written.") {
		t.Errorf("clean summary %q", s)
	}
}

// TestSplitEntries: a batch route write becomes one field set per entry,
// in entry order (10 after 9), each with the shared parameters.
func TestSplitEntries(t *testing.T) {
	params := map[string]string{"RegionIdX": "r"}
	for _, n := range []string{"1", "2", "9", "10"} {
		params["RouteEntries."+n+".DstCidrBlock"] = "10.0." + n + ".0/24"
	}
	got := SplitEntries(params)
	if len(got) != 4 || got[2]["DstCidrBlock"] != "10.0.9.0/24" || got[3]["DstCidrBlock"] != "10.0.10.0/24" || got[3]["RegionIdX"] != "r" {
		t.Errorf("split: %v", got)
	}
	if one := SplitEntries(map[string]string{"RouteEntryId": "rte-1"}); len(one) != 1 || one[0]["RouteEntryId"] != "rte-1" {
		t.Errorf("a single-entry write: %v", one)
	}
}

// TestByNode: route writes are listed under the Node their Description
// names, else the Node of their next hop, else an unknown-node item.
func TestByNode(t *testing.T) {
	o := Options{ClusterID: "c-1", NodeOfInstance: func(id string) string {
		if id == "i-2" {
			return "node-2"
		}
		return ""
	}}
	items := o.byNode(nil, []KubeWrite{{Verb: "PATCH", Path: "/api/v1/nodes/node-1/status"}}, nil)
	if len(items) != 1 || items[0].Name != "node-1" || len(items[0].Kubernetes) != 1 {
		t.Errorf("a Node condition write: %+v", items)
	}
	ws := o.byNode(recorded(map[string]string{
		"RouteEntries.1.Description": "k8s/c-1/node-1", "RouteEntries.1.NextHop": "i-1",
		"RouteEntries.2.Description": "", "RouteEntries.2.NextHop": "i-2",
		"RouteEntries.3.Description": "k8s/other/node-9", "RouteEntries.3.NextHop": "i-9",
	}), nil, nil)
	var got []string
	for _, it := range ws {
		got = append(got, it.Name)
	}
	if want := []string{"(unknown node)", "node-1", "node-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("items %v, want %v", got, want)
	}
}

func recorded(params map[string]string) []cloud.RecordedWrite {
	return []cloud.RecordedWrite{{Product: cloud.VPC, Action: "CreateRouteEntries", Params: params}}
}

// TestRenderTableQuotesNonPrintable: a value with a terminal escape
// sequence, a line break or a tab (an annotation value in a request field,
// a Warning, an error) is printed quoted, so the bytes never reach the
// terminal; printable values, spaces included, are printed as they are.
func TestRenderTableQuotesNonPrintable(t *testing.T) {
	r := &Report{}
	esc := "web\x1b]0;owned\x07\x1b[2J"
	r.add(Item{Kind: "Service", Name: "default/web", Cloud: []CloudWrite{
		{Product: "slb", Action: "SetLoadBalancerName", Fields: map[string]string{"LoadBalancerId": "lb-1", "LoadBalancerName": esc}},
	}, Warnings: []string{"InvalidAnnotation: value \"a\nb\" of name", "ümlaut in a plain message"}, Error: "boom\x1b[31m"})
	var b bytes.Buffer
	if err := Render(&b, r, FormatTable); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"\x1b", "\x07", "a\nb"} {
		if strings.Contains(out, bad) {
			t.Errorf("table holds %q raw:\n%s", bad, out)
		}
	}
	for _, want := range []string{
		`LoadBalancerName="web\x1b]0;owned\a\x1b[2J"`,
		`"InvalidAnnotation: value \"a\nb\" of name"`,
		"ümlaut in a plain message",
		`"boom\x1b[31m"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %s:\n%s", want, out)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"plain value", "plain value"}, {"tab\there", `"tab\there"`}, {"bad\xffutf8", `"bad\xffutf8"`}, {"", ""},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestRenderJSONEscapesControls: the C1 controls and DEL the JSON encoder
// leaves raw are escaped too, and the document still decodes to the same
// values.
func TestRenderJSONEscapesControls(t *testing.T) {
	r := &Report{}
	r.add(Item{Kind: "Service", Name: "default/web", Warnings: []string{"csi\u009b2J del\x7f esc\x1b"}})
	var b bytes.Buffer
	if err := Render(&b, r, FormatJSON); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"\u009b", "\x7f", "\x1b"} {
		if strings.Contains(b.String(), bad) {
			t.Errorf("JSON holds %q raw: %q", bad, b.String())
		}
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, r) {
		t.Errorf("round trip:\n%+v\nwant:\n%+v", back, *r)
	}
}
