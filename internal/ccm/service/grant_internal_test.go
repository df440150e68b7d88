package service

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

func TestGranted(t *testing.T) {
	for _, tc := range []struct {
		name string
		tags map[string]string
		ns   string
		want bool
	}{
		{"no tags", nil, "team-a", false},
		{"list names it", map[string]string{"kubernetes.reusable": "team-a,team-b"}, "team-b", true},
		{"list with spaces", map[string]string{"kubernetes.reusable": " team-a , team-b "}, "team-b", true},
		{"list without it", map[string]string{"kubernetes.reusable": "team-a,team-b"}, "team-c", false},
		{"prefix is not a match", map[string]string{"kubernetes.reusable": "team-ab"}, "team-a", false},
		{"true grants all", map[string]string{"kubernetes.reusable": "true"}, "team-z", true},
		{"TRUE grants all", map[string]string{"kubernetes.reusable": "TRUE"}, "team-z", true},
		{"star grants all", map[string]string{"kubernetes.reusable": "*"}, "team-z", true},
		{"star in a list", map[string]string{"kubernetes.reusable": "team-a,*"}, "team-z", true},
		{"false grants nothing", map[string]string{"kubernetes.reusable": "false"}, "team-a", false},
		{"empty value", map[string]string{"kubernetes.reusable": ""}, "team-a", false},
		{"per-namespace key", map[string]string{"kubernetes.reusable.team-a": "true"}, "team-a", true},
		{"per-namespace key True", map[string]string{"kubernetes.reusable.team-a": "True"}, "team-a", true},
		{"per-namespace key of another", map[string]string{"kubernetes.reusable.team-b": "true"}, "team-a", false},
		{"per-namespace key false", map[string]string{"kubernetes.reusable.team-a": "false"}, "team-a", false},
		{"per-namespace key lists nothing", map[string]string{"kubernetes.reusable.team-a": "team-a"}, "team-a", false},
		{"keys are case-sensitive", map[string]string{"Kubernetes.Reusable": "true"}, "team-a", false},
		{"namespace is case-sensitive", map[string]string{"kubernetes.reusable": "Team-A"}, "team-a", false},
		{"no namespace", map[string]string{"kubernetes.reusable": "true"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Granted(tc.tags, tc.ns); got != tc.want {
				t.Errorf("Granted(%v, %q) = %v, want %v", tc.tags, tc.ns, got, tc.want)
			}
		})
	}
}

func TestCheckGroup(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", UID: "u-a"}}
	req := &Request{Service: svc, ClusterID: "c1", Identity: IdentityOf(svc, "c1")}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-b", UID: "u-b"}}
	for _, tc := range []struct {
		name   string
		g      Group
		policy string
		refuse bool
	}{
		{"user group, any", Group{ID: "g", Name: "mine"}, ReuseAny, false},
		{"user group, tagged, no grant", Group{ID: "g", Name: "mine"}, ReuseTagged, true},
		{"user group, none, no grant", Group{ID: "g", Name: "mine"}, ReuseNone, true},
		{"user group, tagged, granted", Group{ID: "g", Name: "mine", Tags: map[string]string{TagReusable: "team-a"}}, ReuseTagged, false},
		{"user group, tagged, granted to another", Group{ID: "g", Name: "mine", Tags: map[string]string{TagReusable: "team-b"}}, ReuseTagged, true},
		{"another Service's group by name, any", Group{ID: "g", Name: "k8s/30080/web/team-b/c1"}, ReuseAny, true},
		{"another Service's group by name, granted", Group{ID: "g", Name: "k8s/30080/web/team-b/c1", Tags: map[string]string{TagReusable: "*"}}, ReuseTagged, true},
		{"another cluster's group by name", Group{ID: "g", Name: "k8s/30080/web/team-a/c2"}, ReuseAny, true},
		{"another Service's group by description", Group{ID: "g", Name: "x", Description: "k8s/30080/web/team-b/c1"}, ReuseAny, true},
		{"another Service's group by tag", Group{ID: "g", Name: "x", Tags: map[string]string{naming.TagKeyDefaultName: naming.DefaultLBName(other)}}, ReuseAny, true},
		{"its own group by name, tagged", Group{ID: "g", Name: "k8s/30080/web/team-a/c1"}, ReuseTagged, false},
		{"its own group by tag, tagged", Group{ID: "g", Name: "x", Tags: map[string]string{naming.TagKeyDefaultName: naming.DefaultLBName(svc)}}, ReuseTagged, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckGroup(tc.g, "vServer group", "lb-1", req, tc.policy, naming.ParseCLB)
			if (err != nil) != tc.refuse {
				t.Fatalf("CheckGroup = %v, want refused %v", err, tc.refuse)
			}
			if err != nil {
				r, ok := err.(*RefusedError)
				if !ok || r.Reason != EventGroupNotGranted {
					t.Fatalf("CheckGroup = %#v, want a RefusedError %s", err, EventGroupNotGranted)
				}
			}
		})
	}
	err := CheckGroup(Group{ID: "rsp-1", Name: "mine"}, "vServer group", "lb-1", req, ReuseTagged, naming.ParseCLB)
	want := "vServer group rsp-1 on load balancer lb-1 is not granted to namespace team-a: an administrator grants it with the tag kubernetes.reusable=team-a (or kubernetes.reusable.team-a=true); the cluster's cloud config (loadBalancerReuse: tagged) requires it for vgroup-port"
	if err == nil || err.Error() != want {
		t.Errorf("message = %v\nwant      %s", err, want)
	}
}

