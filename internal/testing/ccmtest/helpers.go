package ccmtest

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// Kube returns an admin clientset of the cluster; it fails the test when
// none can be built.
func Kube(t testing.TB, c *localcluster.Cluster) kubernetes.Interface {
	t.Helper()
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// PollCCM polls cond every interval until it holds and returns how long
// that took; when timeout passes first it fails the test naming what,
// with the tail of the CCM's log when the process has exited (the usual
// reason a condition never holds). A CCM that crashed (exited without
// the test's Stop or Kill) fails it at once, before or during the poll,
// with its exit status and log tail: a suite whose CCM died fails each
// wait in moments instead of each running to its timeout.
func PollCCM(t testing.TB, c *CCM, timeout, interval time.Duration, what string, cond func(ctx context.Context) (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	ctx := context.Background()
	if c != nil {
		if err := c.Crashed(); err != nil {
			t.Fatalf("%s: not polled: %v", what, err)
		}
		ctx = c.Context()
	}
	if err := PollContext(ctx, timeout, interval, cond); err != nil {
		if c != nil && c.Crashed() != nil {
			t.Fatalf("%s: after %v: %v", what, time.Since(start).Round(time.Millisecond), err)
		}
		if c != nil && c.Exited() {
			t.Fatalf("%s: the CCM exited; log tail:\n%s", what, c.Tail(30))
		}
		t.Fatalf("%s: %v", what, err)
	}
	return time.Since(start)
}

// Tail returns the last n lines of s, for failure messages.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreePort returns a TCP port free on the loopback address at the time of
// the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
