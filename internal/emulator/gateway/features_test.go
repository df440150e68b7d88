package gateway_test

import (
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	"github.com/alibabacloud-go/tea/dara"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func TestThrottlingPerActionAndPerAccount(t *testing.T) {
	tests := []struct {
		name   string
		rule   gateway.ThrottleRule
		code   string
		header string
	}{
		{"api", gateway.ThrottleRule{Scope: "api", Product: "kv", Action: "Whoami", QPS: 1, Burst: 5}, "Throttling.Api", "x-ratelimit-user-api"},
		{"user", gateway.ThrottleRule{Scope: "user", AccountID: testAccount, QPS: 1, Burst: 5}, "Throttling.User", "x-ratelimit-user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, nil)
			var rule gateway.ThrottleRule
			if st := env.control(t, http.MethodPost, "/_emulator/throttles", tt.rule, &rule); st != http.StatusCreated || rule.ID == "" {
				t.Fatalf("add throttle: %d %+v", st, rule)
			}
			c := env.client(t, nil)
			throttled := 0
			const n = 20
			for i := 0; i < n; i++ {
				_, err := env.call(t, c, "Whoami", nil)
				if err == nil {
					continue
				}
				se := wantServerError(t, err, tt.code, http.StatusBadRequest)
				if tt.code == "Throttling.User" && se.Message() != "Request was denied due to user flow control." {
					t.Fatalf("message %q", se.Message())
				}
				throttled++
			}
			// Burst 5 at 1 QPS: the first five pass, and at most one more
			// token refills while 20 calls run.
			if throttled < n-7 || throttled > n-5 {
				t.Fatalf("%d of %d calls throttled", throttled, n)
			}
			// darabonba reads the hint header into RetryAfter.
			oc := openAPIClient(t, env, testKeyID, testSecret, "")
			oc.DisableSDKError = dara.Bool(true)
			_, err := callV3(oc, "Whoami", nil, nil)
			var te *openapi.ThrottlingError
			if !errors.As(err, &te) || dara.StringValue(te.Code) != tt.code || te.RetryAfter == nil || *te.RetryAfter <= 0 {
				t.Fatalf("want a ThrottlingError with RetryAfter, got %T %v", err, err)
			}
			// Other actions (api scope) stay unthrottled; removing the rule lifts the limit.
			if tt.name == "api" {
				if _, err := env.call(t, c, "Get", map[string]string{"Key": "x"}); serverError(t, err).ErrorCode() != "InvalidKey.NotFound" {
					t.Fatalf("Get was throttled: %v", err)
				}
			}
			if st := env.control(t, http.MethodDelete, "/_emulator/throttles/"+rule.ID, nil, nil); st != http.StatusOK {
				t.Fatalf("delete throttle: %d", st)
			}
			if _, err := env.call(t, c, "Whoami", nil); err != nil {
				t.Fatalf("still throttled: %v", err)
			}
		})
	}
}

func TestFaultInjectedErrorDoesNotChangeState(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, nil)
	var rule gateway.FaultRule
	st := env.control(t, http.MethodPost, "/_emulator/faults", map[string]any{
		"product": "kv", "action": "Put", "count": 1,
		"error": map[string]any{"code": "ServiceUnavailable", "message": "The request has failed due to a temporary failure of the server."},
	}, &rule)
	if st != http.StatusCreated {
		t.Fatalf("add fault: %d", st)
	}
	_, err := env.call(t, c, "Put", map[string]string{"Key": "k", "Value": "v"})
	se := wantServerError(t, err, "ServiceUnavailable", http.StatusServiceUnavailable)
	if !strings.Contains(se.Message(), "temporary failure") {
		t.Fatalf("message %q", se.Message())
	}
	if _, err := env.call(t, c, "Get", map[string]string{"Key": "k"}); serverError(t, err).ErrorCode() != "InvalidKey.NotFound" {
		t.Fatalf("the injected error changed state: %v", err)
	}
	// count 1: the rule is gone and the next Put works.
	if len(env.gw.Faults()) != 0 {
		t.Fatalf("rule still active: %+v", env.gw.Faults())
	}
	if _, err := env.call(t, c, "Put", map[string]string{"Key": "k", "Value": "v"}); err != nil {
		t.Fatal(err)
	}
	recs := env.gw.Requests(gateway.RequestFilter{Action: "Put"})
	if len(recs) != 2 || recs[0].Fault != rule.ID || recs[0].Code != "ServiceUnavailable" || recs[1].Code != gateway.CodeOK {
		t.Fatalf("log %+v", recs)
	}
}

