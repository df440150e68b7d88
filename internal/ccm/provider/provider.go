// Package provider is the thin cloudprovider.Interface adapter over the
// CCM's operations: InstancesV2 for the upstream node controllers, and
// access to the configuration and cloud client for our own controllers.
package provider

import (
	"context"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/config"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Name is the provider name given to --cloud-provider.
const Name = "alicloud"

// LegacyName is the existing CCM's provider name, accepted too.
const LegacyName = "alibabacloud"

// Options are the provider's flags: how to reach the cloud and read the
// cloud-config, and the Node serving behind InstancesV2. The controllers
// that are not the upstream node controllers get their own options from
// the app.
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
	// Transport carries every cloud call (nil: the client's own); the plan
	// command passes a cloud.Recorder so that no write leaves the process.
	Transport http.RoundTripper
	// Nodes are the settings of the Node lookups and initialization.
	Nodes NodeOptions
}

// NodeOptions set the InstancesV2 the upstream node controllers use.
type NodeOptions struct {
	// InstanceCacheTTL is how long an instance listing answers node lookups.
	InstanceCacheTTL time.Duration
	// SkipDisableSourceDestCheck leaves the primary ENI's source/destination
	// check alone at Node initialization (--skip-disable-source-dest-check).
	SkipDisableSourceDestCheck bool
	// RoutesEnabled makes initialization mark Nodes NetworkUnavailable
	// until the route controller has created their routes.
	RoutesEnabled bool
}

// The values of Options.Network, as the existing CCM's --network takes them.
const (
	// NetworkVPC calls <product>-vpc.<region>.aliyuncs.com.
	NetworkVPC = "vpc"
	// NetworkPublic calls the public regional endpoints.
	NetworkPublic = "public"
)

// Cloud implements cloudprovider.Interface.
type Cloud struct {
	// Config is the validated cloud-config.
	Config *config.Config
	// Client is the cloud API layer every controller uses.
	Client *cloud.Client
	// Nodes serves the node controllers through InstancesV2.
	Nodes *nodes.Instances
	// nodeOpts are the Node settings New was given.
	nodeOpts NodeOptions
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// New builds the provider from a cloud-config file path.
func New(configPath string, opts Options) (*Cloud, error) {
	cfg, err := loadConfig(configPath, opts)
	if err != nil {
		return nil, err
	}
	client, err := newClient(cfg, opts)
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
	if opts.Nodes.InstanceCacheTTL > 0 {
		index.MaxAge = opts.Nodes.InstanceCacheTTL
	}
	logLoaded(cfg, client, opts)
	instances := nodes.NewInstances(index, cfg.Region, nodes.CloudLister{Client: client})
	instances.SetDualStack(cfg.FeatureGates["IPv6DualStack"])
	return &Cloud{Config: cfg, Client: client, Nodes: instances, nodeOpts: opts.Nodes}, nil
}

// Initialize is called once before the controllers start.
func (c *Cloud) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	if client, err := clientBuilder.Client("cloud-node-controller"); err != nil {
		klog.ErrorS(err, "No client for Node events; lookups will only be logged")
	} else {
		c.Nodes.RecordEvents(client, stop)
	}
	steps := nodes.InitOptions{MarkNetworkUnavailable: c.nodeOpts.RoutesEnabled}
	if !c.nodeOpts.SkipDisableSourceDestCheck {
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
