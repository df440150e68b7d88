package sandbox

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Names of the variables in DIR/sandbox.env.
const (
	EnvKubeconfig       = "KUBECONFIG"
	EnvEmulatorEndpoint = "ALICLOUD_EMULATOR_ENDPOINT"
	EnvAccessKeyID      = "ALIBABA_CLOUD_ACCESS_KEY_ID"
	EnvAccessKeySecret  = "ALIBABA_CLOUD_ACCESS_KEY_SECRET"
	EnvRegionID         = "ALIBABA_CLOUD_REGION_ID"
	EnvClusterID        = "CLUSTER_ID"
	EnvVpcID            = "VPC_ID"
	EnvZoneMaps         = "ZONE_MAPS"
	// EnvCloudConfig and EnvClusterCIDR are what the sandbox's CCM runs
	// with, for cloud-controller-manager plan and other commands.
	EnvCloudConfig = "CLOUD_CONFIG"
	EnvClusterCIDR = "CLUSTER_CIDR"
)

// ccmEndpointVars are the variables that point the CCM's cloud clients and
// instance metadata at the emulator: the sandbox's CCM gets them, and
// sandbox.env carries them so that the CCM's commands (plan) run against
// the sandbox the same way.
var ccmEndpointVars = []string{"ECS_ENDPOINT", "VPC_ENDPOINT", "SLB_ENDPOINT", "NLB_ENDPOINT", "ALICLOUD_CLIENT_SCHEME", "METADATA_ENDPOINT"}

// ccmEndpointEnv returns ccmEndpointVars' values for an emulator at ep
// (host:port).
func ccmEndpointEnv(ep string) map[string]string {
	return map[string]string{
		"ECS_ENDPOINT": ep, "VPC_ENDPOINT": ep, "SLB_ENDPOINT": ep, "NLB_ENDPOINT": ep,
		"ALICLOUD_CLIENT_SCHEME": "HTTP", "METADATA_ENDPOINT": "http://" + ep,
	}
}

// envOrder is the order of the variables in the file.
var envOrder = append([]string{EnvKubeconfig, EnvEmulatorEndpoint, EnvAccessKeyID, EnvAccessKeySecret, EnvRegionID, EnvClusterID, EnvVpcID, EnvZoneMaps, EnvCloudConfig, EnvClusterCIDR}, ccmEndpointVars...)

// Env is the content of DIR/sandbox.env: how to reach a running sandbox.
type Env struct {
	// Kubeconfig is the admin kubeconfig path.
	Kubeconfig string
	// EmulatorEndpoint is the emulator's host:port.
	EmulatorEndpoint string
	// AccessKeyID and AccessKeySecret sign calls to the emulator. The key is
	// the sandbox's own, generated on the first run, and only ever valid
	// against this local emulator.
	AccessKeyID, AccessKeySecret string
	// RegionID is the emulated region.
	RegionID string
	// ClusterID is the CCM's cluster id (names and tags of its resources).
	ClusterID string
	// VpcID is the cluster's VPC.
	VpcID string
	// ZoneMaps lists the VPC's vSwitches as zone:vsw pairs, the value the
	// NLB zone-maps annotation takes (examples/nlb-service.yaml uses it).
	ZoneMaps string
	// CloudConfig is the sandbox CCM's cloud-config file.
	CloudConfig string
	// ClusterCIDR is the pod network (the CCM's --cluster-cidr).
	ClusterCIDR string
}

func (e *Env) values() map[string]string {
	v := ccmEndpointEnv(e.EmulatorEndpoint)
	for k, x := range map[string]string{
		EnvKubeconfig: e.Kubeconfig, EnvEmulatorEndpoint: e.EmulatorEndpoint,
		EnvAccessKeyID: e.AccessKeyID, EnvAccessKeySecret: e.AccessKeySecret,
		EnvRegionID: e.RegionID, EnvClusterID: e.ClusterID, EnvVpcID: e.VpcID,
		EnvZoneMaps: e.ZoneMaps, EnvCloudConfig: e.CloudConfig, EnvClusterCIDR: e.ClusterCIDR,
	} {
		v[k] = x
	}
	return v
}

// envPath is the file's location in dir.
func envPath(dir string) string { return filepath.Join(dir, "sandbox.env") }

// WriteEnv writes DIR/sandbox.env, readable only by its owner since it holds
// the emulator's secret. Values are single-quoted so the file can be
// sourced by a shell (set -a; . DIR/sandbox.env).
func WriteEnv(dir string, e *Env) error {
	var b strings.Builder
	b.WriteString("# The running sandbox: source with  set -a; . " + envPath(dir) + "; set +a\n")
	vals := e.values()
	for _, k := range envOrder {
		fmt.Fprintf(&b, "%s=%s\n", k, shellQuote(vals[k]))
	}
	tmp := envPath(dir) + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, envPath(dir)); err != nil {
		return fmt.Errorf("write %s: %w", envPath(dir), err)
	}
	return nil
}

// ReadEnv reads DIR/sandbox.env.
func ReadEnv(dir string) (*Env, error) {
	f, err := os.Open(envPath(dir))
	if err != nil {
		return nil, fmt.Errorf("read sandbox environment: %w", err)
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		vals[strings.TrimPrefix(k, "export ")] = shellUnquote(v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", envPath(dir), err)
	}
	e := &Env{
		Kubeconfig: vals[EnvKubeconfig], EmulatorEndpoint: vals[EnvEmulatorEndpoint],
		AccessKeyID: vals[EnvAccessKeyID], AccessKeySecret: vals[EnvAccessKeySecret],
		RegionID: vals[EnvRegionID], ClusterID: vals[EnvClusterID], VpcID: vals[EnvVpcID],
		ZoneMaps: vals[EnvZoneMaps], CloudConfig: vals[EnvCloudConfig], ClusterCIDR: vals[EnvClusterCIDR],
	}
	return e, nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellUnquote(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], `'\''`, "'")
	}
	return s
}

// randomString returns n characters of [A-Za-z0-9] from crypto/rand.
func randomString(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	for i := range buf {
		buf[i] = alphabet[int(buf[i])%len(alphabet)]
	}
	return string(buf)
}