func TestCheckCertificates(t *testing.T) {
	req := &Request{Service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"}}}
	certs := map[string]Certificate{
		"c-a":   {ID: "c-a", Found: true, Tags: map[string]string{TagReusable: "team-a"}},
		"c-b":   {ID: "c-b", Found: true, Tags: map[string]string{TagReusable: "team-b"}},
		"c-all": {ID: "c-all", Found: true, Tags: map[string]string{"kubernetes.reusable.team-a": "true"}},
	}
	named := func(ids ...string) map[string][]string {
		m := map[string][]string{}
		for _, id := range ids {
			m[id] = []string{"cert-id"}
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		ids    []string
		policy string
		refuse string
	}{
		{"granted", []string{"c-a", "c-all"}, ReuseTagged, ""},
		{"another namespace's", []string{"c-a", "c-b"}, ReuseTagged, "c-b"},
		{"missing", []string{"c-gone"}, ReuseTagged, "c-gone"},
		{"any checks nothing", []string{"c-b", "c-gone"}, ReuseAny, ""},
		{"empty policy checks nothing", []string{"c-b"}, "", ""},
		{"none checks", []string{"c-b"}, ReuseNone, "c-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckCertificates(certs, named(tc.ids...), req, Grants{Policy: tc.policy}, true)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			r, ok := err.(*RefusedError)
			if !ok || r.Reason != EventCertificateNotGranted {
				t.Fatalf("CheckCertificates = %v, want a RefusedError %s", err, EventCertificateNotGranted)
			}
			if want := "certificate " + tc.refuse + " named by cert-id"; len(r.Message) < len(want) || r.Message[:len(want)] != want {
				t.Errorf("message %q does not start %q", r.Message, want)
			}
		})
	}
}

// TestReuseGrantedPerNamespace: under tagged, the id annotation binds a
// load balancer granted to the Service's namespace (list, every namespace,
// per-namespace key) and refuses one granted to others, naming the tag.
func TestReuseGrantedPerNamespace(t *testing.T) {
	cloud := fakeFinder{
		"lb-ab":   {ID: "lb-ab", Tags: map[string]string{TagReusable: "team-a, team-b"}},
		"lb-all":  {ID: "lb-all", Tags: map[string]string{TagReusable: "*"}},
		"lb-keyb": {ID: "lb-keyb", Tags: map[string]string{TagReusablePrefix + "team-b": "true"}},
	}
	for _, tc := range []struct {
		ns, id  string
		refused bool
	}{
		{"team-a", "lb-ab", false}, {"team-b", "lb-ab", false}, {"team-c", "lb-ab", true},
		{"team-c", "lb-all", false},
		{"team-b", "lb-keyb", false}, {"team-a", "lb-keyb", true},
	} {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: tc.ns, UID: "u"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		req := &Request{Service: s, Settings: parsed(t, s, map[string]string{"id": tc.id}), ClusterID: "c1", Identity: IdentityOf(s, "c1")}
		_, _, err := Bind(context.Background(), cloud, ReuseRules{Policy: ReuseTagged}, req)
		if IsRefused(err) != tc.refused {
			t.Errorf("%s borrowing %s: err %v, refused want %v", tc.ns, tc.id, err, tc.refused)
		}
		if tc.refused && (err == nil || !strings.Contains(err.Error(), "kubernetes.reusable="+tc.ns) || !strings.Contains(err.Error(), "loadBalancerReuse: tagged")) {
			t.Errorf("%s borrowing %s: message %v does not name the tag to add and the mode", tc.ns, tc.id, err)
		}
	}
}
