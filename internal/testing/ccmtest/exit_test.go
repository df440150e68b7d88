package ccmtest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

// fakeCCMEnv makes the test binary, run by StartCCM in place of the
// CCM, act as a CCM process: "serve" logs and runs until killed, "panic"
// logs and then panics (exit status 2), as a CCM hitting a nil pointer.
const fakeCCMEnv = "CCMTEST_FAKE_CCM"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeCCMEnv) {
	case "":
		os.Exit(m.Run())
	case "serve":
		fmt.Println("I1128 fake ccm: serving")
		select {}
	case "panic":
		fmt.Println("I1128 fake ccm: serving")
		time.Sleep(500 * time.Millisecond)
		panic("boom: the fake CCM's crash")
	}
}

// startFake starts the test binary as a suite's CCM in mode.
func startFake(t *testing.T, mode string) *ccmtest.CCM {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ccmtest.StartCCM(context.Background(), ccmtest.CCMOptions{
		Binary: self, Env: []string{fakeCCMEnv + "=" + mode},
		LogPath: filepath.Join(t.TempDir(), "cloud-controller-manager.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	// Started: its first line is in the log.
	if err := ccmtest.Poll(10*time.Second, 20*time.Millisecond, func(context.Context) (bool, error) {
		return strings.Contains(c.Log(), "fake ccm: serving"), nil
	}); err != nil {
		t.Fatalf("the fake CCM did not start: %v; log:\n%s", err, c.Log())
	}
	return c
}

// fatalRecorder is the testing.TB of a wait under test: Fatalf records
// the failure and ends the wait's goroutine as the real one would.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// pollNever runs a suite's wait (PollCCM) for a condition that never
// holds, with the 5 min timeout a slow test might give it, and returns
// its failure and how long it took.
func pollNever(t *testing.T, c *ccmtest.CCM) (string, time.Duration) {
	t.Helper()
	r := &fatalRecorder{TB: t}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ccmtest.PollCCM(r, c, 5*time.Minute, 100*time.Millisecond, "Service default/web synced", func(context.Context) (bool, error) {
			return false, fmt.Errorf("no address yet")
		})
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the wait still runs 20 s after the CCM died")
	}
	if r.msg == "" {
		t.Fatal("the wait returned without a failure")
	}
	return r.msg, time.Since(start)
}

// TestWaitFailsAtOnceWhenTheCCMIsKilled: the suite's CCM killed from
// outside (the OOM killer, a crash by signal) ends a wait with 5 min to
// go within a second, naming the exit status and the log's tail; the
// next test's wait fails before it polls.
func TestWaitFailsAtOnceWhenTheCCMIsKilled(t *testing.T) {
	c := startFake(t, "serve")
	time.AfterFunc(500*time.Millisecond, func() { _ = syscall.Kill(c.PID(), syscall.SIGKILL) })
	msg, took := pollNever(t, c)
	t.Logf("the wait failed after %v: %s", took, msg)
	if took > 3*time.Second {
		t.Errorf("the wait took %v after the kill at 500ms, want under 3 s", took)
	}
	for _, want := range []string{"Service default/web synced", "exited unexpectedly", "signal: killed", "fake ccm: serving", "last: no address yet"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
	msg, took = pollNever(t, c)
	if took > time.Second || !strings.Contains(msg, "not polled") || !strings.Contains(msg, "signal: killed") {
		t.Errorf("the next wait on the dead CCM took %v: %s", took, msg)
	}
	if err := c.Until(5*time.Minute, func(context.Context) (bool, error) { return false, nil }); err == nil || !strings.Contains(err.Error(), "signal: killed") {
		t.Errorf("Until on the dead CCM: %v", err)
	}
}

// TestWaitFailsAtOnceWhenTheCCMPanics: a CCM that exits by itself (a
// panic, exit status 2) ends the wait with the panic in the log tail.
func TestWaitFailsAtOnceWhenTheCCMPanics(t *testing.T) {
	c := startFake(t, "panic")
	msg, took := pollNever(t, c)
	t.Logf("the wait failed after %v", took)
	if took > 3*time.Second {
		t.Errorf("the wait took %v after a panic at 500ms, want under 3 s", took)
	}
	for _, want := range []string{"exited unexpectedly", "exit status 2", "panic: boom: the fake CCM's crash"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
}

// TestStoppedCCMIsNoCrash: a CCM the test stops itself (a restart) is
// no crash: the suite's waits go on (a condition that holds passes), and
// Until, which needs the process, ends at once saying it was stopped.
func TestStoppedCCMIsNoCrash(t *testing.T) {
	c := startFake(t, "serve")
	c.Stop()
	if err := c.Crashed(); err != nil {
		t.Fatalf("a stopped CCM counts as crashed: %v", err)
	}
	if c.Context().Err() != nil {
		t.Fatal("the CCM's context is cancelled after a Stop")
	}
	ccmtest.PollCCM(t, c, 5*time.Second, 50*time.Millisecond, "a condition that holds", func(context.Context) (bool, error) { return true, nil })
	start := time.Now()
	err := c.Until(5*time.Minute, func(context.Context) (bool, error) { return false, nil })
	if err == nil || !strings.Contains(err.Error(), "was stopped by the test") || time.Since(start) > time.Second {
		t.Errorf("Until on a stopped CCM: %v after %v", err, time.Since(start))
	}
}

// TestUntilFailsAtOnceWhenTheCCMDiesDuringIt: Until, waiting, learns of
// the exit at once.
func TestUntilFailsAtOnceWhenTheCCMDiesDuringIt(t *testing.T) {
	c := startFake(t, "serve")
	time.AfterFunc(300*time.Millisecond, func() { _ = syscall.Kill(c.PID(), syscall.SIGKILL) })
	start := time.Now()
	err := c.Until(5*time.Minute, func(context.Context) (bool, error) { return false, nil })
	if took := time.Since(start); err == nil || took > 3*time.Second || !strings.Contains(err.Error(), "exited unexpectedly") {
		t.Errorf("Until returned after %v: %v", took, err)
	}
}
