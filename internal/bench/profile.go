package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// fetchProfile saves the CCM's /debug/pprof/<kind> (query e.g.
// "seconds=30") to dir/<name>.pprof. The CCM serves pprof on its secure
// port (upstream --profiling, on by default) behind delegated
// authentication; the cluster's admin client certificate passes it.
func (e *env) fetchProfile(ctx context.Context, dir, name, kind, query string, timeout time.Duration) error {
	if dir == "" {
		return nil
	}
	resp, err := e.ccmGet(ctx, "/debug/pprof/"+kind+"?"+query, timeout)
	if err != nil {
		return fmt.Errorf("fetch %s profile: %w", kind, err)
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		return fmt.Errorf("save %s profile: %w", kind, err)
	}
	return nil
}

// cpuProfile starts a CPU profile of the CCM for d in the background; the
// returned function waits for it and reports its error.
func (r *runner) cpuProfile(ctx context.Context, e *env, name string, d time.Duration) func() {
	if r.o.ProfileDir == "" {
		return func() {}
	}
	done := make(chan error, 1)
	go func() {
		done <- e.fetchProfile(ctx, r.o.ProfileDir, name, "profile", "seconds="+strconv.Itoa(int(d.Seconds())), d+30*time.Second)
	}()
	return func() {
		if err := <-done; err != nil {
			r.logf("profile %s: %v", name, err)
		}
	}
}

// adminHTTP is an HTTP client for the CCM's secure port. The port is
// behind delegated authentication; the cluster's admin client certificate
// passes it.
func (e *env) adminHTTP(timeout time.Duration) (*http.Client, error) {
	pki := filepath.Join(e.cluster.Dir, "pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err != nil {
		return nil, fmt.Errorf("admin client certificate: %w", err)
	}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert},
		// The CCM's serving certificate is self-signed on loopback.
		InsecureSkipVerify: true, //nolint:gosec // loopback fetch
	}}}, nil
}

// ccmURL is path on the CCM's secure port.
func (e *env) ccmURL(path string) string {
	return "https://127.0.0.1:" + strconv.Itoa(e.ccm.Port) + path
}

// heapProfile saves the CCM's heap profile now.
func (r *runner) heapProfile(ctx context.Context, e *env, name string) {
	if r.o.ProfileDir == "" {
		return
	}
	if err := e.fetchProfile(ctx, r.o.ProfileDir, name, "heap", "", 30*time.Second); err != nil {
		r.logf("profile %s: %v", name, err)
	}
}
