package annotations_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// TestNotApplied: an annotation the registry marks NotApplied is reported
// when a Service sets it to anything but its default, under the key as
// written, only for the kind it is not applied to (backend-ip-version: CLB,
// not NLB); the default, an absent or empty value and an invalid value
// (reported as invalid instead) are not.
func TestNotApplied(t *testing.T) {
	for _, tc := range []struct {
		name string
		nlb  bool
		ann  map[string]string
		want []string
	}{
		{"absent", false, nil, nil},
		{"default", false, map[string]string{pre + "backend-ip-version": "ipv4"}, nil},
		{"default any case", true, map[string]string{pre + "backend-ip-version": "IPv4", pre + "zone-maps": zones}, nil},
		{"empty", false, map[string]string{pre + "backend-ip-version": " "}, nil},
		{"ipv6 CLB", false, map[string]string{pre + "backend-ip-version": "ipv6"}, []string{pre + `backend-ip-version: "ipv6" is not applied`}},
		{"dualstack CLB, legacy key", false, map[string]string{legacy + "backend-ip-version": "dualstack"}, []string{legacy + `backend-ip-version: "dualstack" is not applied`}},
		{"dualstack NLB is applied", true, map[string]string{legacy + "backend-ip-version": "dualstack", pre + "zone-maps": zones}, nil},
		{"ipv6 NLB is applied", true, map[string]string{pre + "backend-ip-version": "ipv6", pre + "zone-maps": zones}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := service(tc.ann)
			owner := annotations.OwnerCLB
			if tc.nlb {
				svc, owner = nlbService(tc.ann), annotations.OwnerNLB
			}
			s, err := annotations.Parse(svc, annotations.Defaults{Owner: owner})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range s.NotApplied() {
				got = append(got, m[:strings.Index(m, " is not applied")+len(" is not applied")])
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("NotApplied %q, want %q", s.NotApplied(), tc.want)
			}
		})
	}
}

// TestNotAppliedIsDocumented: every NotApplied annotation says so in the
// generated reference, so the docs never advertise what is ignored: in its
// own row, which for a key both kinds read with different behaviour is the
// row of the kind's section (backend-ip-version: the CLB row, not NLB's).
func TestNotAppliedIsDocumented(t *testing.T) {
	docs := string(annotations.Docs())
	for _, a := range annotations.Registry {
		if a.NotApplied == "" {
			continue
		}
		found := false
		for _, line := range strings.Split(docs, "\n") {
			if strings.HasPrefix(line, "| `"+a.Suffix()+"` ") && strings.Contains(line, a.NotApplied) {
				found = true
				if !strings.Contains(line, "**Not applied**") {
					t.Errorf("%s is not applied but its row says nothing: %s", a.Suffix(), line)
				}
			}
		}
		if !found {
			t.Errorf("no row for %s says why it is not applied (%s)", a.Suffix(), a.NotApplied)
		}
	}
}
