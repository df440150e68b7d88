package config

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// slowInput is how long one input may take before it counts as a hang.
const slowInput = 5 * time.Second

// maxErrorBytes bounds every error the loader returns: they are logged
// and must name the field without replaying a huge value.
const maxErrorBytes = 1024

// FuzzParse: any file either parses or fails with a bounded error, never
// panics; a parsed file is deterministic, its warnings sorted, and it
// survives a JSON round trip unchanged and without warnings.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"Global:\n  clusterID: c-abc\n  region: cn-hangzhou\n  vpcid: vpc-1\n",
		`{"Global":{"clusterID":"c","routeTableIDs":"vtb-a,vtb-b","featureGates":"IPv6DualStack=false"}}`,
		"Global:\n  serviceMaxConcurrentReconciles: many\n",
		"Global:\n  accessKeyID: QUs=\n  accessKeySecret: c2VjcmV0\n",
		"Other: 1\nGlobal:\n  unknownKey: x\n",
		"Global: [1, 2]\n",
		"- a\n- b\n",
		"Global:\n  vswitchid: 'cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2'\n  disablePublicSLB: true\n",
		"\xff\xfe",
		"Global:\n  privateZoneRecordTTL: 1e400\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A slow input is a finding too: the fuzzer would only stall on it.
		watchdog := time.AfterFunc(slowInput, func() { panic(fmt.Sprintf("Parse took over %v on %q", slowInput, data)) })
		defer watchdog.Stop()
		file, warnings, err := Parse(data)
		if err != nil {
			if n := len(err.Error()); n > maxErrorBytes {
				t.Fatalf("error of %d bytes: %.200s…", n, err.Error())
			}
			return
		}
		again, warnings2, err := Parse(data)
		if err != nil || !reflect.DeepEqual(file, again) || !reflect.DeepEqual(warnings, warnings2) {
			t.Fatalf("not deterministic: %+v %v / %+v %v %v", file, warnings, again, warnings2, err)
		}
		if !sort.StringsAreSorted(warnings) {
			t.Fatalf("warnings not sorted: %v", warnings)
		}
		js, err := json.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		back, w, err := Parse(js)
		if err != nil {
			t.Fatalf("round trip of %s: %v", js, err)
		}
		if len(w) > 0 {
			t.Fatalf("round trip of %s warns %v", js, w)
		}
		if !reflect.DeepEqual(file, back) {
			t.Fatalf("round trip changed the file:\n%+v\n%+v", file, back)
		}
	})
}

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

// FuzzBuildKeepsSecretsOut: whatever the other fields hold, the AccessKey
// secret (base64 in the file, as the existing CCM's) never appears in an
// error or in the printed Config, encoded or decoded, and errors stay
// bounded. A value counts as leaked when it shows in the output for the
// secret but not in the output for the same secret with every letter and
// digit rotated (same shape, same base64 validity), so text the messages
// carry anyway never counts.
func FuzzBuildKeepsSecretsOut(f *testing.F) {
	f.Add("QUtJRA==", "c3VwZXItc2VjcmV0LXZhbHVl", "vtb-a", "ecs", "IPv6DualStack=true", "HTTP", "ecs.example:8080")
	f.Add("QUtJRA==", "!!!not-base64-secret!!!", "", "", "", "", "")
	f.Add("not base64", "c2VjcmV0", "rt-1", "eni", "Nope=1", "ftp", "http://x/y")
	f.Add("", "c2VjcmV0c2VjcmV0", "vtb-1,,vtb-2", "ECS", "EndpointSlice=maybe", "https", "a b")
	f.Fuzz(func(t *testing.T, id, secret, tables, backend, gates, scheme, endpoint string) {
		build := func(secret string) string {
			file := &File{Global: Global{
				ClusterID: "c-fuzz", Region: "cn-hangzhou", VpcID: "vpc-fuzz",
				AccessKeyID: id, AccessKeySecret: secret, RouteTableIDs: tables, ServiceBackendType: backend,
				FeatureGates: gates, Scheme: scheme, ECSEndpoint: endpoint,
			}}
			cfg, err := Build(file, noEnv, nil, Options{})
			if err != nil {
				if len(err.Error()) > maxErrorBytes {
					t.Fatalf("error of %d bytes: %.200s…", len(err.Error()), err.Error())
				}
				var fe *FieldError
				if errors.As(err, &fe) && fe.Field == "" {
					t.Fatalf("a field error names no field: %v", err)
				}
				return err.Error()
			}
			out := fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg)
			if cfg.StaticCredentials != nil {
				out += fmt.Sprintf(" %v %+v", *cfg.StaticCredentials, cfg.StaticCredentials)
			}
			if js, err := json.Marshal(cfg); err == nil {
				out += string(js)
			}
			return out
		}
		out, control := build(secret), build(rotate(secret))
		risky := []string{secret}
		if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(secret)); err == nil {
			risky = append(risky, string(dec))
		}
		for _, r := range risky {
			if len(r) >= 6 && strings.Contains(out, r) && !strings.Contains(control, r) {
				t.Fatalf("the secret %q shows in %q", r, out)
			}
		}
	})
}

// rotate maps each ASCII letter and digit to another of its class.
func rotate(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		case r >= '0' && r <= '9':
			return '0' + (r-'0'+5)%10
		}
		return r
	}, s)
}
