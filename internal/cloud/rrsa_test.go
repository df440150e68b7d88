package cloud_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// The child's instructions; it runs only when rrsaMode is set.
const (
	rrsaMode   = "RRSA_TEST_MODE"
	rrsaECS    = "RRSA_TEST_ECS_ENDPOINT"
	rrsaRegion = "RRSA_TEST_REGION"
)

// TestRRSAAgainstTheEmulator: a cloud client whose chain finds only the
// RRSA variables exchanges the ServiceAccount token at the emulator's STS
// (over HTTPS, its certificate trusted through SSL_CERT_FILE), signs ECS
// calls with the credentials, and exchanges again before they expire; a
// token signed by another key fails with STS's code and no secret in the
// error or the logs. credentials-go reads the variables and the system
// roots itself, once per process, so the client runs in a child process
// of this test binary.
func TestRRSAAgainstTheEmulator(t *testing.T) {
	issuer := emulatortest.NewOIDCIssuer(t, "https://oidc.emulator.test/rrsa")
	forger := emulatortest.NewOIDCIssuer(t, issuer.URL)
	cfg := emulatortest.RRSAConfig(issuer)
	// 181 s: within credentials-go's 180 s refresh window a second later.
	cfg.CredentialTTL = 181 * time.Second
	env := emulatortest.StartWith(t, emulator.Config{STS: cfg})
	env.Seed(t, emulatortestSeed())
	stsAddr, certPEM, err := env.Emulator.StartTLS("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := write("emulator-ca.pem", string(certPEM))
	for _, tc := range []struct {
		mode, token   string
		wantExchanges int
		wantCode      string
	}{
		{"good", issuer.Token(t, emulatortest.RRSASubject, "sts.aliyuncs.com", time.Hour), 2, gateway.CodeOK},
		{"forged", forger.Token(t, emulatortest.RRSASubject, "sts.aliyuncs.com", time.Hour), 1, "AuthenticationFail.OIDCToken.InvalidSignature"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			env.Emulator.Gateway.ResetRequests()
			tokenFile := write(tc.mode+".token", tc.token)
			out := emulatortest.RunChild(t, "TestRRSAChild",
				"HOME="+dir, "SSL_CERT_FILE="+ca,
				"ALIBABA_CLOUD_ROLE_ARN="+emulatortest.RRSARoleARN,
				"ALIBABA_CLOUD_OIDC_PROVIDER_ARN="+emulatortest.RRSAProviderARN,
				"ALIBABA_CLOUD_OIDC_TOKEN_FILE="+tokenFile,
				// Not on ECS: the chain must not wait for 100.100.100.200.
				"ALIBABA_CLOUD_ECS_METADATA_DISABLED=true",
				// As ACK's pod-identity webhook names the endpoint.
				"ALIBABA_CLOUD_STS_ENDPOINT="+stsAddr,
				rrsaMode+"="+tc.mode, rrsaECS+"="+env.Endpoint, rrsaRegion+"="+env.Region)
			if strings.Contains(out, tc.token[len(tc.token)/2:]) {
				t.Fatalf("the child's output shows the OIDC token:\n%s", out)
			}
			var exchanges []gateway.RequestRecord
			for _, r := range env.Emulator.Requests(gateway.RequestFilter{Action: "AssumeRoleWithOIDC"}) {
				if r.Code == tc.wantCode {
					exchanges = append(exchanges, r)
				}
			}
			if len(exchanges) < tc.wantExchanges {
				t.Fatalf("want %d AssumeRoleWithOIDC answered %s, the emulator logged %+v", tc.wantExchanges, tc.wantCode, env.Emulator.Requests())
			}
		})
	}
}

// TestRRSAChild is TestRRSAAgainstTheEmulator's client; alone it skips.
func TestRRSAChild(t *testing.T) {
	mode := os.Getenv(rrsaMode)
	if mode == "" {
		t.Skip("run by TestRRSAAgainstTheEmulator")
	}
	var logs bytes.Buffer
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("v", "6")
	klog.SetOutput(&logs)
	defer func() {
		klog.Flush()
		t.Logf("client logs:\n%s", logs.String())
	}()
	token, err := os.ReadFile(os.Getenv("ALIBABA_CLOUD_OIDC_TOKEN_FILE"))
	if err != nil {
		t.Fatal(err)
	}
	// A region, which the chain would make sts.<region>.aliyuncs.com of
	// without ALIBABA_CLOUD_STS_ENDPOINT.
	chain, err := cloud.NewChain(cloud.ChainOptions{STSRegion: os.Getenv(rrsaRegion)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloud.New(cloud.Options{Region: os.Getenv(rrsaRegion), Credentials: chain, MaxAttempts: 1,
		Endpoints: cloud.Endpoints{ECS: os.Getenv(rrsaECS), Scheme: "HTTP"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	secrets := []string{string(token)}
	leaks := func(what, s string) {
		t.Helper()
		for _, secret := range secrets {
			if secret != "" && strings.Contains(s, secret) {
				t.Errorf("%s shows a secret", what)
			}
		}
	}
	switch mode {
	case "good":
		if err := describeInstances(ctx, c); err != nil {
			t.Fatalf("call signed with RRSA credentials: %v", err)
		}
		first, err := chain.Credentials(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if first.Source != "oidc_role_arn" || !strings.HasPrefix(first.AccessKeyID, "STS.") || first.SecurityToken == "" {
			t.Fatalf("want STS credentials from oidc_role_arn, got %v", first)
		}
		secrets = append(secrets, first.Secret(), first.SecurityToken)
		// They expire in 180 s now, inside credentials-go's refresh window.
		time.Sleep(1100 * time.Millisecond)
		if err := describeInstances(ctx, c); err != nil {
			t.Fatalf("call after the refresh: %v", err)
		}
		second, err := chain.Credentials(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if second.AccessKeyID == first.AccessKeyID {
			t.Fatalf("credentials 180 s from expiry were not exchanged again: %v", second)
		}
		secrets = append(secrets, second.Secret(), second.SecurityToken)
	case "forged":
		err := describeInstances(ctx, c)
		if err == nil {
			t.Fatal("a forged token bought credentials")
		}
		for _, want := range []string{"oidc_role_arn", "AuthenticationFail.OIDCToken.InvalidSignature"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q: %v", want, err)
			}
		}
		leaks("the error", err.Error())
		t.Logf("error: %v", err)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	klog.Flush()
	leaks("the client's logs", logs.String())
}
