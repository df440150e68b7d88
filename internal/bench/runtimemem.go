package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// runtimeGauges are the Go runtime's memory gauges W4 explains the CCM's
// resident set with, by their names on the CCM's /metrics (client_golang's
// Go collector).
var runtimeGauges = []string{
	"go_gc_heap_live_bytes",           // live heap after the last GC
	"go_gc_heap_goal_bytes",           // where the next GC starts (GOGC)
	"go_memstats_heap_inuse_bytes",    // spans holding objects, live or not yet swept
	"go_memstats_heap_idle_bytes",     // free spans
	"go_memstats_heap_released_bytes", // free spans given back to the OS
	"go_memstats_stack_inuse_bytes",   // goroutine stacks
	"go_memstats_other_sys_bytes",     // runtime bookkeeping beside the heap
	"go_goroutines",
	// GC CPU since start (a counter: its largest sample is its last),
	// what a lower GOGC costs.
	"go_cpu_classes_gc_total_cpu_seconds_total",
}

// runtimeMem samples the CCM's Go runtime gauges through W4 and keeps, for
// each, its maximum and the whole set at the sample where the heap's
// resident part (in use + idle not released) was largest: an RSS figure
// alone does not say whether a peak is live objects, GC headroom or free
// memory the scavenger has not returned yet.
type runtimeMem struct {
	mu     sync.Mutex
	max    map[string]float64
	atPeak map[string]float64
	peak   float64
	stop   chan struct{}
	done   chan struct{}
}

// startRuntimeMem scrapes the CCM's /metrics every interval until finish.
func (e *env) startRuntimeMem(ctx context.Context, interval time.Duration) *runtimeMem {
	m := &runtimeMem{max: map[string]float64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				// A missed scrape (the CCM busy or restarting) only thins the samples.
				if g, err := e.ccmRuntimeGauges(ctx); err == nil {
					m.add(g)
				}
			}
		}
	}()
	return m
}

func (m *runtimeMem) add(g map[string]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range g {
		if v > m.max[k] {
			m.max[k] = v
		}
	}
	if r := g["go_memstats_heap_inuse_bytes"] + g["go_memstats_heap_idle_bytes"] - g["go_memstats_heap_released_bytes"]; r > m.peak {
		m.peak, m.atPeak = r, g
	}
}

// finish stops sampling; it returns the maxima and the set at the heap's
// resident peak (nil when no scrape succeeded).
func (m *runtimeMem) finish() (max, atPeak map[string]float64) {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.max, m.atPeak
}

// ccmRuntimeGauges reads runtimeGauges from the CCM's /metrics.
func (e *env) ccmRuntimeGauges(ctx context.Context) (map[string]float64, error) {
	resp, err := e.ccmGet(ctx, "/metrics", 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseGauges(resp.Body, runtimeGauges)
}

// parseGauges reads the unlabelled samples named in names from a
// Prometheus text page (a client_golang release may lack some); it fails
// when none is there.
func parseGauges(r io.Reader, names []string) (map[string]float64, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return nil, fmt.Errorf("metrics %s %q: %w", name, val, err)
		}
		out[name] = f
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the CCM's /metrics has none of %v", names)
	}
	return out, nil
}

// w4RuntimeMetrics reports what the Go runtime held at the heap's resident
// peak and the largest live heap and GC goal seen, in MB.
func w4RuntimeMetrics(res *Result, max, atPeak map[string]float64) {
	if atPeak == nil {
		return
	}
	mb := func(v float64) float64 { return v / (1 << 20) }
	res.metric("Go heap at its resident peak: in use", mb(atPeak["go_memstats_heap_inuse_bytes"]), "MB")
	res.metric("Go heap at its resident peak: free, not returned to the OS", mb(atPeak["go_memstats_heap_idle_bytes"]-atPeak["go_memstats_heap_released_bytes"]), "MB")
	res.metric("Go heap at its resident peak: live after the last GC", mb(atPeak["go_gc_heap_live_bytes"]), "MB")
	res.metric("Go stacks at the heap's resident peak", mb(atPeak["go_memstats_stack_inuse_bytes"]), "MB")
	res.metric("Go live heap, largest seen", mb(max["go_gc_heap_live_bytes"]), "MB")
	res.metric("Go GC goal, largest seen", mb(max["go_gc_heap_goal_bytes"]), "MB")
	res.metric("goroutines, most seen", max["go_goroutines"], "")
	if v, ok := max["go_cpu_classes_gc_total_cpu_seconds_total"]; ok {
		res.metric("Go GC CPU time (the runtime's estimate, idle mark workers included)", v, "s")
	}
}
