package gateway_test

import (
	"encoding/xml"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// xmlGet sends a signed V1 call and returns the status, content type and
// body.
func xmlGet(t *testing.T, env *testEnv, params map[string]string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, env.srv.URL+"/?"+signV1(http.MethodGet, params, testSecret).Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), data
}

// TestAnswerFormat: Format=XML, and no Format at all in a V1 call, answer
// XML (the RPC APIs' default); errors follow the same format.
func TestAnswerFormat(t *testing.T) {
	env := newTestEnv(t, nil)
	type whoami struct {
		XMLName   xml.Name `xml:"WhoamiResponse"`
		RequestID string   `xml:"RequestId"`
		AccountID string   `xml:"AccountId"`
		Name      string   `xml:"Name"`
	}
	for _, format := range []string{"XML", "xml", ""} {
		p := v1Params("Whoami", "n-fmt-"+format, time.Now())
		p["Name"] = "a<b&c"
		if format == "" {
			delete(p, "Format")
		} else {
			p["Format"] = format
		}
		status, ct, data := xmlGet(t, env, p)
		var got whoami
		if err := xml.Unmarshal(data, &got); err != nil || status != 200 || !strings.HasPrefix(ct, "text/xml") {
			t.Fatalf("Format %q: %d %s %v\n%s", format, status, ct, err, data)
		}
		if got.AccountID != testAccount || got.Name != "a<b&c" || got.RequestID == "" {
			t.Errorf("Format %q: %+v", format, got)
		}
	}
	p := v1Params("Get", "n-fmt-err", time.Now())
	p["Key"] = "missing"
	p["Format"] = "XML"
	status, ct, data := xmlGet(t, env, p)
	var e struct {
		XMLName   xml.Name `xml:"Error"`
		Code      string   `xml:"Code"`
		RequestID string   `xml:"RequestId"`
	}
	if err := xml.Unmarshal(data, &e); err != nil || status != 404 || e.Code != "InvalidKey.NotFound" || e.RequestID == "" || !strings.HasPrefix(ct, "text/xml") {
		t.Fatalf("XML error: %d %s %+v %v\n%s", status, ct, e, err, data)
	}
	p = v1Params("Whoami", "n-fmt-json", time.Now())
	if status, ct, _ := xmlGet(t, env, p); status != 200 || !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Format=JSON: %d %s", status, ct)
	}
}

var requestIDForm = regexp.MustCompile(`^[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$`)

// TestRequestIDsAreRandom: upper-case version-4 UUIDs, no two alike, and
// no shared prefix that would betray a counter.
func TestRequestIDsAreRandom(t *testing.T) {
	env := newTestEnv(t, nil)
	seen := map[string]bool{}
	prefixes := map[string]bool{}
	for i := 0; i < 20; i++ {
		got := env.getV1(t, signV1(http.MethodGet, v1Params("Whoami", "n-id-"+string(rune('a'+i)), time.Now()), testSecret))
		id, _ := got.body["RequestId"].(string)
		if !requestIDForm.MatchString(id) || seen[id] {
			t.Fatalf("request id %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
		prefixes[id[:8]] = true
	}
	if len(prefixes) < 15 {
		t.Errorf("request ids share their first 8 digits: %d distinct of 20", len(prefixes))
	}
}
