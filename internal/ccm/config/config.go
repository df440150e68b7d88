// Package config reads the CCM's cloud-config file (the existing Alibaba
// Cloud CCM's format: YAML or JSON with a Global section, keys matched
// case-insensitively), applies the environment overrides and fills region,
// VPC, vSwitch and zone from the instance metadata service.
package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/alicloud-ccm/alicloud-ccm/internal/clip"
)

// DefaultClusterID is the cluster id the existing CCM uses when clusterID
// is unset; names and tags it wrote carry it. Build uses it only when
// Options.LegacyDefaultClusterID asks for it.
const DefaultClusterID = "clusterid"

// LegacyDefaultClusterIDFlag is the CCM flag that sets
// Options.LegacyDefaultClusterID; errors name it.
const LegacyDefaultClusterIDFlag = "legacy-default-cluster-id"

// Options are the choices Build takes from the command line, not the file.
type Options struct {
	// LegacyDefaultClusterID lets a missing clusterID become the existing
	// CCM's DefaultClusterID instead of an error, for clusters whose
	// existing CCM ran without clusterID (--legacy-default-cluster-id).
	LegacyDefaultClusterID bool
	// DiscoverClusterID lets a missing clusterID through as "" (when
	// LegacyDefaultClusterID is not set), for a caller that then finds the
	// id the existing CCM used in the cloud and refuses to start with
	// ClusterIDRequired when it cannot.
	DiscoverClusterID bool
}

// ClusterIDRequired is the refusal of a cloud-config without clusterID;
// detail, when not empty, says what discovery tried and found.
func ClusterIDRequired(detail string) *FieldError {
	reason := fmt.Sprintf(
		"is required (the cluster id the existing CCM tagged load balancers, listeners and groups with); set it, or pass --%s to use the existing CCM's default %q",
		LegacyDefaultClusterIDFlag, DefaultClusterID)
	if detail != "" {
		reason += "; " + detail
	}
	return &FieldError{Field: "Global.clusterID", Reason: reason}
}

// DefaultKubernetesClusterTag is the ECS tag key that marks a cluster's instances.
const DefaultKubernetesClusterTag = "ack.aliyun.com"

// File is the cloud-config file: {"Global": {...}}.
type File struct {
	// Global holds every setting.
	Global Global `json:"Global"`
}

