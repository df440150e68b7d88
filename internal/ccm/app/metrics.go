package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// MetricsBindAddressFlag serves /metrics over plain HTTP besides the secure
// port, for scrapers set up for the existing CCM (which served :8080).
const MetricsBindAddressFlag = "metrics-bind-address"

func addMetricsFlag(fs *pflag.FlagSet, addr *string) {
	fs.StringVar(addr, MetricsBindAddressFlag, *addr,
		"host:port to serve /metrics on over plain HTTP, without authentication (the existing CCM's users scrape :8080). Empty or 0: off; /metrics is always served on the secure port.")
}

// listenMetrics validates addr and binds it; nil without error when off.
func listenMetrics(addr string) (net.Listener, error) {
	if addr == "" || addr == "0" {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--%s %q: want host:port (e.g. :8080 or 127.0.0.1:8080): %w", MetricsBindAddressFlag, addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return nil, fmt.Errorf("--%s %q: port %q is not a number from 0 to 65535", MetricsBindAddressFlag, addr, port)
	}
	if host != "" && net.ParseIP(host) == nil {
		return nil, fmt.Errorf("--%s %q: host %q is not an IP address", MetricsBindAddressFlag, addr, host)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--%s %q: %w", MetricsBindAddressFlag, addr, err)
	}
	return l, nil
}

// serveMetrics serves the legacy registry on l until stop is closed.
func serveMetrics(l net.Listener, stop <-chan struct{}) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	klog.InfoS("Serving metrics over plain HTTP", "address", l.Addr().String(), "path", "/metrics")
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Plain HTTP metrics listener stopped", "address", l.Addr().String())
		}
	}()
	go func() {
		<-stop
		_ = srv.Close()
	}()
}
