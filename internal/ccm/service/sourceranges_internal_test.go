package service

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseSourceRanges(t *testing.T) {
	for _, tc := range []struct {
		name       string
		spec       []string
		annotation string
		want       []string
		invalid    []string
		empty      bool
	}{
		{name: "none", empty: true},
		{name: "masked, deduplicated, sorted", spec: []string{"192.168.0.1/32", "10.1.2.3/8", "10.0.0.0/8"}, want: []string{"10.0.0.0/8", "192.168.0.1/32"}},
		{name: "everything means no restriction", spec: []string{"0.0.0.0/0"}, empty: true},
		{name: "everything next to a range restricts", spec: []string{"0.0.0.0/0", "10.0.0.0/8"}, want: []string{"0.0.0.0/0", "10.0.0.0/8"}},
		{name: "IPv6 kept", spec: []string{"2001:db8::1/32", "10.0.0.0/8"}, want: []string{"10.0.0.0/8", "2001:db8::/32"}},
		{name: "invalid elements named", spec: []string{"10.0.0.0/8", "010.1.0.0/16", "office"}, want: []string{"10.0.0.0/8"}, invalid: []string{"010.1.0.0/16", "office"}},
		{name: "a bare address is not a range", spec: []string{"10.0.0.1"}, invalid: []string{"10.0.0.1"}},
		{name: "annotation when the spec is empty", annotation: " 10.0.0.0/8 , 172.16.0.0/12", want: []string{"10.0.0.0/8", "172.16.0.0/12"}},
		{name: "spec wins over the annotation", spec: []string{"10.0.0.0/8"}, annotation: "172.16.0.0/12", want: []string{"10.0.0.0/8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
			svc.Spec.LoadBalancerSourceRanges = tc.spec
			if tc.annotation != "" {
				svc.Annotations[SourceRangesAnnotation] = tc.annotation
			}
			got := ParseSourceRanges(svc)
			if !slices.Equal(got.Strings(), tc.want) && !(len(got.Prefixes) == 0 && len(tc.want) == 0) {
				t.Errorf("prefixes %v, want %v", got.Strings(), tc.want)
			}
			if !slices.Equal(got.Invalid, tc.invalid) {
				t.Errorf("invalid %v, want %v", got.Invalid, tc.invalid)
			}
			if got.Empty() != tc.empty || got.Frozen() != (len(tc.invalid) > 0) {
				t.Errorf("Empty %t Frozen %t", got.Empty(), got.Frozen())
			}
			if got.Frozen() {
				w := got.Warning()
				for _, bad := range tc.invalid {
					if w.Reason != EventInvalidSourceRanges || !strings.Contains(w.Message, `"`+bad+`"`) {
						t.Errorf("warning %+v does not name %q", w, bad)
					}
				}
			}
		})
	}
}
