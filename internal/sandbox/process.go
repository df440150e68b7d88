package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// component is a sandbox process (the emulator or the CCM) with its log in
// DIR/logs. Control-plane processes belong to localcluster.
type component struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{}
	mu      sync.Mutex
	err     error
}

// startComponent runs bin with args and extra environment, output appended
// to logDir/name.log. The log's header names the command line but never the
// environment, which is where secrets travel. The child gets its own process
// group (a terminal's Ctrl-C reaches only the sandbox, which then stops
// everything in order) and SIGKILL if the sandbox dies.
func startComponent(name, bin string, args []string, logDir string, env []string) (*component, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", name, err)
	}
	fmt.Fprintf(f, "\n=== %s: %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &component{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// exited reports whether the process has ended, and how.
func (c *component) exited() (bool, error) {
	select {
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return true, c.err
	default:
		return false, nil
	}
}

// failure describes an exited component with the tail of its log.
func (c *component) failure(what string) error {
	_, err := c.exited()
	return fmt.Errorf("%s %s (%v); last lines of %s:\n%s", c.name, what, err, c.logPath, tailFile(c.logPath, 25))
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (c *component) stop(grace time.Duration) {
	if done, _ := c.exited(); !done {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(grace):
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
	c.logFile.Close()
}

// waitFor polls check until it succeeds, the component exits, or timeout.
func (c *component) waitFor(ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if done, _ := c.exited(); done {
			return c.failure("exited at start")
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = check(cctx)
		cancel()
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not %s after %s (last error: %v); last lines of %s:\n%s", c.name, what, timeout, last, c.logPath, tailFile(c.logPath, 25))
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
