// Package app builds the cloud-controller-manager command on
// k8s.io/cloud-provider's app package: its flags, leader election and
// secure serving (/healthz, /metrics on 10258), the upstream cloud-node and
// cloud-node-lifecycle controllers over our InstancesV2, and our own route
// and service controllers.
package app

import (
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/config"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
)

// LeaseName is the leader-election Lease the existing CCM uses; electing on
// the same Lease keeps the two from both acting during a migration.
const LeaseName = "ccm"

// NewCommand returns the cloud-controller-manager command.
func NewCommand(stop <-chan struct{}) (*cobra.Command, error) {
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	opts.KubeCloudShared.CloudProvider.Name = provider.Name
	opts.Generic.LeaderElection.ResourceName = LeaseName
	// The existing CCM reconciles 3 Services at once by default; upstream 1.
	opts.ServiceController.ConcurrentServiceSyncs = 5
	// Our route controller is driven by Node events; the periodic pass only
	// repairs out-of-band changes, so it need not list route tables every
	// 10s as upstream's default does. 5m is the existing CCM's default.
	opts.KubeCloudShared.RouteReconciliationPeriod.Duration = 5 * time.Minute

	popts := provider.Options{IMDSv2: true, CloudQPS: 20, CloudBurst: 40, InstanceCacheTTL: 15 * time.Second}
	fss := cliflag.NamedFlagSets{}
	fs := fss.FlagSet("alicloud")
	addFlags(fs, &popts)

	initCloud := func(c *ccmconfig.CompletedConfig) cloudprovider.Interface {
		name := c.ComponentConfig.KubeCloudShared.CloudProvider.Name
		if name != provider.Name && name != provider.LegacyName {
			klog.ErrorS(nil, "Unsupported --cloud-provider", "got", name, "want", provider.Name)
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		}
		cloud, err := provider.New(c.ComponentConfig.KubeCloudShared.CloudProvider.CloudConfigFile, popts)
		if err != nil {
			// A bad configuration stops the process at start, naming the field.
			klog.ErrorS(err, "Invalid cloud configuration")
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		}
		return cloud
	}
	cmd := ccmapp.NewCloudControllerManagerCommand(opts, initCloud, controllers(), names.CCMControllerAliases(), fss, stop)
	cmd.Use = "cloud-controller-manager"
	cmd.Short = "Alibaba Cloud cloud controller manager: nodes, VPC routes and LoadBalancer Services"
	return cmd, nil
}

func addFlags(fs *pflag.FlagSet, o *provider.Options) {
	fs.BoolVar(&o.IMDSv2, "enable-imdsv2", o.IMDSv2, "Use IMDSv2 session tokens with the instance metadata service.")
	fs.Float64Var(&o.CloudQPS, "cloud-api-qps", o.CloudQPS, "Maximum Alibaba Cloud API calls per second, per product.")
	fs.IntVar(&o.CloudBurst, "cloud-api-burst", o.CloudBurst, "Burst of Alibaba Cloud API calls, per product.")
	fs.DurationVar(&o.InstanceCacheTTL, "instance-cache-ttl", o.InstanceCacheTTL, "How long one listing of the VPC's ECS instances answers node lookups.")
	fs.BoolVar(&o.LegacyDefaultClusterID, config.LegacyDefaultClusterIDFlag, o.LegacyDefaultClusterID,
		"Use the existing CCM's literal default cluster id \""+config.DefaultClusterID+"\" when the cloud-config sets no clusterID, for clusters whose existing CCM never set it (its load balancers, listeners, groups and routes carry that id). Without it a missing clusterID stops the CCM at start.")
}

// controllers are the upstream node controllers plus ours; the generic
// service and route controllers are replaced, not used.
func controllers() map[string]ccmapp.ControllerInitFuncConstructor {
	out := map[string]ccmapp.ControllerInitFuncConstructor{}
	for name, c := range ccmapp.DefaultInitFuncConstructors {
		switch name {
		case names.CloudNodeController, names.CloudNodeLifecycleController:
			out[name] = c
		}
	}
	for name, c := range ownControllers {
		out[name] = c
	}
	return out
}

// ownControllers are registered by this package's other files.
var ownControllers = map[string]ccmapp.ControllerInitFuncConstructor{}

// Main runs the command and exits.
func Main() {
	cmd, err := NewCommand(make(chan struct{}))
	if err != nil {
		klog.ErrorS(err, "Unable to initialize command options")
		os.Exit(1)
	}
	os.Exit(run(cmd))
}
