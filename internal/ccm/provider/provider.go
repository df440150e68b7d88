// Package provider is the thin cloudprovider.Interface adapter over the
// CCM's operations: InstancesV2 for the upstream node controllers, and
// access to the configuration and cloud client for our own controllers.
package provider

import (
	"context"
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

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
	// LegacyDefaultClusterID lets a cloud-config without clusterID use the
	// existing CCM's default "clusterid" instead of failing
	// (--legacy-default-cluster-id).
	LegacyDefaultClusterID bool
	// UseVPCEndpoints calls the products' VPC-internal endpoints
	// (--use-vpc-endpoints; cloud-config useVPCEndpoints does the same).
	UseVPCEndpoints bool
	// SkipDisableSourceDestCheck leaves the primary ENI's source/destination
	// check alone at Node initialization (--skip-disable-source-dest-check).
	SkipDisableSourceDestCheck bool
	// ServiceWorkersFlagSet says --concurrent-service-syncs was given, so it
	// wins over cloud-config serviceMaxConcurrentReconciles.
	ServiceWorkersFlagSet bool
	// RoutesEnabled makes initialization mark Nodes NetworkUnavailable
	// until the route controller has created their routes.
	RoutesEnabled bool
}

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
	copts := config.Options{LegacyDefaultClusterID: opts.LegacyDefaultClusterID}
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
	var creds cloud.CredentialsProvider
	if cfg.StaticCredentials != nil {
		creds = cloud.StaticProvider{Creds: cloud.NewCredentials(cfg.StaticCredentials.ID, cfg.StaticCredentials.Secret.Reveal(), "", time.Time{})}
		klog.InfoS("Using AccessKey credentials", "accessKeyID", cfg.StaticCredentials.ID)
	} else {
		creds = cloud.NewRAMRoleProvider(md, cfg.RAMRoleName)
		klog.InfoS("Using the instance RAM role's STS credentials from the metadata service", "endpoint", mdBase)
	}
	endpoints := cloud.Endpoints{
		ECS: cfg.Endpoints.ECS, VPC: cfg.Endpoints.VPC, SLB: cfg.Endpoints.SLB, NLB: cfg.Endpoints.NLB,
		Scheme: cfg.Endpoints.Scheme, UseVPC: cfg.Endpoints.UseVPC || opts.UseVPCEndpoints,
	}
	client, err := cloud.New(cloud.Options{
		Region:      cfg.Region,
		Credentials: creds,
		Endpoints:   endpoints,
		QPS:         opts.CloudQPS,
		ProductQPS:  opts.CloudProductQPS,
		Burst:       opts.CloudBurst,
		UserAgent:   cfg.ClusterID,
	})
	if err != nil {
		return nil, err
	}
	index := nodes.NewIndex(nodes.CloudLister{Client: client}, cfg.VpcID)
	if opts.InstanceCacheTTL > 0 {
		index.MaxAge = opts.InstanceCacheTTL
	}
	hosts := endpoints.Hosts(cfg.Region)
	klog.InfoS("Cloud configuration loaded", "region", cfg.Region, "vpc", cfg.VpcID, "clusterID", cfg.ClusterID,
		"routeTables", cfg.RouteTableIDs, "vSwitches", cfg.VSwitches, "useVPCEndpoints", endpoints.UseVPC,
		"ecsEndpoint", hosts[cloud.ECS], "vpcEndpoint", hosts[cloud.VPC], "slbEndpoint", hosts[cloud.SLB], "nlbEndpoint", hosts[cloud.NLB],
		"scheme", cfg.Endpoints.Scheme)
	qps, productQPS, burst := client.Throttle().Config()
	klog.InfoS("Cloud API client pacing", "cloudAPIQPS", qps, "cloudAPIProductQPS", productQPS, "cloudAPIBurst", burst)
	instances := nodes.NewInstances(index, cfg.Region, nodes.CloudLister{Client: client})
	instances.SetDualStack(cfg.FeatureGates["IPv6DualStack"])
	return &Cloud{Config: cfg, Client: client, Options: opts, Nodes: instances}, nil
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
// the existing CCM's literal default was asked for.
func (c *Cloud) HasClusterID() bool { return true }
