package servicecosttest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

const (
	accessKeyID     = "LTAI5tPlanTestKey"
	accessKeySecret = "plan-test-secret-Zm9vYmFyYmF6cXV4"
	clusterID       = "c-plan"
	clusterCIDR     = "10.244.0.0/16"
	// nodeCount is more than one CLB backend batch (20), so the plan's
	// AddVServerGroupBackendServers shows.
	nodeCount = 25
	ns        = "default"
)

var (
	cluster *localcluster.Cluster
	cloud   *emulator.Emulator
	ccm     *ccmtest.CCM
	seeded  *seedInfo
)

// seedInfo is what the tests need of the seeded cloud.
type seedInfo struct {
	zoneMaps []string
}

func TestMain(m *testing.M) {
	ccmtest.Main(m, &cluster, localcluster.Options{Kwok: true, ClusterCIDR: clusterCIDR}, setup)
}

func setup() error {
	var err error
	if cloud, err = ccmtest.StartEmulator(accessKeyID, accessKeySecret); err != nil {
		return err
	}
	doc := ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: nodeCount + 1, NamePrefix: "plan-"})
	seeded = &seedInfo{}
	seeded.zoneMaps = ccmtest.ZoneMaps(doc)
	ids, err := cloud.Seed(doc)
	if err != nil {
		return err
	}
	ccm, err = ccmtest.StartCCM(context.Background(), ccmtest.CCMOptions{
		Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(),
		AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		CloudConfig: "Global:\n  clusterID: " + clusterID + "\n",
		Args:        []string{"--leader-elect=false", "--cluster-cidr=" + clusterCIDR, "--configure-cloud-routes=false", "--v=4"},
		LogPath:     filepath.Join(cluster.Dir, "logs", "cloud-controller-manager.log"),
	})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cluster.RESTConfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The first instance is the CCM's own machine (metadata); the others are Nodes.
	names, err := ccmtest.RegisterNodes(ctx, cs, cloud, accessKeyID, accessKeySecret, "node-", ids["instance"][1:])
	if err != nil {
		return err
	}
	return ccmtest.WaitNodesInitialized(ctx, cs, names, 80*time.Second)
}

func kube(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
