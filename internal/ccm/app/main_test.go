package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

const (
	accessKeyID     = "LTAI5tCcmTestKey"
	accessKeySecret = "ccm-test-secret-Zm9vYmFyYmF6cXV4"
	clusterID       = "c-integration"
	clusterCIDR     = "10.244.0.0/16"
	// labelResync is the suite CCM's --node-status-update-frequency.
	labelResync = 3 * time.Second
	// kubeAPIQPS and kubeAPIBurst are the suite CCM's --kube-api-qps and
	// --kube-api-burst.
	kubeAPIQPS, kubeAPIBurst = 100, 300
)

// One control plane, one emulated cloud and one CCM serve every test of
// this binary; each test uses its own instances and Nodes.
var (
	cluster *localcluster.Cluster
	cloud   *emulator.Emulator
	vswitch []string
	vpcID   string
	ccm     *ccmtest.CCM
	logDir  string
	nodeSeq atomic.Int32
)

func TestMain(m *testing.M) {
	ccmtest.Main(m, &cluster, ccmtest.WithNodes(clusterCIDR), setup)
}

func setup() error {
	var err error
	cloud, err = ccmtest.StartEmulator(accessKeyID, accessKeySecret)
	if err != nil {
		return err
	}
	if err := cloud.Store.Settings().SetDelay(store.DelayECSInstance, 300*time.Millisecond); err != nil {
		return err
	}
	// The metadata service describes the first instance: the CCM's own machine.
	ids, err := cloud.Seed(ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: 1, NamePrefix: "ccm-host-", IPv6: true}))
	if err != nil {
		return err
	}
	vpcID, vswitch = ids["vpc"][0], ids["vswitch"]
	logDir = filepath.Join(cluster.Dir, "logs")
	ccm, err = ccmtest.StartCCM(context.Background(), ccmtest.CCMOptions{
		Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(),
		AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		// Region and VPC come from the metadata service. IPv6DualStack:
		// instances with IPv6 addresses get them as InternalIPs.
		CloudConfig: "Global:\n  clusterID: " + clusterID + "\n  featureGates: IPv6DualStack=true\n",
		// Routes on: initialization marks Nodes NetworkUnavailable until
		// the route controller has created their route. Labels and
		// addresses resync every 3s. The kube client's rate is raised from
		// the default 20/s (burst 30): the node controller writes 2-3
		// times per Node it initializes, which at 20/s alone holds a burst
		// of 100 joining Nodes to ~8 s (TestNodesJoiningWithTheirInstances).
		Args: []string{"--leader-elect=false", "--cluster-cidr=" + clusterCIDR, "--configure-cloud-routes=true",
			"--node-status-update-frequency=" + labelResync.String(), "--v=4",
			"--kube-api-qps=" + strconv.Itoa(kubeAPIQPS), "--kube-api-burst=" + strconv.Itoa(kubeAPIBurst)},
		LogPath: filepath.Join(logDir, "cloud-controller-manager.log"),
	})
	return err
}

func kube(t *testing.T) kubernetes.Interface {
	t.Helper()
	return ccmtest.Kube(t, cluster)
}

func ecsClient(t *testing.T) *ecs.Client {
	return emulatortest.For(cloud, accessKeyID, accessKeySecret).ECS(t)
}

type instance struct{ id, ip, zone string }

// addInstances seeds n instances in the cluster VPC and returns them.
func addInstances(t *testing.T, n int) []instance {
	t.Helper()
	s := &api.Seed{}
	for i := 0; i < n; i++ {
		s.Instances = append(s.Instances, api.SeedInstance{
			Name: fmt.Sprintf("%s-%d", strings.ToLower(t.Name()), i), InstanceType: "ecs.g7.large",
			VSwitchID: vswitch[i%len(vswitch)], InstanceChargeType: "PostPaid", SpotStrategy: "NoSpot",
		})
	}
	ids, err := cloud.Seed(s)
	if err != nil {
		t.Fatal(err)
	}
	req := ecs.CreateDescribeInstancesRequest()
	raw := `["` + strings.Join(ids["instance"], `","`) + `"]`
	req.InstanceIds = raw
	req.PageSize = "100"
	resp, err := ecsClient(t).DescribeInstances(req)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]ecs.Instance{}
	for _, in := range resp.Instances.Instance {
		byID[in.InstanceId] = in
	}
	var out []instance
	for _, id := range ids["instance"] {
		in := byID[id]
		out = append(out, instance{id: id, ip: in.VpcAttributes.PrivateIpAddress.IpAddress[0], zone: in.ZoneId})
	}
	return out
}

func nodeName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nodeSeq.Add(1))
}

func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) time.Duration {
	t.Helper()
	return ccmtest.PollCCM(t, ccm, timeout, 100*time.Millisecond, what, cond)
}

func getNode(ctx context.Context, cs kubernetes.Interface, name string) (*corev1.Node, error) {
	return cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}
