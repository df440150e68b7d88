package conformance_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/conformance"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

var update = flag.Bool("update", false, "rewrite the results table in docs/emulator.md")

// model is one action's request and response constructors in the SDK.
type model struct {
	req  func() requests.AcsRequest
	resp func() responses.AcsResponse
}

func m[Q requests.AcsRequest, R responses.AcsResponse](q func() Q, r func() R) model {
	return model{req: func() requests.AcsRequest { return q() }, resp: func() responses.AcsResponse { return r() }}
}

// errorModel is what the SDK reads from an error response: NewServerError
// in sdk/errors/server_error.go takes these members with jmespath and
// asserts their types (a non-string RequestId panics the client).
type errorModel struct {
	RequestId          string         `json:"RequestId"`
	HostId             string         `json:"HostId"`
	Code               string         `json:"Code"`
	Message            string         `json:"Message"`
	Recommend          string         `json:"Recommend"`
	AccessDeniedDetail map[string]any `json:"AccessDeniedDetail"`
}

// allowed lists the accepted differences, "product:Action:path" → reason.
// Every entry must still occur (TestConformance fails on a stale one).
var allowed = map[string]string{
	"nlb:GetListenerAttribute:ProxyProtocolV2Config":      ppv2Reason,
	"nlb:ListListeners:Listeners[].ProxyProtocolV2Config": ppv2Reason,
}

// ppv2Reason is why NLB listeners carry a member the legacy SDK lacks.
const ppv2Reason = "newer than SDK v1.63.107: nlb-20220430/v3 v3.1.1 models it (GetListenerAttributeResponseBody, ListListenersResponseBodyListeners), the API sends it, and the CCM reads it from the raw body (internal/ccm/service/nlb/ppv2.go)"

// step is one call of a scenario. Parameter values may name variables
// saved by earlier steps as {name}.
type step struct {
	product, action string
	params          map[string]string
	// save stores response values as variables: name → dotted path
	// (array items by index, e.g. Listeners.0.ListenerId).
	save map[string]string
	// code, when set, makes the step an expected error with that code.
	code string
}

// tally is what the calls of one action found.
type tally struct {
	ok, failed, fields int
	mismatches         map[string]bool
}

type runner struct {
	t       *testing.T
	clients map[string]*sdk.Client
	vars    map[string]string
	results map[string]*tally // "product:Action"
	// codes are the error answers seen per "product:Action", as
	// "<HTTP status> <Code>".
	codes map[string]map[string]bool
	// answers, when set, keeps the last successful answer per
	// "product:Action" (the planted-fault test edits them), and asked its
	// parameters.
	answers map[string][]byte
	asked   map[string]map[string]string
	// after, when set, runs after each successful call (the XML test asks
	// the same read again there, before later steps change the world).
	after func(product, action string, params map[string]string)
}

var varRef = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

func (r *runner) expand(v string) string {
	return varRef.ReplaceAllStringFunc(v, func(ref string) string {
		name := ref[1 : len(ref)-1]
		val, ok := r.vars[name]
		if !ok {
			r.t.Fatalf("variable %s is not set", name)
		}
		return val
	})
}

// call sends one action through the SDK's typed request and response and
// checks the raw body strictly against the response model (success) or the
// error model.
func (r *runner) call(product, action string, params map[string]string) (body map[string]any, err error) {
	r.t.Helper()
	mdl, ok := sdkModels[product][action]
	if !ok {
		mdl = extraModels[product][action]
	}
	if mdl.req == nil {
		r.t.Fatalf("%s:%s has no SDK model", product, action)
	}
	req, resp := mdl.req(), mdl.resp()
	target := req.GetQueryParams()
	if product == "nlb" {
		// The legacy SDK's NLB requests carry their parameters in the body.
		target = req.GetFormParams()
	}
	expanded := map[string]string{}
	for k, v := range params {
		target[k] = r.expand(v)
		expanded[k] = target[k]
	}
	err = r.clients[product].DoAction(req, resp)
	var se *sdkerrors.ServerError
	if err != nil && !errors.As(err, &se) {
		r.t.Fatalf("%s:%s: %v", product, action, err)
	}
	data := resp.GetHttpContentBytes()
	modelType := reflect.TypeOf(resp)
	if err != nil {
		modelType = reflect.TypeOf(errorModel{})
	}
	res, cerr := conformance.Check(data, modelType)
	if cerr != nil {
		r.t.Fatalf("%s:%s: %v (%s)", product, action, cerr, data)
	}
	key := product + ":" + action
	// What the model check cannot see: members a client reads, documented
	// values, and error answers against the cited tables.
	if err == nil {
		more, xerr := conformance.CheckExpectation(key, data)
		if xerr != nil {
			r.t.Fatalf("%s: %v", key, xerr)
		}
		res.Mismatches = append(res.Mismatches, more...)
	} else if m := conformance.CheckError(product, action, se.HttpStatus(), se.ErrorCode()); m != nil {
		res.Mismatches = append(res.Mismatches, *m)
	}
	tl := r.results[key]
	if tl == nil {
		tl = &tally{mismatches: map[string]bool{}}
		r.results[key] = tl
	}
	tl.fields += res.Fields
	if err != nil {
		tl.failed++
	} else {
		tl.ok++
		if r.answers != nil {
			r.answers[key] = data
			r.asked[key] = expanded
		}
		if r.after != nil {
			defer r.after(product, action, expanded)
		}
	}
	for _, mm := range res.Mismatches {
		tl.mismatches[mm.String()] = true
	}
	if se != nil {
		if r.codes[key] == nil {
			r.codes[key] = map[string]bool{}
		}
		r.codes[key][fmt.Sprintf("%d %s", se.HttpStatus(), se.ErrorCode())] = true
	}
	if err := json.Unmarshal(data, &body); err != nil {
		r.t.Fatalf("%s:%s: %v", product, action, err)
	}
	if id, _ := body["RequestId"].(string); id == "" || resp.GetHttpHeaders()["X-Acs-Request-Id"] == nil ||
		resp.GetHttpHeaders()["X-Acs-Request-Id"][0] != id {
		tl.mismatches["(header) x-acs-request-id: absent, or not the body's RequestId"] = true
	}
	return body, err
}

