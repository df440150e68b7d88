package config

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/clip"
)

// Build validates the file, applies the environment and fills the gaps
// from instance metadata. A missing clusterID is an error unless
// opts.LegacyDefaultClusterID or opts.DiscoverClusterID is set; it is
// checked before anything else,
// so it is reported even when the metadata service is unreachable.
func Build(f *File, env Env, md MetadataSource, opts Options) (*Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	g := f.Global
	c := &Config{
		ClusterID:                      g.ClusterID,
		KubernetesClusterTag:           g.KubernetesClusterTag,
		Region:                         g.Region,
		VpcID:                          g.VpcID,
		ZoneID:                         g.ZoneID,
		ResourceGroupID:                g.ResourceGroupID,
		DisablePublicSLB:               g.DisablePublicSLB,
		RAMRoleName:                    g.RAMRoleName,
		ServiceMaxConcurrentReconciles: g.ServiceMaxConcurrentReconciles,
	}
	if strings.TrimSpace(c.ClusterID) == "" {
		switch {
		case opts.LegacyDefaultClusterID:
			c.ClusterID = DefaultClusterID
		case opts.DiscoverClusterID:
			// Left empty: the caller discovers it or refuses to start.
		default:
			// Defaulting silently would name and tag a second set of load
			// balancers, listeners, groups and routes next to the cluster's.
			return nil, ClusterIDRequired("")
		}
	}
	if c.KubernetesClusterTag == "" {
		c.KubernetesClusterTag = DefaultKubernetesClusterTag
	}
	if err := c.setNetwork(g); err != nil {
		return nil, err
	}
	if err := c.setServiceDefaults(g, env); err != nil {
		return nil, err
	}
	var err error
	if c.CertificateGrants, err = parseCertificateGrants(g.CertificateGrants); err != nil {
		return nil, err
	}
	if c.FeatureGates, err = parseFeatureGates(g.FeatureGates); err != nil {
		return nil, err
	}
	if err := c.setEndpoints(g, env); err != nil {
		return nil, err
	}
	if err := c.setCredentials(g, env); err != nil {
		return nil, err
	}
	if md != nil {
		if err := c.fillFromMetadata(md); err != nil {
			return nil, err
		}
	}
	if c.Region == "" {
		return nil, &FieldError{Field: "Global.region", Reason: "not set and not available from the instance metadata service"}
	}
	if c.VpcID == "" {
		return nil, &FieldError{Field: "Global.vpcid", Reason: "not set and not available from the instance metadata service"}
	}
	return c, nil
}

// setNetwork sets the vSwitches and route tables.
func (c *Config) setNetwork(g Global) error {
	var err error
	if c.VSwitches, err = parseVSwitches(g.VswitchID); err != nil {
		return err
	}
	c.VSwitchIDs = map[string]string{}
	for _, v := range c.VSwitches {
		if _, seen := c.VSwitchIDs[v.Zone]; !seen {
			c.VSwitchIDs[v.Zone] = v.ID
		}
	}
	for _, id := range strings.Split(g.RouteTableIDs, ",") {
		if id = strings.TrimSpace(id); id != "" {
			if !strings.HasPrefix(id, "vtb-") {
				return &FieldError{Field: "Global.routeTableIDs", Reason: fmt.Sprintf("%s is not a route table id (vtb-...)", quoteValue(id))}
			}
			c.RouteTableIDs = append(c.RouteTableIDs, id)
		}
	}
	return nil
}

// setServiceDefaults sets the service controller's load balancer reuse,
// backend type (SERVICE_FORCE_BACKEND_ENI wins over the file) and workers.
func (c *Config) setServiceDefaults(g Global, env Env) error {
	switch r := strings.ToLower(strings.TrimSpace(g.LoadBalancerReuse)); r {
	case "", "any":
		c.LoadBalancerReuse = "any"
	case "tagged", "none":
		c.LoadBalancerReuse = r
	default:
		return &FieldError{Field: "Global.loadBalancerReuse", Reason: fmt.Sprintf("must be any, tagged or none, got %s", quoteValue(g.LoadBalancerReuse))}
	}
	switch bt := strings.ToLower(g.ServiceBackendType); bt {
	case "", "ecs", "eni":
		c.ServiceBackendType = bt
	default:
		return &FieldError{Field: "Global.serviceBackendType", Reason: fmt.Sprintf("must be ecs or eni, got %s", quoteValue(g.ServiceBackendType))}
	}
	if v, ok := env("SERVICE_FORCE_BACKEND_ENI"); ok && v != "" {
		switch strings.ToLower(v) {
		case "true":
			c.ServiceBackendType = "eni"
		case "false":
			c.ServiceBackendType = "ecs"
		default:
			return &FieldError{Field: "env SERVICE_FORCE_BACKEND_ENI", Reason: fmt.Sprintf("must be true or false, got %s", quoteValue(v))}
		}
	}
	if c.ServiceBackendType == "" {
		c.ServiceBackendType = "ecs"
	}
	if g.ServiceMaxConcurrentReconciles < 0 {
		return &FieldError{Field: "Global.serviceMaxConcurrentReconciles", Reason: "must not be negative"}
	}
	return nil
}

