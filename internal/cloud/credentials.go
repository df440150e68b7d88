package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aliyun/credentials-go/credentials/providers"
	"k8s.io/klog/v2"
)

// Credentials are what signs a request: an AccessKey, or an STS triple.
type Credentials struct {
	// AccessKeyID is the AccessKey id (LTAI... or STS.... for temporary
	// credentials).
	AccessKeyID     string
	accessKeySecret string
	// SecurityToken is the STS token of temporary credentials; empty for an
	// AccessKey.
	SecurityToken string
	// Expiration is zero for long-lived AccessKeys and for credentials whose
	// source refreshes them itself (the chain's).
	Expiration time.Time
	// Source names where they came from (e.g. "static", "oidc_role_arn",
	// "ecs_ram_role"), for logs.
	Source string
}

// NewCredentials returns credentials from an AccessKey pair.
func NewCredentials(id, secret, token string, exp time.Time) Credentials {
	return Credentials{AccessKeyID: id, accessKeySecret: secret, SecurityToken: token, Expiration: exp, Source: "static"}
}

// Secret returns the AccessKey secret, for the signer only.
func (c Credentials) Secret() string { return c.accessKeySecret }

// String never prints the secret or the token.
func (c Credentials) String() string {
	return fmt.Sprintf("Credentials{AccessKeyID:%s sts:%v source:%s}", c.AccessKeyID, c.SecurityToken != "", c.Source)
}

// GoString keeps %#v from printing the secret and token fields.
func (c Credentials) GoString() string { return c.String() }

// CredentialsProvider returns the credentials to use now.
type CredentialsProvider interface {
	Credentials(ctx context.Context) (Credentials, error)
}

// StaticProvider always returns the same AccessKey.
type StaticProvider struct {
	// Creds are returned by every Credentials call.
	Creds Credentials
}

// Credentials implements CredentialsProvider.
func (p StaticProvider) Credentials(context.Context) (Credentials, error) { return p.Creds, nil }

// DefaultMetadataEndpoint is the instance metadata service credentials-go
// reads the ECS RAM role from.
const DefaultMetadataEndpoint = "http://100.100.100.200"

// Timeouts of one metadata request for the instance role's credentials.
const (
	metadataConnectTimeout = 2 * time.Second
	metadataReadTimeout    = 5 * time.Second
)

// ChainOptions adjust the sources of NewChain; the zero value is
// credentials-go's default chain.
type ChainOptions struct {
	// LegacyAccessKey is the existing CCM's ACCESS_KEY_ID/ACCESS_KEY_SECRET
	// pair, which credentials-go does not read; it is asked right after
	// ALIBABA_CLOUD_ACCESS_KEY_ID, as it was before the chain.
	LegacyAccessKey *Credentials
	// STSEndpoint is the STS host[:port] that OIDC (RRSA) exchanges its
	// ServiceAccount token at; empty: ALIBABA_CLOUD_STS_ENDPOINT, else
	// credentials-go's choice from STSRegion, ALIBABA_CLOUD_STS_REGION and
	// ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED.
	STSEndpoint string
	// STSRegion picks sts[-vpc].<region>.aliyuncs.com when STSEndpoint is
	// empty and ALIBABA_CLOUD_STS_REGION is not set.
	STSRegion string
	// STSUseVPC picks the sts-vpc endpoint, reachable without Internet egress.
	STSUseVPC bool
	// RoleName is the instance RAM role; empty: ALIBABA_CLOUD_ECS_METADATA,
	// else the only role the metadata service lists.
	RoleName string
	// MetadataEndpoint is the metadata service base URL. credentials-go
	// only talks to 100.100.100.200, so any other endpoint (the emulator)
	// is given to it as the HTTP proxy of those requests.
	MetadataEndpoint string
	// DisableIMDSv1 refuses role credentials read without an IMDSv2 token.
	DisableIMDSv1 bool
}

// source is one credentials-go provider of the chain.
type source struct {
	name     string
	provider providers.CredentialsProvider
}

// ChainProvider returns credentials from the first source of
// credentials-go's default chain that has them: environment
// (ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET/_SECURITY_TOKEN), OIDC for RRSA
// (ALIBABA_CLOUD_ROLE_ARN, ALIBABA_CLOUD_OIDC_PROVIDER_ARN,
// ALIBABA_CLOUD_OIDC_TOKEN_FILE), the CLI profile (~/.aliyun/config.json),
// the credentials file (~/.alibabacloud/credentials), the ECS RAM role over
// IMDSv2, and ALIBABA_CLOUD_CREDENTIALS_URI. Once a source has answered,
// only it is asked again, as credentials-go's chain does, so that a
// failing refresh never silently switches identity. The sources cache
// STS credentials and fetch new ones 180 s before they expire. Safe for
// concurrent use: credentials-go's providers are not.
type ChainProvider struct {
	mu      sync.Mutex
	sources []source
	active  *source
}

