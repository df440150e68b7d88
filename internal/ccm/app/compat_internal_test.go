package app

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cloud-provider/names"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
)

// TestLegacyControllerNames: the existing CCM's --controllers names map
// onto ours; with them, service and nlb pick the load balancer kinds as
// there; upstream names and aliases pass unchanged and keep both kinds.
func TestLegacyControllerNames(t *testing.T) {
	all := []string{names.CloudNodeController, names.CloudNodeLifecycleController, names.NodeRouteController, names.ServiceLBController}
	for _, tc := range []struct {
		value            string
		want             []string
		noCLB, noNLB     bool
		dropped          []string
		wantInvalidInner bool
	}{
		{value: "node,route,service,nlb", want: []string{names.CloudNodeController, names.CloudNodeLifecycleController, "route", names.ServiceLBController}},
		{value: "node,route,service,ingress", want: []string{names.CloudNodeController, names.CloudNodeLifecycleController, "route", names.ServiceLBController}, noNLB: true, dropped: []string{"ingress"}},
		{value: "nlb", want: []string{names.ServiceLBController}, noCLB: true},
		{value: "node,pvtz", want: []string{names.CloudNodeController, names.CloudNodeLifecycleController}, noCLB: true, noNLB: true, dropped: []string{"pvtz"}},
		{value: "ingress", want: []string{"-" + names.CloudNodeController}, noCLB: true, noNLB: true, dropped: []string{"ingress"}},
		// Ours and upstream's: unchanged, both kinds.
		{value: "cloud-node,service,route", want: []string{"cloud-node", names.ServiceLBController, "route"}},
		{value: "*,-route", want: []string{"*", "-route"}},
	} {
		t.Run(tc.value, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.StringSlice("controllers", []string{"*"}, "")
			l, err := wrapControllers(fs)
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse([]string{"--controllers=" + tc.value}); err != nil {
				t.Fatal(err)
			}
			got, _ := fs.GetStringSlice("controllers")
			if !slices.Equal(got, tc.want) {
				t.Errorf("controllers %v, want %v", got, tc.want)
			}
			if noCLB, noNLB := l.disabledKinds(); noCLB != tc.noCLB || noNLB != tc.noNLB {
				t.Errorf("disabled kinds clb=%t nlb=%t, want %t %t", noCLB, noNLB, tc.noCLB, tc.noNLB)
			}
			if !slices.Equal(l.dropped, tc.dropped) {
				t.Errorf("dropped %v, want %v", l.dropped, tc.dropped)
			}
			for _, n := range got {
				n = strings.TrimPrefix(n, "-")
				if n != "*" && !slices.Contains(all, n) && names.CCMControllerAliases()[n] == "" {
					t.Errorf("%q is neither a controller nor an upstream alias", n)
				}
			}
		})
	}
}