// lookup follows a dotted path through decoded JSON.
func lookup(v any, path string) (string, bool) {
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(x) {
				return "", false
			}
			v = x[i]
		default:
			return "", false
		}
	}
	switch x := v.(type) {
	case string:
		return x, x != ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case nil:
		return "", false
	}
	return fmt.Sprint(v), true
}

func (r *runner) run(steps []step) {
	r.t.Helper()
	for i, s := range steps {
		body, err := r.call(s.product, s.action, s.params)
		switch {
		case s.code == "" && err != nil:
			r.t.Fatalf("step %d %s:%s: %v", i, s.product, s.action, err)
		case s.code != "":
			var se *sdkerrors.ServerError
			if !errors.As(err, &se) || se.ErrorCode() != s.code {
				r.t.Fatalf("step %d %s:%s: want %s, got %v", i, s.product, s.action, s.code, err)
			}
		}
		for name, path := range s.save {
			v, ok := lookup(body, path)
			if !ok {
				r.t.Fatalf("step %d %s:%s: no %s in %v", i, s.product, s.action, path, body)
			}
			r.vars[name] = v
		}
	}
}

// servedActions reads the emulator's own dispatch tables.
func servedActions(env *emulatortest.Env) map[string][]string {
	out := map[string][]string{}
	for _, p := range env.Emulator.Gateway.Products() {
		for a := range p.Actions {
			out[p.Name] = append(out[p.Name], a)
		}
		sort.Strings(out[p.Name])
	}
	return out
}

// TestConformance runs every scenario, then one error call per served
// action, and checks each response strictly against the SDK's model.
func TestConformance(t *testing.T) {
	env := newWorld(t)
	r := &runner{t: t, vars: map[string]string{}, results: map[string]*tally{}, codes: map[string]map[string]bool{}, clients: map[string]*sdk.Client{
		"ecs": &env.ECS(t).Client, "vpc": &env.VPC(t).Client, "slb": &env.SLB(t).Client, "nlb": &env.NLB(t).Client,
	}}
	for _, sc := range scenarios(t) {
		r.run(sc)
	}
	served := servedActions(env)
	for _, product := range []string{"ecs", "vpc", "slb", "nlb"} {
		for _, action := range served[product] {
			// An error response for every action: without parameters when
			// it requires some, else in a region that does not exist.
			if _, err := r.call(product, action, nil); err == nil {
				if _, err := r.call(product, action, map[string]string{"RegionId": "cn-nowhere"}); err == nil {
					t.Errorf("%s:%s succeeded in region cn-nowhere", product, action)
				}
			}
		}
	}

	var rows []resultRow
	used := map[string]bool{}
	for _, product := range []string{"ecs", "vpc", "slb", "nlb"} {
		for _, action := range served[product] {
			key := product + ":" + action
			tl := r.results[key]
			if tl == nil || tl.ok == 0 {
				t.Errorf("%s has no successful conformance call", key)
				continue
			}
			row := resultRow{product: product, action: action, ok: tl.ok, failed: tl.failed, fields: tl.fields}
			for mm := range tl.mismatches {
				path, _, _ := strings.Cut(mm, ": ")
				if reason, ok := allowed[key+":"+path]; ok && reason != "" {
					used[key+":"+path] = true
					row.allowed++
					continue
				}
				row.mismatches++
				t.Errorf("%s: %s", key, mm)
			}
			rows = append(rows, row)
		}
	}
	for k := range conformance.Expectations {
		if tl := r.results[k]; tl == nil || tl.ok == 0 {
			t.Errorf("expectation %s was not exercised by a successful call", k)
		}
	}
	for k := range allowed {
		if !used[k] {
			t.Errorf("allow-list entry %s no longer occurs; remove it", k)
		}
	}
	checkResultsTable(t, rows)
	checkErrorTables(t, served, r.codes)
}

