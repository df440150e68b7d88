package image_test

import (
	"flag"
	"os"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// cluster is the control plane the CCM taken from its image runs against;
// nil under -short, where no image is built.
var cluster *localcluster.Cluster

func TestMain(m *testing.M) {
	flag.Parse()
	var code int
	if testing.Short() {
		code = m.Run()
	} else {
		// etcd and kube-apiserver suffice: the CCM itself initializes Nodes.
		code = localcluster.RunTests(m, localcluster.Options{}, func(c *localcluster.Cluster) { cluster = c })
	}
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}
