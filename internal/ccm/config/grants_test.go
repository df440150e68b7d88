package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestCertificateGrants: Global.certificateGrants maps certificate ids to
// namespaces, as a comma-separated string or a list, "*" for all; a bad
// entry is refused naming the field, the certificate and what is accepted.
func TestCertificateGrants(t *testing.T) {
	base := "Global:\n  clusterID: c\n"
	for _, tc := range []struct {
		name, file string
		want       map[string][]string
	}{
		{"none", base, nil},
		{"string, list and every namespace", base + "  certificateGrants:\n    123-cn-hangzhou: \"team-a, team-b,team-a\"\n    456-cn-hangzhou: [team-c]\n    1231579085529123_166f8204689_1714763408_709848747: \"*\"\n",
			map[string][]string{"123-cn-hangzhou": {"team-a", "team-b"}, "456-cn-hangzhou": {"team-c"}, "1231579085529123_166f8204689_1714763408_709848747": {"*"}}},
		{"JSON", `{"Global": {"clusterID": "c", "CertificateGrants": {"789": ["default", "*"]}}}`, map[string][]string{"789": {"default", "*"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, warnings, err := Parse([]byte(tc.file))
			if err != nil || len(warnings) > 0 {
				t.Fatalf("Parse: %v, warnings %v", err, warnings)
			}
			c, err := Build(f, envOf(nil), md, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.CertificateGrants, tc.want) {
				t.Errorf("CertificateGrants = %v, want %v", c.CertificateGrants, tc.want)
			}
		})
	}
}

func TestCertificateGrantsRefused(t *testing.T) {
	base := "Global:\n  clusterID: c\n  certificateGrants:\n"
	for _, tc := range []struct {
		name, entries, field string
		says                 []string
	}{
		{"not a mapping", "    - team-a\n", "Global.certificateGrants", []string{"mapping", "array"}},
		{"a bad id", "    \"cert id\": team-a\n", "Global.certificateGrants", []string{`"cert id"`, "certificate id"}},
		{"a bad namespace", "    123-cn-hangzhou: team-a,Team_B\n", "Global.certificateGrants[123-cn-hangzhou]", []string{`"Team_B"`, "namespace"}},
		{"empty", "    123-cn-hangzhou: \" , \"\n", "Global.certificateGrants[123-cn-hangzhou]", []string{"no namespace", `"*"`}},
		{"a boolean", "    123-cn-hangzhou: true\n", "Global.certificateGrants[123-cn-hangzhou]", []string{"boolean", `"*"`}},
		{"true as a string", "    123-cn-hangzhou: \"true\"\n", "Global.certificateGrants[123-cn-hangzhou]", []string{`"*"`}},
		{"a mapping", "    123-cn-hangzhou: {team-a: true}\n", "Global.certificateGrants[123-cn-hangzhou]", []string{"mapping"}},
		{"a number in a list", "    123-cn-hangzhou: [team-a, 7]\n", "Global.certificateGrants[123-cn-hangzhou]", []string{"non-string"}},
		{"listed twice", "    \"123\": team-a\n    \" 123\": team-b\n", "Global.certificateGrants", []string{"twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := Parse([]byte(base + tc.entries))
			if err == nil {
				_, err = Build(f, envOf(nil), md, Options{})
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("error %v, want a FieldError on %s", err, tc.field)
			}
			for _, s := range tc.says {
				if !strings.Contains(fe.Error(), s) {
					t.Errorf("%q does not say %q", fe.Error(), s)
				}
			}
		})
	}
}
