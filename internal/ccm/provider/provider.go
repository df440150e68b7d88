// Package provider is the thin cloudprovider.Interface adapter over the
// CCM's operations: InstancesV2 for the upstream node controllers, and
// access to the configuration and cloud client for our own controllers.
package provider

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/clusterid"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/config"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud/metadata"
)

// Name is the provider name given to --cloud-provider.
const Name = "alicloud"

// LegacyName is the existing CCM's provider name, accepted too.
const LegacyName = "alibabacloud"

// Options are the tunables that are flags rather than cloud-config fields.
type Options struct {
	// IMDSv2 uses session tokens with the metadata service.
	IMDSv2 bool
	// CloudQPS is the starting API call rate per second of each action;
	// the client paces an action at the quota the cloud advertises when it
	// throttles, and probes above CloudQPS while it does not
	// (--cloud-api-qps).
	CloudQPS float64
	// CloudProductQPS is the starting and highest call rate per second of
	// each product, all actions together (--cloud-api-product-qps).
	CloudProductQPS float64
	// CloudBurst is how many calls per product may go at once above CloudQPS
	// (--cloud-api-burst).
	CloudBurst int
	// InstanceCacheTTL is how long an instance listing answers node lookups.
	InstanceCacheTTL time.Duration
	// NodeBatchWindow and NodeBatchMaxWait are the service controller's
	// coalescing of Node changes (--node-batch-window,
	// --node-batch-max-wait; zero: its defaults).
	NodeBatchWindow, NodeBatchMaxWait time.Duration
	// LegacyDefaultClusterID lets a cloud-config without clusterID use the
	// existing CCM's default "clusterid" instead of failing
	// (--legacy-default-cluster-id).
	LegacyDefaultClusterID bool
	// Network is NetworkVPC or NetworkPublic: the products' VPC-internal
	// or public endpoints, from --network or --use-vpc-endpoints; empty
	// means VPC, the existing CCM's default. Explicit endpoints win either
	// way.
	Network string
	// Kube reads the Services and Nodes that identify the cluster's load
	// balancers and routes when the cloud-config has no clusterID.
	Kube kubernetes.Interface
	// DisableCLB and DisableNLB leave Services of that kind to others: the
	// existing CCM's --controllers without "service" or "nlb".
	DisableCLB, DisableNLB bool
	// SkipDisableSourceDestCheck leaves the primary ENI's source/destination
	// check alone at Node initialization (--skip-disable-source-dest-check).
	SkipDisableSourceDestCheck bool
	// ServiceWorkersFlagSet says --concurrent-service-syncs was given, so it
	// wins over cloud-config serviceMaxConcurrentReconciles.
	ServiceWorkersFlagSet bool
	// RoutesEnabled makes initialization mark Nodes NetworkUnavailable
	// until the route controller has created their routes.
	RoutesEnabled bool
	// Transport carries every cloud call (nil: the client's own); the plan
	// command passes a cloud.Recorder so that no write leaves the process.
	Transport http.RoundTripper
}

// The values of Options.Network, as the existing CCM's --network takes them.
const (
	// NetworkVPC calls <product>-vpc.<region>.aliyuncs.com.
	NetworkVPC = "vpc"
	// NetworkPublic calls the public regional endpoints.
	NetworkPublic = "public"
)

// discoveryTimeout bounds the cluster id discovery at start.
const discoveryTimeout = time.Minute

