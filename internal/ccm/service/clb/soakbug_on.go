//go:build soakbug

package clb

// soakBugSkipACLCleanup, set only by `-tags soakbug`, is a deliberately
// injected bug: deleting a Service's CLB skips deleting the access control
// list of its loadBalancerSourceRanges, so the list leaks. `make soak`
// (internal/soak) must report it; see docs/reliability.md.
const soakBugSkipACLCleanup = true
