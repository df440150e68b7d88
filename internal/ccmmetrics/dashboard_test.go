package ccmmetrics_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	// Registering packages: every metric the CCM exposes of its own.
	_ "github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	_ "github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	_ "github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
	_ "github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// series is every name a query may use, mapped to its metric.
func series(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range ccmmetrics.Catalog() {
		for _, s := range e.Series() {
			out[s] = e.Name
		}
	}
	if len(out) == 0 {
		t.Fatal("the catalog is empty")
	}
	return out
}

// promqlWords are the PromQL keywords that look like metric names.
var promqlWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
}

// grouping matches a grouping clause with its label list.
var grouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)

// metricNames returns the metric names a PromQL expression selects: the
// identifiers left once strings, label matchers, ranges and grouping
// labels are removed, other than functions and keywords.
func metricNames(expr string) []string {
	var b strings.Builder
	depthBrace, depthBracket := 0, 0
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			// Skip a string literal, escapes included.
			for i++; i < len(expr) && expr[i] != c; i++ {
				if expr[i] == '\\' && c != '`' {
					i++
				}
			}
			b.WriteByte(' ')
		case c == '{':
			depthBrace++
		case c == '}':
			depthBrace--
			b.WriteByte(' ')
		case c == '[':
			depthBracket++
		case c == ']':
			depthBracket--
			b.WriteByte(' ')
		case depthBrace > 0 || depthBracket > 0:
		default:
			b.WriteByte(c)
		}
	}
	s := grouping.ReplaceAllString(b.String(), " ")
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			i++
			continue
		}
		j := i
		for j < len(s) && (s[j] == '_' || s[j] == ':' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		word := s[i:j]
		prev := byte(' ')
		if i > 0 {
			prev = s[i-1]
		}
		next := strings.TrimLeft(s[j:], " \t\n")
		i = j
		switch {
		case prev >= '0' && prev <= '9' || prev == '.' || prev == '$':
			// An exponent (1e3) or a Grafana variable.
		case strings.HasPrefix(next, "("):
			// A function or an aggregation.
		case promqlWords[strings.ToLower(word)]:
		default:
			out = append(out, word)
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum by (type, verb) (rate(alicloud_service_syncs_total{job=~"$job",result="error"}[$__rate_interval]))`, []string{"alicloud_service_syncs_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="}"}[5m])))`, []string{"a_bucket"}},
		{`sum(a) / ignoring(code) group_left sum(b) > 1e3`, []string{"a", "b"}},
		{`up`, []string{"up"}},
		{`rate(x[1m] offset 5m)`, []string{"x"}},
	} {
		got := metricNames(tc.expr)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("metricNames(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

// panel is the part of Grafana's JSON model the test reads.
type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T) []panel {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string  `json:"title"`
		UID    string  `json:"uid"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("deploy/grafana-dashboard.json: %v", err)
	}
	if d.Title == "" || d.UID == "" {
		t.Fatal("the dashboard has no title or uid")
	}
	var flat []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			flat = append(flat, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return flat
}

// TestDashboardQueriesOnlyExposedMetrics: every metric name a panel of
// deploy/grafana-dashboard.json queries is one the CCM registers, every
// panel queries something, and the panels cover what users watch.
func TestDashboardQueriesOnlyExposedMetrics(t *testing.T) {
	known := series(t)
	used := map[string]bool{}
	for _, p := range loadDashboard(t) {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := metricNames(tg.Expr)
			if len(names) == 0 {
				t.Errorf("panel %q query %s selects no metric: %s", p.Title, tg.RefID, tg.Expr)
			}
			for _, n := range names {
				m, ok := known[n]
				if !ok {
					t.Errorf("panel %q queries %s, which the CCM does not expose", p.Title, n)
					continue
				}
				used[m] = true
			}
		}
	}
	for _, want := range []string{
		"alicloud_service_syncs_total", "alicloud_service_sync_duration_seconds",
		"alicloud_service_pending", "alicloud_service_failing", "alicloud_service_invalid",
		"alicloud_api_requests_total", "alicloud_api_retries_total", "alicloud_api_request_duration_seconds",
		"ccm_node_latencies_duration_milliseconds", "ccm_route_latencies_duration_milliseconds",
		"ccm_slb_latencies_duration_milliseconds", "ccm_slb_operation_result",
	} {
		if !used[want] {
			t.Errorf("no panel queries %s", want)
		}
	}
}

// docRow matches a metric row of docs/metrics.md: | `name` | type | labels | ...
var docRow = regexp.MustCompile("^\\|\\s*`([a-z_:]+)`\\s*\\|\\s*(counter|gauge|histogram)\\s*\\|([^|]*)\\|")

// TestDocsListEveryMetric: docs/metrics.md lists each registered metric
// once, with its type, and nothing the CCM does not register.
func TestDocsListEveryMetric(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := documented[m[1]]; dup {
			t.Errorf("docs/metrics.md lists %s twice", m[1])
		}
		documented[m[1]] = m[2]
	}
	var missing []string
	for _, e := range ccmmetrics.Catalog() {
		typ, ok := documented[e.Name]
		switch {
		case !ok:
			missing = append(missing, e.Name)
		case typ != string(e.Kind):
			t.Errorf("docs/metrics.md: %s is a %s, documented as %s", e.Name, e.Kind, typ)
		}
		delete(documented, e.Name)
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/metrics.md does not list %v", missing)
	}
	for n := range documented {
		t.Errorf("docs/metrics.md lists %s, which the CCM does not register", n)
	}
}