func (c *Config) setEndpoints(g Global, env Env) error {
	pick := func(field, fromFile, envKey string) (string, error) {
		v := fromFile
		if e, ok := env(envKey); ok && e != "" {
			v, field = e, "env "+envKey
		}
		return endpointHost(field, v)
	}
	var err error
	if c.Endpoints.ECS, err = pick("Global.ecsEndpoint", g.ECSEndpoint, "ECS_ENDPOINT"); err != nil {
		return err
	}
	if c.Endpoints.VPC, err = pick("Global.vpcEndpoint", g.VPCEndpoint, "VPC_ENDPOINT"); err != nil {
		return err
	}
	if c.Endpoints.SLB, err = pick("Global.slbEndpoint", g.SLBEndpoint, "SLB_ENDPOINT"); err != nil {
		return err
	}
	if c.Endpoints.NLB, err = pick("Global.nlbEndpoint", g.NLBEndpoint, "NLB_ENDPOINT"); err != nil {
		return err
	}
	if c.Endpoints.STS, err = pick("Global.stsEndpoint", g.STSEndpoint, "STS_ENDPOINT"); err != nil {
		return err
	}
	scheme, field := g.Scheme, "Global.scheme"
	if e, ok := env("ALICLOUD_CLIENT_SCHEME"); ok && e != "" {
		scheme, field = e, "env ALICLOUD_CLIENT_SCHEME"
	}
	switch strings.ToUpper(scheme) {
	case "":
		c.Endpoints.Scheme = "HTTPS"
	case "HTTP", "HTTPS":
		c.Endpoints.Scheme = strings.ToUpper(scheme)
	default:
		return &FieldError{Field: field, Reason: fmt.Sprintf("must be HTTP or HTTPS, got %s", quoteValue(scheme))}
	}
	c.Endpoints.UseVPC = g.UseVPCEndpoints
	c.MetadataEndpoint = g.MetadataEndpoint
	if e, ok := env("METADATA_ENDPOINT"); ok && e != "" {
		c.MetadataEndpoint = e
	}
	if c.MetadataEndpoint == "" {
		c.MetadataEndpoint = "http://100.100.100.200"
	}
	if u, err := url.Parse(c.MetadataEndpoint); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return &FieldError{Field: "metadataEndpoint/METADATA_ENDPOINT", Reason: fmt.Sprintf("must be an http(s) URL, got %s", quoteValue(c.MetadataEndpoint))}
	}
	return nil
}

// endpointHost keeps only host[:port], as the existing CCM does with the
// *_ENDPOINT variables.
func endpointHost(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			return "", &FieldError{Field: field, Reason: fmt.Sprintf("not a host[:port] or URL: %s", quoteValue(v))}
		}
		return u.Host, nil
	}
	if strings.ContainsAny(v, "/ ") {
		return "", &FieldError{Field: field, Reason: fmt.Sprintf("not a host[:port]: %s", quoteValue(v))}
	}
	return v, nil
}

func (c *Config) setCredentials(g Global, env Env) error {
	if g.AccessKeyID != "" || g.AccessKeySecret != "" {
		if g.AccessKeyID == "" || g.AccessKeySecret == "" {
			return &FieldError{Field: "Global.accessKeyID/accessKeySecret", Reason: "both must be set, or neither"}
		}
		id, err := base64.StdEncoding.DecodeString(strings.TrimSpace(g.AccessKeyID))
		if err != nil {
			return &FieldError{Field: "Global.accessKeyID", Reason: "must be base64-encoded"}
		}
		secret, err := base64.StdEncoding.DecodeString(strings.TrimSpace(g.AccessKeySecret))
		if err != nil {
			// Never echo the value: it is a secret.
			return &FieldError{Field: "Global.accessKeySecret", Reason: "must be base64-encoded"}
		}
		c.StaticCredentials = &AccessKey{ID: strings.TrimSpace(string(id)), Secret: Secret(strings.TrimSpace(string(secret)))}
		return nil
	}
	for _, pair := range [][2]string{
		{"ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"},
		{"ACCESS_KEY_ID", "ACCESS_KEY_SECRET"},
	} {
		id, _ := env(pair[0])
		secret, _ := env(pair[1])
		if id == "" && secret == "" {
			continue
		}
		// Checked here, at start, because the chain would otherwise skip a
		// half pair silently and sign with the next source's identity.
		if id == "" || secret == "" {
			return &FieldError{Field: "env " + pair[0] + "/" + pair[1], Reason: "both must be set, or neither"}
		}
		if pair[0] == "ACCESS_KEY_ID" {
			c.LegacyEnvCredentials = &AccessKey{ID: id, Secret: Secret(secret)}
		}
	}
	return nil
}

