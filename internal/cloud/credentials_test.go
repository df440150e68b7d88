package cloud_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// chainEnv are the variables credentials-go's default chain reads.
var chainEnv = []string{
	"ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
	"ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE", "ALIBABA_CLOUD_ROLE_SESSION_NAME",
	"ALIBABA_CLOUD_STS_REGION", "ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED",
	"ALIBABA_CLOUD_CONFIG_FILE", "ALIBABA_CLOUD_PROFILE", "ALIBABA_CLOUD_CLI_PROFILE_DISABLED", "ALIBABA_CLOUD_CREDENTIALS_FILE",
	"ALIBABA_CLOUD_ECS_METADATA", "ALIBABA_CLOUD_ECS_METADATA_DISABLED", "ALIBABA_CLOUD_IMDSV1_DISABLED", "ALIBABA_CLOUD_CREDENTIALS_URI",
}

// isolateChain clears the chain's variables and gives it an empty home,
// so that only what the test sets is found.
func isolateChain(t *testing.T) {
	for _, k := range chainEnv {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", t.TempDir())
}

// writeCredentialsFile writes ~/.alibabacloud/credentials in the test's
// home (isolateChain's).
func writeCredentialsFile(t *testing.T, ini string) {
	t.Helper()
	dir := filepath.Join(os.Getenv("HOME"), ".alibabacloud")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "credentials"), []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestChainUsesTheInstanceRoleOverIMDSv2: with nothing else configured,
// the chain signs with the instance role's STS credentials, read with an
// IMDSv2 token from the metadata endpoint given (the emulator's, reached
// as credentials-go's proxy), and fetches new ones before the old expire.
func TestChainUsesTheInstanceRoleOverIMDSv2(t *testing.T) {
	isolateChain(t)
	env := emulatortest.StartWith(t, emulator.Config{MetadataCredentialTTL: 4 * time.Second, MetadataRequireToken: true})
	env.Seed(t, emulatortestSeed())
	p, err := cloud.NewChain(cloud.ChainOptions{MetadataEndpoint: env.URL(), DisableIMDSv1: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := p.Credentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.Source != "ecs_ram_role" || first.SecurityToken == "" {
		t.Fatalf("want the instance role's STS credentials, got %v", first)
	}
	c, err := cloud.New(cloud.Options{Region: env.Region, Credentials: p, Endpoints: cloud.Endpoints{ECS: env.Endpoint, Scheme: "HTTP"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := describeInstances(ctx, c); err != nil {
		t.Fatalf("call signed with the role's credentials: %v", err)
	}
	// Past half the lifetime the metadata service rotates; credentials-go
	// asks again because fewer than 180 s are left.
	time.Sleep(2200 * time.Millisecond)
	second, err := p.Credentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.AccessKeyID == first.AccessKeyID {
		t.Fatal("credentials close to expiry were not refreshed")
	}
	time.Sleep(2 * time.Second) // the first set has expired now (4s)
	if err := describeInstances(ctx, c); err != nil {
		t.Fatalf("call after the first credentials expired: %v", err)
	}
}

// TestChainPrecedence: the environment's AccessKey (and STS token) beats
// the existing CCM's ACCESS_KEY_ID, which beats the credentials file,
// which beats the instance role; the first source that answers is kept.
func TestChainPrecedence(t *testing.T) {
	env := emulatortest.Start(t)
	legacy := cloud.NewCredentials("LTAIlegacy", "legacy-secret", "", time.Time{})
	for _, tc := range []struct {
		name      string
		env       map[string]string
		legacy    bool
		profile   bool
		wantID    string
		wantToken string
		wantFrom  string
	}{
		{"environment first", map[string]string{"ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAIenv", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "env-secret"}, true, true, "LTAIenv", "", "env"},
		{"environment STS token", map[string]string{"ALIBABA_CLOUD_ACCESS_KEY_ID": "STS.env", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "env-secret", "ALIBABA_CLOUD_SECURITY_TOKEN": "env-token"}, false, false, "STS.env", "env-token", "env"},
		{"the existing CCM's variables next", nil, true, true, "LTAIlegacy", "", "legacy_env"},
		{"credentials file next", nil, false, true, "LTAIprofile", "", "profile"},
		{"instance role last", nil, false, false, "STS.", "", "ecs_ram_role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateChain(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if tc.profile {
				writeCredentialsFile(t, "[default]\ntype = access_key\naccess_key_id = LTAIprofile\naccess_key_secret = profile-secret\n")
			}
			o := cloud.ChainOptions{MetadataEndpoint: env.URL()}
			if tc.legacy {
				o.LegacyAccessKey = &legacy
			}
			p, err := cloud.NewChain(o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Credentials(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got.AccessKeyID, tc.wantID) || got.Source != tc.wantFrom || (tc.wantToken != "" && got.SecurityToken != tc.wantToken) {
				t.Fatalf("got %v (token %v), want %s from %s", got, got.SecurityToken != "", tc.wantID, tc.wantFrom)
			}
			// Sticky: a source appearing later does not switch identity.
			t.Setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAIlater")
			t.Setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "later-secret")
			again, err := p.Credentials(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if again.Source != got.Source {
				t.Fatalf("the chain switched from %s to %s", got.Source, again.Source)
			}
		})
	}
}

// TestChainWithNoSourceSaysWhatItTried: nothing configured and the
// metadata service unreachable is one error naming every source tried.
func TestChainWithNoSourceSaysWhatItTried(t *testing.T) {
	isolateChain(t)
	p, err := cloud.NewChain(cloud.ChainOptions{MetadataEndpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Credentials(context.Background())
	if err == nil {
		t.Fatal("no credentials anywhere, yet no error")
	}
	for _, want := range []string{"env:", "profile:", "ecs_ram_role:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name source %q: %v", want, err)
		}
	}
}

// TestCredentialsNeverPrintTheirSecrets: every verb of fmt hides the
// secret and the token.
func TestCredentialsNeverPrintTheirSecrets(t *testing.T) {
	c := cloud.NewCredentials("STS.visible", "the-secret-value", "the-token-value", time.Now())
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, c)
		if strings.Contains(out, "the-secret-value") || strings.Contains(out, "the-token-value") {
			t.Fatalf("%s prints a secret: %s", verb, out)
		}
		if !strings.Contains(out, "STS.visible") {
			t.Fatalf("%s hides the key id too: %s", verb, out)
		}
	}
}

// TestChainErrorsDoNotQuoteTheCredentialsFile: a credentials file that
// does not parse is named in the error, but the line the parser quotes,
// which may be a secret, is not.
func TestChainErrorsDoNotQuoteTheCredentialsFile(t *testing.T) {
	isolateChain(t)
	writeCredentialsFile(t, "[default]\ntype = access_key\naccess_key_id = LTAIfile\naccess_key_secret s3cr3t-in-a-bad-line\n")
	p, err := cloud.NewChain(cloud.ChainOptions{MetadataEndpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Credentials(context.Background())
	if err == nil || strings.Contains(err.Error(), "s3cr3t-in-a-bad-line") {
		t.Fatalf("want an error without the file's line, got %v", err)
	}
	if !strings.Contains(err.Error(), "profile: ") || !strings.Contains(err.Error(), "does not parse") {
		t.Fatalf("the error does not say the credentials file is broken: %v", err)
	}
}
