package gateway_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
	"net/http"
	"strings"
	"testing"
	"time"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	"github.com/alibabacloud-go/tea/dara"
	"github.com/alibabacloud-go/tea/tea"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

func TestSignedV1CallReachesHandlerWithIdentity(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, nil)
	// Characters that the V1 canonicalization must re-encode: space, *, ~, unicode.
	name := "a b*c~d/é+"
	out, err := env.call(t, c, "Whoami", map[string]string{"Name": name})
	if err != nil {
		t.Fatal(err)
	}
	if out["AccountId"] != testAccount || out["AccessKeyId"] != testKeyID || out["RegionId"] != "cn-hangzhou" || out["Name"] != name {
		t.Fatalf("handler saw %v", out)
	}
	if id, _ := out["RequestId"].(string); len(id) != 36 {
		t.Fatalf("RequestId %q is not UUID-shaped", id)
	}
}

func TestV1FormBodyParametersAreSignedAndMerged(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, nil)
	req := env.common("Put", nil)
	req.FormParams["Key"] = "k 1"
	req.FormParams["Value"] = "v*1"
	if _, err := c.ProcessCommonRequest(req); err != nil {
		t.Fatal(err)
	}
	out, err := env.call(t, c, "Get", map[string]string{"Key": "k 1"})
	if err != nil {
		t.Fatal(err)
	}
	if out["Value"] != "v*1" {
		t.Fatalf("got %v", out)
	}
}

func TestWrongSecretIsSignatureDoesNotMatch(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, credentials.NewAccessKeyCredential(testKeyID, "not-the-secret"))
	_, err := env.call(t, c, "Whoami", map[string]string{"Name": "x y"})
	se := wantServerError(t, err, "SignatureDoesNotMatch", http.StatusBadRequest)
	if !strings.HasPrefix(se.Message(), "Specified signature is not matched with our calculation. server string to sign is:GET&%2F&") &&
		!strings.HasPrefix(se.Message(), "Specified signature is not matched with our calculation. server string to sign is:POST&%2F&") {
		t.Fatalf("message %q", se.Message())
	}
	// The SDK compares our string to sign with its own: equal means it blames the secret.
	if !strings.Contains(se.Recommend(), "Please check you AccessKeySecret") {
		t.Fatalf("the SDK's string to sign differs from ours; recommend %q", se.Recommend())
	}
}

func TestUnknownKeyIsInvalidAccessKeyIdNotFound(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, credentials.NewAccessKeyCredential("LTAI5tNoSuchKey", testSecret))
	_, err := env.call(t, c, "Whoami", nil)
	wantServerError(t, err, "InvalidAccessKeyId.NotFound", http.StatusNotFound)
}

func TestV1RequestChecks(t *testing.T) {
	env := newTestEnv(t, nil)
	now := time.Now()
	tests := []struct {
		name   string
		params func() map[string]string
		secret string
		code   string
		status int
	}{
		{"expired timestamp", func() map[string]string { return v1Params("Whoami", "n-expired", now.Add(-16*time.Minute)) }, testSecret, "InvalidTimeStamp.Expired", 400},
		{"future timestamp", func() map[string]string { return v1Params("Whoami", "n-future", now.Add(16*time.Minute)) }, testSecret, "InvalidTimeStamp.Expired", 400},
		{"timestamp within skew", func() map[string]string { return v1Params("Whoami", "n-skew", now.Add(-14*time.Minute)) }, testSecret, "", 200},
		{"bad timestamp", func() map[string]string {
			p := v1Params("Whoami", "n-format", now)
			p["Timestamp"] = "yesterday"
			return p
		}, testSecret, "InvalidTimeStamp.Format", 400},
		{"missing nonce", func() map[string]string {
			p := v1Params("Whoami", "", now)
			delete(p, "SignatureNonce")
			return p
		}, testSecret, "MissingParameter", 400},
		{"wrong method", func() map[string]string {
			p := v1Params("Whoami", "n-method", now)
			p["SignatureMethod"] = "HMAC-SHA256"
			return p
		}, testSecret, "InvalidParameter", 400},
		{"bad secret", func() map[string]string { return v1Params("Whoami", "n-secret", now) }, "wrong", "SignatureDoesNotMatch", 400},
		{"format json lower-case", func() map[string]string {
			p := v1Params("Whoami", "n-json", now)
			p["Format"] = "json"
			return p
		}, testSecret, "", 200},
		{"format yaml", func() map[string]string {
			p := v1Params("Whoami", "n-yaml", now)
			p["Format"] = "YAML"
			return p
		}, testSecret, "InvalidParameter", 400},
		{"unknown action", func() map[string]string { return v1Params("Nope", "n-action", now) }, testSecret, "InvalidApi.NotFound", 404},
		{"unknown version", func() map[string]string {
			p := v1Params("Whoami", "n-version", now)
			p["Version"] = "1999-01-01"
			return p
		}, testSecret, "InvalidVersion", 400},
		{"missing action", func() map[string]string {
			p := v1Params("Whoami", "n-noaction", now)
			delete(p, "Action")
			return p
		}, testSecret, "MissingParameter", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := env.getV1(t, signV1(http.MethodGet, tt.params(), tt.secret))
			if got.status != tt.status || got.Code != tt.code {
				t.Fatalf("want %d %q, got %d %q (%s)", tt.status, tt.code, got.status, got.Code, got.Message)
			}
		})
	}
}

