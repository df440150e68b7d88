// Package metricstest holds the integration tests of the CCM's metrics: the
// plain-HTTP --metrics-bind-address listener, the existing CCM's metric
// names and the conventional ones, and the Service gauges, scraped from a
// cloud-controller-manager process run against its own control plane and
// emulated cloud.
package metricstest