// TestEveryActionHasAModel fails when the emulator serves an action the
// conformance test cannot decode, so a new action is covered at once.
func TestEveryActionHasAModel(t *testing.T) {
	env := emulatortest.Start(t)
	for product, actions := range servedActions(env) {
		for _, a := range actions {
			if _, ok := sdkModels[product][a]; !ok {
				if _, ok := extraModels[product][a]; !ok {
					t.Errorf("%s:%s has no SDK model in sdkModels", product, a)
				}
			}
		}
	}
}

type resultRow struct {
	product, action     string
	ok, failed, fields  int
	mismatches, allowed int
}

const (
	tableStart = "<!-- conformance: generated by go test ./internal/emulator/conformance -update; do not edit -->"
	tableEnd   = "<!-- /conformance -->"
	docPath    = "../../../docs/emulator.md"
)

func renderTable(rows []resultRow) string {
	var b strings.Builder
	total := resultRow{}
	for _, r := range rows {
		total.ok += r.ok
		total.failed += r.failed
		total.fields += r.fields
		total.mismatches += r.mismatches
		total.allowed += r.allowed
	}
	fmt.Fprintf(&b, "%s\n\n%d actions, %d successful and %d error responses, %d fields checked, %d mismatches, %d allowed with a reason.\n\n",
		tableStart, len(rows), total.ok, total.failed, total.fields, total.mismatches, total.allowed)
	b.WriteString("| product | action | responses (ok/error) | fields checked | mismatches | allowed |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d/%d | %d | %d | %d |\n", r.product, r.action, r.ok, r.failed, r.fields, r.mismatches, r.allowed)
	}
	b.WriteString("\n" + tableEnd)
	return b.String()
}

// errorDocs are the files holding each product's error table: its own
// page and the merged copy in docs/emulator.md.
var errorDocs = map[string][]string{
	"ecs": {"../../../docs/emulator-vpcecs.md", docPath},
	"vpc": {"../../../docs/emulator-vpcecs.md", docPath},
	"slb": {"../../../docs/emulator-slb.md", docPath},
	"nlb": {"../../../docs/emulator-nlb.md", docPath},
}

func errorMarkers(product string) (start, end string) {
	return "<!-- errors:" + product + ": generated by go test ./internal/emulator/conformance -update; do not edit -->",
		"<!-- /errors:" + product + " -->"
}

func renderErrors(product string, actions []string, codes map[string]map[string]bool) string {
	start, end := errorMarkers(product)
	var b strings.Builder
	b.WriteString(start + "\n\n| action | error answers (HTTP status, Code) |\n|---|---|\n")
	for _, a := range actions {
		var list []string
		for c := range codes[product+":"+a] {
			list = append(list, c)
		}
		sort.Strings(list)
		fmt.Fprintf(&b, "| %s | %s |\n", a, strings.Join(list, ", "))
	}
	b.WriteString("\n" + end)
	return b.String()
}

// checkErrorTables checks that every error code the docs list for an
// action was answered by that action in this run (so each listed code is
// reachable), and that the tables list all the answers seen; -update
// rewrites them.
func checkErrorTables(t *testing.T, served map[string][]string, codes map[string]map[string]bool) {
	t.Helper()
	for _, product := range []string{"ecs", "vpc", "slb", "nlb"} {
		start, end := errorMarkers(product)
		for _, path := range errorDocs[product] {
			have := syncBlock(t, path, start, end, renderErrors(product, served[product], codes))
			for _, line := range strings.Split(have, "\n") {
				cells := strings.Split(line, " | ")
				if len(cells) != 2 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| action") {
					continue
				}
				action := strings.TrimPrefix(cells[0], "| ")
				for _, c := range strings.Split(strings.TrimSuffix(cells[1], " |"), ", ") {
					if c != "" && !codes[product+":"+action][c] {
						t.Errorf("%s lists %s for %s:%s, which no call reached", path, c, product, action)
					}
				}
			}
		}
	}
}

// checkResultsTable compares the table in docs/emulator.md with rows, or
// rewrites it with -update.
func checkResultsTable(t *testing.T, rows []resultRow) {
	t.Helper()
	syncBlock(t, docPath, tableStart, tableEnd, renderTable(rows))
}

// syncBlock compares the generated block between the start and end
// markers of the file at path with want, rewriting it with -update; it
// returns the block as the file had it.
func syncBlock(t *testing.T, path, start, end, want string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, start), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Errorf("%s has no block between %q and %q", path, start, end)
		return ""
	}
	have := doc[i : j+len(end)]
	switch {
	case have == want:
	case !*update:
		t.Errorf("a generated table in %s is out of date; run go test ./internal/emulator/conformance -run TestConformance -update", path)
	default:
		if err := os.WriteFile(path, []byte(doc[:i]+want+doc[j+len(end):]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return have
}
