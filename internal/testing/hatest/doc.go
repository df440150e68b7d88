// Package hatest holds the high-availability tests of the
// cloud-controller-manager: two replicas electing a leader on a Lease, run
// as processes against their own control plane and emulated cloud.
package hatest
