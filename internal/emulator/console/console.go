// Package console is the emulator's read-only web console: server-rendered
// HTML pages (html/template, no JavaScript needed) that show each region's
// resources, each resource's raw API answer, the request log, and the
// active faults and throttles. Every resource is read through the
// products' own read-only actions, so a page shows what an SDK client
// would receive and nothing the API would not.
package console

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// Prefix is where the console is served on the emulator's listener.
const Prefix = gateway.ControlPrefix + "ui/"

// maxLogRows bounds the request log table; the newest rows are kept.
const maxLogRows = 500

// Backend is what the console reads: the gateway, in the emulator.
type Backend interface {
	// Invoke runs a read-only action and returns its answer body.
	Invoke(product, action, region string, params map[string]string) (map[string]any, error)
	// RegionIDs lists the regions of the emulated cloud.
	RegionIDs() []string
	// DefaultRegion is the region of calls without RegionId.
	DefaultRegion() string
	// Requests returns the logged calls matching the filter, oldest first.
	Requests(gateway.RequestFilter) []gateway.RequestRecord
	// Counters returns the per-action call and error counts.
	Counters() []gateway.Counter
	// Faults lists the active fault rules.
	Faults() []gateway.FaultRule
	// Throttles lists the active throttle rules.
	Throttles() []gateway.ThrottleRule
}

//go:embed templates/*.html
var templateFS embed.FS

// Console is an http.Handler serving the pages under Prefix.
type Console struct {
	backend Backend
	pages   map[string]*template.Template
	mux     *http.ServeMux
}

// New returns the console over b.
func New(b Backend) (*Console, error) {
	c := &Console{backend: b, pages: map[string]*template.Template{}}
	for _, name := range []string{"overview", "region", "raw", "requests", "faults"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse console page %s: %w", name, err)
		}
		c.pages[name] = t
	}
	c.mux = http.NewServeMux()
	c.mux.HandleFunc("GET "+Prefix+"{$}", c.overview)
	c.mux.HandleFunc("GET "+Prefix+"region/{region}", c.regionPage)
	c.mux.HandleFunc("GET "+Prefix+"raw/{product}/{action}", c.raw)
	c.mux.HandleFunc("GET "+Prefix+"requests", c.requests)
	c.mux.HandleFunc("GET "+Prefix+"faults", c.faults)
	c.mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		// Anything else, a write method included, is refused: the console
		// only reads.
		c.fail(w, http.StatusNotFound, fmt.Errorf("the console has no page %s %s", r.Method, r.URL.Path))
	})
	return c, nil
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.mux.ServeHTTP(w, r) }

// page is what every template receives: the navigation and the page's own data.
type page struct {
	Title   string
	Nav     string
	Regions []string
	Region  string
	Data    any
}

func (c *Console) render(w http.ResponseWriter, name string, p page) {
	p.Regions = c.backend.RegionIDs()
	var buf strings.Builder
	if err := c.pages[name].Execute(&buf, p); err != nil {
		c.fail(w, http.StatusInternalServerError, fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(buf.String()))
}

func (c *Console) fail(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, err.Error())
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	var counts []regionCount
	for _, id := range c.backend.RegionIDs() {
		counts = append(counts, c.count(id))
	}
	c.render(w, "overview", page{Title: "Overview", Nav: "overview", Data: map[string]any{
		"Counts": counts, "Default": c.backend.DefaultRegion(),
		"Faults": len(c.backend.Faults()), "Throttles": len(c.backend.Throttles()),
		"Requests": len(c.backend.Requests(gateway.RequestFilter{})),
	}})
}

func (c *Console) regionPage(w http.ResponseWriter, r *http.Request) {
	region := r.PathValue("region")
	if !slices.Contains(c.backend.RegionIDs(), region) {
		c.fail(w, http.StatusNotFound, fmt.Errorf("no region %q", region))
		return
	}
	c.render(w, "region", page{Title: region, Nav: "region", Region: region, Data: c.region(region)})
}

// raw shows one action's answer: as HTML, or as the bare JSON body with
// format=json. Parameters other than format are passed to the action.
func (c *Console) raw(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	params := map[string]string{}
	for k, vs := range q {
		if k != "format" && len(vs) > 0 {
			params[k] = vs[0]
		}
	}
	region := params["RegionId"]
	if region == "" {
		region = c.backend.DefaultRegion()
	}
	product, action := r.PathValue("product"), r.PathValue("action")
	body, err := c.backend.Invoke(product, action, region, params)
	if err != nil {
		c.fail(w, http.StatusBadRequest, err)
		return
	}
	data, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		c.fail(w, http.StatusInternalServerError, fmt.Errorf("encode %s/%s: %w", product, action, err))
		return
	}
	if q.Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(data, '\n'))
		return
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var shown []tag
	for _, k := range keys {
		shown = append(shown, tag{k, params[k]})
	}
	jsonURL := *r.URL
	q.Set("format", "json")
	jsonURL.RawQuery = q.Encode()
	c.render(w, "raw", page{Title: action, Nav: "raw", Region: region, Data: map[string]any{
		"Product": product, "Action": action, "Params": shown, "JSON": string(data), "JSONURL": jsonURL.String(),
	}})
}

