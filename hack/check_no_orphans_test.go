// Package hack_test checks the scripts make runs.
package hack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOrphanCheckFlagsOnlyThisRunsProcesses: with ALICLOUD_TEST_RUN set
// (make test), check-no-orphans.sh flags a leftover process started from
// the control-plane cache only when it carries that run's id: a sandbox's
// (no id) and another run's pass; without the id it flags them all.
func TestOrphanCheckFlagsOnlyThisRunsProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("the check reads /proc")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cache := t.TempDir()
	// ps shows the path a process was started by: a link in the cache
	// makes sleep look like a cached control-plane binary.
	bin := filepath.Join(cache, "etcd")
	if err := os.Symlink(sleep, bin); err != nil {
		t.Fatal(err)
	}
	var base []string
	for _, kv := range os.Environ() {
		// This test may run under make test, whose id it must not pass on.
		if !strings.HasPrefix(kv, "ALICLOUD_TEST_RUN=") && !strings.HasPrefix(kv, "CONTROLPLANE_CACHE=") {
			base = append(base, kv)
		}
	}
	start := func(env ...string) int {
		cmd := exec.Command(bin, "300")
		cmd.Env = append(append([]string(nil), base...), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		return cmd.Process.Pid
	}
	run := "orphan-check-test-" + strconv.Itoa(os.Getpid())
	check := func(run string) (string, bool) {
		cmd := exec.Command("./check-no-orphans.sh")
		cmd.Env = append(append([]string(nil), base...), "CONTROLPLANE_CACHE="+cache, "ORPHAN_CHECK_SETTLE=0")
		if run != "" {
			cmd.Env = append(cmd.Env, "ALICLOUD_TEST_RUN="+run)
		}
		out, err := cmd.CombinedOutput()
		if _, exit := err.(*exec.ExitError); err != nil && !exit {
			t.Fatalf("run the check: %v", err)
		}
		return string(out), err == nil
	}
	listed := func(out string, pid int) bool {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == strconv.Itoa(pid) {
				return true
			}
		}
		return false
	}

	sandbox := start()
	other := start("ALICLOUD_TEST_RUN=another-run")
	if out, ok := check(run); !ok {
		t.Fatalf("a sandbox's and another run's processes were flagged:\n%s", out)
	}
	leftover := start("ALICLOUD_TEST_RUN=" + run)
	out, ok := check(run)
	if ok || !listed(out, leftover) {
		t.Fatalf("the run's own leftover %d was not flagged:\n%s", leftover, out)
	}
	if listed(out, sandbox) || listed(out, other) {
		t.Fatalf("flagged more than the run's leftover %d:\n%s", leftover, out)
	}
	// Run by hand, the check cannot tell whose a process is.
	if out, ok := check(""); ok || !listed(out, sandbox) || !listed(out, leftover) {
		t.Fatalf("without a run id every cached process must be flagged:\n%s", out)
	}
}
