//go:build !linux

package app

// releaseStartupPages does nothing off Linux (no MADV_PAGEOUT).
func releaseStartupPages(stop <-chan struct{}) {}
