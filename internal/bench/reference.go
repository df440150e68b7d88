package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"sync/atomic"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// The reference of the regression check (W4Check) is a process that
// holds what the CCM must hold at least: client-go informers of the
// Services, Nodes and EndpointSlices, as any client of them would run
// them (no transform), with handlers that only count. Measured in the
// same run as the CCM, it makes the CCM's figures ratios that a loaded
// machine, a slower disk or a new client-go move far less than the
// figures themselves.

// RefStats is what the reference process reports on each request.
type RefStats struct {
	// Events are the informer events its handlers received, by kind.
	Events map[string]int64 `json:"events"`
	// AllocBytes is every heap byte allocated since it started
	// (runtime/metrics /gc/heap/allocs:bytes).
	AllocBytes uint64 `json:"allocBytes"`
	// LiveBytes is the heap marked live by the last GC
	// (/gc/heap/live:bytes); after a "gc" request, the live heap now.
	LiveBytes uint64 `json:"liveBytes"`
}

// RunReference runs the reference informers against the cluster of
// kubeconfig until in is closed. Each line read from in is a request
// answered with one JSON line of RefStats on out: "stats", or "gc" (a
// collection first, so LiveBytes is the live heap now).
func RunReference(kubeconfig string, in io.Reader, out io.Writer) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	kinds := map[string]cache.SharedIndexInformer{
		"Service":       factory.Core().V1().Services().Informer(),
		"Node":          factory.Core().V1().Nodes().Informer(),
		"EndpointSlice": factory.Discovery().V1().EndpointSlices().Informer(),
	}
	counts := map[string]*atomic.Int64{}
	for kind, inf := range kinds {
		n := &atomic.Int64{}
		counts[kind] = n
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { n.Add(1) },
			UpdateFunc: func(any, any) { n.Add(1) },
			DeleteFunc: func(any) { n.Add(1) },
		}); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() == "gc" {
			runtime.GC()
		}
		s := RefStats{Events: map[string]int64{}}
		for kind, n := range counts {
			s.Events[kind] = n.Load()
		}
		s.AllocBytes, s.LiveBytes = heapCounters()
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return sc.Err()
}

// heapCounters reads the bytes allocated so far and the live heap of the
// last GC.
func heapCounters() (alloc, live uint64) {
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(samples)
	if samples[0].Value.Kind() == metrics.KindUint64 {
		alloc = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == metrics.KindUint64 {
		live = samples[1].Value.Uint64()
	}
	return alloc, live
}
