package metricstest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

const (
	accessKeyID     = "LTAI5tMetricsKey"
	accessKeySecret = "metrics-test-secret-c2VjcmV0c2VjcmV0"
	clusterID       = "c-metrics"
	clusterCIDR     = "10.244.0.0/16"
	ns              = "default"
)

// One control plane, one emulated cloud and one CCM (routes on, the plain
// metrics listener on) serve every test of this binary.
var (
	cluster     *localcluster.Cluster
	cloud       *emulator.Emulator
	ccm         *ccmtest.CCM
	metricsAddr string
	instances   []string
)

func TestMain(m *testing.M) {
	ccmtest.Main(m, &cluster, ccmtest.WithNodes(clusterCIDR), setup)
}

func setup() error {
	var err error
	cloud, err = ccmtest.StartEmulator(accessKeyID, accessKeySecret)
	if err != nil {
		return err
	}
	ids, err := cloud.Seed(ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: 3, NamePrefix: "metrics-"}))
	if err != nil {
		return err
	}
	instances = ids["instance"][1:] // the first is the metadata service's own host
	port, err := ccmtest.FreePort()
	if err != nil {
		return err
	}
	metricsAddr = "127.0.0.1:" + strconv.Itoa(port)
	ccm, err = ccmtest.StartCCM(context.Background(), ccmtest.CCMOptions{
		Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(), AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		CloudConfig: "Global:\n  clusterID: " + clusterID + "\n",
		Args: []string{"--leader-elect=false", "--cluster-cidr=" + clusterCIDR, "--route-reconciliation-period=1m",
			"--metrics-bind-address=" + metricsAddr},
		LogPath: filepath.Join(cluster.Dir, "logs", "cloud-controller-manager.log"),
	})
	return err
}

func kube(t *testing.T) kubernetes.Interface {
	t.Helper()
	return ccmtest.Kube(t, cluster)
}

func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ccmtest.PollCCM(t, ccm, timeout, 200*time.Millisecond, what, cond)
}

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape is one /metrics answer of the plain listener, parsed.
type scrape struct {
	samples []sample
	// types are the # TYPE lines, by metric name.
	types map[string]string
}

func getMetrics(t *testing.T) *scrape {
	t.Helper()
	var out *scrape
	poll(t, 20*time.Second, "GET http://"+metricsAddr+"/metrics", func(context.Context) (bool, error) {
		hc := &http.Client{Timeout: 5 * time.Second}
		resp, err := hc.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err
		}
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
		}
		out, err = parse(string(body))
		return err == nil, err
	})
	return out
}

// parse reads the text exposition format: enough of it for the names,
// label sets and values the CCM exposes.
func parse(body string) (*scrape, error) {
	s := &scrape{types: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			if len(f) == 4 {
				s.types[f[2]] = f[3]
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sm := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			sm.name = line[:i]
			j := strings.LastIndex(line, "}")
			if j < i {
				return nil, fmt.Errorf("bad line %q", line)
			}
			if err := parseLabels(line[i+1:j], sm.labels); err != nil {
				return nil, fmt.Errorf("line %q: %w", line, err)
			}
			rest = line[j+1:]
		} else if i >= 0 {
			sm.name = line[:i]
			rest = line[i:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("no value in %q", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		sm.value = v
		s.samples = append(s.samples, sm)
	}
	return s, sc.Err()
}

func parseLabels(s string, into map[string]string) error {
	for s != "" {
		eq := strings.Index(s, "=")
		if eq < 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return fmt.Errorf("bad labels %q", s)
		}
		name := s[:eq]
		s = s[eq+2:]
		var b strings.Builder
		i := 0
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		}
		if i >= len(s) {
			return fmt.Errorf("unterminated label value")
		}
		into[name] = b.String()
		s = strings.TrimPrefix(s[i+1:], ",")
	}
	return nil
}

// sum adds the values of the samples of name whose labels include want.
func (s *scrape) sum(name string, want map[string]string) (float64, bool) {
	total, found := 0.0, false
	for _, sm := range s.samples {
		if sm.name != name {
			continue
		}
		match := true
		for k, v := range want {
			if sm.labels[k] != v {
				match = false
				break
			}
		}
		if match {
			total += sm.value
			found = true
		}
	}
	return total, found
}

// labelSets returns the label names each sample of name carries, less le.
func (s *scrape) labelNames(name string) map[string]bool {
	out := map[string]bool{}
	for _, sm := range s.samples {
		if sm.name == name {
			for k := range sm.labels {
				if k != "le" {
					out[k] = true
				}
			}
		}
	}
	return out
}

func l(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// waitMetric polls the plain listener until name{want} reaches at least
// min, and returns the last scrape.
func waitMetric(t *testing.T, timeout time.Duration, name string, want map[string]string, cond func(float64) bool, what string) *scrape {
	t.Helper()
	var s *scrape
	var got float64
	poll(t, timeout, what, func(context.Context) (bool, error) {
		s = getMetrics(t)
		v, _ := s.sum(name, want)
		got = v
		return cond(v), nil
	})
	t.Logf("%s: %s%v = %g", what, name, want, got)
	return s
}
