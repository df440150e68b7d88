package plantest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/emulatortest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
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
	os.Exit(localcluster.RunTests(m, localcluster.Options{Kwok: true, ClusterCIDR: clusterCIDR}, func(c *localcluster.Cluster) {
		cluster = c
		if err := setup(); err != nil {
			fmt.Fprintf(os.Stderr, "setup: %v\n", err)
			os.Exit(1)
		}
	}))
}

func setup() error {
	var err error
	if cloud, err = ccmtest.StartEmulator(accessKeyID, accessKeySecret); err != nil {
		return err
	}
	doc := ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: nodeCount + 1, NamePrefix: "plan-"})
	seeded = &seedInfo{}
	for _, v := range doc.VPCs[0].VSwitches {
		seeded.zoneMaps = append(seeded.zoneMaps, v.ZoneID+":"+v.ID)
	}
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
	ips, err := instanceIPs(ids["instance"][1:])
	if err != nil {
		return err
	}
	var names []string
	for i, id := range ids["instance"][1:] {
		name := fmt.Sprintf("node-%02d", i)
		if _, err := localcluster.RegisterKubeletNode(ctx, cs, localcluster.KubeletNode{Name: name, InternalIP: ips[id], Kwok: true}); err != nil {
			return err
		}
		names = append(names, name)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 80*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || n.Spec.ProviderID == "" || !ready(n) {
				return false, nil
			}
			for _, t := range n.Spec.Taints {
				if t.Key == cloudapi.TaintExternalCloudProvider {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func instanceIPs(ids []string) (map[string]string, error) {
	return emulatortest.For(cloud, accessKeyID, accessKeySecret).PrivateIPs(ids)
}

func kube(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
