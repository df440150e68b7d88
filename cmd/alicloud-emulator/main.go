// Command alicloud-emulator serves a local emulation of the Alibaba Cloud
// ECS, VPC, SLB and NLB OpenAPIs, its control API (/_emulator/), a read-only
// web console (/_emulator/ui/) and the ECS instance metadata service
// (/latest/) on one HTTP listener, and STS (AssumeRoleWithOIDC, for RRSA)
// on it and on an optional HTTPS listener.
//
//	alicloud-emulator --listen 127.0.0.1:18080 [--state FILE] [--seed FILE]
//	    [--access-key-id ID --access-key-secret SECRET] [--region cn-hangzhou]
//	alicloud-emulator --version
//
// Without an AccessKey (flags or ALICLOUD_EMULATOR_ACCESS_KEY_ID and
// ALICLOUD_EMULATOR_ACCESS_KEY_SECRET) it generates one and prints it once,
// on the startup line; secrets never reach the request log.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/command"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/console"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/version"
)

// DefaultListen is the address served without --listen.
const DefaultListen = "127.0.0.1:18080"

func main() {
	command.Main("alicloud-emulator", 0, func(ctx context.Context, args []string) error {
		return run(ctx, args, os.Stdout, os.Getenv)
	})
}

// options are the command-line settings.
type options struct {
	listen, state, seed, region    string
	regions                        string
	keyID, keySecret, accountID    string
	disableAuth, requireIMDSv2     bool
	metadataRole, metadataInstance string
	credentialTTL                  time.Duration
	requestLogSize                 int
	version                        bool
	quotaProfile                   string
	timing                         string
	quotaScale                     float64
	stsConfig, tlsListen, tlsCert  string
	stsCredentialTTL               time.Duration
}

// about opens --help.
const about = `alicloud-emulator is a local emulation of the Alibaba Cloud ECS, VPC, SLB
(CLB) and NLB OpenAPIs that the official Go SDK, and so the alicloud-ccm
cloud controller manager, talks to unchanged: signed calls, the real error
codes, asynchronous states, throttling and injected faults, the ECS instance
metadata service (/latest/, with RAM role STS credentials) and a control API
(/_emulator/: seed, request log, faults) with a read-only web console
(/_emulator/ui/), on one HTTP listener. Point the
CCM at it with ECS_ENDPOINT, VPC_ENDPOINT, SLB_ENDPOINT, NLB_ENDPOINT,
ALICLOUD_CLIENT_SCHEME=HTTP and METADATA_ENDPOINT (see docs/emulator.md).

Usage: alicloud-emulator [flags]
`

func parseFlags(args []string, out io.Writer, getenv func(string) string) (options, error) {
	var o options
	fs := flag.NewFlagSet("alicloud-emulator", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), about+"\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.listen, "listen", DefaultListen, "host:port to serve the OpenAPI, /_emulator/ and /latest/ on (port 0 picks a free one)")
	fs.StringVar(&o.state, "state", "", "bbolt file that keeps the cloud across restarts (default: in memory)")
	fs.StringVar(&o.seed, "seed", "", "YAML or JSON seed file, applied only when the state is empty")
	fs.StringVar(&o.region, "region", emulator.DefaultRegion, "default region of calls without RegionId")
	fs.StringVar(&o.regions, "regions", "", "comma list of the regions the cloud offers (default: "+strings.Join(api.DefaultRegionIDs(), ",")+"); calls naming another region get the product's InvalidRegionId/UnauthorizedRegion error")
	fs.StringVar(&o.keyID, "access-key-id", getenv("ALICLOUD_EMULATOR_ACCESS_KEY_ID"), "AccessKeyId accepted (env ALICLOUD_EMULATOR_ACCESS_KEY_ID; generated when empty)")
	fs.StringVar(&o.keySecret, "access-key-secret", getenv("ALICLOUD_EMULATOR_ACCESS_KEY_SECRET"), "AccessKeySecret of that key (env ALICLOUD_EMULATOR_ACCESS_KEY_SECRET)")
	fs.StringVar(&o.accountID, "account-id", gateway.DefaultAccountID, "account that owns the key and the metadata role")
	fs.BoolVar(&o.disableAuth, "disable-auth", false, "accept calls without checking signatures")
	fs.StringVar(&o.metadataRole, "metadata-role", gateway.DefaultMetadataRoleName, "RAM role name served by the metadata service")
	fs.StringVar(&o.metadataInstance, "metadata-instance", "", "instance the metadata service describes (default: the first instance)")
	fs.BoolVar(&o.requireIMDSv2, "metadata-require-token", false, "demand IMDSv2 tokens (X-aliyun-ecs-metadata-token) on metadata reads")
	fs.DurationVar(&o.credentialTTL, "metadata-credential-ttl", gateway.DefaultMetadataCredentialTTL, "lifetime of the metadata role's STS credentials")
	fs.IntVar(&o.requestLogSize, "request-log-size", gateway.DefaultRequestLogSize, "calls kept in the request log")
	fs.StringVar(&o.quotaProfile, "quota-profile", "", "limit every action to a published API rate-limit profile ("+strings.Join(gateway.QuotaProfileNames(), ", ")+"; default: unlimited)")
	fs.StringVar(&o.timing, "timing", store.TimingCloud, "asynchronous delays: cloud (the cloud's own, compressed: NLB provisioning 2s, jobs 500ms, ...) or zero (every transition immediate); PUT /_emulator/settings {\"timing\":...} changes it at run time")
	fs.Float64Var(&o.quotaScale, "quota-scale", 1, "multiply every limit of --quota-profile (a raised quota)")
	fs.StringVar(&o.stsConfig, "sts-config", "", "JSON file of the OIDC providers and roles STS AssumeRoleWithOIDC (RRSA) accepts (docs/emulator.md)")
	fs.DurationVar(&o.stsCredentialTTL, "sts-credential-ttl", 0, "lifetime of every STS credential AssumeRoleWithOIDC issues, whatever DurationSeconds asks (a test knob; default: as asked)")
	fs.StringVar(&o.tlsListen, "tls-listen", "", "host:port to serve the same API over HTTPS on too (credentials-go calls STS over HTTPS only)")
	fs.StringVar(&o.tlsCert, "tls-cert-file", "", "write the HTTPS listener's self-signed certificate here (PEM), for clients' SSL_CERT_FILE")
	fs.BoolVar(&o.version, "version", false, "print the version (release, commit, build date, Go) and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if o.quotaScale <= 0 {
		return o, fmt.Errorf("--quota-scale must be positive")
	}
	if o.quotaProfile != "" {
		if _, err := gateway.LookupQuotaProfile(o.quotaProfile); err != nil {
			return o, err
		}
	}
	if _, err := store.DelaysFor(o.timing); err != nil {
		return o, fmt.Errorf("--timing: %w", err)
	}
	if o.tlsCert != "" && o.tlsListen == "" {
		return o, fmt.Errorf("--tls-cert-file needs --tls-listen")
	}
	if (o.keyID == "") != (o.keySecret == "") {
		return o, fmt.Errorf("--access-key-id and --access-key-secret go together")
	}
	return o, nil
}

