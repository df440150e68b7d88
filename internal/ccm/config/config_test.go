package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type fakeMetadata map[string]string

func (m fakeMetadata) Get(path string) (string, error) {
	if v, ok := m[path]; ok {
		return v, nil
	}
	return "", fmt.Errorf("no %s", path)
}

func envOf(m map[string]string) Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

var md = fakeMetadata{"region-id": "cn-hangzhou", "vpc-id": "vpc-md", "zone-id": "cn-hangzhou-h", "vswitch-id": "vsw-md"}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestLoadAcceptsTheExistingCCMFormat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string
		env   map[string]string
		check func(t *testing.T, c *Config)
	}{
		{"only clusterID: everything else from metadata, defaults", "Global:\n  clusterID: c0\n", nil, func(t *testing.T, c *Config) {
			if c.Region != "cn-hangzhou" || c.VpcID != "vpc-md" || c.ClusterID != "c0" || c.KubernetesClusterTag != DefaultKubernetesClusterTag {
				t.Errorf("%+v", c)
			}
			if c.VSwitchIDs["cn-hangzhou-h"] != "vsw-md" || c.ServiceBackendType != "ecs" || c.Endpoints.Scheme != "HTTPS" {
				t.Errorf("%+v", c)
			}
		}},
		{"JSON with the existing CCM's spellings, keys in any case", `{"Global":{"ClusterId":"c1","VPCID":"vpc-x","region":"cn-beijing","vswitchid":"cn-beijing-a:vsw-a,cn-beijing-b:vsw-b","routeTableIDs":"vtb-1, vtb-2","accessKeyID":"` + b64("AKID") + `","accessKeySecret":"` + b64("SECRET") + `"}}`, nil, func(t *testing.T, c *Config) {
			if c.ClusterID != "c1" || c.VpcID != "vpc-x" || c.Region != "cn-beijing" || len(c.VSwitchIDs) != 2 || strings.Join(c.RouteTableIDs, ",") != "vtb-1,vtb-2" {
				t.Errorf("%+v", c)
			}
			if c.StaticCredentials == nil || c.StaticCredentials.ID != "AKID" || c.StaticCredentials.Secret.Reveal() != "SECRET" {
				t.Errorf("credentials %+v", c.StaticCredentials)
			}
		}},
		{"reuse policy", "Global:\n  clusterID: c\n  loadBalancerReuse: Tagged\n", nil, func(t *testing.T, c *Config) {
			if c.LoadBalancerReuse != "tagged" {
				t.Errorf("loadBalancerReuse %q", c.LoadBalancerReuse)
			}
		}},
		{"YAML", "Global:\n  clusterID: c2\n  featureGates: IPv6DualStack=true\n  serviceBackendType: eni\n", nil, func(t *testing.T, c *Config) {
			if c.ClusterID != "c2" || !c.FeatureGates["IPv6DualStack"] || !c.FeatureGates["EndpointSlice"] || c.ServiceBackendType != "eni" {
				t.Errorf("%+v", c)
			}
		}},
		{"environment overrides endpoints and credentials", "Global:\n  clusterID: c3\n  slbEndpoint: slb.example:443\n  stsEndpoint: sts.example\n", map[string]string{
			"ECS_ENDPOINT": "127.0.0.1:8080", "SLB_ENDPOINT": "http://127.0.0.1:9090/", "ALICLOUD_CLIENT_SCHEME": "http", "STS_ENDPOINT": "https://127.0.0.1:9443",
			"ALIBABA_CLOUD_ACCESS_KEY_ID": "ak", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "sk", "METADATA_ENDPOINT": "http://127.0.0.1:1",
			"SERVICE_FORCE_BACKEND_ENI": "true",
		}, func(t *testing.T, c *Config) {
			if c.Endpoints.ECS != "127.0.0.1:8080" || c.Endpoints.SLB != "127.0.0.1:9090" || c.Endpoints.Scheme != "HTTP" || c.MetadataEndpoint != "http://127.0.0.1:1" {
				t.Errorf("%+v", c.Endpoints)
			}
			if c.Endpoints.STS != "127.0.0.1:9443" {
				t.Errorf("STS endpoint %q, want the environment's host", c.Endpoints.STS)
			}
			// The environment's AccessKey is the credentials chain's first
			// source (credentials-go reads it), not an explicit key.
			if c.StaticCredentials != nil || c.LegacyEnvCredentials != nil || c.ServiceBackendType != "eni" {
				t.Errorf("%+v", c)
			}
		}},
		{"the existing CCM's variable names", "Global:\n  clusterID: c4\n", map[string]string{"ACCESS_KEY_ID": "old", "ACCESS_KEY_SECRET": "oldsecret"}, func(t *testing.T, c *Config) {
			if c.StaticCredentials != nil || c.LegacyEnvCredentials == nil || c.LegacyEnvCredentials.ID != "old" {
				t.Errorf("explicit %+v, legacy %+v", c.StaticCredentials, c.LegacyEnvCredentials)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := Parse([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			c, err := Build(f, envOf(tc.env), md, Options{})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		env        map[string]string
		field      string
	}{
		{"route table", "Global:\n  clusterID: c\n  routeTableIDs: rt-1\n", nil, "Global.routeTableIDs"},
		{"backend type", "Global:\n  clusterID: c\n  serviceBackendType: pod\n", nil, "Global.serviceBackendType"},
		{"reuse policy", "Global:\n  clusterID: c\n  loadBalancerReuse: sometimes\n", nil, "Global.loadBalancerReuse"},
		{"vswitch", "Global:\n  clusterID: c\n  vswitchid: cn-hangzhou-h:sw-1\n", nil, "Global.vswitchid"},
		{"feature gate", "Global:\n  clusterID: c\n  featureGates: Nope=true\n", nil, "Global.featureGates"},
		{"scheme", "Global:\n  clusterID: c\n", map[string]string{"ALICLOUD_CLIENT_SCHEME": "ftp"}, "env ALICLOUD_CLIENT_SCHEME"},
		{"half a key pair", "Global:\n  clusterID: c\n", map[string]string{"ALIBABA_CLOUD_ACCESS_KEY_ID": "x"}, "ALIBABA_CLOUD_ACCESS_KEY_SECRET"},
		{"secret not base64", "Global:\n  clusterID: c\n  accessKeyID: " + b64("a") + "\n  accessKeySecret: '%%%'\n", nil, "Global.accessKeySecret"},
		{"wrong type", `{"Global":{"clusterID":"c","disablePublicSLB":"yes"}}`, nil, "disablePublicSLB"},
		{"endpoint", "Global:\n  clusterID: c\n  ecsEndpoint: 'a b'\n", nil, "Global.ecsEndpoint"},
		{"clusterID", "Global:\n  region: cn-hangzhou\n", nil, "Global.clusterID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := Parse([]byte(tc.file))
			if err == nil {
				_, err = Build(f, envOf(tc.env), md, Options{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %v does not name %s", err, tc.field)
			}
			if strings.Contains(err.Error(), "%%%") {
				t.Fatal("the error echoes a secret")
			}
		})
	}
	if _, err := Build(&File{Global: Global{ClusterID: "c"}}, envOf(nil), fakeMetadata{}, Options{}); err == nil || !strings.Contains(err.Error(), "region-id") {
		t.Fatalf("missing region without metadata: %v", err)
	}
}

// TestClusterIDRequired: a missing clusterID is refused, naming the field
// and the flag, unless the legacy default is asked for; a set one is kept.
func TestClusterIDRequired(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   string
		legacy bool
		want   string // the ClusterID, or "" for the error
	}{
		{"empty file", "", false, ""},
		{"YAML without clusterID", "Global:\n  region: cn-beijing\n  vpcid: vpc-x\n", false, ""},
		{"JSON without clusterID", `{"Global":{"region":"cn-beijing"}}`, false, ""},
		{"empty clusterID", "Global:\n  clusterID: ''\n", false, ""},
		{"blank clusterID", "Global:\n  clusterID: '  '\n", false, ""},
		{"empty file, legacy default", "", true, DefaultClusterID},
		{"YAML without clusterID, legacy default", "Global:\n  region: cn-beijing\n", true, DefaultClusterID},
		{"blank clusterID, legacy default", "Global:\n  clusterID: ' '\n", true, DefaultClusterID},
		{"set", "Global:\n  clusterID: c-abc123\n", false, "c-abc123"},
		{"set in any case", `{"Global":{"CLUSTERID":"c-upper"}}`, false, "c-upper"},
		{"set, legacy flag does not override it", "Global:\n  clusterID: c-abc123\n", true, "c-abc123"},
		{"set to the legacy literal", "Global:\n  clusterID: clusterid\n", false, DefaultClusterID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := Parse([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{LegacyDefaultClusterID: tc.legacy}
			// With and without metadata: the provider first builds without it.
			for _, m := range []MetadataSource{md, nil} {
				c, err := Build(f, envOf(nil), m, opts)
				if tc.want == "" {
					var fe *FieldError
					if !errors.As(err, &fe) || fe.Field != "Global.clusterID" {
						t.Fatalf("metadata %v: error %v, want a FieldError for Global.clusterID", m != nil, err)
					}
					for _, s := range []string{"Global.clusterID", "required", "--" + LegacyDefaultClusterIDFlag, `"clusterid"`} {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("error %q does not say %s", err, s)
						}
					}
					continue
				}
				if m == nil {
					// Region and VPC are left to metadata in some files.
					if err != nil && !strings.Contains(err.Error(), "Global.region") && !strings.Contains(err.Error(), "Global.vpcid") {
						t.Fatalf("without metadata: %v", err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if c.ClusterID != tc.want {
					t.Fatalf("ClusterID %q, want %q", c.ClusterID, tc.want)
				}
			}
		})
	}
}

func TestLoadPassesTheLegacyOption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(path, []byte("Global:\n  region: cn-hangzhou\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(path, envOf(nil), md, Options{}); err == nil || !strings.Contains(err.Error(), "Global.clusterID") {
		t.Fatalf("Load without the legacy option: %v", err)
	}
	c, _, err := Load(path, envOf(nil), md, Options{LegacyDefaultClusterID: true})
	if err != nil || c.ClusterID != DefaultClusterID {
		t.Fatalf("Load with the legacy option: %+v, %v", c, err)
	}
}

func TestUnknownFieldsWarnNotFail(t *testing.T) {
	_, warnings, err := Parse([]byte("Global:\n  clusterID: c\n  someFutureField: 1\n"))
	if err != nil || len(warnings) != 1 || warnings[0] != "Global.someFutureField" {
		t.Fatalf("warnings %v err %v", warnings, err)
	}
}

func TestSecretNeverFormats(t *testing.T) {
	k := AccessKey{ID: "id", Secret: "s3cr3t"}
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k.Secret)} {
		if strings.Contains(s, "s3cr3t") {
			t.Fatalf("secret printed: %s", s)
		}
	}
	var fe *FieldError
	if errors.As(error(&FieldError{Field: "f"}), &fe) && fe.Field != "f" {
		t.Fatal("FieldError")
	}
}

// TestVSwitchListsKeepEveryVSwitch: zone-less ":vsw-a,:vsw-b" lists (as
// the existing CCM accepts them) keep every vSwitch in order, and the zone
// map keeps the first entry of a zone, the one the existing CCM picks.
func TestVSwitchListsKeepEveryVSwitch(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        []VSwitch
		byZone      map[string]string
	}{
		{"zone-less list", ":vsw-a,:vsw-b,:vsw-c", []VSwitch{{"", "vsw-a"}, {"", "vsw-b"}, {"", "vsw-c"}}, map[string]string{"": "vsw-a"}},
		{"bare id", "vsw-a", []VSwitch{{"", "vsw-a"}}, map[string]string{"": "vsw-a"}},
		{"zoned", "cn-hangzhou-h:vsw-h, cn-hangzhou-i:vsw-i", []VSwitch{{"cn-hangzhou-h", "vsw-h"}, {"cn-hangzhou-i", "vsw-i"}},
			map[string]string{"cn-hangzhou-h": "vsw-h", "cn-hangzhou-i": "vsw-i"}},
		{"two in one zone", "cn-hangzhou-h:vsw-1,cn-hangzhou-h:vsw-2", []VSwitch{{"cn-hangzhou-h", "vsw-1"}, {"cn-hangzhou-h", "vsw-2"}},
			map[string]string{"cn-hangzhou-h": "vsw-1"}},
		{"mixed", ":vsw-any,cn-hangzhou-h:vsw-h", []VSwitch{{"", "vsw-any"}, {"cn-hangzhou-h", "vsw-h"}},
			map[string]string{"": "vsw-any", "cn-hangzhou-h": "vsw-h"}},
		{"unset: metadata", "", []VSwitch{{"cn-hangzhou-h", "vsw-md"}}, map[string]string{"cn-hangzhou-h": "vsw-md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Build(&File{Global: Global{ClusterID: "c", VswitchID: tc.value}}, envOf(nil), md, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(c.VSwitches) != fmt.Sprint(tc.want) {
				t.Errorf("VSwitches %v, want %v", c.VSwitches, tc.want)
			}
			if fmt.Sprint(c.VSwitchIDs) != fmt.Sprint(tc.byZone) {
				t.Errorf("VSwitchIDs %v, want %v", c.VSwitchIDs, tc.byZone)
			}
		})
	}
}

// TestServiceWorkersAndVPCEndpointsFields: serviceMaxConcurrentReconciles
// and useVPCEndpoints reach the Config; a negative worker count is refused.
func TestServiceWorkersAndVPCEndpointsFields(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		workers    int
		useVPC     bool
		err        string
	}{
		{"unset", "Global:\n  clusterID: c\n", 0, false, ""},
		{"set", "Global:\n  clusterID: c\n  serviceMaxConcurrentReconciles: 7\n  useVPCEndpoints: true\n", 7, true, ""},
		{"JSON, other case", `{"Global":{"clusterID":"c","ServiceMaxConcurrentReconciles":2,"usevpcendpoints":true}}`, 2, true, ""},
		{"negative", "Global:\n  clusterID: c\n  serviceMaxConcurrentReconciles: -1\n", 0, false, "Global.serviceMaxConcurrentReconciles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := Parse([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			c, err := Build(f, envOf(nil), md, Options{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.ServiceMaxConcurrentReconciles != tc.workers || c.Endpoints.UseVPC != tc.useVPC {
				t.Fatalf("workers %d useVPC %v, want %d %v", c.ServiceMaxConcurrentReconciles, c.Endpoints.UseVPC, tc.workers, tc.useVPC)
			}
		})
	}
}
