package emulator_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// v1Encode is the V1 signature's percent-encoding (RFC 3986 unreserved
// characters kept).
func v1Encode(s string) string {
	e := url.QueryEscape(s)
	e = strings.ReplaceAll(e, "+", "%20")
	e = strings.ReplaceAll(e, "*", "%2A")
	return strings.ReplaceAll(e, "%7E", "~")
}

// signedV1 returns the query of a GET call signed with secret.
func signedV1(params map[string]string, secret string) url.Values {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var canon []string
	for _, k := range keys {
		canon = append(canon, v1Encode(k)+"="+v1Encode(params[k]))
	}
	sts := "GET&%2F&" + v1Encode(strings.Join(canon, "&"))
	mac := hmac.New(sha1.New, []byte(secret+"&"))
	mac.Write([]byte(sts))
	q := url.Values{}
	for k, v := range params {
		q.Set(k, v)
	}
	q.Set("Signature", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return q
}

// TestV1SignatureMismatch: a parameter changed after signing (or a wrong
// secret) is IncompleteSignature on ECS and SignatureDoesNotMatch on the
// other products, each with the server's string to sign where the SDK
// looks for it; the SDK then tells a wrong secret from a signing bug.
func TestV1SignatureMismatch(t *testing.T) {
	env := emulatortest.Start(t)
	call := func(version, action string, change bool) (int, map[string]string) {
		t.Helper()
		p := map[string]string{
			"Action": action, "Version": version, "Format": "JSON", "RegionId": env.Region,
			"AccessKeyId": emulatortest.AccessKeyID, "SignatureMethod": "HMAC-SHA1", "SignatureVersion": "1.0",
			"SignatureNonce": time.Now().Format(time.RFC3339Nano) + action + version, "Timestamp": time.Now().UTC().Format("2006-01-02T15:04:05Z"),
		}
		q := signedV1(p, emulatortest.AccessKeySecret)
		if change {
			q.Set("RegionId", "cn-beijing")
		}
		resp, err := http.Get(env.URL() + "/?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for k, v := range body {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
		return resp.StatusCode, out
	}
	for _, c := range []struct{ product, version, action, code string }{
		{"ecs", "2014-05-26", "DescribeInstances", "IncompleteSignature"},
		{"slb", "2014-05-15", "DescribeLoadBalancers", "SignatureDoesNotMatch"},
	} {
		if status, body := call(c.version, c.action, false); status != http.StatusOK {
			t.Fatalf("%s: signed call answered %d %v", c.product, status, body)
		}
		status, body := call(c.version, c.action, true)
		if status != http.StatusBadRequest || body["Code"] != c.code || !strings.Contains(body["Message"], "server string to sign is:") {
			t.Errorf("%s: RegionId changed after signing answered %d %v, want 400 %s with the server's string to sign", c.product, status, body, c.code)
		}
	}

	// A wrong secret through the SDK: the server's string to sign equals
	// the client's, so the SDK recognises a bad secret.
	wrong := emulatortest.For(env.Emulator, emulatortest.AccessKeyID, "not-the-secret")
	_, err := wrong.ECS(t).DescribeInstances(ecs.CreateDescribeInstancesRequest())
	se := emulatortest.WantServerError(t, err, "IncompleteSignature", http.StatusBadRequest)
	if !strings.HasPrefix(se.Recommend(), "InvalidAccessKeySecret") {
		t.Errorf("ECS wrong secret: SDK recommendation %q, want InvalidAccessKeySecret (the strings to sign differ)", se.Recommend())
	}
	_, err = wrong.SLB(t).DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
	se = emulatortest.WantServerError(t, err, "SignatureDoesNotMatch", http.StatusBadRequest)
	if !strings.HasPrefix(se.Recommend(), "InvalidAccessKeySecret") {
		t.Errorf("SLB wrong secret: SDK recommendation %q, want InvalidAccessKeySecret", se.Recommend())
	}
}
