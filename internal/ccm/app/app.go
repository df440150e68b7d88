// Package app builds the cloud-controller-manager command on
// k8s.io/cloud-provider's app package: its flags (and the existing CCM's),
// leader election and secure serving (/healthz, /metrics on 10258, whose
// health paths also answer plain HTTP for the existing CCM's probes), the
// upstream cloud-node and cloud-node-lifecycle controllers over our
// InstancesV2, and our own route and service controllers.
package app

import (
	"fmt"
	"net"
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
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/version"
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
	// A stopped leader releases the Lease (leaseRelease); the standby's
	// next try, within 2.2 retry periods, takes it over.
	opts.Generic.LeaderElection.RetryPeriod.Duration = DefaultLeaderElectRetryPeriod
	// The existing CCM reconciles 3 Services at once by default; upstream 1.
	// Cloud calls are paced per action by internal/cloud whatever the
	// number of workers, and an NLB sync holds its worker while the load
	// balancer provisions (~2 s) and its jobs run, so a burst needs more
	// Services in flight than CLB alone would: 5 workers took 2x the
	// quota's time for 90 NLB Services, 16 reach the quota at the
	// published limits (docs/performance.md).
	opts.ServiceController.ConcurrentServiceSyncs = 16
	// Our route controller is driven by Node events; the periodic pass only
	// repairs out-of-band changes, so it need not list route tables every
	// 10s as upstream's default does. 5m is the existing CCM's default.
	opts.KubeCloudShared.RouteReconciliationPeriod.Duration = 5 * time.Minute
	// Node lookups come from one cached listing of the VPC's instances
	// (and one of its primary ENIs), so more workers cost no more cloud
	// calls; upstream's single worker takes ~50 s to initialize 500 Nodes
	// joining at once, during which they get no routes (docs/performance.md).
	opts.NodeController.ConcurrentNodeSyncs = 8

	cc := &command{stop: stop, lease: &leaseRelease{}, provider: defaultProviderOptions(), built: built{service: defaultServiceOptions()}}
	fss := cliflag.NamedFlagSets{}
	fs := fss.FlagSet("alicloud")
	addFlags(fs, &cc.provider, &cc.built.service, &cc.useVPCEndpoints)
	addMetricsFlag(fs, &cc.metricsAddr)
	cc.compat = addCompatFlags(fss.FlagSet("existing CCM compatibility"), &cc.metricsAddr)

	cmd := ccmapp.NewCloudControllerManagerCommand(opts, cc.initCloud, controllers(cc.lease, &cc.built), names.CCMControllerAliases(), fss, stop)
	cc.cmd = cmd
	if cc.compat.controllers, err = wrapControllers(cmd.Flags()); err != nil {
		return nil, err
	}
	cmd.AddCommand(newPlanCommand(exitProcess))
	cmd.Use = "cloud-controller-manager"
	cmd.Short = "Alibaba Cloud cloud controller manager: nodes, VPC routes and LoadBalancer Services"
	cmd.Long = Long
	wrapVersion(cmd)
	return cmd, nil
}

// command is what the CCM's flags fill and its cloud initializer builds.
type command struct {
	cmd             *cobra.Command
	stop            <-chan struct{}
	lease           *leaseRelease
	compat          *compat
	provider        provider.Options
	useVPCEndpoints bool
	metricsAddr     string
	// built is what initCloud makes for our controllers.
	built built
}

// fatal stops the process at start, naming what is wrong.
func fatal(err error, msg string) {
	klog.ErrorS(err, msg)
	klog.FlushAndExit(klog.ExitFlushTimeout, 1)
}