// TestNetworkFlags: --network (default vpc, as the existing CCM) and our
// older --use-vpc-endpoints; a contradiction and an unknown value are
// refused.
func TestNetworkFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{nil, provider.NetworkVPC, ""},
		{[]string{"--network=public"}, provider.NetworkPublic, ""},
		{[]string{"--network=vpc"}, provider.NetworkVPC, ""},
		{[]string{"--use-vpc-endpoints=false"}, provider.NetworkPublic, ""},
		{[]string{"--use-vpc-endpoints"}, provider.NetworkVPC, ""},
		{[]string{"--network=vpc", "--use-vpc-endpoints"}, provider.NetworkVPC, ""},
		{[]string{"--network=public", "--use-vpc-endpoints"}, "", "contradict"},
		{[]string{"--network=classic"}, "", "want vpc or public"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			metrics := ""
			c := addCompatFlags(fs, &metrics)
			useVPC := false
			fs.BoolVar(&useVPC, useVPCEndpointsFlag, false, "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := c.resolveNetwork(fs, useVPC)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("network %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

// TestExistingFlagsParse: every existing CCM flag of its cmd/manager that
// upstream lacks parses; --metrics-bind-addr sets our metrics address;
// --dry-run=true is refused and the ignored ones are not.
func TestExistingFlagsParse(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	metrics := ""
	c := addCompatFlags(fs, &metrics)
	args := []string{"--metrics-bind-addr=:9100", "--health-probe-bind-addr=:10258", "--network=vpc", "--dry-run=false",
		"--sg-batch-size=40", "--max-concurrent-actions=10", "--max-throttling-retry-times=10", "--node-reconcile-batch-size=100",
		"--route-reconcile-batch-size=50", "--node-event-aggregation-wait-seconds=1", "--pprof-bind-addr=:6060"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if metrics != ":9100" {
		t.Errorf("--metrics-bind-addr set %q, want :9100", metrics)
	}
	if err := c.check(fs); err != nil {
		t.Fatalf("check: %v", err)
	}
	if err := fs.Parse([]string{"--dry-run"}); err != nil {
		t.Fatal(err)
	}
	if err := c.check(fs); err == nil || !strings.Contains(err.Error(), "--dry-run=true") {
		t.Fatalf("--dry-run=true: err %v, want a refusal naming it", err)
	}
}

// startTLSBehind serves h over TLS on l, as the secure server does.
func startTLSBehind(t *testing.T, l net.Listener, h http.Handler) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.StartTLS()
	t.Cleanup(srv.Close)
}

func get(t *testing.T, c *http.Client, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestHealthProbesPlainAndTLS: on the secure port's own port, plain HTTP
// gets the secure server's /healthz (and nothing else) while HTTPS keeps
// getting everything; on another port, plain HTTP is served there.
func TestHealthProbesPlainAndTLS(t *testing.T) {
	secureHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			t.Errorf("the secure handler got a plain request for %s", r.URL.Path)
		}
		fmt.Fprintf(w, "secure %s", r.URL.Path)
	})
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%t", shared), func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := l.Addr().(*net.TCPAddr).Port
			probePort := port
			if !shared {
				probePort = freeLoopbackPort(t)
			}
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			// Shared: the flag unset, as in the existing CCM's manifests.
			wrapped, err := serveHealthProbes(l, "127.0.0.1:"+strconv.Itoa(probePort), !shared, stop)
			if err != nil {
				t.Fatal(err)
			}
			startTLSBehind(t, wrapped, secureHandler)
			plain := "http://127.0.0.1:" + strconv.Itoa(probePort)
			secure := "https://127.0.0.1:" + strconv.Itoa(port)
			for _, tc := range []struct {
				method, url string
				code        int
				body        string
			}{
				{"GET", plain + "/healthz", 200, "secure /healthz"},
				{"GET", plain + "/healthz/leader-election", 200, "secure /healthz/leader-election"},
				{"HEAD", plain + "/readyz", 200, ""},
				{"GET", plain + "/livez", 200, "secure /livez"},
				{"GET", plain + "/metrics", 404, ""},
				{"POST", plain + "/healthz", 405, ""},
				{"GET", secure + "/healthz", 200, "secure /healthz"},
				{"GET", secure + "/metrics", 200, "secure /metrics"},
			} {
				code, body := get(t, insecure, tc.method, tc.url)
				if code != tc.code || (tc.body != "" && body != tc.body) {
					t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.url, code, body, tc.code, tc.body)
				}
			}
			if !shared {
				// The secure port itself stays TLS only.
				resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://127.0.0.1:" + strconv.Itoa(port) + "/healthz")
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						t.Error("plain HTTP answered 200 on the secure port while the probes have their own port")
					}
				}
			}
		})
	}
}

// TestHealthProbeAddrInvalid: a bad --health-probe-bind-addr is refused
// naming the flag; 0 and empty turn it off.
func TestHealthProbeAddrInvalid(t *testing.T) {
	for _, addr := range []string{"10258", "localhost:10258", ":0", ":99999"} {
		if _, err := healthProbePort(addr); err == nil || !strings.Contains(err.Error(), "--"+HealthProbeBindAddrFlag) {
			t.Errorf("%q: err %v, want one naming the flag", addr, err)
		}
	}
	for _, addr := range []string{"", "0"} {
		if p, err := healthProbePort(addr); err != nil || p != 0 {
			t.Errorf("%q: %d %v, want off", addr, p, err)
		}
	}
}