// run serves until ctx is done, printing "listening on host:port" when ready.
func run(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	o, err := parseFlags(args, out, getenv)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(out, version.Line("alicloud-emulator"))
		return nil
	}
	cfg := emulator.Config{
		Region:                o.region,
		Regions:               strings.FieldsFunc(o.regions, func(r rune) bool { return r == ',' || r == ' ' }),
		StatePath:             o.state,
		DisableAuth:           o.disableAuth,
		AccountID:             o.accountID,
		RequestLogSize:        o.requestLogSize,
		MetadataInstanceID:    o.metadataInstance,
		MetadataRoleName:      o.metadataRole,
		MetadataCredentialTTL: o.credentialTTL,
		MetadataRequireToken:  o.requireIMDSv2,
		QuotaProfile:          o.quotaProfile,
		QuotaScale:            o.quotaScale,
		Timing:                o.timing,
	}
	if o.stsConfig != "" {
		data, err := os.ReadFile(o.stsConfig)
		if err != nil {
			return fmt.Errorf("read STS config: %w", err)
		}
		if err := json.Unmarshal(data, &cfg.STS); err != nil {
			return fmt.Errorf("%s: %w", o.stsConfig, err)
		}
	}
	cfg.STS.CredentialTTL = o.stsCredentialTTL
	generated := false
	if !o.disableAuth {
		if o.keyID == "" {
			o.keyID, o.keySecret, generated = "LTAI5t"+store.RandomString(18), store.RandomString(30), true
		}
		cfg.AccessKeys = []emulator.AccessKey{{ID: o.keyID, Secret: o.keySecret, AccountID: o.accountID}}
	}
	var seedData []byte
	if o.seed != "" {
		if seedData, err = os.ReadFile(o.seed); err != nil {
			return fmt.Errorf("read seed: %w", err)
		}
	}
	e, err := emulator.New(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	if seedData != nil {
		s, err := gateway.ParseSeed(seedData)
		if err != nil {
			return fmt.Errorf("%s: %w", o.seed, err)
		}
		seeded, err := e.SeedIfEmpty(s)
		if err != nil {
			return fmt.Errorf("seed %s: %w", o.seed, err)
		}
		if seeded {
			fmt.Fprintf(out, "seeded from %s\n", o.seed)
		} else {
			fmt.Fprintf(out, "state in %s is not empty; seed %s not applied\n", o.state, o.seed)
		}
	}
	addr, err := e.Start(o.listen)
	if err != nil {
		return err
	}
	switch {
	case o.disableAuth:
		fmt.Fprintln(out, "authentication disabled: every call is accepted")
	case generated:
		fmt.Fprintf(out, "generated access key: id=%s secret=%s account=%s\n", o.keyID, o.keySecret, o.accountID)
	default:
		fmt.Fprintf(out, "access key: id=%s account=%s\n", o.keyID, o.accountID)
	}
	if o.quotaProfile != "" {
		fmt.Fprintf(out, "quota profile %s (scale %g): %d actions limited\n", o.quotaProfile, o.quotaScale, len(e.Gateway.Throttles()))
	}
	if o.tlsListen != "" {
		tlsAddr, certPEM, err := e.StartTLS(o.tlsListen)
		if err != nil {
			return err
		}
		if o.tlsCert != "" {
			if err := os.WriteFile(o.tlsCert, certPEM, 0o644); err != nil {
				return fmt.Errorf("write the HTTPS certificate: %w", err)
			}
		}
		fmt.Fprintf(out, "HTTPS (STS for RRSA: STS_ENDPOINT=%s) on %s\n", tlsAddr, tlsAddr)
	}
	fmt.Fprintf(out, "web console (read-only): http://%s%s\n", addr, console.Prefix)
	fmt.Fprintf(out, "listening on %s\n", addr)
	<-ctx.Done()
	fmt.Fprintln(out, "shutting down")
	if err := e.Close(); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}