// initCloud is the app framework's cloud initializer: it checks the
// flags, opens the listeners and builds the provider; any error stops the
// process at start, naming the flag or field.
func (cc *command) initCloud(c *ccmconfig.CompletedConfig) cloudprovider.Interface {
	klog.InfoS("Starting alicloud-ccm", "version", version.Get().String())
	if err := cc.lease.configure(c); err != nil {
		fatal(err, "Unable to set up the Lease release on SIGTERM")
	}
	applyMemoryLimit()
	releaseStartupPages(cc.stop)
	name := c.ComponentConfig.KubeCloudShared.CloudProvider.Name
	if name != provider.Name && name != provider.LegacyName {
		klog.ErrorS(nil, "Unsupported --cloud-provider", "got", name, "want", provider.Name)
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	flags := cc.cmd.Flags()
	// The existing CCM's flags this one cannot honour stop it here,
	// naming the flag; those it ignores are logged once.
	if err := cc.compat.check(flags); err != nil {
		fatal(err, "Unsupported flag of the existing CCM")
	}
	network, err := cc.compat.resolveNetwork(flags, cc.useVPCEndpoints)
	if err != nil {
		fatal(err, "Invalid endpoint network")
	}
	// A bad address stops the process at start, naming the flag, before
	// anything else is loaded.
	l, err := listenMetrics(cc.metricsAddr)
	if err != nil {
		fatal(err, "Invalid metrics listener")
	}
	cc.serveProbes(c)
	shared := c.ComponentConfig.KubeCloudShared
	cc.provider.Nodes.RoutesEnabled = shared.ConfigureCloudRoutes && shared.ClusterCIDR != ""
	cc.provider.Network = network
	cc.provider.Kube = c.Client
	cc.built.service.WorkersFlagSet = flags.Changed(concurrentServiceSyncsFlag)
	cc.built.service.DisableCLB, cc.built.service.DisableNLB = cc.compat.controllers.disabledKinds()
	cloud, err := provider.New(shared.CloudProvider.CloudConfigFile, cc.provider)
	if err != nil {
		// A bad configuration stops the process at start, naming the field.
		fatal(err, "Invalid cloud configuration")
	}
	cc.built.cloud = cloud
	if err := cloud.Nodes.WatchInitialization(c.SharedInformers.Core().V1().Nodes().Informer()); err != nil {
		klog.ErrorS(err, "Unable to watch Node initialization for its latency metric")
	}
	if l != nil {
		serveMetrics(l, cc.stop)
	}
	return cloud
}

// serveProbes adds the plain-HTTP health probes to the secure port: Run
// serves it after initCloud returns, so wrapping its listener here adds
// them to the same port. Without a secure port (--secure-port=0) there
// are no checks to serve: only an explicit --health-probe-bind-addr is
// then an error.
func (cc *command) serveProbes(c *ccmconfig.CompletedConfig) {
	explicit := cc.cmd.Flags().Changed(HealthProbeBindAddrFlag)
	if c.SecureServing == nil && !explicit {
		return
	}
	var secure net.Listener
	if c.SecureServing != nil {
		secure = c.SecureServing.Listener
	}
	wrapped, err := serveHealthProbes(secure, cc.compat.healthAddr, explicit, cc.stop)
	if err != nil {
		fatal(err, "Invalid health probe listener")
	}
	if c.SecureServing != nil {
		c.SecureServing.Listener = wrapped
	}
}

// Long is the opening of --help: what this CCM is, its cloud-config and the
// environment it reads.
const Long = `cloud-controller-manager is the Kubernetes cloud controller manager for
Alibaba Cloud (alicloud-ccm): it initializes Nodes from their ECS instances
and deletes Nodes whose instance is gone, programs each Node's pod CIDR into
the VPC route tables (--configure-cloud-routes), and gives type: LoadBalancer
Services a Classic Load Balancer (CLB) or, with loadBalancerClass
alibabacloud.com/nlb, a Network Load Balancer (NLB). It is a drop-in
replacement for the existing Alibaba Cloud CCM: same cloud-config, Service
annotations, labels, finalizers, names and tags, and the same leader-election
Lease (kube-system/ccm).

Cloud config (--cloud-config FILE, YAML or JSON, one Global section):

  Global:
    clusterID: c-abc123          # tags and names what this cluster owns; unset: the one id
                                 # the cluster's LBs, listeners and routes carry in the
                                 # cloud, else the CCM refuses to start
                                 # (--legacy-default-cluster-id keeps "clusterid")
    region: cn-hangzhou          # default: instance metadata
    vpcid: vpc-...               # default: instance metadata
    vswitchid: vsw-...           # or "zone:vsw-...,zone:vsw-..." or ":vsw-a,:vsw-b"; internal CLBs
    routeTableIDs: vtb-a,vtb-b   # default: the VPC's only route table
    resourceGroupID: rg-...      # for new load balancers
    disablePublicSLB: false      # true refuses internet-facing CLBs
    loadBalancerReuse: any       # any, tagged (granted: kubernetes.reusable=<ns>,... or true) or none
    certificateGrants:           # under tagged: certificate id -> namespaces ("*": all); the only
      "123-cn-hangzhou": team-a  # grant of NLB certificates, a CLB certificate's tag alternative
    serviceBackendType: ecs      # or eni
    serviceMaxConcurrentReconciles: 16  # Services at once; --concurrent-service-syncs wins
    useVPCEndpoints: true        # the default: ecs-vpc.<region>.aliyuncs.com etc.;
                                 # public endpoints: --network=public
    featureGates: "IPv6DualStack=false"
    kubernetesClusterTag: ack.aliyun.com
    ramRoleName: ...             # instance RAM role (default: the only one)
    ecsEndpoint/vpcEndpoint/slbEndpoint/nlbEndpoint/stsEndpoint, scheme, metadataEndpoint
    accessKeyID/accessKeySecret  # base64; discouraged, prefer RRSA, the env or a RAM role

Environment:

  Credentials: the cloud-config's accessKeyID/accessKeySecret, else the first
  source of credentials-go's default chain that has some, in this order:
  ALIBABA_CLOUD_ACCESS_KEY_ID, ALIBABA_CLOUD_ACCESS_KEY_SECRET
  [, ALIBABA_CLOUD_SECURITY_TOKEN]
                                 AccessKey or STS token (the chart's Secret)
  ACCESS_KEY_ID, ACCESS_KEY_SECRET
                                 the existing CCM's names for an AccessKey
  ALIBABA_CLOUD_ROLE_ARN, ALIBABA_CLOUD_OIDC_PROVIDER_ARN,
  ALIBABA_CLOUD_OIDC_TOKEN_FILE  RRSA: the ServiceAccount token exchanged at STS
  ~/.aliyun/config.json, ~/.alibabacloud/credentials (ALIBABA_CLOUD_PROFILE)
                                 CLI and credentials-file profiles
  (none of those)                the instance RAM role over IMDSv2
  ECS_ENDPOINT, VPC_ENDPOINT, SLB_ENDPOINT, NLB_ENDPOINT
                                 product API host[:port], over the cloud-config
  STS_ENDPOINT                   STS host[:port] of RRSA, over the cloud-config (else
                                 ALIBABA_CLOUD_STS_ENDPOINT, else
                                 sts[-vpc].<region>.aliyuncs.com)
  ALICLOUD_CLIENT_SCHEME         HTTPS (default) or HTTP
  METADATA_ENDPOINT              instance metadata base URL (http://100.100.100.200)
  SERVICE_FORCE_BACKEND_ENI      true|false: default backend type eni or ecs
  GOMEMLIMIT                     Go soft memory limit (e.g. 300MiB, or off); unset:
                                 80% of the container's (cgroup's) memory limit

--version prints this build (version, commit, date, Kubernetes libraries).`

// wrapVersion makes --version print our version line instead of
// upstream's Kubernetes version; --version=raw stays upstream's.
func wrapVersion(cmd *cobra.Command) {
	runE := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if f := c.Flags().Lookup("version"); f != nil && f.Value.String() == "true" {
			fmt.Fprintln(c.OutOrStdout(), version.Line("alicloud-ccm"))
			return nil
		}
		return runE(c, args)
	}
}

