package cloud

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRequestIDOf(t *testing.T) {
	members := strings.Repeat(`{"ServerId":"i-1","Port":30080,"Weight":100,"Description":"a \"quoted\", {braced} [one]"},`, 3000)
	for _, tc := range []struct {
		name, body, want string
		bad              bool
	}{
		{"id first, big list", `{"RequestId":"5A1E-01","VServerGroupId":"rsp-1","BackendServers":{"BackendServer":[` + members + `{}]}}`, "5A1E-01", false},
		{"id last", `{"BackendServers":{"BackendServer":[{"RequestId":"nested"}]},"RequestId":"top"}`, "top", false},
		{"a value named RequestId is not a key", `{"Note":"RequestId","RequestId":"k"}`, "k", false},
		{"escaped", `{"RequestId":"a\"b"}`, `a\"b`, false},
		{"no id", `{"Code":"x"}`, "", false},
		{"whitespace", " {\n \"RequestId\" : \"s\" \n}\n", "s", false},
		{"truncated", `{"RequestId":"x","BackendServers":[{"ServerId":"i-1"`, "", true},
		{"not an object", `["RequestId"]`, "", true},
		{"empty", ``, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := requestIDOf(strings.NewReader(tc.body))
			if (err != nil) != tc.bad || got != tc.want {
				t.Errorf("requestIDOf = %q, %v; want %q (error %v)", got, err, tc.want, tc.bad)
			}
		})
	}
}

// TestEnvelopeOnlyTransport: a declared action's 2xx JSON answer reaches
// the SDK as its envelope; its errors and other actions' answers pass
// unchanged.
func TestEnvelopeOnlyTransport(t *testing.T) {
	AnswerEnvelopeOnly("TestEnvelopeAction")
	big := `{"RequestId":"r-1","BackendServers":{"BackendServer":[` + strings.Repeat(`{"ServerId":"i-1"},`, 1000) + `{}]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("Fail") != "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"RequestId":"r-2","Code":"InvalidParameter","Message":"bad"}`)
			return
		}
		_, _ = io.WriteString(w, big)
	}))
	defer srv.Close()
	rt := sdkTransport{http.DefaultTransport}
	get := func(query string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/?"+query, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.ContentLength >= 0 && int(resp.ContentLength) != len(b) {
			t.Errorf("%s: Content-Length %d, body %d bytes", query, resp.ContentLength, len(b))
		}
		return resp.StatusCode, string(b)
	}
	if code, body := get("Action=TestEnvelopeAction"); code != 200 || body != `{"RequestId":"r-1"}` {
		t.Errorf("declared action: %d %q", code, body)
	}
	if code, body := get("Action=TestEnvelopeAction&Fail=1"); code != 400 || !strings.Contains(body, "InvalidParameter") {
		t.Errorf("declared action's error: %d %q", code, body)
	}
	if code, body := get("Action=DescribeVServerGroupAttribute"); code != 200 || body != big {
		t.Errorf("other action: %d, %d bytes", code, len(body))
	}
}