func (c *Config) fillFromMetadata(md MetadataSource) error {
	// Only what the file and environment leave unset is asked for, so a
	// cloud-config giving region, VPC and vSwitches runs off-cloud (a
	// laptop running plan) without a metadata service.
	fill := func(dst *string, path, field string) error {
		if *dst != "" {
			return nil
		}
		v, err := md.Get(path)
		if err != nil {
			return fmt.Errorf("cloud-config: %s not set and instance metadata %s failed (off-cloud, set %s): %w", field, path, field, err)
		}
		*dst = strings.TrimSpace(v)
		return nil
	}
	if err := fill(&c.Region, "region-id", "Global.region"); err != nil {
		return err
	}
	if err := fill(&c.VpcID, "vpc-id", "Global.vpcid"); err != nil {
		return err
	}
	if c.ZoneID == "" && len(c.VSwitches) > 0 && c.VSwitches[0].Zone != "" {
		// The zone only keys the metadata's vSwitch, which is not needed
		// when vSwitches are configured: take the first one's.
		c.ZoneID = c.VSwitches[0].Zone
	}
	if len(c.VSwitchIDs) > 0 {
		return nil
	}
	if err := fill(&c.ZoneID, "zone-id", "Global.zoneid"); err != nil {
		return err
	}
	vsw := ""
	if err := fill(&vsw, "vswitch-id", "Global.vswitchid"); err != nil {
		return err
	}
	if vsw != "" {
		c.VSwitchIDs = map[string]string{c.ZoneID: vsw}
		c.VSwitches = []VSwitch{{Zone: c.ZoneID, ID: vsw}}
	}
	return nil
}

// parseVSwitches reads "zone:vsw,zone:vsw", ":vsw,:vsw" or a bare "vsw",
// keeping every entry in order.
func parseVSwitches(s string) ([]VSwitch, error) {
	var out []VSwitch
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		zone, vsw, found := strings.Cut(item, ":")
		if !found {
			zone, vsw = "", item
		}
		if !strings.HasPrefix(vsw, "vsw-") {
			return nil, &FieldError{Field: "Global.vswitchid", Reason: fmt.Sprintf("%s is not zone:vsw-... or vsw-...", quoteValue(item))}
		}
		out = append(out, VSwitch{Zone: strings.TrimSpace(zone), ID: vsw})
	}
	return out, nil
}

func parseFeatureGates(s string) (map[string]bool, error) {
	known := map[string]bool{"IPv6DualStack": false, "EndpointSlice": true, "FilterServiceOnNodeChange": false, "LoadBalancerTypeAnnotation": false}
	out := map[string]bool{}
	for k, v := range known {
		out[k] = v
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, &FieldError{Field: "Global.featureGates", Reason: fmt.Sprintf("%s is not Gate=true|false", quoteValue(item))}
		}
		if _, exists := known[k]; !exists {
			return nil, &FieldError{Field: "Global.featureGates", Reason: fmt.Sprintf("unknown gate %s (known: IPv6DualStack, EndpointSlice, FilterServiceOnNodeChange, LoadBalancerTypeAnnotation)", quoteValue(k))}
		}
		switch strings.ToLower(v) {
		case "true":
			out[k] = true
		case "false":
			out[k] = false
		default:
			return nil, &FieldError{Field: "Global.featureGates", Reason: fmt.Sprintf("gate %s must be true or false, got %s", k, quoteValue(v))}
		}
	}
	return out, nil
}

// maxQuoted bounds each user value quoted in an error: a cloud-config
// value or environment variable can be long, and the error is logged.
const maxQuoted = 128

// quoteValue quotes v, keeping at most maxQuoted bytes of it.
func quoteValue(v string) string { return clip.Quote(v, maxQuoted) }
