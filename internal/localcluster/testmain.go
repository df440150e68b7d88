package localcluster

import (
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
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

// RunProcessTests is RunTests for a test binary whose integration tests,
// in package <name>_test, drive the CCM as a process of its own, and whose
// white-box tests (its _test.go files in the package itself) need no
// cluster. Under -short (make test's race pass: the race detector does not
// see into that process) it starts no cluster, calls no set, and runs the
// white-box tests only, unless -run chooses.
func RunProcessTests(m *testing.M, opts Options, set func(*Cluster)) int {
	flag.Parse()
	if !testing.Short() {
		return RunTests(m, opts, set)
	}
	if run := flag.Lookup("test.run"); run != nil && run.Value.String() == "" {
		names, err := whiteBoxTests(".")
		if err != nil {
			fmt.Fprintf(os.Stderr, "localcluster: -short: %v\n", err)
			return 1
		}
		if len(names) == 0 {
			fmt.Fprintln(os.Stderr, "localcluster: -short: no white-box tests; the integration tests need a cluster")
			return 0
		}
		if err := run.Value.Set("^(" + strings.Join(names, "|") + ")$"); err != nil {
			fmt.Fprintf(os.Stderr, "localcluster: -short: %v\n", err)
			return 1
		}
	}
	return m.Run()
}

// whiteBoxTests returns the Test functions of the _test.go files in dir
// that belong to the package itself, not to its external _test package.
func whiteBoxTests(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, path := range files {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		if strings.HasSuffix(f.Name.Name, "_test") {
			continue
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && isTestName(fn.Name.Name) {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names, nil
}

// isTestName reports whether go test runs a function so named as a test:
// Test, then nothing or a character that is not a lower-case letter.
func isTestName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Test")
	if !ok || name == "TestMain" {
		return false
	}
	return rest == "" || !unicode.IsLower([]rune(rest)[0])
}
