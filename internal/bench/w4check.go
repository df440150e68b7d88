package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// W4Check is the quick W4 of the regression check (go test ./internal/bench,
// TestW4Regression): W4's cluster at a size make test affords, converged,
// then a burst of events that move no backend (a Node label no Service
// selects, an endpoint of a Cluster-policy Service turning not ready and
// back), with the reference informers (RunReference) watching the same
// cluster. It reports the CCM's figures as ratios to the reference's:
// peak anonymous memory, live heap, and heap bytes allocated per event of
// the burst. A handler whose cost per event grows with the cluster (a
// walk of every Service per Node change) shows as a per-event ratio many
// times the baseline; a cache that keeps more than it should, as a memory
// ratio above it.
type W4Check struct {
	// Services, Nodes and Endpoints size the cluster (W4's shape: one
	// EndpointSlice per Service, endpoints on the Nodes round robin).
	Services, Nodes, Endpoints int
	// NodeUpdates and SliceUpdates are the burst's events.
	NodeUpdates, SliceUpdates int
	// Reference starts the reference process for a kubeconfig, its
	// stdin and stdout the request pipe of RunReference.
	Reference func(kubeconfig string) *exec.Cmd
	// Dir holds the components' logs.
	Dir string
	// Logf receives progress.
	Logf func(string, ...any)
}

// W4CheckResult are the figures of one W4Check run.
type W4CheckResult struct {
	Services     int     `json:"services"`
	Nodes        int     `json:"nodes"`
	Endpoints    int     `json:"endpoints"`
	NodeUpdates  int     `json:"nodeUpdates"`
	SliceUpdates int     `json:"sliceUpdates"`
	Seconds      float64 `json:"seconds"`
	// ConvergedSeconds is from the first object created to every
	// Service addressed.
	ConvergedSeconds float64 `json:"convergedSeconds"`
	// CCM and Ref are the two processes' figures.
	CCM W4CheckProc `json:"ccm"`
	Ref W4CheckProc `json:"reference"`
	// The ratios CCM ÷ reference the baseline holds.
	PeakAnonRatio      float64 `json:"peakAnonRatio"`
	LiveHeapRatio      float64 `json:"liveHeapRatio"`
	AllocPerEventRatio float64 `json:"allocPerEventRatio"`
}

// W4CheckProc are one process's figures.
type W4CheckProc struct {
	PeakRSSMB  float64 `json:"peakRssMB"`
	PeakAnonMB float64 `json:"peakAnonMB"`
	LiveHeapMB float64 `json:"liveHeapMB"`
	// AllocPerEventKB is the heap allocated during the burst per event
	// made (NodeUpdates + SliceUpdates).
	AllocPerEventKB float64 `json:"allocPerEventKB"`
}

