package app_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

// wantClusterIDError is the exact refusal of a cloud-config without clusterID.
const wantClusterIDError = `cloud-config: field Global.clusterID: is required (the cluster id the existing CCM tagged load balancers, listeners and groups with); set it, or pass --legacy-default-cluster-id to use the existing CCM's default "clusterid"`

// startBare runs a CCM with every controller off, so that it shares the
// cluster and the cloud with the suite's CCM without acting on them.
func startBare(t *testing.T, cloudConfig string, args ...string) *ccmtest.CCM {
	t.Helper()
	c, err := ccmtest.StartCCM(context.Background(), ccmtest.CCMOptions{
		Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(), AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		CloudConfig: cloudConfig,
		// Naming one controller disabled and none enabled runs none.
		Args:    append([]string{"--leader-elect=false", "--controllers=-cloud-node-controller"}, args...),
		LogPath: filepath.Join(t.TempDir(), "ccm.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// emptyVPC seeds a VPC with no instances, load balancers or routes, so
// that discovery finds nothing there.
func emptyVPC(t *testing.T) string {
	t.Helper()
	ids, err := cloud.Seed(&api.Seed{VPCs: []api.SeedVPC{{Name: strings.ToLower(t.Name()), CIDRBlock: "172.16.0.0/16"}}})
	if err != nil {
		t.Fatal(err)
	}
	return ids["vpc"][0]
}

// TestMissingClusterIDStopsAtStart: without clusterID (and without the
// legacy flag), when nothing in the cloud names the cluster's id, the
// binary exits non-zero at start with the message naming the field, the
// flag and what discovery read, before it loads anything else.
func TestMissingClusterIDStopsAtStart(t *testing.T) {
	vpc := emptyVPC(t)
	for _, tc := range []struct{ name, config string }{
		{"YAML without clusterID", "Global:\n  region: cn-hangzhou\n  vpcid: " + vpc + "\n"},
		{"JSON with an empty clusterID", `{"Global":{"clusterID":"","vpcid":"` + vpc + `"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startBare(t, tc.config)
			code := c.Wait(30 * time.Second)
			if code == 0 || code == -1 {
				t.Fatalf("exit code %d, want a non-zero exit at start; log:\n%s", code, ccmtest.Tail(c.Log(), 20))
			}
			// klog quotes the error value.
			want := strings.TrimSuffix(strconv.Quote(wantClusterIDError+"; discovery found no cluster id in 0 Services labelled service.k8s.alibaba/loadbalancer-id"), `"`)
			if !strings.Contains(c.Log(), "err="+want) || !strings.Contains(c.Log(), "route entries") {
				t.Fatalf("the log does not carry the clusterID refusal %s…, naming the route tables read:\n%s", want, ccmtest.Tail(c.Log(), 20))
			}
			if strings.Contains(c.Log(), "Cloud configuration loaded") {
				t.Fatal("the configuration was loaded anyway")
			}
		})
	}
}

// TestLegacyDefaultClusterIDFlag: --legacy-default-cluster-id keeps the
// existing CCM's "clusterid" for a cloud-config without clusterID, and a
// clusterID that is set wins over the flag.
func TestLegacyDefaultClusterIDFlag(t *testing.T) {
	for _, tc := range []struct{ name, config, want string }{
		{"no clusterID", "", "clusterid"},
		{"clusterID set", "Global:\n  clusterID: c-legacy-flag\n", "c-legacy-flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startBare(t, tc.config, "--legacy-default-cluster-id")
			want := `clusterID="` + tc.want + `"`
			poll(t, 30*time.Second, "the configuration loaded with "+want, func(context.Context) (bool, error) {
				if c.Exited() {
					t.Fatalf("the CCM exited; log:\n%s", ccmtest.Tail(c.Log(), 20))
				}
				for _, line := range strings.Split(c.Log(), "\n") {
					if strings.Contains(line, "Cloud configuration loaded") {
						if !strings.Contains(line, want) {
							t.Fatalf("want %s in %s", want, line)
						}
						return true, nil
					}
				}
				return false, nil
			})
		})
	}
}