// Cloud implements cloudprovider.Interface.
type Cloud struct {
	// Config is the validated cloud-config.
	Config *config.Config
	// Client is the cloud API layer every controller uses.
	Client *cloud.Client
	// Nodes serves the node controllers through InstancesV2.
	Nodes *nodes.Instances
	// Options are the flag settings New was given.
	Options Options
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// New builds the provider from a cloud-config file path.
func New(configPath string, opts Options) (*Cloud, error) {
	env := os.LookupEnv
	// The metadata endpoint may itself come from the file or environment,
	// so parse first without metadata, then fill the gaps.
	file, warnings, err := readFile(configPath)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		klog.InfoS("Ignoring unknown cloud-config field", "field", w)
	}
	copts := config.Options{LegacyDefaultClusterID: opts.LegacyDefaultClusterID, DiscoverClusterID: true}
	probe, err := config.Build(file, env, nil, copts)
	var md *metadata.Client
	if err != nil {
		var fe *config.FieldError
		if !asFieldError(err, &fe) || (fe.Field != "Global.region" && fe.Field != "Global.vpcid") {
			return nil, err
		}
	}
	mdBase := "http://100.100.100.200"
	if probe != nil {
		mdBase = probe.MetadataEndpoint
	} else if v, ok := env("METADATA_ENDPOINT"); ok && v != "" {
		mdBase = v
	} else if file.Global.MetadataEndpoint != "" {
		mdBase = file.Global.MetadataEndpoint
	}
	md = metadata.New(mdBase, opts.IMDSv2)
	cfg, err := config.Build(file, env, md, copts)
	if err != nil {
		return nil, err
	}
	creds, err := credentialsProvider(cfg, opts)
	if err != nil {
		return nil, err
	}
	endpoints := cloud.Endpoints{
		ECS: cfg.Endpoints.ECS, VPC: cfg.Endpoints.VPC, SLB: cfg.Endpoints.SLB, NLB: cfg.Endpoints.NLB,
		Scheme: cfg.Endpoints.Scheme, UseVPC: useVPC(opts.Network),
	}
	client, err := cloud.New(cloud.Options{
		Region:      cfg.Region,
		Credentials: creds,
		Endpoints:   endpoints,
		QPS:         opts.CloudQPS,
		ProductQPS:  opts.CloudProductQPS,
		Burst:       opts.CloudBurst,
		UserAgent:   cfg.ClusterID,
		Transport:   opts.Transport,
	})
	if err != nil {
		return nil, err
	}
	if cfg.ClusterID == "" {
		if err := discoverClusterID(cfg, client, opts.Kube); err != nil {
			return nil, err
		}
		client.SetUserAgent(cfg.ClusterID)
	}
	index := nodes.NewIndex(nodes.CloudLister{Client: client}, cfg.VpcID)
	if opts.InstanceCacheTTL > 0 {
		index.MaxAge = opts.InstanceCacheTTL
	}
	hosts := endpoints.Hosts(cfg.Region)
	klog.InfoS("Cloud configuration loaded", "region", cfg.Region, "vpc", cfg.VpcID, "clusterID", cfg.ClusterID,
		"routeTables", cfg.RouteTableIDs, "vSwitches", cfg.VSwitches, "network", network(endpoints.UseVPC), "useVPCEndpoints", endpoints.UseVPC,
		"ecsEndpoint", hosts[cloud.ECS], "vpcEndpoint", hosts[cloud.VPC], "slbEndpoint", hosts[cloud.SLB], "nlbEndpoint", hosts[cloud.NLB],
		"scheme", cfg.Endpoints.Scheme)
	qps, productQPS, burst := client.Throttle().Config()
	klog.InfoS("Cloud API client pacing", "cloudAPIQPS", qps, "cloudAPIProductQPS", productQPS, "cloudAPIBurst", burst)
	instances := nodes.NewInstances(index, cfg.Region, nodes.CloudLister{Client: client})
	instances.SetDualStack(cfg.FeatureGates["IPv6DualStack"])
	return &Cloud{Config: cfg, Client: client, Options: opts, Nodes: instances}, nil
}

// credentialsProvider keeps the precedence the CCM has always had: the
// cloud-config's AccessKey first, then credentials-go's default chain
// (ALIBABA_CLOUD_ACCESS_KEY_ID from the env or the chart's Secret, the
// existing CCM's ACCESS_KEY_ID, RRSA, profiles, the instance RAM role).
// It logs the AccessKey id or the sources, never a secret.
func credentialsProvider(cfg *config.Config, opts Options) (cloud.CredentialsProvider, error) {
	if k := cfg.StaticCredentials; k != nil {
		klog.InfoS("Using the cloud-config's AccessKey credentials", "accessKeyID", k.ID)
		return cloud.StaticProvider{Creds: cloud.NewCredentials(k.ID, k.Secret.Reveal(), "", time.Time{})}, nil
	}
	co := cloud.ChainOptions{
		STSEndpoint: cfg.Endpoints.STS, STSRegion: cfg.Region, STSUseVPC: useVPC(opts.Network),
		RoleName: cfg.RAMRoleName, MetadataEndpoint: cfg.MetadataEndpoint, DisableIMDSv1: opts.IMDSv2,
	}
	if k := cfg.LegacyEnvCredentials; k != nil {
		legacy := cloud.NewCredentials(k.ID, k.Secret.Reveal(), "", time.Time{})
		co.LegacyAccessKey = &legacy
	}
	chain, err := cloud.NewChain(co)
	if err != nil {
		return nil, fmt.Errorf("cloud credentials: %w", err)
	}
	klog.InfoS("Using the credentials chain; the first source with credentials is used from then on",
		"sources", chain.Sources(), "stsEndpoint", cfg.Endpoints.STS, "ramRoleName", cfg.RAMRoleName, "metadataEndpoint", cfg.MetadataEndpoint)
	return chain, nil
}