// TestFaultParams: a rule with params fires only on calls that carry
// each of them with that value; other calls of the action go through.
func TestFaultParams(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, nil)
	if _, err := env.gw.AddFault(gateway.FaultRule{Action: "Put", Params: map[string]string{"Key": "victim"}, Error: &gateway.FaultError{Code: "InternalError"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, want string
	}{{"victim", "InternalError"}, {"other", ""}, {"Victim", ""}, {"victim", "InternalError"}} {
		_, err := env.call(t, c, "Put", map[string]string{"Key": tc.key, "Value": "v"})
		got := ""
		if err != nil {
			got = serverError(t, err).ErrorCode()
		}
		if got != tc.want {
			t.Errorf("Put Key=%s: error %q, want %q", tc.key, got, tc.want)
		}
	}
	if _, err := env.call(t, c, "Put", map[string]string{"Value": "v"}); err == nil || serverError(t, err).ErrorCode() == "InternalError" {
		t.Errorf("a call without the param matched the rule: %v", err)
	}
}

func TestFaultLatencyAndProbability(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, nil)
	if _, err := env.gw.AddFault(gateway.FaultRule{Action: "Whoami", Latency: gateway.Duration(150 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := env.call(t, c, "Whoami", nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("call took %v, want at least 150ms", d)
	}
	if _, err := env.call(t, c, "Get", map[string]string{"Key": "x"}); serverError(t, err).ErrorCode() != "InvalidKey.NotFound" {
		t.Fatal("latency rule matched another action")
	}
	env.gw.ClearFaults()

	// Probability 0.5 over 200 calls: expect roughly half, never none or all.
	if _, err := env.gw.AddFault(gateway.FaultRule{Action: "Get", Probability: 0.5, Error: &gateway.FaultError{Code: "InternalError"}}); err != nil {
		t.Fatal(err)
	}
	injected := 0
	for i := 0; i < 200; i++ {
		_, err := env.call(t, c, "Get", map[string]string{"Key": "x"})
		if serverError(t, err).ErrorCode() == "InternalError" {
			if serverError(t, err).HttpStatus() != 500 {
				t.Fatal("InternalError without 500")
			}
			injected++
		}
	}
	if injected < 60 || injected > 140 {
		t.Fatalf("%d of 200 calls failed at probability 0.5", injected)
	}
}

func TestFaultDropClosesConnection(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, nil)
	if _, err := env.gw.AddFault(gateway.FaultRule{Product: "kv", Action: "Put", Drop: true, Count: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := env.call(t, c, "Put", map[string]string{"Key": "k", "Value": "v"})
	var se *sdkerrors.ServerError
	if err == nil || errors.As(err, &se) {
		t.Fatalf("want a transport error, got %v", err)
	}
	if _, err := env.call(t, c, "Get", map[string]string{"Key": "k"}); serverError(t, err).ErrorCode() != "InvalidKey.NotFound" {
		t.Fatal("a dropped call changed state")
	}
	recs := env.gw.Requests(gateway.RequestFilter{Action: "Put"})
	if len(recs) != 1 || recs[0].Code != "ConnectionDropped" || recs[0].Status != 0 {
		t.Fatalf("log %+v", recs)
	}
}

// TestFaultDropAfterAppliesThenCloses: a drop with after applies the call,
// logs it with the answer it would have had, and only then closes the
// connection, so the client sees a transport error for a call that happened.
func TestFaultDropAfterAppliesThenCloses(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, nil)
	if _, err := env.gw.AddFault(gateway.FaultRule{Product: "kv", Action: "Put", Drop: true, After: true, Count: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := env.call(t, c, "Put", map[string]string{"Key": "k", "Value": "v"})
	var se *sdkerrors.ServerError
	if err == nil || errors.As(err, &se) {
		t.Fatalf("want a transport error, got %v", err)
	}
	got, err := env.call(t, c, "Get", map[string]string{"Key": "k"})
	if err != nil || got["Value"] != "v" {
		t.Fatalf("the call was not applied: %v %v", got, err)
	}
	recs := env.gw.Requests(gateway.RequestFilter{Action: "Put"})
	if len(recs) != 1 || recs[0].Code != gateway.CodeOK || recs[0].Status != http.StatusOK || !recs[0].ResponseDropped || recs[0].Fault == "" {
		t.Fatalf("log %+v", recs)
	}
	// The rule fired once: the next Put is answered.
	if _, err := env.call(t, c, "Put", map[string]string{"Key": "k", "Value": "w"}); err != nil {
		t.Fatal(err)
	}
}

func TestFaultRuleValidation(t *testing.T) {
	env := newTestEnv(t, nil)
	for _, body := range []string{
		`{"action":"Put"}`,
		`{"error":{"code":"X"},"drop":true}`,
		`{"error":{"code":"X","status":200}}`,
		`{"drop":true,"probability":2}`,
		`{"latency":"soon"}`,
		`{"drop":true,"bogus":1}`,
		`{"after":true}`,
		`{"latency":"1s","after":true}`,
		`{"error":{"code":"X"},"after":true}`,
	} {
		var out map[string]string
		if st := env.control(t, http.MethodPost, "/_emulator/faults", body, &out); st != http.StatusBadRequest || out["error"] == "" {
			t.Fatalf("%s: %d %v", body, st, out)
		}
	}
}

// TestFaultRuleTargetsMustExist: a rule for a product the emulator does not
// serve, or an action its product lacks, is refused naming what is accepted.
func TestFaultRuleTargetsMustExist(t *testing.T) {
	env := newTestEnv(t, nil)
	for _, tc := range []struct {
		name, product, action, wantErr string
	}{
		{"any call", "", "", ""},
		{"product only", "kv", "", ""},
		{"product upper case", "KV", "Put", ""},
		{"action of the product", "kv", "Get", ""},
		{"action of any product", "", "Whoami", ""},
		{"unknown product", "rds", "", `product "rds" is not served by the emulator; accepted: kv (or empty for any)`},
		{"unknown action of product", "kv", "Delete", `action "Delete" is not an action of kv`},
		{"action case matters", "kv", "put", `action "put" is not an action of kv`},
		{"unknown action of any product", "", "Nothing", `action "Nothing" is not an action of any product (kv)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rule := gateway.FaultRule{Product: tc.product, Action: tc.action, Drop: true}
			r, err := env.gw.AddFault(rule)
			var out map[string]any
			st := env.control(t, http.MethodPost, "/_emulator/faults", rule, &out)
			if tc.wantErr == "" {
				if err != nil || st != http.StatusCreated {
					t.Fatalf("refused: %v, control %d %v", err, st, out)
				}
				env.gw.RemoveFault(r.ID)
				env.gw.RemoveFault(out["id"].(string))
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("AddFault error %v, want %q", err, tc.wantErr)
			}
			if st != http.StatusBadRequest || out["error"] != tc.wantErr {
				t.Fatalf("control: %d %v", st, out)
			}
		})
	}
	if n := len(env.gw.Faults()); n != 0 {
		t.Fatalf("%d rules left", n)
	}
}

func TestRequestLogHasNoSecrets(t *testing.T) {
	env := newTestEnv(t, func(c *gateway.Config) { c.MetadataCredentialTTL = time.Hour })
	id, secret, token, _ := env.gw.RoleCredentials()
	sts := env.client(t, credentials.NewStsTokenCredential(id, secret, token))
	if _, err := env.call(t, sts, "Put", map[string]string{"Key": "k", "Value": "v", "Password": "hunter2", "PrivateKey": "-----BEGIN"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.call(t, env.client(t, nil), "Get", map[string]string{"Key": "nope"}); err == nil {
		t.Fatal("want an error")
	}
	var out struct {
		Requests []gateway.RequestRecord `json:"requests"`
	}
	if st := env.control(t, http.MethodGet, "/_emulator/requests?product=kv", nil, &out); st != 200 || len(out.Requests) != 2 {
		t.Fatalf("requests: %d %+v", st, out)
	}
	put, get := out.Requests[0], out.Requests[1]
	if put.Action != "Put" || put.Code != gateway.CodeOK || put.Status != 200 || put.Params["Key"] != "k" || put.AccessKeyID != id ||
		put.AccountID != testAccount || put.RequestID == "" || put.Latency <= 0 || put.Product != "kv" {
		t.Fatalf("put record %+v", put)
	}
	if get.Code != "InvalidKey.NotFound" || get.Status != 404 || get.Seq <= put.Seq {
		t.Fatalf("get record %+v", get)
	}
	for _, rec := range out.Requests {
		for k, v := range rec.Params {
			for _, s := range []string{secret, token, testSecret, "hunter2", "-----BEGIN"} {
				if strings.Contains(v, s) {
					t.Fatalf("param %s leaks a secret", k)
				}
			}
			if k == "Signature" || k == "SecurityToken" {
				t.Fatalf("param %s logged", k)
			}
		}
	}
	// Filters.
	if st := env.control(t, http.MethodGet, "/_emulator/requests?action=Get", nil, &out); st != 200 || len(out.Requests) != 1 {
		t.Fatalf("action filter: %+v", out)
	}
	if env.control(t, http.MethodGet, "/_emulator/requests?since="+strconv.FormatUint(put.Seq, 10), nil, &out); len(out.Requests) != 1 || out.Requests[0].Action != "Get" {
		t.Fatalf("since seq filter: %+v", out)
	}
	if env.control(t, http.MethodGet, "/_emulator/requests?since="+time.Now().Add(time.Minute).UTC().Format(time.RFC3339), nil, &out); len(out.Requests) != 0 {
		t.Fatalf("since time filter: %+v", out)
	}
	if st := env.control(t, http.MethodGet, "/_emulator/requests?since=tomorrow", nil, nil); st != http.StatusBadRequest {
		t.Fatalf("bad since: %d", st)
	}
	// The accessKeyId filter tells one caller's calls from another's.
	for _, tc := range []struct {
		key  string
		want []string
	}{
		{id, []string{"Put"}},
		{testKeyID, []string{"Get"}},
		{"LTAInobody", nil},
		{"", []string{"Put", "Get"}},
	} {
		env.control(t, http.MethodGet, "/_emulator/requests?accessKeyId="+tc.key, nil, &out)
		var got []string
		for _, r := range out.Requests {
			got = append(got, r.Action)
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("accessKeyId=%q: got %v, want %v", tc.key, got, tc.want)
		}
		if n := len(env.gw.Requests(gateway.RequestFilter{AccessKeyID: tc.key})); n != len(tc.want) {
			t.Fatalf("RequestFilter{AccessKeyID: %q}: %d records, want %d", tc.key, n, len(tc.want))
		}
	}
	// Counters, in process and over HTTP, then reset.
	if c := env.gw.Counter("kv", "Get"); c.Calls != 1 || c.Errors != 1 {
		t.Fatalf("counter %+v", c)
	}
	var counters struct {
		Counters []gateway.Counter `json:"counters"`
	}
	env.control(t, http.MethodGet, "/_emulator/counters", nil, &counters)
	if len(counters.Counters) != 2 || counters.Counters[0].Action != "Get" || counters.Counters[1] != (gateway.Counter{Product: "kv", Action: "Put", Calls: 1}) {
		t.Fatalf("counters %+v", counters)
	}
	env.control(t, http.MethodDelete, "/_emulator/counters", nil, nil)
	env.control(t, http.MethodDelete, "/_emulator/requests", nil, nil)
	if len(env.gw.Counters()) != 0 || len(env.gw.Requests(gateway.RequestFilter{})) != 0 {
		t.Fatal("reset did not clear")
	}
}

func TestRequestLogIsABoundedRing(t *testing.T) {
	env := newTestEnv(t, func(c *gateway.Config) { c.RequestLogSize = 3 })
	c := env.client(t, nil)
	for i := 0; i < 5; i++ {
		if _, err := env.call(t, c, "Whoami", map[string]string{"Name": strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	recs := env.gw.Requests(gateway.RequestFilter{})
	if len(recs) != 3 || recs[0].Params["Name"] != "2" || recs[2].Params["Name"] != "4" {
		t.Fatalf("ring %+v", recs)
	}
	if env.gw.Counter("kv", "Whoami").Calls != 5 {
		t.Fatal("counters must count past the ring size")
	}
}

func TestSTSCredentialsFromMetadataExpire(t *testing.T) {
	const ttl = 400 * time.Millisecond
	env := newTestEnv(t, func(c *gateway.Config) { c.MetadataCredentialTTL = ttl; c.MetadataRoleName = "ccm-role" })
	get := func(path string) (int, string) {
		resp, err := http.Get(env.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, role := get("/latest/meta-data/ram/security-credentials/"); st != 200 || role != "ccm-role" {
		t.Fatalf("role list: %d %q", st, role)
	}
	if st, _ := get("/latest/meta-data/ram/security-credentials/other"); st != 404 {
		t.Fatalf("other role: %d", st)
	}
	var creds struct {
		AccessKeyID, AccessKeySecret, SecurityToken, Expiration, LastUpdated, Code string
	}
	status := env.control(t, http.MethodGet, "/latest/meta-data/ram/security-credentials/ccm-role", nil, &creds)
	if status != 200 || creds.Code != "Success" || !strings.HasPrefix(creds.AccessKeyID, "STS.") || creds.SecurityToken == "" ||
		creds.AccessKeySecret == "" || creds.Expiration == "" || creds.LastUpdated == "" {
		t.Fatalf("credentials %d %+v", status, creds)
	}
	c := env.client(t, credentials.NewStsTokenCredential(creds.AccessKeyID, creds.AccessKeySecret, creds.SecurityToken))
	out, err := env.call(t, c, "Whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out["AccessKeyId"] != creds.AccessKeyID || out["AccountId"] != testAccount {
		t.Fatalf("identity %v", out)
	}
	// A wrong token for that key is refused.
	wrong := env.client(t, credentials.NewStsTokenCredential(creds.AccessKeyID, creds.AccessKeySecret, "CAISforged"))
	_, err = env.call(t, wrong, "Whoami", nil)
	wantServerError(t, err, "InvalidSecurityToken.MismatchWithAccessKey", http.StatusBadRequest)
	// V3 with the STS token works too.
	if _, err := callV3(openAPIClient(t, env, creds.AccessKeyID, creds.AccessKeySecret, creds.SecurityToken), "Whoami", nil, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	_, err = env.call(t, c, "Whoami", nil)
	wantServerError(t, err, "InvalidSecurityToken.Expired", http.StatusBadRequest)
	// The service has rotated to fresh credentials by now.
	var fresh struct{ AccessKeyID string }
	env.control(t, http.MethodGet, "/latest/meta-data/ram/security-credentials/ccm-role", nil, &fresh)
	if fresh.AccessKeyID == creds.AccessKeyID {
		t.Fatal("credentials were not rotated")
	}
}

func TestMetadataServiceAndIMDSv2(t *testing.T) {
	for _, require := range []bool{false, true} {
		env := newTestEnv(t, func(c *gateway.Config) { c.MetadataRequireToken = require })
		get := func(path, token string) (int, string) {
			req, _ := http.NewRequest(http.MethodGet, env.srv.URL+path, nil)
			if token != "" {
				req.Header.Set("X-aliyun-ecs-metadata-token", token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		put := func(ttl string) (int, string) {
			req, _ := http.NewRequest(http.MethodPut, env.srv.URL+"/latest/api/token", nil)
			if ttl != "" {
				req.Header.Set("X-aliyun-ecs-metadata-token-ttl-seconds", ttl)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if st, _ := put(""); st != http.StatusBadRequest {
			t.Fatalf("token without ttl: %d", st)
		}
		if st, _ := put("21601"); st != http.StatusBadRequest {
			t.Fatalf("token ttl too long: %d", st)
		}
		st, token := put("21600")
		if st != 200 || token == "" {
			t.Fatalf("token: %d %q", st, token)
		}
		wantNoToken := 200
		if require {
			wantNoToken = http.StatusForbidden
		}
		if st, _ := get("/latest/meta-data/instance-id", ""); st != wantNoToken {
			t.Fatalf("require=%v without token: %d", require, st)
		}
		if st, _ := get("/latest/meta-data/instance-id", "forged"); st != http.StatusUnauthorized {
			t.Fatalf("forged token: %d", st)
		}
		for path, want := range map[string]string{
			"/latest/meta-data/region-id": "cn-hangzhou", "/latest/meta-data/zone-id": "cn-hangzhou-h",
			"/latest/meta-data/instance-id": "i-bp1testinstance", "/latest/meta-data/vpc-id": "vpc-bp1test",
			"/latest/meta-data/vswitch-id": "vsw-bp1test", "/latest/meta-data/private-ipv4": "192.168.0.10",
			"/latest/meta-data/vpc-cidr-block": "192.168.0.0/16", "/latest/meta-data/hostname": "node-1",
			"/latest/meta-data/instance/instance-type": "ecs.g7.large", "/latest/meta-data/mac": "00:16:3e:00:00:01",
		} {
			if st, got := get(path, token); st != 200 || got != want {
				t.Fatalf("%s: %d %q", path, st, got)
			}
		}
		if st, list := get("/latest/meta-data/", token); st != 200 || !strings.Contains(list, "instance-id\n") {
			t.Fatalf("listing: %d %q", st, list)
		}
		if st, _ := get("/latest/meta-data/no-such-thing", token); st != 404 {
			t.Fatalf("unknown item: %d", st)
		}
	}
	// No instance at all: 404 for instance items.
	env := newTestEnv(t, func(c *gateway.Config) { c.MetadataInstanceID = "i-missing" })
	resp, err := http.Get(env.srv.URL + "/latest/meta-data/instance-id")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("missing instance: %d", resp.StatusCode)
	}
}

func TestControlAPI(t *testing.T) {
	env := newTestEnv(t, nil)
	c := env.client(t, nil)
	var health map[string]any
	if st := env.control(t, http.MethodGet, "/_emulator/health", nil, &health); st != 200 || health["status"] != "ok" || health["auth"] != true {
		t.Fatalf("health %d %v", st, health)
	}
	// Settings: read, change, reject unknown names atomically.
	var s gateway.SettingsDoc
	env.control(t, http.MethodGet, "/_emulator/settings", nil, &s)
	if time.Duration(s.Delays[store.DelayNLBJob]) != 500*time.Millisecond || s.Quotas[store.QuotaSLBBackendsPerCall] != 20 {
		t.Fatalf("settings %+v", s)
	}
	st := env.control(t, http.MethodPut, "/_emulator/settings", `{"delays":{"nlb.job":"50ms"},"quotas":{"slb.backendServersPerCall":40}}`, &s)
	if st != 200 || env.st.Settings().Delay(store.DelayNLBJob) != 50*time.Millisecond || env.st.Settings().Quota(store.QuotaSLBBackendsPerCall) != 40 {
		t.Fatalf("put settings: %d %+v", st, s)
	}
	if st := env.control(t, http.MethodPut, "/_emulator/settings", `{"delays":{"nlb.job":"1s","nope":"1s"}}`, nil); st != 400 ||
		env.st.Settings().Delay(store.DelayNLBJob) != 50*time.Millisecond {
		t.Fatalf("bad settings: %d", st)
	}
	// State: dump, change, restore.
	if _, err := env.call(t, c, "Put", map[string]string{"Key": "a", "Value": "1"}); err != nil {
		t.Fatal(err)
	}
	var dump map[string]any
	env.control(t, http.MethodGet, "/_emulator/state", nil, &dump)
	if items := dump["kv"].(map[string]any)["items"].(map[string]any); items["a"] != "1" {
		t.Fatalf("dump %v", dump)
	}
	if _, err := env.call(t, c, "Put", map[string]string{"Key": "a", "Value": "2"}); err != nil {
		t.Fatal(err)
	}
	if st := env.control(t, http.MethodPut, "/_emulator/state", dump, nil); st != 200 {
		t.Fatalf("restore %d", st)
	}
	if out, _ := env.call(t, c, "Get", map[string]string{"Key": "a"}); out["Value"] != "1" {
		t.Fatalf("after restore %v", out)
	}
	if st := env.control(t, http.MethodPost, "/_emulator/state", `{"nosuchpart":{}}`, nil); st != 400 {
		t.Fatalf("restore unknown part: %d", st)
	}
	// Seed in YAML and JSON.
	var seeded struct {
		IDs map[string][]string `json:"ids"`
	}
	yml := "vpcs:\n  - id: vpc-seeded\n    cidrBlock: 192.168.0.0/16\n    vswitches:\n      - zoneId: cn-hangzhou-h\n        cidrBlock: 192.168.0.0/24\n"
	if st := env.control(t, http.MethodPost, "/_emulator/seed", yml, &seeded); st != 200 || seeded.IDs["vpc"][0] != "vpc-seeded" {
		t.Fatalf("seed yaml: %d %+v", st, seeded)
	}
	if st := env.control(t, http.MethodPost, "/_emulator/seed", `{"vpcs":[{"id":"vpc-json","cidrBlock":"10.0.0.0/8"}]}`, &seeded); st != 200 ||
		len(env.seeded) != 2 || env.seeded[0].VPCs[0].VSwitches[0].ZoneID != "cn-hangzhou-h" || env.seeded[1].VPCs[0].CIDRBlock != "10.0.0.0/8" {
		t.Fatalf("seed json: %d %+v", st, env.seeded)
	}
	if st := env.control(t, http.MethodPost, "/_emulator/seed", "vpcz: []\n", nil); st != 400 {
		t.Fatalf("seed typo: %d", st)
	}
	// Faults and throttles lists.
	f, _ := env.gw.AddFault(gateway.FaultRule{Drop: true, Action: "Get"})
	var faults struct {
		Faults []gateway.FaultRule `json:"faults"`
	}
	if env.control(t, http.MethodGet, "/_emulator/faults", nil, &faults); len(faults.Faults) != 1 || faults.Faults[0].ID != f.ID {
		t.Fatalf("faults %+v", faults)
	}
	if st := env.control(t, http.MethodDelete, "/_emulator/faults/flt-nope", nil, nil); st != 404 {
		t.Fatalf("delete unknown fault: %d", st)
	}
	env.gw.AddThrottle(gateway.ThrottleRule{Scope: "user", QPS: 1000})
	var throttles struct {
		Throttles []gateway.ThrottleRule `json:"throttles"`
	}
	if env.control(t, http.MethodGet, "/_emulator/throttles", nil, &throttles); len(throttles.Throttles) != 1 || throttles.Throttles[0].Burst != 1000 {
		t.Fatalf("throttles %+v", throttles)
	}
	if st := env.control(t, http.MethodPost, "/_emulator/throttles", `{"scope":"everyone","qps":1}`, nil); st != 400 {
		t.Fatalf("bad throttle: %d", st)
	}
	// Reset clears state, settings, log, faults and throttles.
	if st := env.control(t, http.MethodPost, "/_emulator/reset", nil, nil); st != 200 {
		t.Fatalf("reset %d", st)
	}
	if len(env.part.Items) != 0 || env.st.Settings().Delay(store.DelayNLBJob) != 500*time.Millisecond ||
		len(env.gw.Faults()) != 0 || len(env.gw.Throttles()) != 0 || len(env.gw.Requests(gateway.RequestFilter{})) != 0 || len(env.gw.Counters()) != 0 {
		t.Fatal("reset left something behind")
	}
	if st := env.control(t, http.MethodGet, "/_emulator/nothing", nil, nil); st != 404 {
		t.Fatalf("unknown endpoint: %d", st)
	}
}

func TestStatePersistsAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnvWithStore(t, st, nil)
	c := env.client(t, nil)
	for _, kv := range [][2]string{{"a", "1"}, {"b", "2"}, {"a", "3"}} {
		if _, err := env.call(t, c, "Put", map[string]string{"Key": kv[0], "Value": kv[1]}); err != nil {
			t.Fatal(err)
		}
	}
	env.srv.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st2.Close() })
	env2 := newTestEnvWithStore(t, st2, nil)
	c2 := env2.client(t, nil)
	for k, want := range map[string]string{"a": "3", "b": "2"} {
		out, err := env2.call(t, c2, "Get", map[string]string{"Key": k})
		if err != nil || out["Value"] != want {
			t.Fatalf("%s after restart: %v %v", k, out, err)
		}
	}
	if empty, err := st2.IsEmpty(); err != nil || empty {
		t.Fatalf("IsEmpty = %v, %v", empty, err)
	}
}
