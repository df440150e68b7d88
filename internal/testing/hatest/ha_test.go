package hatest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

const clusterCIDR = "10.244.0.0/16"

var cluster *localcluster.Cluster

func TestMain(m *testing.M) {
	ccmtest.Main(m, &cluster, ccmtest.WithNodes(clusterCIDR), nil)
}

type replica struct {
	name, keyID, secret string
	ccm                 *ccmtest.CCM
}

func isWrite(action string) bool { return !api.IsReadOnlyAction(action) }

// TestOnlyTheLeaderWritesAndAFollowerTakesOver runs two replicas with
// leader election, each signing with its own AccessKey so the emulator's
// request log tells them apart.
func TestOnlyTheLeaderWritesAndAFollowerTakesOver(t *testing.T) {
	ctx := context.Background()
	replicas := []*replica{
		{name: "a", keyID: "LTAI5tReplicaA", secret: "secret-of-replica-a-0123456789"},
		{name: "b", keyID: "LTAI5tReplicaB", secret: "secret-of-replica-b-0123456789"},
	}
	var keys []emulator.AccessKey
	for _, r := range replicas {
		keys = append(keys, emulator.AccessKey{ID: r.keyID, Secret: r.secret, AccountID: "1234567890"})
	}
	cloud, err := emulator.New(emulator.Config{AccessKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cloud.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer cloud.Close()
	if err := cloud.Store.Settings().SetDelay(store.DelayRouteEntry, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ids, err := cloud.Seed(ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: 4, NamePrefix: "ha-"}))
	if err != nil {
		t.Fatal(err)
	}
	instances := ids["instance"][1:] // the first is the metadata service's own host
	routeTable := ids["routeTable"][0]
	ips := privateIPs(t, cloud, replicas[0], instances)

	logDir := filepath.Join(cluster.Dir, "logs")
	const lease = 4 * time.Second
	for _, r := range replicas {
		r.ccm, err = ccmtest.StartCCM(ctx, ccmtest.CCMOptions{
			Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(), AccessKeyID: r.keyID, AccessKeySecret: r.secret,
			CloudConfig: "Global:\n  clusterID: c-ha\n",
			Args: []string{
				"--leader-elect=true", "--leader-elect-lease-duration=" + lease.String(),
				"--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
				"--cluster-cidr=" + clusterCIDR, "--route-reconciliation-period=1m",
			},
			LogPath: filepath.Join(logDir, "ccm-replica-"+r.name+".log"),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer r.ccm.Stop()
	}

	cs, err := cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := localcluster.RegisterKubeletNode(ctx, cs, localcluster.KubeletNode{Name: fmt.Sprintf("ha-node-%d", i), InternalIP: ips[i], Kwok: true}); err != nil {
			t.Fatal(err)
		}
	}
	waitNodeAndRoute(t, cloud, replicas[0], routeTable, "ha-node-0", 60*time.Second)
	waitNodeAndRoute(t, cloud, replicas[0], routeTable, "ha-node-1", 60*time.Second)

	writers := map[string]int{}
	for _, rec := range cloud.Requests() {
		if isWrite(rec.Action) {
			writers[rec.AccessKeyID]++
		}
	}
	if len(writers) != 1 {
		t.Fatalf("cloud write calls by key: %v; want exactly one writer (the leader)", writers)
	}
	var leader, follower *replica
	for _, r := range replicas {
		if writers[r.keyID] > 0 {
			leader = r
		} else {
			follower = r
		}
	}
	t.Logf("leader %s made %d write calls, follower %s none", leader.name, writers[leader.keyID], follower.name)

	// The leader dies without releasing the Lease; a Node arrives meanwhile.
	killed := time.Now()
	leader.ccm.Kill()
	if _, err := localcluster.RegisterKubeletNode(ctx, cs, localcluster.KubeletNode{Name: "ha-node-2", InternalIP: ips[2], Kwok: true}); err != nil {
		t.Fatal(err)
	}
	waitNodeAndRoute(t, cloud, replicas[0], routeTable, "ha-node-2", 60*time.Second)
	var firstFollowerCall time.Time
	for _, rec := range cloud.Requests() {
		// Both replicas read once at start-up (the provider's credential
		// check); the first call after the kill is the new leader's work.
		if rec.AccessKeyID == follower.keyID && rec.Time.After(killed) {
			firstFollowerCall = rec.Time
			break
		}
	}
	takeover := firstFollowerCall.Sub(killed)
	t.Logf("follower %s took over %v after the leader was killed (lease %v)", follower.name, takeover.Round(10*time.Millisecond), lease)
	if firstFollowerCall.IsZero() || takeover > lease+5*time.Second {
		t.Fatalf("takeover took %v, want within the lease duration (%v) plus a retry", takeover, lease)
	}
	l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "ccm", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Lease kube-system/ccm: %v", err)
	}
	t.Logf("lease holder now %s", *l.Spec.HolderIdentity)
}

func privateIPs(t *testing.T, cloud *emulator.Emulator, r *replica, ids []string) []string {
	t.Helper()
	c := emulatortest.For(cloud, r.keyID, r.secret).ECS(t)
	var out []string
	for _, id := range ids {
		req := ecs.CreateDescribeInstancesRequest()
		req.InstanceIds = `["` + id + `"]`
		resp, err := c.DescribeInstances(req)
		if err != nil || len(resp.Instances.Instance) != 1 {
			t.Fatalf("describe %s: %v", id, err)
		}
		out = append(out, resp.Instances.Instance[0].VpcAttributes.PrivateIpAddress.IpAddress[0])
	}
	return out
}

// waitNodeAndRoute waits until the Node is initialized and its podCIDR is
// routed to its instance in the table.
func waitNodeAndRoute(t *testing.T, cloud *emulator.Emulator, r *replica, table, name string, timeout time.Duration) {
	t.Helper()
	cs, _ := cluster.Clientset()
	vc := emulatortest.For(cloud, r.keyID, r.secret).VPC(t)
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == cloudapi.TaintExternalCloudProvider {
				last = "still tainted"
				return false, nil
			}
		}
		if n.Spec.PodCIDR == "" || n.Spec.ProviderID == "" {
			last = "no podCIDR or providerID yet"
			return false, nil
		}
		instance := n.Spec.ProviderID[strings.LastIndex(n.Spec.ProviderID, ".")+1:]
		req := vpc.CreateDescribeRouteEntryListRequest()
		req.RouteTableId = table
		req.DestinationCidrBlock = n.Spec.PodCIDR
		resp, err := vc.DescribeRouteEntryList(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, e := range resp.RouteEntrys.RouteEntry {
			for _, h := range e.NextHops.NextHop {
				if h.NextHopId == instance {
					return true, nil
				}
			}
		}
		last = "no route " + n.Spec.PodCIDR + " → " + instance
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s: %v (last: %s)", name, err, last)
	}
}

