package ccmtest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// Main is the whole TestMain of a test binary whose tests share one local
// control plane (one per test binary, never one per test): it starts the
// cluster with opts, stores it in *cluster, runs setup (nil: none) before
// any test, runs the tests and exits with their code. When setup fails it
// prints the error with the component logs' paths, stops the cluster and
// exits 1, so that no process outlives the binary.
func Main(m *testing.M, cluster **localcluster.Cluster, opts localcluster.Options, setup func() error) {
	os.Exit(localcluster.RunTests(m, opts, set(cluster, setup)))
}

// MainWithWhiteBox is Main for a package whose own white-box tests need no
// cluster while its external tests drive a CCM process: under -short only
// the white-box tests run and no cluster starts
// (localcluster.RunProcessTests).
func MainWithWhiteBox(m *testing.M, cluster **localcluster.Cluster, opts localcluster.Options, setup func() error) {
	os.Exit(localcluster.RunProcessTests(m, opts, set(cluster, setup)))
}

func set(cluster **localcluster.Cluster, setup func() error) func(*localcluster.Cluster) {
	return func(c *localcluster.Cluster) {
		*cluster = c
		if setup == nil {
			return
		}
		if err := setup(); err != nil {
			fmt.Fprintf(os.Stderr, "setup: %v\n", err)
			c.KeepLogs()
			for _, p := range c.LogPaths() {
				fmt.Fprintf(os.Stderr, "  %s\n", p)
			}
			c.Stop()
			os.Exit(1)
		}
	}
}

// WithNodes is the control plane of a test binary whose CCM initializes
// kwok Nodes: kube-controller-manager (nodeipam allocating pod CIDRs from
// clusterCIDR, no cloud loops) and kwok, with a 10 s node-monitor grace
// period so that a Node whose heartbeat stops turns NotReady within a test.
func WithNodes(clusterCIDR string) localcluster.Options {
	return localcluster.Options{ControllerManager: true, Kwok: true, ClusterCIDR: clusterCIDR, NodeMonitorGracePeriod: 10 * time.Second}
}
