// Package servicecosttest holds the tests that pin the cloud calls one Service
// costs to the benchmark's minimal plan (internal/bench/plan.go): a CCM
// process against its own API server, kwok Nodes (more than one backend
// batch of them) and emulated cloud, so that no other test's Services share
// the counters.
package servicecosttest