// Global is the Global section. Field names follow the existing CCM so its
// files keep working; encoding/json matches them case-insensitively.
type Global struct {
	// UID is the account the existing CCM assumes a role into (through an
	// external token program); accepted for compatibility, not used here.
	UID string `json:"uid,omitempty"`
	// AccessKeyID is the base64-encoded AccessKey id; set it with
	// AccessKeySecret or leave both empty (then the credentials chain:
	// ALIBABA_CLOUD_ACCESS_KEY_ID, ACCESS_KEY_ID, RRSA, profiles, the
	// instance RAM role).
	AccessKeyID string `json:"accessKeyID,omitempty"`
	// AccessKeySecret is the base64-encoded AccessKey secret of AccessKeyID.
	AccessKeySecret string `json:"accessKeySecret,omitempty"`
	// ClusterID identifies the cluster in load-balancer tags, listener and
	// server-group names, route entries and the API user agent; required
	// (the existing CCM's default "clusterid" only with
	// --legacy-default-cluster-id). Keep the existing CCM's value to adopt
	// what it created.
	ClusterID string `json:"clusterID,omitempty"`
	// KubernetesClusterTag is the ECS tag key that marks the cluster's
	// instances (default "ack.aliyun.com").
	KubernetesClusterTag string `json:"kubernetesClusterTag,omitempty"`
	// Region is the region id, e.g. cn-hangzhou (default: the instance
	// metadata's region-id).
	Region string `json:"region,omitempty"`
	// VpcID is the cluster's VPC (vpc-...), where nodes, route tables and
	// load-balancer backends are looked up (default: metadata vpc-id).
	VpcID string `json:"vpcid,omitempty"`
	// ZoneID is the CCM instance's zone, e.g. cn-hangzhou-h (default:
	// metadata zone-id); informational.
	ZoneID string `json:"zoneid,omitempty"`
	// VswitchID is the vSwitch for internal CLBs without a vswitch-id
	// annotation: "zone:vsw-...,zone:vsw-...", one bare "vsw-...", or
	// zone-less ":vsw-a,:vsw-b" (every one kept, the first preferred)
	// (default: the CCM instance's vSwitch from metadata).
	VswitchID string `json:"vswitchid,omitempty"`
	// ResourceGroupID is the resource group (rg-...) new load balancers go
	// into unless the resource-group-id annotation says otherwise (default:
	// the account's default group).
	ResourceGroupID string `json:"resourceGroupID,omitempty"`
	// ServiceMaxConcurrentReconciles is how many Services are reconciled
	// at once (the existing CCM's service worker count); 0 or unset leaves
	// the default, and an explicit --concurrent-service-syncs wins.
	ServiceMaxConcurrentReconciles int `json:"serviceMaxConcurrentReconciles,omitempty"`
	// ServiceBackendType is the backend type of Services without a
	// backend-type annotation: ecs (nodes, default) or eni (pod IPs); env
	// SERVICE_FORCE_BACKEND_ENI=true|false overrides it.
	ServiceBackendType string `json:"serviceBackendType,omitempty"`
	// DisablePublicSLB, when true, refuses to create internet-facing CLBs.
	DisablePublicSLB bool `json:"disablePublicSLB,omitempty"`
	// LoadBalancerReuse says which load balancers a Service may borrow
	// through the id annotation: any (default, as the existing CCM), tagged
	// (only those an administrator granted the Service's namespace with the
	// tag kubernetes.reusable; vgroup-port groups and certificates too) or
	// none.
	LoadBalancerReuse string `json:"loadBalancerReuse,omitempty"`
	// NodeMaxConcurrentReconciles is the existing CCM's node worker count
	// (default 1); accepted and ignored.
	NodeMaxConcurrentReconciles int `json:"nodeMaxConcurrentReconciles,omitempty"`
	// RouteMaxConcurrentReconciles is the existing CCM's route worker
	// count (default 1); accepted and ignored.
	RouteMaxConcurrentReconciles int `json:"routeMaxConcurrentReconciles,omitempty"`
	// RouteTableIDs is a comma-separated list of route tables (vtb-...) to
	// write pod CIDR routes to (default: the VPC's route table, an error if
	// the VPC has several).
	RouteTableIDs string `json:"routeTableIDs,omitempty"`
	// PrivateZoneID is the existing CCM's PrivateZone controller's zone;
	// accepted and ignored (no PrivateZone controller here).
	PrivateZoneID string `json:"privateZoneId,omitempty"`
	// PrivateZoneRecordTTL is the PrivateZone record TTL in seconds;
	// accepted and ignored.
	PrivateZoneRecordTTL int64 `json:"privateZoneRecordTTL,omitempty"`
	// FeatureGates is "Gate=true|false,...": IPv6DualStack (default off),
	// EndpointSlice (on), FilterServiceOnNodeChange (off),
	// LoadBalancerTypeAnnotation (off); an unknown gate is an error.
	FeatureGates string `json:"featureGates,omitempty"`
	// NodeMonitorPeriod is accepted for compatibility and unused (as in
	// the existing CCM).
	NodeMonitorPeriod int64 `json:"nodeMonitorPeriod,omitempty"`
	// NodeAddrSyncPeriod is accepted for compatibility and unused (as in
	// the existing CCM).
	NodeAddrSyncPeriod int64 `json:"nodeAddrSyncPeriod,omitempty"`

	// Our additions: per-product endpoints (host[:port]) and scheme, which
	// the environment variables override.

	// ECSEndpoint is the ECS API host[:port] (a URL is cut to its host);
	// env ECS_ENDPOINT wins; empty means the SDK's regional endpoint.
	ECSEndpoint string `json:"ecsEndpoint,omitempty"`
	// VPCEndpoint is the VPC API host[:port]; env VPC_ENDPOINT wins.
	VPCEndpoint string `json:"vpcEndpoint,omitempty"`
	// SLBEndpoint is the CLB (SLB) API host[:port]; env SLB_ENDPOINT wins.
	SLBEndpoint string `json:"slbEndpoint,omitempty"`
	// NLBEndpoint is the NLB API host[:port]; env NLB_ENDPOINT wins.
	NLBEndpoint string `json:"nlbEndpoint,omitempty"`
	// Scheme is HTTPS (default) or HTTP for every product endpoint; env
	// ALICLOUD_CLIENT_SCHEME wins.
	Scheme string `json:"scheme,omitempty"`
	// MetadataEndpoint is the instance metadata service's base URL
	// (default http://100.100.100.200); env METADATA_ENDPOINT wins.
	MetadataEndpoint string `json:"metadataEndpoint,omitempty"`
	// STSEndpoint is the STS host[:port] where RRSA (OIDC) exchanges the
	// ServiceAccount token for credentials; env STS_ENDPOINT wins; empty
	// means sts[-vpc].<region>.aliyuncs.com (or ALIBABA_CLOUD_STS_REGION's).
	STSEndpoint string `json:"stsEndpoint,omitempty"`
	// RAMRoleName picks the instance RAM role (default: the only one listed).
	RAMRoleName string `json:"ramRoleName,omitempty"`
	// UseVPCEndpoints asks for the products' VPC-internal endpoints
	// (ecs-vpc.<region>.aliyuncs.com ...), as the existing CCM's
	// --network=vpc does. That is the CCM's default now; the public ones
	// take --network=public. An explicit endpoint still wins.
	UseVPCEndpoints bool `json:"useVPCEndpoints,omitempty"`
}

