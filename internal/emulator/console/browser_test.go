package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// screenshotsEnv names the variable that makes the browser test write its
// screenshots into docs/images (the ones docs/emulator.md embeds) instead of
// a temporary directory: the pages hold random ids, so rewriting the
// committed images on every test run would dirty the work tree.
const screenshotsEnv = "CONSOLE_SCREENSHOTS"

// chromiumPath finds a Chromium to drive: $CHROME_PATH, else the usual
// names on PATH.
func chromiumPath() (string, []string) {
	names := []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}
	if p := os.Getenv("CHROME_PATH"); p != "" {
		names = append([]string{p}, names...)
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, names
		}
	}
	return "", names
}

// browser is a headless Chromium tab that records console errors.
type browser struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	errors []string
	shots  string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe, tried := chromiumPath()
	if exe == "" {
		t.Skipf("SKIPPED, not passed: no Chromium to drive (looked for %s on PATH and $CHROME_PATH); "+
			"install Debian's chromium (apt-get install -y --no-install-recommends chromium, as .ci/run does) to run the console's browser test",
			strings.Join(tried, ", "))
	}
	// Not t.TempDir: Chromium's helper processes may still write to their
	// profile for a moment after the browser is cancelled, which would fail
	// the test in TempDir's cleanup.
	profile, err := os.MkdirTemp("", "console-chromium-")
	if err != nil {
		t.Fatalf("profile dir: %v", err)
	}
	// The flags this machine's closed network needs: without the
	// background-networking ones Chromium keeps dialling Google's hosts.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		// Chromium leaves a temp file behind in TMPDIR; in the profile
		// dir it goes when the profile does.
		chromedp.Env("TMPDIR="+profile),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
		for i := 0; i < 20 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
	})
	b := &browser{t: t, ctx: ctx, shots: t.TempDir()}
	if os.Getenv(screenshotsEnv) != "" {
		b.shots = filepath.Join("..", "..", "..", "docs", "images")
	}
	chromedp.ListenTarget(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeAssert {
				msg = fmt.Sprintf("console.%s", ev.Type)
				for _, a := range ev.Args {
					msg += " " + string(a.Value)
				}
			}
		case *runtime.EventExceptionThrown:
			msg = "uncaught exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.LevelError {
				msg = fmt.Sprintf("%s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	})
	start := time.Now()
	if err := chromedp.Run(ctx, cdplog.Enable(), runtime.Enable()); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	t.Logf("Chromium %s started in %s", exe, time.Since(start).Round(time.Millisecond))
	return b
}

// run runs chromedp actions, failing the test on error.
func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// shot saves a screenshot of the whole page as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	var png []byte
	// Quality 100 makes chromedp ask for PNG rather than JPEG.
	b.run("screenshot "+name, chromedp.FullScreenshot(&png, 100))
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		b.t.Fatalf("screenshot %s is not a PNG", name)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("save screenshot: %v", err)
	}
	b.t.Logf("screenshot %s (%d KiB)", path, len(png)/1024)
}

// table reads the text of a table's body rows (header rows skipped).
func (b *browser) table(selector string) [][]string {
	b.t.Helper()
	var rows [][]string
	js := `Array.from(document.querySelectorAll(` + strconv.Quote(selector+" tr") + `))
		.filter(r => r.querySelector("td"))
		.map(r => Array.from(r.cells).map(c => c.innerText.trim()))`
	b.run("read "+selector, chromedp.Evaluate(js, &rows))
	return rows
}

