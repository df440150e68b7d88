//go:build !soakbug

package clb

// soakBugSkipACLCleanup is false in every real build: see soakbug_on.go.
const soakBugSkipACLCleanup = false
