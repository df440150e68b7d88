package provider

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/clusterid"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/config"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud/metadata"
)

// discoveryTimeout bounds the cluster id discovery at start.
const discoveryTimeout = time.Minute

// loadConfig reads and validates the cloud-config. The metadata endpoint
// may itself come from the file or environment, so it parses first
// without metadata, then fills the gaps from it.
func loadConfig(configPath string, opts Options) (*config.Config, error) {
	env := os.LookupEnv
	file, warnings, err := readFile(configPath)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		klog.InfoS("Ignoring unknown cloud-config field", "field", w)
	}
	copts := config.Options{LegacyDefaultClusterID: opts.LegacyDefaultClusterID, DiscoverClusterID: true}
	probe, err := config.Build(file, env, nil, copts)
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
	return config.Build(file, env, metadata.New(mdBase, opts.IMDSv2), copts)
}

// endpointsOf are the cloud-config's endpoints on the flags' network.
func endpointsOf(cfg *config.Config, opts Options) cloud.Endpoints {
	return cloud.Endpoints{
		ECS: cfg.Endpoints.ECS, VPC: cfg.Endpoints.VPC, SLB: cfg.Endpoints.SLB, NLB: cfg.Endpoints.NLB,
		Scheme: cfg.Endpoints.Scheme, UseVPC: useVPC(opts.Network),
	}
}

// newClient builds the cloud client every controller uses.
func newClient(cfg *config.Config, opts Options) (*cloud.Client, error) {
	creds, err := credentialsProvider(cfg, opts)
	if err != nil {
		return nil, err
	}
	return cloud.New(cloud.Options{
		Region:      cfg.Region,
		Credentials: creds,
		Endpoints:   endpointsOf(cfg, opts),
		QPS:         opts.CloudQPS,
		ProductQPS:  opts.CloudProductQPS,
		Burst:       opts.CloudBurst,
		UserAgent:   cfg.ClusterID,
		Transport:   opts.Transport,
	})
}

// logLoaded logs the configuration and pacing the CCM runs with.
func logLoaded(cfg *config.Config, client *cloud.Client, opts Options) {
	endpoints := endpointsOf(cfg, opts)
	hosts := endpoints.Hosts(cfg.Region)
	klog.InfoS("Cloud configuration loaded", "region", cfg.Region, "vpc", cfg.VpcID, "clusterID", cfg.ClusterID,
		"routeTables", cfg.RouteTableIDs, "vSwitches", cfg.VSwitches, "network", network(endpoints.UseVPC), "useVPCEndpoints", endpoints.UseVPC,
		"ecsEndpoint", hosts[cloud.ECS], "vpcEndpoint", hosts[cloud.VPC], "slbEndpoint", hosts[cloud.SLB], "nlbEndpoint", hosts[cloud.NLB],
		"scheme", cfg.Endpoints.Scheme)
	qps, productQPS, burst := client.Throttle().Config()
	klog.InfoS("Cloud API client pacing", "cloudAPIQPS", qps, "cloudAPIProductQPS", productQPS, "cloudAPIBurst", burst)
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
