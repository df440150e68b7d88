// Package emulatortest starts an in-process emulator for tests and builds
// official SDK clients pointed at it.
package emulatortest

import (
	"fmt"
	"sort"
	"strings"

	"testing"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	"github.com/alibabacloud-go/tea/dara"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// Test credentials accepted by an emulator started with Start.
const (
	AccessKeyID     = "LTAI5tEmulatorTestKey01"
	AccessKeySecret = "emulator-test-secret-0123456789"
)

// Env is a running emulator and what a client needs to reach it.
type Env struct {
	// Emulator is the in-process emulator.
	Emulator *emulator.Emulator
	// Endpoint is host:port.
	Endpoint string
	// Region is the default region.
	Region string
	// keyID and secret sign the clients' calls; empty means the test key.
	keyID, secret string
}

// For returns an Env for an emulator started elsewhere (a test's shared
// emulator), whose clients sign with the access key keyID/secret.
func For(e *emulator.Emulator, keyID, secret string) *Env {
	return &Env{Emulator: e, Endpoint: e.Addr(), Region: e.Region(), keyID: keyID, secret: secret}
}

// Start runs an in-memory emulator on a random loopback port until the test ends.
func Start(t testing.TB) *Env {
	t.Helper()
	return StartWith(t, emulator.Config{})
}

// AccountID is the account that owns the test key.
const AccountID = "1234567890123456"

// StartWith runs an emulator with cfg until the test ends. Unless auth is
// disabled, the test key AccessKeyID/AccessKeySecret is added to
// cfg.AccessKeys, so the clients of Env work against any cfg.
func StartWith(t testing.TB, cfg emulator.Config) *Env {
	t.Helper()
	if !cfg.DisableAuth {
		have := false
		for _, k := range cfg.AccessKeys {
			have = have || k.ID == AccessKeyID
		}
		if !have {
			cfg.AccessKeys = append(append([]emulator.AccessKey(nil), cfg.AccessKeys...),
				emulator.AccessKey{ID: AccessKeyID, Secret: AccessKeySecret, AccountID: AccountID})
		}
	}
	e, err := emulator.New(cfg)
	if err != nil {
		t.Fatalf("new emulator: %v", err)
	}
	addr, err := e.Start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("start emulator: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return &Env{Emulator: e, Endpoint: addr, Region: e.Region()}
}

// Seed creates resources and fails the test on error.
func (env *Env) Seed(t testing.TB, s *api.Seed) map[string][]string {
	t.Helper()
	ids, err := env.Emulator.Seed(s)
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	return ids
}

func (env *Env) config() *sdk.Config {
	c := sdk.NewConfig()
	c.Scheme = "HTTP"
	return c
}

// key is the access key the clients sign with.
func (env *Env) key() (id, secret string) {
	if env.keyID != "" {
		return env.keyID, env.secret
	}
	return AccessKeyID, AccessKeySecret
}

func (env *Env) cred() *credentials.AccessKeyCredential {
	return credentials.NewAccessKeyCredential(env.key())
}

// newClient makes an official client of one product with newWith, signed
// with env's key and pointed at the emulator (base reaches the client's
// embedded sdk.Client, whose Domain every product shares).
func newClient[C any](env *Env, newWith func(string, *sdk.Config, auth.Credential) (*C, error), base func(*C) *sdk.Client) (*C, error) {
	c, err := newWith(env.Region, env.config(), env.cred())
	if err != nil {
		return nil, err
	}
	base(c).Domain = env.Endpoint
	return c, nil
}

// must turns a client constructor's error into t.Fatal.
func must[C any](t testing.TB) func(C, error) C {
	return func(c C, err error) C {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// ECS returns an official ECS client pointed at the emulator.
func (env *Env) ECS(t testing.TB) *ecs.Client {
	t.Helper()
	return must[*ecs.Client](t)(env.NewECS())
}

// NewECS returns an official ECS client pointed at the emulator, for code
// that runs outside a test (a TestMain's setup).
func (env *Env) NewECS() (*ecs.Client, error) {
	return newClient(env, ecs.NewClientWithOptions, func(c *ecs.Client) *sdk.Client { return &c.Client })
}

// PrivateIPs returns the primary private address of each instance id, read
// through the SDK; every id must exist.
func (env *Env) PrivateIPs(ids []string) (map[string]string, error) {
	c, err := env.NewECS()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for start := 0; start < len(ids); start += 100 {
		end := min(start+100, len(ids))
		req := ecs.CreateDescribeInstancesRequest()
		req.InstanceIds = `["` + strings.Join(ids[start:end], `","`) + `"]`
		req.PageSize = "100"
		resp, err := c.DescribeInstances(req)
		if err != nil {
			return nil, fmt.Errorf("describe instances: %w", err)
		}
		for _, in := range resp.Instances.Instance {
			if ips := in.VpcAttributes.PrivateIpAddress.IpAddress; len(ips) > 0 {
				out[in.InstanceId] = ips[0]
			}
		}
	}
	if len(out) != len(ids) {
		return nil, fmt.Errorf("found %d of %d instances", len(out), len(ids))
	}
	return out, nil
}

// Instance reads one instance through the SDK.
func (env *Env) Instance(id string) (*ecs.Instance, error) {
	c, err := env.NewECS()
	if err != nil {
		return nil, err
	}
	req := ecs.CreateDescribeInstancesRequest()
	req.InstanceIds = `["` + id + `"]`
	resp, err := c.DescribeInstances(req)
	if err != nil {
		return nil, fmt.Errorf("describe instance %s: %w", id, err)
	}
	if len(resp.Instances.Instance) != 1 {
		return nil, fmt.Errorf("instance %s not found", id)
	}
	return &resp.Instances.Instance[0], nil
}

// ENIAddresses returns the private addresses an ENI holds, sorted, read
// through the SDK.
func (env *Env) ENIAddresses(id string) ([]string, error) {
	c, err := env.NewECS()
	if err != nil {
		return nil, err
	}
	req := ecs.CreateDescribeNetworkInterfacesRequest()
	req.NetworkInterfaceId = &[]string{id}
	resp, err := c.DescribeNetworkInterfaces(req)
	if err != nil || len(resp.NetworkInterfaceSets.NetworkInterfaceSet) != 1 {
		return nil, fmt.Errorf("describe ENI %s: %v", id, err)
	}
	var out []string
	for _, s := range resp.NetworkInterfaceSets.NetworkInterfaceSet[0].PrivateIpSets.PrivateIpSet {
		out = append(out, s.PrivateIpAddress)
	}
	sort.Strings(out)
	return out, nil
}

// VPC returns an official VPC client pointed at the emulator.
func (env *Env) VPC(t testing.TB) *vpc.Client {
	t.Helper()
	return must[*vpc.Client](t)(env.NewVPC())
}

// NewVPC returns an official VPC client pointed at the emulator, for code
// that runs outside a test (the soak).
func (env *Env) NewVPC() (*vpc.Client, error) {
	return newClient(env, vpc.NewClientWithOptions, func(c *vpc.Client) *sdk.Client { return &c.Client })
}

// SLB returns an official SLB client pointed at the emulator.
func (env *Env) SLB(t testing.TB) *slb.Client {
	t.Helper()
	return must[*slb.Client](t)(env.NewSLB())
}

// NewSLB returns an official SLB client pointed at the emulator, for code
// that runs outside a test (the soak).
func (env *Env) NewSLB() (*slb.Client, error) {
	return newClient(env, slb.NewClientWithOptions, func(c *slb.Client) *sdk.Client { return &c.Client })
}

// NLB returns an official NLB client pointed at the emulator.
func (env *Env) NLB(t testing.TB) *nlb.Client {
	t.Helper()
	return must[*nlb.Client](t)(env.NewNLB())
}

// NewNLB returns an official NLB client pointed at the emulator, for code
// that runs outside a test (the soak).
func (env *Env) NewNLB() (*nlb.Client, error) {
	return newClient(env, nlb.NewClientWithOptions, func(c *nlb.Client) *sdk.Client { return &c.Client })
}

// URL returns the emulator's base URL, e.g. for the control API
// (URL()+"/_emulator/health") or the metadata service (URL()+"/latest/meta-data/").
func (env *Env) URL() string { return "http://" + env.Endpoint }

// OpenAPI returns a darabonba generic client (signature V3,
// ACS3-HMAC-SHA256) pointed at the emulator, as the CCM uses for NLB; call
// CallApi with Style "RPC" and the product's Action and Version.
func (env *Env) OpenAPI(t testing.TB) *openapi.Client {
	t.Helper()
	id, secret := env.key()
	c, err := openapi.NewClient(&openapi.Config{
		AccessKeyId:     dara.String(id),
		AccessKeySecret: dara.String(secret),
		RegionId:        dara.String(env.Region),
		Endpoint:        dara.String(env.Endpoint),
		Protocol:        dara.String("HTTP"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// SelfSigned returns a PEM certificate for cn (a CA when isCA) and its EC
// private key, valid from an hour ago for a year, for the certificate
// actions.
func SelfSigned(t testing.TB, cn string, isCA bool) (certPEM, keyPEM string) {
	t.Helper()
	c, k, err := emulator.SelfSignedCert(cn, []string{cn}, isCA)
	if err != nil {
		t.Fatal(err)
	}
	return string(c), string(k)
}
