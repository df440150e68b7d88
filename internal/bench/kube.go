package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// kubeWriteMethods are the HTTP methods of Kubernetes API writes.
var kubeWriteMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

// kubeWrites reads the CCM's client-go request counters
// (rest_client_requests_total) from its /metrics: every Kubernetes API
// write the process made so far (patches, status, events, leases), by
// method.
func (e *env) kubeWrites(ctx context.Context) (map[string]float64, error) {
	resp, err := e.ccmGet(ctx, "/metrics", 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseKubeWrites(resp.Body)
}

// parseKubeWrites sums rest_client_requests_total by write method.
func parseKubeWrites(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "rest_client_requests_total{") {
			continue
		}
		for _, m := range kubeWriteMethods {
			if !strings.Contains(line, `method="`+m+`"`) {
				continue
			}
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				return nil, fmt.Errorf("metrics line %q: %w", line, err)
			}
			out[m] += v
		}
	}
	return out, sc.Err()
}

// kubeWritesSince is the CCM's Kubernetes API writes since before, by
// method; nil when its metrics could not be read.
func (e *env) kubeWritesSince(ctx context.Context, before map[string]float64) map[string]float64 {
	if before == nil {
		return nil
	}
	now, err := e.kubeWrites(ctx)
	if err != nil {
		e.logf("kube writes: %v", err)
		return nil
	}
	out := map[string]float64{}
	for _, m := range kubeWriteMethods {
		out[m] = now[m] - before[m]
	}
	return out
}

// ccmGet GETs path from the CCM's secure port (see fetchProfile).
func (e *env) ccmGet(ctx context.Context, path string, timeout time.Duration) (*http.Response, error) {
	client, err := e.adminHTTP(timeout)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.ccmURL(path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	return resp, nil
}

// addressTimes records, per Service, when its create returned and when a
// watch first saw it with an address: the time to address of each.
type addressTimes struct {
	mu        sync.Mutex
	created   map[string]time.Time
	addressed map[string]time.Time
}

// watchAddresses starts recording the addresses of the Services named with
// prefix until ctx ends.
func (e *env) watchAddresses(ctx context.Context, prefix string) (*addressTimes, error) {
	w, err := e.kube.CoreV1().Services(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("watch Services: %w", err)
	}
	a := &addressTimes{created: map[string]time.Time{}, addressed: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			svc, ok := ev.Object.(*corev1.Service)
			if !ok || ev.Type == watch.Deleted || !strings.HasPrefix(svc.Name, prefix) || len(svc.Status.LoadBalancer.Ingress) == 0 {
				continue
			}
			a.seen(svc.Name, time.Now())
		}
	}()
	return a, nil
}

// create records that name's create returned at t.
func (a *addressTimes) create(name string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.created[name] = t
}

// seen records that name had an address at t, unless it was seen before.
func (a *addressTimes) seen(name string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.addressed[name]; !ok {
		a.addressed[name] = t
	}
}

// percentiles returns the p50, p90 and max time to address, in seconds,
// of the Services created and addressed, and how many those are.
func (a *addressTimes) percentiles() (p50, p90, maxS float64, n int) {
	a.mu.Lock()
	var ds []float64
	for name, c := range a.created {
		if t, ok := a.addressed[name]; ok {
			ds = append(ds, max(t.Sub(c), 0).Seconds())
		}
	}
	a.mu.Unlock()
	if len(ds) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(ds)
	return nearestRank(ds, 0.5), nearestRank(ds, 0.9), ds[len(ds)-1], len(ds)
}

// nearestRank is the p-quantile of sorted by the nearest-rank method.
func nearestRank(sorted []float64, p float64) float64 {
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
