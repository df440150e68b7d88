package ccmtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// exitTailLines is how much of the log an ExitError quotes: enough for a
// panic's first frames or the last error lines before an exit.
const exitTailLines = 40

// ExitError is why a wait on a CCM stopped early: the process ended. A
// suite's tests all wait through the one CCM of their binary; once it has
// crashed no condition that needs it can hold, so every wait fails with
// this at once instead of running to its own timeout.
type ExitError struct {
	// Name is the process's name (its log file's base name).
	Name string
	// PID is the process id it had.
	PID int
	// Status is how it ended, as os/exec words it: "exit status 2",
	// "signal: killed".
	Status string
	// Stopped is true when the test stopped or killed it itself.
	Stopped bool
	// Uptime is how long it ran.
	Uptime time.Duration
	// LogPath is its log file; Tail the last lines of it at exit.
	LogPath, Tail string
}

// Error names the process, how it ended and the tail of its log.
func (e *ExitError) Error() string {
	how := "exited unexpectedly"
	if e.Stopped {
		how = "was stopped by the test"
	}
	return fmt.Sprintf("the CCM %s (pid %d) %s after %v: %s; log %s, last %d lines:\n%s",
		e.Name, e.PID, how, e.Uptime.Round(time.Millisecond), e.Status, e.LogPath, exitTailLines, e.Tail)
}

// exitWatch follows one process: ended is cancelled (cause *ExitError)
// when it ends for any reason, crashed only when it ends without the
// test's Stop or Kill.
type exitWatch struct {
	ended, crashed context.Context
	stopping       atomic.Bool
}

// watchExit starts the goroutine that waits for c's process, as soon as
// it is started, so that waits learn of its end at once.
func (c *CCM) watchExit(started time.Time) {
	ended, endedCancel := context.WithCancelCause(context.Background())
	crashed, crashedCancel := context.WithCancelCause(context.Background())
	c.exit = &exitWatch{ended: ended, crashed: crashed}
	go func() {
		<-c.p.Done()
		_, err := c.p.Exited()
		status := "exit status 0"
		if err != nil {
			status = err.Error()
		}
		e := &ExitError{Name: c.p.Name(), PID: c.p.PID(), Status: status, Stopped: c.exit.stopping.Load(),
			Uptime: c.p.ExitedAt().Sub(started), LogPath: c.LogPath, Tail: c.p.Tail(exitTailLines)}
		if !e.Stopped {
			crashedCancel(e)
		}
		endedCancel(e)
	}()
}

// Context is cancelled when the process exits without the test having
// stopped or killed it (a crash, a fatal error, an exit at start), with
// an *ExitError as its context.Cause. Waits that need the CCM poll under
// it, so that a crash fails them at once.
func (c *CCM) Context() context.Context { return c.exit.crashed }

// Crashed is the *ExitError of a process that exited without the test's
// Stop or Kill, nil while it runs or when the test ended it.
func (c *CCM) Crashed() error {
	if c.exit.crashed.Err() == nil {
		return nil
	}
	return context.Cause(c.exit.crashed)
}

// ended is cancelled when the process exits for any reason.
func (c *CCM) ended() context.Context { return c.exit.ended }