// TestConsoleInChromium drives the console in headless Chromium against a
// cloud built through the SDK: the CLB's listeners and backends shown are
// the API's, the raw view is the API's JSON, filtering the request log
// works and the live log refreshes, no page logs a console error, and each
// page is saved as a PNG screenshot.
func TestConsoleInChromium(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	start := time.Now()
	w := buildWorld(t)
	t.Logf("cloud built through the SDK in %s", time.Since(start).Round(time.Millisecond))
	g := w.env.Emulator.Gateway
	_, err := g.AddFault(gateway.FaultRule{Product: "slb", Action: "CreateLoadBalancer", Error: &gateway.FaultError{Code: "ServiceUnavailable"}, Count: 1})
	emulatortest.NoError(t, err)
	_, err = g.AddThrottle(gateway.ThrottleRule{Scope: gateway.ThrottleScopeUser, QPS: 200})
	emulatortest.NoError(t, err)
	base := w.env.URL() + "/_emulator/ui/"
	pages := time.Now()

	b.run("overview", chromedp.Navigate(base), chromedp.WaitVisible("#regions"))
	var region string
	for _, row := range b.table("#regions") {
		if strings.HasPrefix(row[0], w.env.Region) {
			region = strings.Join(row[1:], " ")
		}
	}
	if region != "1 2 3 1 1" {
		t.Errorf("overview counts for %s: %q, want 1 VPC, 2 vSwitches, 3 instances, 1 CLB, 1 NLB", w.env.Region, region)
	}
	b.shot("console-overview")

	b.run("region page", chromedp.Click(`header a[href$="/region/`+w.env.Region+`"]`, chromedp.ByQuery), chromedp.WaitVisible("#"+w.lbID))
	c := w.env.SLB(t)
	lr := slb.CreateDescribeLoadBalancerListenersRequest()
	lr.RegionId, lr.LoadBalancerId = w.env.Region, &[]string{w.lbID}
	ls, err := c.DescribeLoadBalancerListeners(lr)
	emulatortest.NoError(t, err)
	var wantListeners [][]string
	for _, l := range ls.Listeners {
		wantListeners = append(wantListeners, []string{strconv.Itoa(l.ListenerPort), l.ListenerProtocol, l.Status, l.VServerGroupId})
	}
	var gotListeners [][]string
	for _, row := range b.table("#" + w.lbID + " table.listeners") {
		gotListeners = append(gotListeners, []string{row[0], row[1], row[2], row[4]})
	}
	if len(wantListeners) == 0 || !reflect.DeepEqual(gotListeners, wantListeners) {
		t.Errorf("listeners shown %v, the SDK gets %v", gotListeners, wantListeners)
	}
	gr := slb.CreateDescribeVServerGroupAttributeRequest()
	gr.RegionId, gr.VServerGroupId = w.env.Region, w.groupID
	ga, err := c.DescribeVServerGroupAttribute(gr)
	emulatortest.NoError(t, err)
	var wantBackends []string
	for _, s := range ga.BackendServers.BackendServer {
		wantBackends = append(wantBackends, fmt.Sprintf("%s %s %d/%d", s.ServerId, s.ServerIp, s.Port, s.Weight))
	}
	var gotBackends []string
	for _, row := range b.table("#" + w.groupID + " table.backends") {
		gotBackends = append(gotBackends, fmt.Sprintf("%s %s %s/%s", row[0], row[2], row[3], row[4]))
	}
	sort.Strings(wantBackends)
	sort.Strings(gotBackends)
	if len(wantBackends) != 3 || !reflect.DeepEqual(gotBackends, wantBackends) {
		t.Errorf("backends shown %v, the SDK gets %v", gotBackends, wantBackends)
	}
	b.shot("console-region")

	var rawText string
	b.run("raw view", chromedp.Click(`#`+w.lbID+` h3 a.raw`, chromedp.ByQuery), chromedp.WaitVisible("#raw-json"),
		chromedp.Text("#raw-json", &rawText))
	var raw struct {
		LoadBalancerID string `json:"LoadBalancerId"`
		ListenerPorts  struct {
			ListenerPort []int
		}
	}
	if err := json.Unmarshal([]byte(rawText), &raw); err != nil || raw.LoadBalancerID != w.lbID || !reflect.DeepEqual(raw.ListenerPorts.ListenerPort, []int{80}) {
		t.Errorf("raw view of the CLB: %+v (%v)", raw, err)
	}
	b.shot("console-raw")

	b.run("request log", chromedp.Navigate(base+"requests?product=slb"), chromedp.WaitVisible("#log-table"))
	b.shot("console-requests")
	const action = "CreateVServerGroup"
	b.run("filter the log by action",
		chromedp.Navigate(base+"requests"), chromedp.WaitVisible("#filters"),
		chromedp.SetValue(`#filters input[name="action"]`, action, chromedp.ByQuery),
		chromedp.Click(`#filters button[type="submit"]`, chromedp.ByQuery),
	)
	// The click starts a navigation; the old page's table stays visible
	// until the new page replaces it, so wait for the new address first.
	var loc string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b.run("read location", chromedp.Location(&loc))
		if u, err := url.Parse(loc); err == nil && u.Query().Get("action") == action {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the filter form did not go to the filtered log: %s", loc)
		}
	}
	b.run("filtered log", chromedp.WaitVisible(`#log-table`))
	want := len(w.env.Emulator.Requests(gateway.RequestFilter{Action: action}))
	rows := b.table("#log-table")
	for _, row := range rows {
		if row[3] != action {
			t.Errorf("filtered by %s, the log shows a %s call", action, row[3])
		}
	}
	if want == 0 || len(rows) != want {
		t.Errorf("filtered log shows %d calls, the emulator logged %d %s calls", len(rows), want, action)
	}

	// Live: a call made after the page loaded shows up without a reload.
	b.run("live log", chromedp.Navigate(base+"requests?product=slb&action=DescribeLoadBalancers"), chromedp.WaitVisible("#live-toggle"))
	if n := len(b.table("#log-table")); n != 0 {
		t.Fatalf("log of DescribeLoadBalancers has %d rows before the call", n)
	}
	dr := slb.CreateDescribeLoadBalancersRequest()
	dr.RegionId = w.env.Region
	_, err = c.DescribeLoadBalancers(dr)
	emulatortest.NoError(t, err)
	ctx, cancel := context.WithTimeout(b.ctx, 8*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.WaitVisible(`#log-table tr[data-action="DescribeLoadBalancers"]`, chromedp.ByQuery)); err != nil {
		t.Errorf("the live log did not show the new call: %v", err)
	}

	b.run("faults page", chromedp.Navigate(base+"faults"), chromedp.WaitVisible("#faults"))
	if n := len(b.table("#faults")) + len(b.table("#throttles")); n != 2 {
		t.Errorf("faults page shows %d rules, want the fault and the throttle", n)
	}
	b.shot("console-faults")
	t.Logf("pages checked in %s", time.Since(pages).Round(time.Millisecond))

	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errors {
		t.Errorf("browser console error: %s", e)
	}
}
