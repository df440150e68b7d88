package deploytest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/sts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestRRSAWithTheClusterServiceAccountToken: the token kube-apiserver
// issues for the CCM's ServiceAccount (audience sts.aliyuncs.com, as
// RRSA projects it) buys STS credentials at the emulator, which verifies
// it with the keys the cluster publishes (/openid/v1/jwks); the cloud
// client (internal/cloud's TestRRSAChild, through credentials-go) signs
// with them and exchanges again before they expire.
func TestRRSAWithTheClusterServiceAccountToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	expiry := int64(600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, rootSA, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{sts.DefaultAudience}, ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	discovery, err := cs.CoreV1().RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var oidc struct {
		Issuer string `json:"issuer"`
	}
	if err := json.Unmarshal(discovery, &oidc); err != nil || oidc.Issuer == "" {
		t.Fatalf("discovery document %s: %v", discovery, err)
	}
	jwks, err := cs.CoreV1().RESTClient().Get().AbsPath("/openid/v1/jwks").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	subject := "system:serviceaccount:" + namespace + ":" + rootSA
	env := emulatortest.StartWith(t, emulator.Config{STS: sts.Config{
		AccountID:     emulatortest.AccountID,
		OIDCProviders: []sts.OIDCProvider{{Name: emulatortest.RRSAProvider, IssuerURL: oidc.Issuer, JWKS: jwks}},
		Roles:         []sts.Role{{Name: emulatortest.RRSARole, Providers: []string{emulatortest.RRSAProvider}, Subjects: []string{subject}}},
		// Within credentials-go's 180 s refresh window a second later.
		CredentialTTL: 181 * time.Second,
	}})
	stsAddr, certPEM, err := env.Emulator.StartTLS("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca, tokenFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "token")
	for p, data := range map[string]string{ca: string(certPEM), tokenFile: tr.Status.Token} {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The client is internal/cloud's RRSA child test: credentials-go reads
	// the variables and Go the system roots once per process. HOME stays
	// (go test's cache); the profile sources are pointed at nothing.
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^TestRRSAChild$", "-v", "github.com/alicloud-ccm/alicloud-ccm/internal/cloud")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ALIBABA_CLOUD_") && !strings.HasPrefix(kv, "SSL_CERT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+ca,
		"ALIBABA_CLOUD_ROLE_ARN="+emulatortest.RRSARoleARN, "ALIBABA_CLOUD_OIDC_PROVIDER_ARN="+emulatortest.RRSAProviderARN,
		"ALIBABA_CLOUD_OIDC_TOKEN_FILE="+tokenFile, "ALIBABA_CLOUD_ECS_METADATA_DISABLED=true", "ALIBABA_CLOUD_CLI_PROFILE_DISABLED=true",
		"ALIBABA_CLOUD_CREDENTIALS_FILE="+filepath.Join(dir, "none"), "ALIBABA_CLOUD_STS_ENDPOINT="+stsAddr,
		"RRSA_TEST_MODE=good", "RRSA_TEST_ECS_ENDPOINT="+env.Endpoint, "RRSA_TEST_REGION="+env.Region)
	out, err := cmd.CombinedOutput()
	t.Logf("client:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestRRSAChild") {
		t.Fatalf("the cloud client with the cluster's token: %v", err)
	}
	if strings.Contains(string(out), tr.Status.Token[len(tr.Status.Token)/2:]) {
		t.Fatal("the client's output shows the ServiceAccount token")
	}
	ok := 0
	for _, r := range env.Emulator.Requests(gateway.RequestFilter{Action: "AssumeRoleWithOIDC"}) {
		if r.Code == gateway.CodeOK {
			ok++
		}
	}
	if ok < 2 {
		t.Fatalf("want the token exchanged twice (first, then before expiry), got %d: %+v", ok, env.Emulator.Requests())
	}
}
