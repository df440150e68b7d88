package cloud

import "time"

// SetLimitTTL shortens how long an advertised Limit caps its scope, so that
// a test sees a raised quota found within seconds instead of limitTTL.
func SetLimitTTL(t *Throttle, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limitTTL = d
}