// NewChain builds the chain from credentials-go's providers in the order
// of its default chain, with o's endpoints and role.
func NewChain(o ChainOptions) (*ChainProvider, error) {
	c := &ChainProvider{}
	add := func(name string, p providers.CredentialsProvider, err error) {
		// A builder refuses when its source is not configured (no OIDC
		// variables, IMDS disabled): that source is simply not in the chain.
		if err == nil {
			c.sources = append(c.sources, source{name, p})
		}
	}
	env, err := providers.NewEnvironmentVariableCredentialsProviderBuilder().Build()
	add("env", env, err)
	if k := o.LegacyAccessKey; k != nil {
		p, err := providers.NewStaticAKCredentialsProviderBuilder().WithAccessKeyId(k.AccessKeyID).WithAccessKeySecret(k.Secret()).Build()
		if err != nil {
			return nil, fmt.Errorf("credentials: ACCESS_KEY_ID/ACCESS_KEY_SECRET: %w", err)
		}
		add("legacy_env", p, nil)
	}
	ob := providers.NewOIDCCredentialsProviderBuilder()
	// ACK's pod-identity webhook sets ALIBABA_CLOUD_STS_ENDPOINT, which
	// this credentials-go version does not read itself.
	stsEndpoint := o.STSEndpoint
	if stsEndpoint == "" {
		stsEndpoint = strings.TrimSpace(os.Getenv("ALIBABA_CLOUD_STS_ENDPOINT"))
	}
	switch {
	case stsEndpoint != "":
		ob = ob.WithSTSEndpoint(stsEndpoint)
	default:
		ob = ob.WithEnableVpc(o.STSUseVPC)
		if envRegion := strings.TrimSpace(os.Getenv("ALIBABA_CLOUD_STS_REGION")); envRegion == "" && o.STSRegion != "" {
			ob = ob.WithStsRegionId(o.STSRegion)
		}
	}
	oidc, err := ob.Build()
	add("oidc_role_arn", oidc, err)
	cli, err := providers.NewCLIProfileCredentialsProviderBuilder().Build()
	add("cli_profile", cli, err)
	profile, err := providers.NewProfileCredentialsProviderBuilder().Build()
	add("profile", profile, err)
	// credentials-go's 1 s metadata timeouts are short for a busy node;
	// these are the ones the CCM's own metadata reads use.
	mdHTTP := &providers.HttpOptions{ConnectTimeout: int(metadataConnectTimeout.Milliseconds()), ReadTimeout: int(metadataReadTimeout.Milliseconds())}
	if md := strings.TrimRight(o.MetadataEndpoint, "/"); md != "" && md != DefaultMetadataEndpoint {
		u, err := url.Parse(md)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("credentials: metadata endpoint must be an http(s) URL, got %q", md)
		}
		mdHTTP.Proxy = md
	}
	eb := providers.NewECSRAMRoleCredentialsProviderBuilder().WithRoleName(o.RoleName).WithDisableIMDSv1(o.DisableIMDSv1).WithHttpOptions(mdHTTP)
	ecs, err := eb.Build()
	add("ecs_ram_role", ecs, err)
	if os.Getenv("ALIBABA_CLOUD_CREDENTIALS_URI") != "" {
		uri, err := providers.NewURLCredentialsProviderBuilder().Build()
		add("credentials_uri", uri, err)
	}
	if len(c.sources) == 0 {
		return nil, errors.New("credentials: no source is configured (every source of the default chain is disabled)")
	}
	return c, nil
}

// Sources names the chain's sources in the order they are asked.
func (c *ChainProvider) Sources() []string {
	out := make([]string, len(c.sources))
	for i, s := range c.sources {
		out[i] = s.name
	}
	return out
}

// Credentials implements CredentialsProvider. credentials-go takes no
// context: a source's own timeouts bound the call (7 s per metadata
// request, 15 s per STS request).
func (c *ChainProvider) Credentials(context.Context) (Credentials, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active != nil {
		creds, err := c.active.provider.GetCredentials()
		if err != nil {
			return Credentials{}, fmt.Errorf("credentials from %s: %s", c.active.name, sourceError(c.active.name, err))
		}
		return fromProvider(c.active.name, creds), nil
	}
	var errs []string
	for i := range c.sources {
		s := &c.sources[i]
		creds, err := s.provider.GetCredentials()
		if err != nil {
			errs = append(errs, s.name+": "+sourceError(s.name, err))
			continue
		}
		c.active = s
		klog.InfoS("Cloud credentials found; this source is used from now on", "source", s.name, "accessKeyID", creds.AccessKeyId,
			"sts", creds.SecurityToken != "", "sourcesWithout", len(errs))
		return fromProvider(s.name, creds), nil
	}
	return Credentials{}, fmt.Errorf("no credentials from any source of the chain (%s)", strings.Join(errs, "; "))
}

func fromProvider(name string, cc *providers.Credentials) Credentials {
	return Credentials{AccessKeyID: cc.AccessKeyId, accessKeySecret: cc.AccessKeySecret, SecurityToken: cc.SecurityToken, Source: name}
}

// sourceError is a source's error as it may be logged: the credentials
// file source passes on go-ini's parse errors, which quote the line they
// cannot parse, and that line may hold a secret.
func sourceError(name string, err error) string {
	msg := err.Error()
	const openFailed = "Can not open file"
	i := strings.Index(msg, openFailed)
	if name != "profile" || i < 0 {
		return msg
	}
	for _, fsErr := range []string{"no such file or directory", "permission denied", "is a directory"} {
		if strings.Contains(msg, fsErr) {
			return msg
		}
	}
	return msg[:i] + "the credentials file does not parse (its text is not shown: it may hold a secret)"
}
