package sandbox

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// component is a sandbox process (the emulator or the CCM) with its log in
// DIR/logs, run by localcluster's process runner like the control plane:
// its own process group (a terminal's Ctrl-C reaches only the sandbox,
// which then stops everything in order), SIGKILL if the sandbox dies, and a
// log that names the command line but never the environment, where secrets
// travel.
type component struct {
	*localcluster.Process
}

// startComponent runs bin with args and extra environment, output appended
// to logDir/name.log.
func startComponent(name, bin string, args []string, logDir string, env []string) (*component, error) {
	p, err := localcluster.StartProcess(name, bin, args, logDir, env)
	if err != nil {
		return nil, err
	}
	return &component{p}, nil
}

// failure describes an exited component with the tail of its log.
func (c *component) failure(what string) error {
	_, err := c.Exited()
	return fmt.Errorf("%s %s (%v); last lines of %s:\n%s", c.Name(), what, err, c.LogPath(), tailFile(c.LogPath(), 25))
}

// waitFor polls check until it succeeds, the component exits, or timeout.
func (c *component) waitFor(ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if done, _ := c.Exited(); done {
			return c.failure("exited at start")
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = check(cctx)
		cancel()
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not %s after %s (last error: %v); last lines of %s:\n%s", c.Name(), what, timeout, last, c.LogPath(), tailFile(c.LogPath(), 25))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// processAlive reports whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}