// useVPC resolves the endpoints' network: the flags when given, else VPC
// as the existing CCM's --network defaults to (a control plane without
// Internet egress reaches only those). cloud-config useVPCEndpoints: true
// says the same as the default; false cannot be told from unset, so public
// endpoints take --network=public.
func useVPC(flag string) bool { return flag != NetworkPublic }

func network(vpc bool) string {
	if vpc {
		return NetworkVPC
	}
	return NetworkPublic
}

// discoverClusterID sets cfg.ClusterID to the one cluster id the cloud
// shows for this cluster, or refuses naming the field and what discovery
// read and found.
func discoverClusterID(cfg *config.Config, client *cloud.Client, kube kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
	defer cancel()
	res := clusterid.Discover(ctx, clusterid.Input{Cloud: client, Kube: kube, VpcID: cfg.VpcID, RouteTables: cfg.RouteTableIDs})
	if res.ID == "" {
		return config.ClusterIDRequired(res.Explain())
	}
	sources := make([]string, 0, len(res.Findings))
	for _, f := range res.Findings {
		sources = append(sources, f.Source)
	}
	klog.InfoS("Discovered the cluster id: the cloud-config sets no clusterID, and the cluster's load balancers and routes all carry this one",
		"clusterID", res.ID, "evidence", sources, "read", res.Tried, "cloudCalls", res.Calls)
	cfg.ClusterID = res.ID
	return nil
}

func readFile(path string) (*config.File, []string, error) {
	if path == "" {
		f, w, err := config.Parse(nil)
		return f, w, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cloud-config: %w", err)
	}
	return config.Parse(data)
}

func asFieldError(err error, target **config.FieldError) bool {
	fe, ok := err.(*config.FieldError)
	if ok {
		*target = fe
	}
	return ok
}

// ServiceWorkers is how many Services are reconciled at once: an explicit
// --concurrent-service-syncs (flag), else cloud-config
// serviceMaxConcurrentReconciles, else the flag's default.
func (c *Cloud) ServiceWorkers(flag int) int {
	if !c.Options.ServiceWorkersFlagSet && c.Config.ServiceMaxConcurrentReconciles > 0 {
		return c.Config.ServiceMaxConcurrentReconciles
	}
	return flag
}

// Initialize is called once before the controllers start.
func (c *Cloud) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	if client, err := clientBuilder.Client("cloud-node-controller"); err != nil {
		klog.ErrorS(err, "No client for Node events; lookups will only be logged")
	} else {
		broadcaster := record.NewBroadcaster()
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		c.Nodes.SetRecorder(broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "cloud-controller-manager"}))
		go func() {
			<-stop
			broadcaster.Shutdown()
		}()
	}
	steps := nodes.InitOptions{MarkNetworkUnavailable: c.Options.RoutesEnabled}
	if !c.Options.SkipDisableSourceDestCheck {
		steps.ENIs = nodes.CloudLister{Client: c.Client}
	}
	if steps.MarkNetworkUnavailable {
		// The cloud-node controller's identity: it may patch Node status.
		if client, err := clientBuilder.Client("node-controller"); err != nil {
			klog.ErrorS(err, "No client to mark initialized Nodes NetworkUnavailable; the route controller will set the condition")
		} else {
			steps.Kube = client
		}
	}
	c.Nodes.SetInit(steps)
	klog.InfoS("Node initialization steps", "disableSourceDestCheck", steps.ENIs != nil, "markNetworkUnavailable", steps.Kube != nil)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Fail loudly early when credentials or endpoints are wrong, rather
		// than on the first node; the listing then answers the node
		// controllers' first lookups, so a start costs one listing, not two.
		if err := c.Nodes.Warm(ctx); err != nil {
			klog.ErrorS(err, "Cloud API check failed; controllers will keep retrying", "vpc", c.Config.VpcID)
		}
	}()
}

// LoadBalancer is served by our own service controller, not this interface.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return nil, false }

// Instances is the legacy interface; InstancesV2 replaces it.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 serves the cloud-node and cloud-node-lifecycle controllers.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.Nodes, true }

// Zones is deprecated and unused when InstancesV2 is served.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not supported.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes is served by our own route controller, not this interface.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

// ProviderName returns the provider name.
func (c *Cloud) ProviderName() string { return Name }

// HasClusterID is true: New refuses a cloud-config without clusterID unless
// the existing CCM's literal default was asked for or the cloud shows the
// one id the cluster's resources carry.
func (c *Cloud) HasClusterID() bool { return true }
