// Package config reads the CCM's cloud-config file (the existing Alibaba
// Cloud CCM's format: YAML or JSON with a Global section, keys matched
// case-insensitively), applies the environment overrides and fills region,
// VPC, vSwitch and zone from the instance metadata service.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
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
	// CertificateGrants grants certificates to namespaces in the cloud
	// config, where a namespace's users cannot write: certificate id →
	// the namespaces that may name it, a comma-separated string or a list
	// ("*": every namespace). Under loadBalancerReuse tagged (and none) it
	// is the only grant of an NLB certificate (SSL Certificates Service,
	// whose tags the CCM cannot read) and an alternative to the tag
	// kubernetes.reusable on a CLB certificate; under any it is not
	// needed. Kept raw here so a bad entry is reported by its id.
	CertificateGrants map[string]json.RawMessage `json:"certificateGrants,omitempty"`
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
	// CertificateGrants maps each certificate id of
	// Global.certificateGrants to the namespaces granted it ("*" for
	// every namespace); nil when the file grants none.
	CertificateGrants map[string][]string
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
			want := te.Type.String()
			if te.Type.Kind() == reflect.Map {
				want = "mapping"
			}
			return nil, nil, &FieldError{Field: te.Field, Reason: fmt.Sprintf("must be a %s, got a JSON %s", want, kind)}
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