// TestSIGTERMReleasesTheLease: a leader that is stopped (SIGTERM, as in a
// rollout) releases the Lease, so the standby holds it within 2 s
// instead of after the lease duration; both replicas run with the default
// leader-election periods.
func TestSIGTERMReleasesTheLease(t *testing.T) {
	ctx := context.Background()
	cloud, err := emulator.New(emulator.Config{AccessKeys: []emulator.AccessKey{{ID: "LTAI5tReplicaT", Secret: "secret-of-replica-t-0123456789", AccountID: "1234567890"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cloud.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer cloud.Close()
	if _, err := cloud.Seed(ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: 1, NamePrefix: "term-"})); err != nil {
		t.Fatal(err)
	}
	cs, err := cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(cluster.Dir, "logs")
	ccms := map[string]*ccmtest.CCM{}
	for _, name := range []string{"c", "d"} {
		c, err := ccmtest.StartCCM(ctx, ccmtest.CCMOptions{
			Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(), AccessKeyID: "LTAI5tReplicaT", AccessKeySecret: "secret-of-replica-t-0123456789",
			CloudConfig: "Global:\n  clusterID: c-ha\n",
			Args:        []string{"--leader-elect=true", "--cluster-cidr=" + clusterCIDR},
			// A log of its own per run, so -count=N reads no earlier run's.
			LogPath: filepath.Join(logDir, fmt.Sprintf("ccm-term-%s-%d.log", name, time.Now().UnixNano())),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Stop()
		ccms[name] = c
	}
	// The leader is the replica whose log says it acquired the Lease
	// (both run on this host, so the holder identity does not tell).
	acquired := func(c *ccmtest.CCM) bool { return strings.Contains(c.Log(), "Successfully acquired lease") }
	var leader, standby string
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		for name, c := range ccms {
			if acquired(c) {
				leader = name
			} else {
				standby = name
			}
		}
		return leader != "" && standby != "", nil
	}); err != nil {
		t.Fatalf("no replica acquired the Lease: %v", err)
	}
	holder := func() string {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "ccm", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	old := holder()
	if old == "" {
		t.Fatal("the leader holds no Lease")
	}
	stopped := make(chan struct{})
	start := time.Now()
	go func() { defer close(stopped); ccms[leader].Stop() }()
	var now string
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		now = holder()
		return now != "" && now != old, nil
	}); err != nil {
		t.Fatalf("the standby did not take the Lease over: %v", err)
	}
	took := time.Since(start)
	<-stopped
	t.Logf("leader %s stopped; standby %s holds the Lease %v later (%s → %s)", leader, standby, took.Round(10*time.Millisecond), old, now)
	if !strings.Contains(ccms[leader].Log(), "Released the leader-election Lease") {
		t.Errorf("the stopped leader did not release the Lease:\n%s", ccms[leader].Tail(20))
	}
	if took > 2*time.Second {
		t.Errorf("takeover took %v, want at most 2s", took)
	}
}