func TestReplayedNonceIsRejected(t *testing.T) {
	env := newTestEnv(t, nil)
	v := signV1(http.MethodGet, v1Params("Whoami", "5f1c0e2d9a", time.Now()), testSecret)
	if got := env.getV1(t, v); got.status != 200 {
		t.Fatalf("first call: %d %s %s", got.status, got.Code, got.Message)
	}
	got := env.getV1(t, v)
	if got.status != 400 || got.Code != "SignatureNonceUsed" {
		t.Fatalf("replay: %d %s", got.status, got.Code)
	}
	// A bad signature must not burn a nonce.
	fresh := v1Params("Whoami", "a-fresh-nonce", time.Now())
	if got := env.getV1(t, signV1(http.MethodGet, fresh, "wrong")); got.Code != "SignatureDoesNotMatch" {
		t.Fatalf("bad signature: %s", got.Code)
	}
	if got := env.getV1(t, signV1(http.MethodGet, fresh, testSecret)); got.status != 200 {
		t.Fatalf("nonce burnt by a rejected call: %s", got.Code)
	}
}

func TestPOSTAndGETRouting(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, nil)
	for _, m := range []string{requests.GET, requests.POST} {
		req := env.common("Whoami", map[string]string{"Name": m})
		req.Method = m
		resp, err := c.ProcessCommonRequest(req)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		out, _ := decode(t, resp)
		if out["Name"] != m {
			t.Fatalf("%s: %v", m, out)
		}
	}
}

