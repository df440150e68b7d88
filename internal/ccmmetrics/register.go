package ccmmetrics

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// namespace prefixes the CCM's own metric names.
const namespace = "alicloud"

// Opts name and describe a metric: alicloud_<Subsystem>_<Name>, or Name
// alone with Legacy (the existing CCM's names, kept for its dashboards).
// Every metric is ALPHA.
type Opts struct {
	Subsystem string
	Name      string
	Help      string
	Legacy    bool
}

// names returns the namespace and subsystem the metric is built with.
func (o Opts) names() (ns, sub string) {
	if o.Legacy {
		return "", ""
	}
	return namespace, o.Subsystem
}

func (o Opts) counter() *metrics.CounterOpts {
	ns, sub := o.names()
	return &metrics.CounterOpts{Namespace: ns, Subsystem: sub, Name: o.Name, Help: o.Help, StabilityLevel: metrics.ALPHA}
}

func (o Opts) histogram(buckets []float64) *metrics.HistogramOpts {
	ns, sub := o.names()
	return &metrics.HistogramOpts{Namespace: ns, Subsystem: sub, Name: o.Name, Help: o.Help, Buckets: buckets, StabilityLevel: metrics.ALPHA}
}

// NewCounter registers (MustRegister) and returns a counter.
func NewCounter(o Opts) *metrics.Counter {
	m := metrics.NewCounter(o.counter())
	MustRegister(m)
	return m
}

// NewCounterVec registers (MustRegister) and returns a counter by labels.
func NewCounterVec(o Opts, labels ...string) *metrics.CounterVec {
	m := metrics.NewCounterVec(o.counter(), labels)
	MustRegister(m)
	return m
}

// NewGaugeVec registers (MustRegister) and returns a gauge by labels.
func NewGaugeVec(o Opts, labels ...string) *metrics.GaugeVec {
	ns, sub := o.names()
	m := metrics.NewGaugeVec(&metrics.GaugeOpts{Namespace: ns, Subsystem: sub, Name: o.Name, Help: o.Help, StabilityLevel: metrics.ALPHA}, labels)
	MustRegister(m)
	return m
}

// NewHistogram registers (MustRegister) and returns a histogram.
func NewHistogram(o Opts, buckets []float64) *metrics.Histogram {
	m := metrics.NewHistogram(o.histogram(buckets))
	MustRegister(m)
	return m
}

// NewHistogramVec registers (MustRegister) and returns a histogram by
// labels.
func NewHistogramVec(o Opts, buckets []float64, labels ...string) *metrics.HistogramVec {
	m := metrics.NewHistogramVec(o.histogram(buckets), labels)
	MustRegister(m)
	return m
}

// RegisterCollector registers a collector whose gauges are computed at
// each scrape, and records their names in the catalog.
func RegisterCollector(c metrics.StableCollector, gauges ...string) {
	legacyregistry.CustomMustRegister(c)
	for _, g := range gauges {
		Record(g, Gauge)
	}
}
