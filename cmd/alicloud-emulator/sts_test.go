package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestSTSOverHTTPS: --sts-config registers the providers and roles,
// --tls-listen serves the API over HTTPS with the certificate written to
// --tls-cert-file, and AssumeRoleWithOIDC there states the lifetime of
// --sts-credential-ttl.
func TestSTSOverHTTPS(t *testing.T) {
	issuer := emulatortest.NewOIDCIssuer(t, "https://oidc.emulator.test/cmd")
	cfg := emulatortest.RRSAConfig(issuer)
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgPath, certPath := filepath.Join(dir, "sts.json"), filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--account-id", emulatortest.AccountID, "--sts-config", cfgPath, "--sts-credential-ttl", "20m",
		"--tls-listen", "127.0.0.1:0", "--tls-cert-file", certPath)
	m := regexp.MustCompile(`STS_ENDPOINT=(\S+)\)`).FindStringSubmatch(strings.Join(s.output(), "\n"))
	if m == nil {
		t.Fatalf("no HTTPS address printed: %q", s.output())
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("the written certificate does not parse")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	form := url.Values{
		"RoleArn": {emulatortest.RRSARoleARN}, "OIDCProviderArn": {emulatortest.RRSAProviderARN},
		"OIDCToken": {issuer.Token(t, emulatortest.RRSASubject, "sts.aliyuncs.com", time.Hour)}, "RoleSessionName": {"cmd-test"},
	}
	resp, err := client.PostForm("https://"+m[1]+"/?Action=AssumeRoleWithOIDC&Version=2015-04-01&Format=JSON", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Code        string
		Credentials struct{ AccessKeyId, Expiration string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	exp, err := time.Parse("2006-01-02T15:04:05Z", body.Credentials.Expiration)
	if resp.StatusCode != http.StatusOK || err != nil || !strings.HasPrefix(body.Credentials.AccessKeyId, "STS.") {
		t.Fatalf("HTTP %d %+v", resp.StatusCode, body)
	}
	if d := time.Until(exp); d > 20*time.Minute || d < 19*time.Minute {
		t.Fatalf("Expiration %s is %v away, want --sts-credential-ttl's 20m", body.Credentials.Expiration, d)
	}
}