func openAPIClient(t *testing.T, env *testEnv, id, secret, token string) *openapi.Client {
	t.Helper()
	cfg := &openapi.Config{
		AccessKeyId: dara.String(id), AccessKeySecret: dara.String(secret),
		RegionId: dara.String("cn-hangzhou"), Endpoint: dara.String(env.endpoint), Protocol: dara.String("HTTP"),
	}
	if token != "" {
		cfg.SecurityToken = dara.String(token)
	}
	c, err := openapi.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func callV3(c *openapi.Client, action string, query map[string]string, body map[string]any) (map[string]any, error) {
	return emulatortest.CallV3(c, action, testVersion, query, body)
}

func TestV3SignatureThroughDarabonba(t *testing.T) {
	env := newTestEnv(t, nil)
	c := openAPIClient(t, env, testKeyID, testSecret, "")
	if _, err := callV3(c, "Put", map[string]string{"Key": "q k"}, map[string]any{"Value": "body value*~"}); err != nil {
		t.Fatal(err)
	}
	out, err := callV3(c, "Get", map[string]string{"Key": "q k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := out["body"].(map[string]any)
	if b["Value"] != "body value*~" {
		t.Fatalf("got %v", out)
	}

	bad := openAPIClient(t, env, testKeyID, "wrong", "")
	_, err = callV3(bad, "Get", map[string]string{"Key": "q k"}, nil)
	var ce *tea.SDKError
	if !errors.As(err, &ce) || dara.StringValue(ce.Code) != "SignatureDoesNotMatch" || dara.IntValue(ce.StatusCode) != 400 {
		t.Fatalf("want SignatureDoesNotMatch, got %T %v", err, err)
	}
	if !strings.Contains(dara.StringValue(ce.Message), "server string to sign is:ACS3-HMAC-SHA256\n") {
		t.Fatalf("message %q", dara.StringValue(ce.Message))
	}
}

// v3Request builds a raw V3 request, for tampering tests.
func v3Request(t *testing.T, env *testEnv, secret, body string, tamper func(*http.Request)) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, env.srv.URL+"/?Key=a", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	req.Header.Set("content-type", "application/x-www-form-urlencoded")
	req.Header.Set("x-acs-action", "Whoami")
	req.Header.Set("x-acs-version", testVersion)
	req.Header.Set("x-acs-date", time.Now().UTC().Format("2006-01-02T15:04:05Z"))
	req.Header.Set("x-acs-signature-nonce", "nonce-"+t.Name())
	req.Header.Set("x-acs-content-sha256", hex.EncodeToString(sum[:]))
	signed := "content-type;host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version"
	var hdrs strings.Builder
	for _, h := range strings.Split(signed, ";") {
		v := req.Header.Get(h)
		if h == "host" {
			v = env.endpoint
		}
		hdrs.WriteString(h + ":" + v + "\n")
	}
	canon := "POST\n/\nKey=a\n" + hdrs.String() + "\n" + signed + "\n" + req.Header.Get("x-acs-content-sha256")
	ch := sha256.Sum256([]byte(canon))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("ACS3-HMAC-SHA256\n" + hex.EncodeToString(ch[:])))
	req.Header.Set("Authorization", "ACS3-HMAC-SHA256 Credential="+testKeyID+",SignedHeaders="+signed+",Signature="+hex.EncodeToString(mac.Sum(nil)))
	if tamper != nil {
		tamper(req)
	}
	return req
}

func TestV3RequestChecks(t *testing.T) {
	env := newTestEnv(t, nil)
	tests := []struct {
		name   string
		secret string
		tamper func(*http.Request)
		code   string
		status int
	}{
		{"valid", testSecret, nil, "", 200},
		{"bad signature", testSecret, func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "Signature=", "Signature=00", 1))
		}, "SignatureDoesNotMatch", 400},
		{"wrong secret", "wrong", nil, "SignatureDoesNotMatch", 400},
		{"signed header changed", testSecret, func(r *http.Request) { r.Header.Set("x-acs-action", "Get") }, "SignatureDoesNotMatch", 400},
		{"body does not match hash", testSecret, func(r *http.Request) { r.Header.Set("x-acs-content-sha256", strings.Repeat("0", 64)) }, "InvalidParameter", 400},
		{"no SignedHeaders", testSecret, func(r *http.Request) {
			r.Header.Set("Authorization", "ACS3-HMAC-SHA256 Credential="+testKeyID+",Signature=abc")
		}, "IncompleteSignature", 400},
		{"unknown key", testSecret, func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), testKeyID, "LTAI5tUnknown", 1))
		}, "InvalidAccessKeyId.NotFound", 404},
		{"expired date", testSecret, func(r *http.Request) {
			r.Header.Set("x-acs-date", time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05Z"))
		}, "InvalidTimeStamp.Expired", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := doRaw(t, v3Request(t, env, tt.secret, "Name=n", tt.tamper))
			if got.status != tt.status || got.Code != tt.code {
				t.Fatalf("want %d %q, got %d %q (%s)", tt.status, tt.code, got.status, got.Code, got.Message)
			}
		})
	}
	t.Run("replayed nonce", func(t *testing.T) {
		req := func() *http.Request { return v3Request(t, env, testSecret, "Name=n", nil) }
		if got := doRaw(t, req()); got.status != 200 {
			t.Fatalf("first: %d %s", got.status, got.Code)
		}
		if got := doRaw(t, req()); got.Code != "SignatureNonceUsed" {
			t.Fatalf("replay: %d %s", got.status, got.Code)
		}
	})
}

func TestAuthDisabledAcceptsUnsignedCalls(t *testing.T) {
	env := newTestEnv(t, func(c *gateway.Config) { c.DisableAuth = true })
	resp, err := http.Get(env.srv.URL + "/?Action=Whoami&Version=" + testVersion + "&AccessKeyId=anyone")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	recs := env.gw.Requests(gateway.RequestFilter{Action: "Whoami"})
	if len(recs) != 1 || recs[0].AccountID != gateway.DefaultAccountID || recs[0].AccessKeyID != "anyone" {
		t.Fatalf("log %+v", recs)
	}
}
