package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadOffCloud: a cloud-config that gives region, VPC and zoned
// vSwitches needs no instance metadata at all (plan on a laptop); the zone
// is the first vSwitch's. Without one of them the error names the
// cloud-config field to set.
func TestLoadOffCloud(t *testing.T) {
	noMetadata := fakeMetadata{}
	load := func(t *testing.T, file string) (*Config, error) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "cloud-config")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		c, _, err := Load(path, envOf(nil), noMetadata, Options{})
		return c, err
	}
	c, err := load(t, "Global:\n  clusterID: c\n  region: cn-hangzhou\n  vpcid: vpc-a\n  vswitchid: cn-hangzhou-h:vsw-a,cn-hangzhou-i:vsw-b\n")
	if err != nil {
		t.Fatalf("off-cloud with everything given: %v", err)
	}
	if c.ZoneID != "cn-hangzhou-h" || c.VSwitchIDs["cn-hangzhou-i"] != "vsw-b" {
		t.Errorf("zone %q, vSwitches %v", c.ZoneID, c.VSwitchIDs)
	}
	for field, file := range map[string]string{
		"Global.region":    "Global:\n  clusterID: c\n  vpcid: vpc-a\n  vswitchid: z:vsw-a\n",
		"Global.vpcid":     "Global:\n  clusterID: c\n  region: cn-hangzhou\n  vswitchid: z:vsw-a\n",
		"Global.zoneid":    "Global:\n  clusterID: c\n  region: cn-hangzhou\n  vpcid: vpc-a\n",
		"Global.vswitchid": "Global:\n  clusterID: c\n  region: cn-hangzhou\n  vpcid: vpc-a\n  zoneid: z\n",
	} {
		_, err := load(t, file)
		if err == nil || !strings.Contains(err.Error(), "set "+field) {
			t.Errorf("without %s: %v", field, err)
		}
	}
}