// logFilter is the request log form.
type logFilter struct {
	Product, Action, AccessKey, Since string
	ErrorsOnly                        bool
}

func (c *Console) requests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := logFilter{Product: q.Get("product"), Action: strings.TrimSpace(q.Get("action")),
		AccessKey: strings.TrimSpace(q.Get("accessKeyId")), Since: strings.TrimSpace(q.Get("since")), ErrorsOnly: q.Get("errors") != ""}
	rf := gateway.RequestFilter{Product: f.Product, Action: f.Action, AccessKeyID: f.AccessKey}
	var problem string
	if f.Since != "" {
		since, err := parseSince(f.Since, time.Now())
		if err != nil {
			problem = err.Error()
		}
		rf.Since = since
	}
	all := c.backend.Requests(rf)
	var rows []gateway.RequestRecord
	for i := len(all) - 1; i >= 0 && len(rows) < maxLogRows; i-- {
		if f.ErrorsOnly && all[i].Code == gateway.CodeOK {
			continue
		}
		rows = append(rows, all[i])
	}
	actions := map[string]bool{}
	products := map[string]bool{}
	keys := map[string]bool{}
	for _, rec := range c.backend.Requests(gateway.RequestFilter{}) {
		actions[rec.Action], products[rec.Product], keys[rec.AccessKeyID] = true, true, true
	}
	c.render(w, "requests", page{Title: "Request log", Nav: "requests", Data: map[string]any{
		"Filter": f, "Rows": rows, "Matched": len(all), "Problem": problem,
		"Products": sortedSet(products), "Actions": sortedSet(actions), "Keys": sortedSet(keys),
		"Counters": c.backend.Counters(), "Limit": maxLogRows,
	}})
}

// parseSince reads the log form's since field: a duration back from now
// ("5m"), an RFC 3339 time, or a clock time today in UTC ("15:04:05").
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("15:04:05", s); err == nil {
		y, m, d := now.UTC().Date()
		return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, time.UTC), nil
	}
	return time.Time{}, fmt.Errorf("since %q is neither a duration (5m), an RFC 3339 time nor a UTC clock time (15:04:05); showing every call", s)
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		if k != "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (c *Console) faults(w http.ResponseWriter, r *http.Request) {
	c.render(w, "faults", page{Title: "Faults and throttles", Nav: "faults", Data: map[string]any{
		"Faults": c.backend.Faults(), "Throttles": c.backend.Throttles(),
	}})
}

// rawURL links to the raw API view of one action call; kv are parameter
// names and values.
func rawURL(region, product, action string, kv ...any) (string, error) {
	if len(kv)%2 != 0 {
		return "", fmt.Errorf("raw %s/%s: odd parameter list", product, action)
	}
	q := url.Values{"RegionId": {region}}
	for i := 0; i < len(kv); i += 2 {
		q.Set(fmt.Sprint(kv[i]), str(kv[i+1]))
	}
	return Prefix + "raw/" + url.PathEscape(product) + "/" + url.PathEscape(action) + "?" + q.Encode(), nil
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"get":   func(o obj, path string) string { return str(lookup(o, path)) },
	"list":  func(o obj, path string) []obj { return objects(lookup(o, path)) },
	"strs":  func(o obj, path string) []string { return strs(lookup(o, path)) },
	"tags":  tagsOf,
	"raw":   rawURL,
	"upper": strings.ToUpper,
	"join":  strings.Join,
	"params": func(m map[string]string) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			if k != "Action" && k != "Version" && !strings.HasPrefix(k, "Signature") && k != "AccessKeyId" &&
				k != "Timestamp" && k != "Format" && k != "SignatureNonce" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		var b strings.Builder
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(k + "=" + m[k])
		}
		return b.String()
	},
	"clock": func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
	"ms": func(d gateway.Duration) string {
		return strconv.FormatFloat(float64(time.Duration(d).Microseconds())/1000, 'f', 1, 64)
	},
	"ok": func(code string) bool { return code == gateway.CodeOK },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
}
