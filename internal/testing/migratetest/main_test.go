package migratetest

import (
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

const (
	accessKeyID     = "LTAI5tMigrateTestKey"
	accessKeySecret = "migrate-test-secret-ZXhpc3RpbmdjY20"
	clusterCIDR     = "10.244.0.0/16"
)

// One control plane and one emulated cloud serve the tests of this binary;
// each test runs its own CCM, one at a time, as a migration would.
var (
	cluster   *localcluster.Cluster
	cloud     *emulator.Emulator
	instances []string // seeded instances for Nodes (not the CCM's own host)
)

func TestMain(m *testing.M) {
	ccmtest.Main(m, &cluster, ccmtest.WithNodes(clusterCIDR), setup)
}

func setup() error {
	var err error
	if cloud, err = ccmtest.StartEmulator(accessKeyID, accessKeySecret); err != nil {
		return err
	}
	// The first instance is the CCM's own machine (metadata service).
	ids, err := cloud.Seed(ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: 5, NamePrefix: "migrate-"}))
	if err != nil {
		return err
	}
	instances = ids["instance"][1:]
	return nil
}
