package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// RunTests is a TestMain body: it starts one cluster for the whole test
// binary, hands it to set, runs the tests and stops the cluster. When a
// test fails it keeps the component logs and prints their paths. It
// builds missing control-plane binaries first (EnsureBinaries), also under
// -short: every test of such a binary shares the cluster.
func RunTests(m *testing.M, opts Options, set func(*Cluster)) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if opts.Logf == nil {
		opts.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
		}
	}
	c, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		return 1
	}
	// Ctrl-C or a CI timeout signal must not leave control-plane processes
	// behind.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; ok {
			c.Stop()
			os.Exit(2)
		}
	}()
	defer signal.Stop(sigs)
	set(c)
	code := m.Run()
	if code != 0 {
		c.KeepLogs()
		fmt.Fprintf(os.Stderr, "localcluster: tests failed; component logs kept:\n")
		for _, p := range c.LogPaths() {
			fmt.Fprintf(os.Stderr, "  %s\n", p)
		}
	}
	c.Stop()
	return code
}
