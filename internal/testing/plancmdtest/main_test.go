package plancmdtest

import (
	"context"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

const (
	accessKeyID     = "LTAI5tPlanCmdTestKey"
	accessKeySecret = "plan-cmd-test-secret-cGxhbmNtZHRlc3Q"
	clusterID       = "c-plancmd"
	clusterCIDR     = "10.244.0.0/16"
	nodeCount       = 3
)

var (
	cluster  *localcluster.Cluster
	cloud    *emulator.Emulator
	zoneMaps []string
	nodes    []string
)

func TestMain(m *testing.M) {
	ccmtest.Main(m, &cluster, localcluster.Options{
		ControllerManager: true, Kwok: true, ClusterCIDR: clusterCIDR,
	}, setup)
}

func setup() error {
	var err error
	if cloud, err = ccmtest.StartEmulator(accessKeyID, accessKeySecret); err != nil {
		return err
	}
	doc := ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: nodeCount + 1, NamePrefix: "plancmd-"})
	zoneMaps = ccmtest.ZoneMaps(doc)
	ids, err := cloud.Seed(doc)
	if err != nil {
		return err
	}
	cs, err := cluster.Clientset()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The first instance is the CCM's own machine (metadata); the others
	// are Nodes, initialized by the first CCM a test starts.
	nodes, err = ccmtest.RegisterNodes(ctx, cs, cloud, accessKeyID, accessKeySecret, "node-", ids["instance"][1:])
	return err
}