// Run runs the check.
func (w W4Check) Run(ctx context.Context) (*W4CheckResult, error) {
	logf := w.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	start := time.Now()
	// No quota and no latency: the check measures memory and handler
	// cost, not the cloud. The kube client is raised above the default
	// 20/s so that 2 writes per Service do not make convergence the
	// slow part.
	e, err := startEnv(ctx, w.Dir, envSpec{instances: w.Nodes, latency: 0,
		ccmArgs: []string{"--kube-api-qps=500", "--kube-api-burst=1000"}}, logf)
	if err != nil {
		return nil, err
	}
	defer e.stop()
	ref, err := startReference(w.Reference(e.cluster.KubeconfigPath), filepath.Join(w.Dir, "reference.log"))
	if err != nil {
		return nil, err
	}
	defer ref.stop()
	ccmSmp, refSmp := startSampler(e.ccm.PID(), 500*time.Millisecond), startSampler(ref.cmd.Process.Pid, 500*time.Millisecond)

	logf("w4check: registering %d Nodes", w.Nodes)
	if err := e.registerNodes(ctx, 1, w.Nodes+1); err != nil {
		return nil, err
	}
	if _, err := e.waitNodesInitialized(ctx, w.Nodes, 3*time.Minute); err != nil {
		return nil, err
	}
	logf("w4check: %d Nodes initialized after %.1fs", w.Nodes, time.Since(start).Seconds())
	logf("w4check: creating %d Services and their EndpointSlices (%d endpoints)", w.Services, w.Endpoints)
	t0 := time.Now()
	if err := e.createServices(ctx, w4Prefix, w.Services, nil, func(name string) *corev1.Service {
		svc := e.lbService(name, false, 1)
		svc.Spec.Selector = nil
		return svc
	}); err != nil {
		return nil, err
	}
	if err := parallel(ctx, w.Services, 32, func(ctx context.Context, i int) error {
		_, err := e.kube.DiscoveryV1().EndpointSlices(namespace).Create(ctx, w4Slice(i, w.Services, w.Endpoints, w.Nodes), metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	logf("w4check: objects created after %.1fs", time.Since(t0).Seconds())
	if err := poll(ctx, 4*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		if e.ccm.Exited() {
			return false, "", fatalError{fmt.Errorf("cloud-controller-manager exited; see %s", e.ccm.LogPath)}
		}
		n, err := e.addressed(ctx, w4Prefix)
		return n >= w.Services, fmt.Sprintf("%d/%d Services addressed", n, w.Services), err
	}); err != nil {
		return nil, err
	}
	res := &W4CheckResult{Services: w.Services, Nodes: w.Nodes, Endpoints: w.Endpoints,
		NodeUpdates: w.NodeUpdates, SliceUpdates: w.SliceUpdates, ConvergedSeconds: time.Since(t0).Seconds()}
	logf("w4check: every Service addressed %.1fs after the first was created", res.ConvergedSeconds)
	// The last syncs' status writes and events settle.
	time.Sleep(2 * time.Second)

	ccmBefore, err := e.ccmHeap(ctx, false)
	if err != nil {
		return nil, err
	}
	refBefore, err := ref.stats("stats")
	if err != nil {
		return nil, err
	}
	burst := time.Now()
	if err := w.burst(ctx, e); err != nil {
		return nil, err
	}
	logf("w4check: %d Node and %d EndpointSlice updates made in %.1fs", w.NodeUpdates, w.SliceUpdates, time.Since(burst).Seconds())
	// The reference has all of the burst when it has counted as many
	// events; the CCM gets the same watch, and the time the burst took
	// again to finish its handlers.
	want := refBefore.Events["Node"] + int64(w.NodeUpdates)
	wantSlices := refBefore.Events["EndpointSlice"] + int64(w.SliceUpdates)
	var refAfter *RefStats
	if err := poll(ctx, time.Minute, 200*time.Millisecond, func(context.Context) (bool, string, error) {
		s, err := ref.stats("stats")
		if err != nil {
			return false, "", fatalError{err}
		}
		refAfter = s
		return s.Events["Node"] >= want && s.Events["EndpointSlice"] >= wantSlices,
			fmt.Sprintf("reference saw %d/%d Node and %d/%d EndpointSlice events", s.Events["Node"], want, s.Events["EndpointSlice"], wantSlices), nil
	}); err != nil {
		return nil, err
	}
	time.Sleep(max(2*time.Second, time.Since(burst)))
	ccmAfter, err := e.ccmHeap(ctx, true)
	if err != nil {
		return nil, err
	}
	refLive, err := ref.stats("gc")
	if err != nil {
		return nil, err
	}
	events := float64(w.NodeUpdates + w.SliceUpdates)
	res.CCM.AllocPerEventKB = float64(ccmAfter.alloc-ccmBefore.alloc) / events / 1024
	res.Ref.AllocPerEventKB = float64(refAfter.AllocBytes-refBefore.AllocBytes) / events / 1024
	res.CCM.LiveHeapMB = float64(ccmAfter.live) / (1 << 20)
	res.Ref.LiveHeapMB = float64(refLive.LiveBytes) / (1 << 20)
	cu, ru := ccmSmp.finish(), refSmp.finish()
	res.CCM.PeakRSSMB, res.CCM.PeakAnonMB = cu.PeakRSSMB, cu.PeakAnonMB
	res.Ref.PeakRSSMB, res.Ref.PeakAnonMB = ru.PeakRSSMB, ru.PeakAnonMB
	res.PeakAnonRatio = ratio(res.CCM.PeakAnonMB, res.Ref.PeakAnonMB)
	res.LiveHeapRatio = ratio(res.CCM.LiveHeapMB, res.Ref.LiveHeapMB)
	res.AllocPerEventRatio = ratio(res.CCM.AllocPerEventKB, res.Ref.AllocPerEventKB)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// burst makes the check's events: NodeUpdates label changes on the Nodes
// round robin (a label no Service selects) and SliceUpdates readiness
// flips of the first endpoint of the slices round robin (not ready on the
// first pass over a slice, ready again on the next). Neither moves a
// backend of a Cluster-policy ecs Service, so no sync follows.
func (w W4Check) burst(ctx context.Context, e *env) error {
	if err := parallel(ctx, w.NodeUpdates, 8, func(ctx context.Context, k int) error {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"bench.alicloud-ccm.io/tick":"%d"}}}`, k)
		_, err := e.kube.CoreV1().Nodes().Patch(ctx, nodeName(1+k%w.Nodes), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("node updates: %w", err)
	}
	// In passes over the slices, so that two updates of one slice never
	// race.
	for done, pass := 0, 0; done < w.SliceUpdates; pass++ {
		n, ready := min(w.Services, w.SliceUpdates-done), pass%2 == 1
		patch := fmt.Sprintf(`[{"op":"replace","path":"/endpoints/0/conditions/ready","value":%t}]`, ready)
		if err := parallel(ctx, n, 8, func(ctx context.Context, i int) error {
			name := fmt.Sprintf("%s%04d-eps", w4Prefix, i)
			_, err := e.kube.DiscoveryV1().EndpointSlices(namespace).Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("slice updates: %w", err)
		}
		done += n
	}
	return nil
}

// heapCounts are the CCM's heap counters.
type heapCounts struct{ alloc, live uint64 }

// ccmHeap reads the CCM's heap counters from its /metrics (client_golang's
// Go collector: runtime/metrics /gc/heap/allocs:bytes and
// /gc/heap/live:bytes); with gc, after a collection (its heap profile
// with gc=1), so live is the live heap now.
func (e *env) ccmHeap(ctx context.Context, gc bool) (heapCounts, error) {
	var h heapCounts
	if gc {
		resp, err := e.ccmGet(ctx, "/debug/pprof/heap?gc=1", 30*time.Second)
		if err != nil {
			return h, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := e.ccmGet(ctx, "/metrics", 30*time.Second)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	return parseHeapCounts(resp.Body)
}

// parseHeapCounts reads the heap counters from a Prometheus text page.
func parseHeapCounts(r io.Reader) (heapCounts, error) {
	const alloc, live = "go_gc_heap_allocs_bytes_total", "go_gc_heap_live_bytes"
	g, err := parseGauges(r, []string{alloc, live})
	if err != nil {
		return heapCounts{}, err
	}
	a, haveAlloc := g[alloc]
	l, haveLive := g[live]
	if !haveAlloc || !haveLive {
		return heapCounts{}, errors.New("the CCM's /metrics has no go_gc_heap_allocs_bytes_total or go_gc_heap_live_bytes")
	}
	return heapCounts{alloc: uint64(a), live: uint64(l)}, nil
}

// refProc is the running reference process.
type refProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	log *os.File
}

func startReference(cmd *exec.Cmd, logPath string) (*refProc, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = lf
	in, err := cmd.StdinPipe()
	if err != nil {
		lf.Close()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		lf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start the reference: %w", err)
	}
	return &refProc{cmd: cmd, in: in, out: bufio.NewReader(out), log: lf}, nil
}

// stats sends a request ("stats" or "gc") and reads the answer.
func (p *refProc) stats(req string) (*RefStats, error) {
	if _, err := io.WriteString(p.in, req+"\n"); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("reference: %w (log %s)", err, p.log.Name())
	}
	var s RefStats
	if err := json.Unmarshal(line, &s); err != nil {
		return nil, fmt.Errorf("reference answer %q: %w", line, err)
	}
	return &s, nil
}

// stop closes the request pipe, which ends the reference, and waits for
// it (killing it after 10 s).
func (p *refProc) stop() {
	p.in.Close()
	done := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.log.Close()
}
