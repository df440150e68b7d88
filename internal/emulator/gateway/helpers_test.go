package gateway_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

const (
	testVersion = "2099-01-01"
	testKeyID   = "LTAI5tGatewayTestKey01"
	testSecret  = "gateway-test-secret-0123456789"
	testAccount = "5550001112223334"
)

// kvPart is the test product's state: a string map.
type kvPart struct {
	Items map[string]string `json:"items"`
}

func (p *kvPart) Reset() { p.Items = map[string]string{} }

// testProduct is a tiny product: Put stores Key=Value, Get reads it, Whoami
// echoes what the gateway told the handler.
func testProduct(part *kvPart) api.Product {
	return api.Product{
		Name: "kv", Version: testVersion, Host: "kv.aliyuncs.com",
		Actions: map[string]api.Action{
			"Put": {Handler: func(req *api.Request) (map[string]any, error) {
				k, err := req.Params.Required("Key")
				if err != nil {
					return nil, err
				}
				part.Items[k] = req.Params.String("Value")
				return map[string]any{"Key": k}, nil
			}},
			"Get": {ReadOnly: true, Handler: func(req *api.Request) (map[string]any, error) {
				k, err := req.Params.Required("Key")
				if err != nil {
					return nil, err
				}
				v, ok := part.Items[k]
				if !ok {
					return nil, api.NotFound("InvalidKey.NotFound", "The specified key %s does not exist.", k)
				}
				return map[string]any{"Key": k, "Value": v}, nil
			}},
			"Whoami": {ReadOnly: true, Handler: func(req *api.Request) (map[string]any, error) {
				return map[string]any{"AccountId": req.AccountID, "AccessKeyId": req.AccessKeyID,
					"RegionId": req.RegionID, "Name": req.Params.String("Name")}, nil
			}},
		},
	}
}

type testEnv struct {
	gw       *gateway.Gateway
	st       *store.Store
	part     *kvPart
	srv      *httptest.Server
	endpoint string
	seeded   []*api.Seed
}

func newTestEnv(t *testing.T, mutate func(*gateway.Config)) *testEnv {
	t.Helper()
	return newTestEnvWithStore(t, store.New(), mutate)
}

func newTestEnvWithStore(t *testing.T, st *store.Store, mutate func(*gateway.Config)) *testEnv {
	t.Helper()
	env := &testEnv{st: st, part: &kvPart{}}
	if err := st.Register("kv", env.part); err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{
		Region:     "cn-hangzhou",
		Store:      st,
		Products:   []api.Product{testProduct(env.part)},
		AccessKeys: []gateway.AccessKey{{ID: testKeyID, Secret: testSecret, AccountID: testAccount}},
		Identity: func(id string) (api.InstanceIdentity, bool) {
			if id != "" && id != "i-bp1testinstance" {
				return api.InstanceIdentity{}, false
			}
			return api.InstanceIdentity{InstanceID: "i-bp1testinstance", RegionID: "cn-hangzhou", ZoneID: "cn-hangzhou-h",
				VpcID: "vpc-bp1test", VSwitchID: "vsw-bp1test", PrivateIPv4: "192.168.0.10", VpcCIDRBlock: "192.168.0.0/16",
				Hostname: "node-1", InstanceType: "ecs.g7.large", MAC: "00:16:3e:00:00:01"}, true
		},
		Seed: func(s *api.Seed) (map[string][]string, error) {
			env.seeded = append(env.seeded, s)
			var ids []string
			for _, v := range s.VPCs {
				ids = append(ids, v.ID)
			}
			return map[string][]string{"vpc": ids}, nil
		},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	env.gw = gw
	env.srv = httptest.NewServer(gw)
	t.Cleanup(env.srv.Close)
	env.endpoint = strings.TrimPrefix(env.srv.URL, "http://")
	return env
}

// client returns a legacy-SDK client (signature V1) with the given credential.
func (e *testEnv) client(t *testing.T, cred auth.Credential) *sdk.Client {
	t.Helper()
	cfg := sdk.NewConfig()
	cfg.Scheme = "HTTP"
	if cred == nil {
		cred = credentials.NewAccessKeyCredential(testKeyID, testSecret)
	}
	c, err := sdk.NewClientWithOptions("cn-hangzhou", cfg, cred)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *testEnv) common(action string, params map[string]string) *requests.CommonRequest {
	req := requests.NewCommonRequest()
	req.Product, req.Version, req.ApiName = "Kv", testVersion, action
	req.Domain, req.Scheme = e.endpoint, "HTTP"
	for k, v := range params {
		req.QueryParams[k] = v
	}
	return req
}

// call sends action through the legacy SDK and decodes the JSON answer.
func (e *testEnv) call(t *testing.T, c *sdk.Client, action string, params map[string]string) (map[string]any, error) {
	t.Helper()
	resp, err := c.ProcessCommonRequest(e.common(action, params))
	if err != nil {
		return nil, err
	}
	return decode(t, resp)
}

func decode(t *testing.T, resp *responses.CommonResponse) (map[string]any, error) {
	t.Helper()
	out := map[string]any{}
	if err := json.Unmarshal(resp.GetHttpContentBytes(), &out); err != nil {
		t.Fatalf("decode %s: %v", resp.GetHttpContentString(), err)
	}
	return out, nil
}

func serverError(t *testing.T, err error) *sdkerrors.ServerError {
	t.Helper()
	var se *sdkerrors.ServerError
	if !errors.As(err, &se) {
		t.Fatalf("want a ServerError, got %v", err)
	}
	return se
}

// wantServerError is the assertion every product test uses.
var wantServerError = emulatortest.WantServerError

// signV1 builds a signed V1 query by hand, so tests can send timestamps and
// nonces the SDK would never produce.
func signV1(method string, params map[string]string, secret string) url.Values {
	enc := func(s string) string {
		e := url.QueryEscape(s)
		e = strings.ReplaceAll(e, "+", "%20")
		e = strings.ReplaceAll(e, "*", "%2A")
		return strings.ReplaceAll(e, "%7E", "~")
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, enc(k)+"="+enc(params[k]))
	}
	sts := method + "&%2F&" + enc(strings.Join(parts, "&"))
	mac := hmac.New(sha1.New, []byte(secret+"&"))
	mac.Write([]byte(sts))
	v := url.Values{}
	for k, val := range params {
		v.Set(k, val)
	}
	v.Set("Signature", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return v
}

func v1Params(action, nonce string, ts time.Time) map[string]string {
	return map[string]string{
		"Action": action, "Version": testVersion, "Format": "JSON", "AccessKeyId": testKeyID,
		"SignatureMethod": "HMAC-SHA1", "SignatureVersion": "1.0", "SignatureType": "",
		"SignatureNonce": nonce, "Timestamp": ts.UTC().Format("2006-01-02T15:04:05Z"), "RegionId": "cn-hangzhou",
	}
}

// rawError is an error body as the gateway writes it.
type rawError struct {
	status    int
	Code      string
	Message   string
	RequestID string `json:"RequestId"`
	HostID    string `json:"HostId"`
	header    http.Header
	body      map[string]any
}

func doRaw(t *testing.T, req *http.Request) rawError {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out rawError
	_ = json.Unmarshal(data, &out)
	_ = json.Unmarshal(data, &out.body)
	out.status, out.header = resp.StatusCode, resp.Header
	return out
}

func (e *testEnv) getV1(t *testing.T, v url.Values) rawError {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/?"+v.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return doRaw(t, req)
}

// control calls the control API and decodes its JSON answer into out.
func (e *testEnv) control(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}
