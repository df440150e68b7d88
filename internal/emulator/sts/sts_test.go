package sts_test

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/sts"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/conformance"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

const issuerURL = "https://oidc-ack-cn-hangzhou.oss-cn-hangzhou.aliyuncs.com/c1234"

// stsClient is the official SDK's STS client pointed at the emulator. It
// signs with the test key, which the anonymous action ignores.
func stsClient(t *testing.T, env *emulatortest.Env) *sts.Client {
	t.Helper()
	c, err := sts.NewClientWithOptions(env.Region, sdk.NewConfig().WithScheme("HTTP"), credentials.NewAccessKeyCredential("LTAIanonymous", "unused"))
	if err != nil {
		t.Fatal(err)
	}
	c.Domain = env.Endpoint
	return c
}

func assume(c *sts.Client, token, role, provider, duration string) (*sts.AssumeRoleWithOIDCResponse, error) {
	req := sts.CreateAssumeRoleWithOIDCRequest()
	req.Scheme = "http"
	req.OIDCToken, req.RoleArn, req.OIDCProviderArn, req.RoleSessionName = token, role, provider, "ccm-test"
	if duration != "" {
		req.DurationSeconds = requests.Integer(duration)
	}
	return c.AssumeRoleWithOIDC(req)
}

// TestAssumeRoleWithOIDCIssuesCredentialsTheGatewayAccepts: a valid token
// buys STS credentials in the real response's shape; they sign ECS calls
// with their SecurityToken until the stated Expiration, then get
// InvalidSecurityToken.Expired.
func TestAssumeRoleWithOIDCIssuesCredentialsTheGatewayAccepts(t *testing.T) {
	issuer := emulatortest.NewOIDCIssuer(t, issuerURL)
	cfg := emulatortest.RRSAConfig(issuer)
	cfg.CredentialTTL = 2 * time.Second
	env := emulatortest.StartWith(t, emulator.Config{STS: cfg})
	env.Seed(t, seed())
	token := issuer.Token(t, emulatortest.RRSASubject, "sts.aliyuncs.com", time.Hour)
	resp, err := assume(stsClient(t, env), token, emulatortest.RRSARoleARN, emulatortest.RRSAProviderARN, "")
	if err != nil {
		t.Fatal(err)
	}
	// Every member the emulator answers is one the SDK's model has, with
	// its JSON type.
	res, err := conformance.Check(resp.GetHttpContentBytes(), reflect.TypeOf(resp))
	if err != nil || len(res.Mismatches) > 0 || res.Fields < 15 {
		t.Fatalf("the response does not match the SDK's model (%d fields checked): %v %v", res.Fields, res.Mismatches, err)
	}
	cr := resp.Credentials
	if !strings.HasPrefix(cr.AccessKeyId, "STS.") || cr.AccessKeySecret == "" || cr.SecurityToken == "" || resp.RequestId == "" {
		t.Fatalf("credentials %+v", resp)
	}
	exp, err := time.Parse("2006-01-02T15:04:05Z", cr.Expiration)
	if err != nil {
		t.Fatalf("Expiration %q: %v", cr.Expiration, err)
	}
	if d := time.Until(exp); d > 2*time.Second || d < 0 {
		t.Fatalf("Expiration %s is %v away, want within the 2s TTL", cr.Expiration, d)
	}
	wantArn := "acs:ram::" + emulatortest.AccountID + ":role/" + emulatortest.RRSARole + "/ccm-test"
	if resp.AssumedRoleUser.Arn != wantArn || !strings.HasSuffix(resp.AssumedRoleUser.AssumedRoleId, ":ccm-test") {
		t.Fatalf("AssumedRoleUser %+v, want Arn %s", resp.AssumedRoleUser, wantArn)
	}
	if resp.OIDCTokenInfo.Subject != emulatortest.RRSASubject || resp.OIDCTokenInfo.Issuer != issuerURL || resp.OIDCTokenInfo.ClientIds != "sts.aliyuncs.com" {
		t.Fatalf("OIDCTokenInfo %+v", resp.OIDCTokenInfo)
	}
	ecsc, err := ecs.NewClientWithOptions(env.Region, sdk.NewConfig().WithScheme("HTTP"), credentials.NewStsTokenCredential(cr.AccessKeyId, cr.AccessKeySecret, cr.SecurityToken))
	if err != nil {
		t.Fatal(err)
	}
	ecsc.Domain = env.Endpoint
	if _, err := ecsc.DescribeInstances(ecs.CreateDescribeInstancesRequest()); err != nil {
		t.Fatalf("call signed with the issued credentials: %v", err)
	}
	time.Sleep(time.Until(exp) + 50*time.Millisecond)
	_, err = ecsc.DescribeInstances(ecs.CreateDescribeInstancesRequest())
	if code(err) != "InvalidSecurityToken.Expired" {
		t.Fatalf("after the stated Expiration: want InvalidSecurityToken.Expired, got %v", err)
	}
	// The token is a bearer credential: the request log keeps it out.
	for _, r := range env.Emulator.Requests(gateway.RequestFilter{Action: "AssumeRoleWithOIDC"}) {
		for k, v := range r.Params {
			if strings.Contains(v, token[:40]) {
				t.Fatalf("the request log shows the OIDC token in %s", k)
			}
		}
	}
}

