package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// started is a running emulator started through run.
type started struct {
	addr    string
	cancel  context.CancelFunc
	done    chan error
	scanned chan struct{}

	mu    sync.Mutex
	lines []string
}

// output returns the lines printed so far.
func (s *started) output() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// start runs the command in process and waits for "listening on".
func start(t *testing.T, args ...string) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &started{cancel: cancel, done: make(chan error, 1), scanned: make(chan struct{})}
	go func() {
		err := run(ctx, append([]string{"--listen", "127.0.0.1:0"}, args...), pw, func(string) string { return "" })
		pw.CloseWithError(io.EOF)
		s.done <- err
	}()
	sc := bufio.NewScanner(pr)
	ready := make(chan struct{})
	go func() {
		defer close(s.scanned)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.lines = append(s.lines, line)
			s.mu.Unlock()
			if addr, ok := strings.CutPrefix(line, "listening on "); ok {
				s.addr = addr
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case err := <-s.done:
		t.Fatalf("emulator exited: %v (output %q)", err, s.output())
	case <-time.After(10 * time.Second):
		t.Fatal("emulator did not start")
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *started) stop(t *testing.T) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("emulator did not shut down")
	}
	<-s.scanned
}

func getJSON(t *testing.T, url string, out any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func TestGeneratesAKeyAndServes(t *testing.T) {
	s := start(t, "--region", "cn-beijing", "--metadata-role", "my-role")
	joined := strings.Join(s.output(), "\n")
	if !regexp.MustCompile(`generated access key: id=LTAI5t[a-z0-9]{18} secret=[a-z0-9]{30} account=\d+`).MatchString(joined) {
		t.Fatalf("no generated key line in %q", joined)
	}
	var health map[string]any
	if st := getJSON(t, "http://"+s.addr+"/_emulator/health", &health); st != 200 || health["region"] != "cn-beijing" || health["auth"] != true {
		t.Fatalf("health %d %v", st, health)
	}
	resp, err := http.Get("http://" + s.addr + "/latest/meta-data/ram/security-credentials/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "my-role" {
		t.Fatalf("role %q", b)
	}
	s.stop(t)
	if out := s.output(); out[len(out)-1] != "shutting down" {
		last := out[len(out)-1]
		t.Fatalf("last line %q", last)
	}
}

func TestConfiguredKeyIsNotPrinted(t *testing.T) {
	s := start(t, "--access-key-id", "LTAI5tMine", "--access-key-secret", "my-very-secret")
	joined := strings.Join(s.output(), "\n")
	if strings.Contains(joined, "my-very-secret") || !strings.Contains(joined, "access key: id=LTAI5tMine") {
		t.Fatalf("output %q", joined)
	}
}

func TestSeedAppliedOnlyToEmptyState(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.yaml")
	if err := os.WriteFile(seed, []byte("vpcs:\n  - id: vpc-seeded0000000000001\n    cidrBlock: 192.168.0.0/16\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state.db")
	s := start(t, "--state", state, "--seed", seed)
	if !strings.Contains(strings.Join(s.output(), "\n"), "seeded from "+seed) {
		t.Fatalf("output %q", s.output())
	}
	s.stop(t)
	// Whether the restart re-seeds depends on whether the seed created
	// anything; either way the run must come back up on the same file.
	s2 := start(t, "--state", state, "--seed", seed)
	if st := getJSON(t, "http://"+s2.addr+"/_emulator/health", nil); st != 200 {
		t.Fatalf("health after restart: %d", st)
	}
}

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--access-key-id", "only-id"},
		{"--nope"},
		{"extra-arg"},
		{"--seed", "/does/not/exist.yaml"},
		{"--listen", "not-an-address"},
	} {
		err := run(context.Background(), args, io.Discard, func(string) string { return "" })
		if err == nil {
			t.Fatalf("%v: want an error", args)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), []string{"--version"}, &out, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^alicloud-emulator v\S+ \(commit \S+(, built \S+)?, go\S+\)\n$`).MatchString(out.String()) {
		t.Errorf("--version printed %q", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"--help"}, &out, func(string) string { return "" }); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if !strings.HasPrefix(out.String(), "alicloud-emulator is a local emulation of the Alibaba Cloud ECS, VPC, SLB") ||
		!strings.Contains(out.String(), "-listen") {
		t.Errorf("--help printed %.400q", out.String())
	}
}