func addFlags(fs *pflag.FlagSet, o *provider.Options, so *serviceOptions, useVPCEndpoints *bool) {
	fs.BoolVar(&o.IMDSv2, "enable-imdsv2", o.IMDSv2, "Use IMDSv2 session tokens with the instance metadata service.")
	fs.Float64Var(&o.CloudQPS, "cloud-api-qps", o.CloudQPS, "Starting Alibaba Cloud API call rate per second of each action. When the cloud answers Throttling.Api the action is paced at the quota the answer advertises (for 10 minutes, then probed again) or halved; while it is not throttled and calls queue, it speeds up, above this rate too, up to --cloud-api-product-qps.")
	fs.Float64Var(&o.CloudProductQPS, "cloud-api-product-qps", o.CloudProductQPS, "Starting and highest Alibaba Cloud API call rate per second of each product, all actions together, and the highest rate of any action. It is lowered only when the cloud throttles the account's product scope (Throttling.User); each action's own quota is found per action.")
	fs.IntVar(&o.CloudBurst, "cloud-api-burst", o.CloudBurst, "Burst of Alibaba Cloud API calls per product and per action at their starting rate (smaller while throttled, at most half an advertised quota).")
	fs.DurationVar(&o.Nodes.InstanceCacheTTL, "instance-cache-ttl", o.Nodes.InstanceCacheTTL, "How long one listing of the VPC's ECS instances answers node lookups.")
	fs.DurationVar(&so.NodeBatchWindow, "node-batch-window", so.NodeBatchWindow,
		"How quiet Node changes must be before the load balancer backends they move are updated, so that Nodes joining or leaving about a second apart reach each backend group in one write. 0: update at once.")
	fs.DurationVar(&so.NodeBatchMaxWait, "node-batch-max-wait", so.NodeBatchMaxWait,
		"Longest a Node change waits for --node-batch-window while other Node changes keep coming. 0: no bound.")
	fs.BoolVar(useVPCEndpoints, useVPCEndpointsFlag, *useVPCEndpoints,
		"true: --network=vpc (the default); false: --network=public. Older than --network, which wins when both are given and must then agree.")
	fs.BoolVar(&o.Nodes.SkipDisableSourceDestCheck, "skip-disable-source-dest-check", o.Nodes.SkipDisableSourceDestCheck,
		"Leave the source/destination check of a Node's primary ENI as it is at initialization (by default it is turned off, as pod traffic routed to the instance needs).")
	fs.BoolVar(&o.LegacyDefaultClusterID, config.LegacyDefaultClusterIDFlag, o.LegacyDefaultClusterID,
		"Use the existing CCM's literal default cluster id \""+config.DefaultClusterID+"\" when the cloud-config sets no clusterID, for clusters whose existing CCM never set it (its load balancers, listeners, groups and routes carry that id). Without it a missing clusterID stops the CCM at start.")
}

// defaultProviderOptions are the provider settings before flags, shared
// by the CCM and its plan command.
func defaultProviderOptions() provider.Options {
	return provider.Options{IMDSv2: true, CloudQPS: 20, CloudProductQPS: cloud.DefaultProductQPS, CloudBurst: 40,
		Nodes: provider.NodeOptions{InstanceCacheTTL: 15 * time.Second}}
}

// Main runs the command and exits.
func Main() {
	cmd, err := NewCommand(make(chan struct{}))
	if err != nil {
		klog.ErrorS(err, "Unable to initialize command options")
		os.Exit(1)
	}
	os.Exit(run(cmd))
}

// concurrentServiceSyncsFlag is upstream's service worker flag; given
// explicitly, it wins over cloud-config serviceMaxConcurrentReconciles.
const concurrentServiceSyncsFlag = "concurrent-service-syncs"
