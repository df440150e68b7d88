package emulatortest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/sts"
)

// RRSA names of the emulator's STS set up by RRSAConfig.
const (
	// RRSAProvider is the OIDC provider registered for the test issuer.
	RRSAProvider = "ack-rrsa-test"
	// RRSARole is the role the CCM's ServiceAccount may assume.
	RRSARole = "alicloud-ccm-role"
	// RRSASubject is the CCM's ServiceAccount as a token subject.
	RRSASubject = "system:serviceaccount:kube-system:cloud-controller-manager"
)

// OIDCIssuer signs tokens as a cluster's ServiceAccount issuer does for
// RRSA (RS256, audience sts.aliyuncs.com).
type OIDCIssuer struct {
	// URL is the tokens' iss.
	URL string
	key *rsa.PrivateKey
	kid string
}

// NewOIDCIssuer makes an issuer with a fresh RSA key.
func NewOIDCIssuer(t testing.TB, url string) *OIDCIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(key.N.Bytes())
	return &OIDCIssuer{URL: url, key: key, kid: base64.RawURLEncoding.EncodeToString(sum[:8])}
}

// JWKS is the issuer's public key set, as its jwks_uri serves it.
func (i *OIDCIssuer) JWKS() json.RawMessage {
	b := func(v []byte) string { return base64.RawURLEncoding.EncodeToString(v) }
	data, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": i.kid,
		"n": b(i.key.N.Bytes()), "e": b(big.NewInt(int64(i.key.E)).Bytes()),
	}}})
	return data
}

// Token returns a token for subject with audience aud, valid from now for
// ttl (negative: already expired).
func (i *OIDCIssuer) Token(t testing.TB, subject, aud string, ttl time.Duration) string {
	t.Helper()
	now := time.Now()
	enc := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(data)
	}
	signing := enc(map[string]string{"alg": "RS256", "kid": i.kid, "typ": "JWT"}) + "." +
		enc(map[string]any{"iss": i.URL, "sub": subject, "aud": []string{aud}, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(ttl).Unix()})
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, i.key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// RRSAConfig registers issuer as RRSAProvider and lets RRSASubject's
// tokens assume RRSARole, in AccountID.
func RRSAConfig(issuer *OIDCIssuer) sts.Config {
	return sts.Config{
		AccountID:     AccountID,
		OIDCProviders: []sts.OIDCProvider{{Name: RRSAProvider, IssuerURL: issuer.URL, JWKS: issuer.JWKS()}},
		Roles:         []sts.Role{{Name: RRSARole, Providers: []string{RRSAProvider}, Subjects: []string{RRSASubject}}},
	}
}

// The ARNs RRSA's variables name.
const (
	// RRSARoleARN is ALIBABA_CLOUD_ROLE_ARN for RRSARole.
	RRSARoleARN = "acs:ram::" + AccountID + ":role/" + RRSARole
	// RRSAProviderARN is ALIBABA_CLOUD_OIDC_PROVIDER_ARN for RRSAProvider.
	RRSAProviderARN = "acs:ram::" + AccountID + ":oidc-provider/" + RRSAProvider
)

// RunChild runs the test named test of this test binary in a child process
// with the environment stripped of every credentials-go variable, HOME and
// SSL_CERT_* and given env instead, and returns its output; it fails when
// the child's test does not pass. credentials-go reads its variables and
// Go its system roots once per process, so a client that must find only
// what a test sets runs there.
func RunChild(t testing.TB, test string, env ...string) string {
	t.Helper()
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ALIBABA_CLOUD_") && !strings.HasPrefix(kv, "ACCESS_KEY_") &&
			!strings.HasPrefix(kv, "SSL_CERT_") && !strings.HasPrefix(kv, "HOME=") {
			environ = append(environ, kv)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Env = append(environ, env...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", test, out)
	if err != nil || !strings.Contains(string(out), "--- PASS: "+test) {
		t.Fatalf("%s in a child process: %v", test, err)
	}
	return string(out)
}
