// Package ccmmetrics registers the CCM's Prometheus metrics in the
// component-base legacy registry (served on the secure port and on the
// optional plain-HTTP --metrics-bind-address listener) and keeps a catalog
// of their names, so tests and docs can check a dashboard only queries
// metrics the CCM really exposes.
package ccmmetrics

import (
	"sort"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// LegacyBuckets are the histogram bounds, in milliseconds, of the existing
// CCM's ccm_*_latencies_duration_milliseconds metrics; keeping them keeps
// its dashboards' le labels and quantiles meaningful.
var LegacyBuckets = []float64{500, 700, 1000, 1500, 2000, 3000, 4000, 5000, 7000, 8000, 9000, 10000,
	30000, 60000, 100000, 150000, 200000, 300000, 600000, 700000, 800000}

// SecondsBuckets suit the conventional _seconds histograms of reconciles:
// most take well under a second against a healthy cloud, a few minutes at
// worst.
var SecondsBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Kind is a metric's Prometheus type, as the catalog records it.
type Kind string

// Kinds of metrics in the catalog.
const (
	Counter   Kind = "counter"
	Gauge     Kind = "gauge"
	Histogram Kind = "histogram"
)

// Entry is one registered metric.
type Entry struct {
	// Name is the fully qualified name, without the _bucket/_sum/_count
	// series suffixes of histograms.
	Name string
	// Kind is its type.
	Kind Kind
}

var (
	mu      sync.Mutex
	catalog = map[string]Kind{}
)

// MustRegister registers ms in the legacy registry and records them in the
// catalog; it panics on a duplicate, as legacyregistry.MustRegister does.
func MustRegister(ms ...metrics.Registerable) {
	legacyregistry.MustRegister(ms...)
	mu.Lock()
	defer mu.Unlock()
	for _, m := range ms {
		catalog[m.FQName()] = kindOf(m)
	}
}

// Record adds a metric registered by other means (a custom collector) to
// the catalog.
func Record(name string, kind Kind) {
	mu.Lock()
	defer mu.Unlock()
	catalog[name] = kind
}

func kindOf(m metrics.Registerable) Kind {
	switch m.(type) {
	case *metrics.Counter, *metrics.CounterVec:
		return Counter
	case *metrics.Histogram, *metrics.HistogramVec:
		return Histogram
	default:
		return Gauge
	}
}

// Catalog returns every metric registered through this package, by name.
func Catalog() []Entry {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Entry, 0, len(catalog))
	for n, k := range catalog {
		out = append(out, Entry{Name: n, Kind: k})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Series returns the names a query may use for the metric: the name
// itself, plus _bucket, _sum and _count for a histogram.
func (e Entry) Series() []string {
	if e.Kind != Histogram {
		return []string{e.Name}
	}
	return []string{e.Name, e.Name + "_bucket", e.Name + "_sum", e.Name + "_count"}
}

// Milliseconds is d in the unit of the existing CCM's latency histograms.
func Milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Value reads the first series of the counter or gauge name whose labels
// include labels from the legacy registry; ok is false when there is none.
func Value(name string, labels map[string]string) (v float64, ok bool, err error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return 0, false, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, want := range labels {
				if have[k] != want {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true, nil
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true, nil
			}
		}
	}
	return 0, false, nil
}