// TestAssumeRoleWithOIDCRefusals: each way a token or ARN is wrong gets
// the code the real STS answers, and no error repeats the token.
func TestAssumeRoleWithOIDCRefusals(t *testing.T) {
	issuer := emulatortest.NewOIDCIssuer(t, issuerURL)
	other := emulatortest.NewOIDCIssuer(t, issuerURL)
	cfg := emulatortest.RRSAConfig(issuer)
	env := emulatortest.StartWith(t, emulator.Config{STS: cfg})
	c := stsClient(t, env)
	good := issuer.Token(t, emulatortest.RRSASubject, "sts.aliyuncs.com", time.Hour)
	roleARN, provARN := emulatortest.RRSARoleARN, emulatortest.RRSAProviderARN
	for _, tc := range []struct {
		name, token, role, provider, duration string
		status                                int
		code                                  string
	}{
		{"signed by another key", other.Token(t, emulatortest.RRSASubject, "sts.aliyuncs.com", time.Hour), roleARN, provARN, "", 401, "AuthenticationFail.OIDCToken.InvalidSignature"},
		{"payload changed after signing", tamper(t, good), roleARN, provARN, "", 401, "AuthenticationFail.OIDCToken.InvalidSignature"},
		{"expired token", issuer.Token(t, emulatortest.RRSASubject, "sts.aliyuncs.com", -time.Hour), roleARN, provARN, "", 401, "AuthenticationFail.OIDCToken.Expired"},
		{"other audience", issuer.Token(t, emulatortest.RRSASubject, "kubernetes.default.svc", time.Hour), roleARN, provARN, "", 401, "AuthenticationFail.OIDCToken.AudienceNotMatch"},
		{"not a JWT", "not-a-jwt", roleARN, provARN, "", 401, "AuthenticationFail.OIDCToken.Invalid"},
		{"subject the role does not trust", issuer.Token(t, "system:serviceaccount:default:intruder", "sts.aliyuncs.com", time.Hour), roleARN, provARN, "", 401, "AuthenticationFail.NoPermission"},
		{"unknown role", good, "acs:ram::" + emulatortest.AccountID + ":role/nobody", provARN, "", 404, "EntityNotExist.Role"},
		{"unknown provider", good, roleARN, "acs:ram::" + emulatortest.AccountID + ":oidc-provider/nobody", "", 401, "AuthenticationFail.NoPermission"},
		{"malformed role ARN", good, "role/ccm", provARN, "", 400, "InvalidParameter.RoleArn"},
		{"session too short", good, roleARN, provARN, "60", 400, "InvalidParameter.DurationSeconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := assume(c, tc.token, tc.role, tc.provider, tc.duration)
			se, ok := err.(*sdkerrors.ServerError)
			if !ok || se.ErrorCode() != tc.code || se.HttpStatus() != tc.status {
				t.Fatalf("want %d %s, got %v", tc.status, tc.code, err)
			}
			if len(tc.token) > 20 && strings.Contains(err.Error(), tc.token[20:]) {
				t.Fatalf("the error repeats the token: %v", err)
			}
		})
	}
}

func code(err error) string {
	if se, ok := err.(*sdkerrors.ServerError); ok {
		return se.ErrorCode()
	}
	return ""
}

func seed() *api.Seed {
	return &api.Seed{
		VPCs:      []api.SeedVPC{{CIDRBlock: "192.168.0.0/16", VSwitches: []api.SeedVSwitch{{ID: "vsw-sts", ZoneID: "cn-hangzhou-h", CIDRBlock: "192.168.0.0/24"}}}},
		Instances: []api.SeedInstance{{VSwitchID: "vsw-sts"}},
	}
}

// tamper rewrites a signed token's expiry, keeping header and signature.
func tamper(t *testing.T, token string) string {
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	claims["exp"] = time.Now().Add(24 * time.Hour).Unix()
	payload, _ = json.Marshal(claims)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
}
