package service

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCertificateGrantsOfTheCloudConfig: cloud-config certificateGrants
// grant a certificate whatever its tags (CLB) and are the only grant of
// one whose tags cannot be read (NLB); a refusal says exactly what to add
// to the cloud config, keeping the namespaces granted already.
func TestCertificateGrantsOfTheCloudConfig(t *testing.T) {
	req := &Request{Service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"}}}
	cfg := CertificateGrants{"c-cfg": {"team-a"}, "c-all": {AllNamespaces}, "c-b": {"team-b"}}
	tagged := map[string]Certificate{
		"c-tag": {ID: "c-tag", Found: true, Tags: map[string]string{TagReusable: "team-a"}},
		"c-b":   {ID: "c-b", Found: true, Tags: map[string]string{TagReusable: "team-b"}},
	}
	for _, tc := range []struct {
		name     string
		ids      []string
		policy   string
		readable bool
		refuse   string
		says     []string
	}{
		{"CLB: granted by the config, not shown by the listing", []string{"c-cfg", "c-all"}, ReuseTagged, true, "", nil},
		{"CLB: granted by the tag", []string{"c-tag"}, ReuseTagged, true, "", nil},
		{"CLB: neither", []string{"c-b"}, ReuseTagged, true, "c-b", []string{
			"tag kubernetes.reusable=team-a", `certificateGrants: {"c-b": "team-b,team-a"}`, "loadBalancerReuse: tagged"}},
		{"NLB: granted by the config", []string{"c-cfg", "c-all"}, ReuseTagged, false, "", nil},
		{"NLB: a tag is not read", []string{"c-tag"}, ReuseTagged, false, "c-tag", []string{
			`certificateGrants: {"c-tag": "team-a"} in the Global section`, "SSL Certificates Service", "cacert-id"}},
		{"NLB: another namespace's", []string{"c-all", "c-b"}, ReuseNone, false, "c-b", []string{`{"c-b": "team-b,team-a"}`, "loadBalancerReuse: none"}},
		{"NLB under any", []string{"c-b", "c-tag"}, ReuseAny, false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			named := map[string][]string{}
			for _, id := range tc.ids {
				named[id] = []string{"cert-id", "cacert-id"}
			}
			var certs map[string]Certificate
			if tc.readable {
				certs = tagged
			}
			err := CheckCertificates(certs, named, req, Grants{Policy: tc.policy, Certificates: cfg}, tc.readable)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var r *RefusedError
			if !errors.As(err, &r) || r.Reason != EventCertificateNotGranted {
				t.Fatalf("CheckCertificates = %v, want a RefusedError %s", err, EventCertificateNotGranted)
			}
			for _, s := range append(tc.says, "certificate "+tc.refuse+" named by cert-id, cacert-id", "namespace team-a") {
				if !strings.Contains(r.Message, s) {
					t.Errorf("message %q does not say %q", r.Message, s)
				}
			}
		})
	}
	if (CertificateGrants{"c": {AllNamespaces}}).Allows("c", "") {
		t.Error("a grant to every namespace allowed an empty namespace")
	}
}