// Endpoints are where each product's API is reached.
type Endpoints struct {
	// ECS, VPC, SLB and NLB are each product's API host[:port]; empty means
	// the SDK's regional endpoint.
	ECS, VPC, SLB, NLB string
	// STS is the STS host[:port] of RRSA's token exchange; empty means the
	// regional one.
	STS string
	// Scheme is HTTPS (default) or HTTP.
	Scheme string
	// UseVPC selects the VPC-internal endpoints for products without an
	// explicit host.
	UseVPC bool
}

// VSwitch is one vSwitch of cloud-config vswitchid, in file order.
type VSwitch struct {
	// Zone is the zone the entry names; empty for a bare or ":vsw-..." entry.
	Zone string
	// ID is the vSwitch id (vsw-...).
	ID string
}

// Config is the validated configuration the CCM runs with.
type Config struct {
	// ClusterID is cloud-config clusterID, or DefaultClusterID when it is
	// unset and Options.LegacyDefaultClusterID is true; empty only when it
	// is unset and Options.DiscoverClusterID is true.
	ClusterID string
	// KubernetesClusterTag is the ECS tag key marking cluster instances, or
	// DefaultKubernetesClusterTag.
	KubernetesClusterTag string
	// Region is the region id, from the file or instance metadata; never
	// empty.
	Region string
	// VpcID is the cluster's VPC (vpc-...), from the file or instance
	// metadata; never empty.
	VpcID string
	// ZoneID is the zone of the CCM's own instance (informational).
	ZoneID string
	// VSwitchIDs maps zone → vSwitch ("" zone when the file gave a bare id
	// or ":vsw-..."): the first entry of each zone, as the existing CCM
	// picks the first match.
	VSwitchIDs map[string]string
	// VSwitches are every vSwitch of the file in order, zone-less ones
	// included (VSwitchIDs keeps only one per zone).
	VSwitches []VSwitch
	// ResourceGroupID is the default resource group for new load balancers
	// (rg-...); empty means the account default.
	ResourceGroupID string
	// RouteTableIDs are the route tables (vtb-...) for pod routes; empty
	// means discover the VPC's one table.
	RouteTableIDs []string
	// ServiceBackendType is ecs or eni.
	ServiceBackendType string
	// DisablePublicSLB refuses internet-facing CLBs.
	DisablePublicSLB bool
	// LoadBalancerReuse is any, tagged or none (Global.loadBalancerReuse).
	LoadBalancerReuse string
	// FeatureGates holds every known gate with its value (defaults filled
	// in).
	FeatureGates map[string]bool
	// Endpoints are the product endpoints and scheme after environment
	// overrides.
	Endpoints Endpoints
	// MetadataEndpoint is the metadata service base URL (default
	// http://100.100.100.200).
	MetadataEndpoint string
	// RAMRoleName is the instance RAM role to take STS credentials from;
	// empty means the only one listed.
	RAMRoleName string
	// StaticCredentials is the AccessKey of the cloud-config file, if any:
	// it wins over every source of the credentials chain.
	StaticCredentials *AccessKey
	// LegacyEnvCredentials is the existing CCM's ACCESS_KEY_ID and
	// ACCESS_KEY_SECRET, if set: the chain asks it right after
	// ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET, which credentials-go reads itself.
	LegacyEnvCredentials *AccessKey
	// ServiceMaxConcurrentReconciles is cloud-config
	// serviceMaxConcurrentReconciles (0 when unset): the service
	// controller's workers unless --concurrent-service-syncs is given.
	ServiceMaxConcurrentReconciles int
}

// AccessKey is an AccessKey pair. Its secret never prints.
type AccessKey struct {
	// ID is the AccessKey id (plain, already base64-decoded).
	ID string
	// Secret is the AccessKey secret, redacted when printed.
	Secret Secret
}

// Secret is a string that formats as [redacted] so it cannot leak into logs,
// events or errors by accident.
type Secret string

// String implements fmt.Stringer.
func (Secret) String() string { return "[redacted]" }

// GoString implements fmt.GoStringer.
func (Secret) GoString() string { return "[redacted]" }

// MarshalJSON keeps secrets out of JSON dumps.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }

// Reveal returns the secret for signing requests.
func (s Secret) Reveal() string { return string(s) }

// FieldError is a configuration error that names the offending field.
type FieldError struct {
	// Field names the setting: Global.<key> for the file, "env <VAR>" for the
	// environment.
	Field string
	// Reason says what is wrong and what is expected; it never contains a
	// secret.
	Reason string
}

// Error implements error.
func (e *FieldError) Error() string {
	return fmt.Sprintf("cloud-config: field %s: %s", e.Field, e.Reason)
}

// Env is how the environment is read (os.LookupEnv in production).
type Env func(key string) (string, bool)

// MetadataSource answers instance-metadata questions (region-id, vpc-id, ...).
type MetadataSource interface {
	Get(path string) (string, error)
}

// Parse decodes a cloud-config file. Unknown fields are returned as
// warnings, not errors, so files written for other versions still load.
func Parse(data []byte) (*File, []string, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return &File{}, nil, nil
	}
	if !utf8.Valid(data) {
		return nil, nil, errors.New("cloud-config: not valid UTF-8")
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("cloud-config: not valid YAML or JSON: %w", err)
	}
	var f File
	if err := json.Unmarshal(js, &f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// te.Value may carry the literal ("number 1e400"): only its kind
			// is named, so a long value is never replayed.
			kind, _, _ := strings.Cut(te.Value, " ")
			if te.Field == "" {
				return nil, nil, fmt.Errorf("cloud-config: must be a mapping with a Global section, got a JSON %s", kind)
			}
			return nil, nil, &FieldError{Field: te.Field, Reason: fmt.Sprintf("must be a %s, got a JSON %s", te.Type, kind)}
		}
		return nil, nil, fmt.Errorf("cloud-config: %w", err)
	}
	return &f, unknownFields(js), nil
}

// unknownFields lists keys that no field matches (case-insensitively).
func unknownFields(js []byte) []string {
	var raw map[string]json.RawMessage
	if json.Unmarshal(js, &raw) != nil {
		return nil
	}
	var out []string
	for k, v := range raw {
		if !strings.EqualFold(k, "Global") {
			out = append(out, k)
			continue
		}
		var inner map[string]json.RawMessage
		if json.Unmarshal(v, &inner) != nil {
			continue
		}
		known := map[string]bool{}
		t := reflect.TypeOf(Global{})
		for i := 0; i < t.NumField(); i++ {
			known[strings.ToLower(strings.Split(t.Field(i).Tag.Get("json"), ",")[0])] = true
		}
		for ik := range inner {
			if !known[strings.ToLower(ik)] {
				out = append(out, "Global."+ik)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Load reads the file at path (empty: no file) and builds the Config.
func Load(path string, env Env, md MetadataSource, opts Options) (*Config, []string, error) {
	var data []byte
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, fmt.Errorf("cloud-config: %w", err)
		}
		defer f.Close()
		if data, err = io.ReadAll(io.LimitReader(f, 1<<20)); err != nil {
			return nil, nil, fmt.Errorf("cloud-config %s: %w", path, err)
		}
	}
	file, warnings, err := Parse(data)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := Build(file, env, md, opts)
	return cfg, warnings, err
}

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
	var err error
	if c.VSwitches, err = parseVSwitches(g.VswitchID); err != nil {
		return nil, err
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
				return nil, &FieldError{Field: "Global.routeTableIDs", Reason: fmt.Sprintf("%s is not a route table id (vtb-...)", quoteValue(id))}
			}
			c.RouteTableIDs = append(c.RouteTableIDs, id)
		}
	}
	switch r := strings.ToLower(strings.TrimSpace(g.LoadBalancerReuse)); r {
	case "", "any":
		c.LoadBalancerReuse = "any"
	case "tagged", "none":
		c.LoadBalancerReuse = r
	default:
		return nil, &FieldError{Field: "Global.loadBalancerReuse", Reason: fmt.Sprintf("must be any, tagged or none, got %s", quoteValue(g.LoadBalancerReuse))}
	}
	switch bt := strings.ToLower(g.ServiceBackendType); bt {
	case "", "ecs", "eni":
		c.ServiceBackendType = bt
	default:
		return nil, &FieldError{Field: "Global.serviceBackendType", Reason: fmt.Sprintf("must be ecs or eni, got %s", quoteValue(g.ServiceBackendType))}
	}
	if v, ok := env("SERVICE_FORCE_BACKEND_ENI"); ok && v != "" {
		switch strings.ToLower(v) {
		case "true":
			c.ServiceBackendType = "eni"
		case "false":
			c.ServiceBackendType = "ecs"
		default:
			return nil, &FieldError{Field: "env SERVICE_FORCE_BACKEND_ENI", Reason: fmt.Sprintf("must be true or false, got %s", quoteValue(v))}
		}
	}
	if c.ServiceBackendType == "" {
		c.ServiceBackendType = "ecs"
	}
	if g.ServiceMaxConcurrentReconciles < 0 {
		return nil, &FieldError{Field: "Global.serviceMaxConcurrentReconciles", Reason: "must not be negative"}
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
