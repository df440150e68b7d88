package app

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Plain-HTTP health probes for the existing CCM's manifests, which probe
// http://127.0.0.1:10258/healthz, the port our secure serving also takes.
//
// Why one port answering both protocols: the existing CCM's probe port and
// ours are the same (10258), a Deployment cannot be changed by a drop-in,
// and two listeners cannot share the port. TLS connections start with a
// handshake record (first byte 0x16), HTTP with an ASCII method, so the
// secure listener tells them apart by the first byte and hands plain ones
// to a small HTTP server, TLS ones unchanged to the secure server.
//
// Why proxying to the secure server: the plain server answers with the
// secure server's own /healthz, /readyz and /livez (leader election and
// controller checks included), through an in-memory connection, so the
// two can never disagree. Those paths are already open without
// credentials on the secure port (upstream's always-allowed paths), so
// plain HTTP exposes nothing new; every other path answers 404.

// tlsRecordHandshake is the first byte of every TLS ClientHello.
const tlsRecordHandshake = 0x16

// sniffTimeout bounds how long a new connection may stay silent before
// its first byte tells its protocol.
const sniffTimeout = 10 * time.Second

// keepAlivePeriod is the secure server's own TCP keep-alive period.
const keepAlivePeriod = 3 * time.Minute

// healthPaths are the paths served over plain HTTP.
var healthPaths = []string{"/healthz", "/readyz", "/livez"}

// dualListener wraps the secure listener: Accept returns the TLS
// connections; plain ones go to plain, when set.
type dualListener struct {
	net.Listener
	tls   chan net.Conn
	plain *chanListener
	done  chan struct{}
	once  sync.Once
}

func newDualListener(inner net.Listener, sharePlain bool) *dualListener {
	l := &dualListener{Listener: inner, tls: make(chan net.Conn), done: make(chan struct{})}
	if sharePlain {
		l.plain = &chanListener{addr: inner.Addr(), conns: make(chan net.Conn), done: l.done}
	}
	go l.run()
	return l
}

func (l *dualListener) run() {
	backoff := time.Duration(0)
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				_ = l.Close()
				return
			}
			// Transient (e.g. out of file descriptors): retry as
			// http.Server does, rather than stop serving for good.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			klog.V(2).InfoS("Accepting on the secure port failed; retrying", "err", err, "in", backoff)
			select {
			case <-time.After(backoff):
			case <-l.done:
				return
			}
			continue
		}
		backoff = 0
		go l.classify(c)
	}
}

// classify reads the first byte without consuming it and delivers the
// connection to the TLS or the plain side.
func (l *dualListener) classify(c net.Conn) {
	// The secure server sets TCP keep-alives only on a *net.TCPConn, which
	// the wrapped connection no longer is: set them here, at its period.
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetKeepAlive(true)
		_ = tc.SetKeepAlivePeriod(keepAlivePeriod)
	}
	to := l.tls
	if l.plain != nil {
		_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
		r := bufio.NewReader(c)
		first, err := r.Peek(1)
		if err != nil {
			_ = c.Close()
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		if first[0] != tlsRecordHandshake {
			to = l.plain.conns
		}
		c = &peekedConn{Conn: c, r: r}
	}
	select {
	case to <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// Accept implements net.Listener: the next TLS connection.
func (l *dualListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.tls:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *dualListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}

// dial returns a connection to the secure server that never touches the
// network, whatever --bind-address is.
func (l *dualListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
	select {
	case l.tls <- &addrConn{Conn: server, local: l.Addr(), remote: local}:
		return &addrConn{Conn: client, local: local, remote: l.Addr()}, nil
	case <-ctx.Done():
		_ = client.Close()
		_ = server.Close()
		return nil, ctx.Err()
	case <-l.done:
		_ = client.Close()
		_ = server.Close()
		return nil, net.ErrClosed
	}
}

// peekedConn replays the byte read to tell the protocol.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// addrConn gives an in-memory connection loopback addresses, which the
// secure server's filters parse.
type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *addrConn) LocalAddr() net.Addr  { return c.local }
func (c *addrConn) RemoteAddr() net.Addr { return c.remote }

// chanListener is the plain side of a dualListener.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close does nothing: the dualListener owns the socket.
func (l *chanListener) Close() error   { return nil }
func (l *chanListener) Addr() net.Addr { return l.addr }

// healthProbePort parses --health-probe-bind-addr; 0 means off.
func healthProbePort(addr string) (int, error) {
	if addr == "" || addr == "0" {
		return 0, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("--%s %q: want host:port (e.g. :10258): %w", HealthProbeBindAddrFlag, addr, err)
	}
	if host != "" && net.ParseIP(host) == nil {
		return 0, fmt.Errorf("--%s %q: host %q is not an IP address", HealthProbeBindAddrFlag, addr, host)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("--%s %q: port %q is not a number from 1 to 65535", HealthProbeBindAddrFlag, addr, port)
	}
	return p, nil
}

// serveHealthProbes wraps the secure listener and serves the health
// paths over plain HTTP: on the secure port itself when addr is not given
// (explicit false) or names the secure port's port, else on a listener of
// its own. It returns the listener to give the secure server.
//
// Unset means the secure port, not 10258: that is the existing CCM's
// default and ours, and a CCM moved to another secure port must not take
// 10258 from another process behind its operator's back.
func serveHealthProbes(secure net.Listener, addr string, explicit bool, stop <-chan struct{}) (net.Listener, error) {
	port := 0
	if explicit {
		var err error
		if port, err = healthProbePort(addr); err != nil || port == 0 {
			return secure, err
		}
	}
	if secure == nil {
		return nil, fmt.Errorf("--%s %q needs the secure port, whose checks it serves: --secure-port is 0", HealthProbeBindAddrFlag, addr)
	}
	tcp, ok := secure.Addr().(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("--%s: the secure listener is not TCP (%s)", HealthProbeBindAddrFlag, secure.Addr())
	}
	shared := !explicit || tcp.Port == port
	dual := newDualListener(secure, shared)
	var plain net.Listener = dual.plain
	if !shared {
		var err error
		if plain, err = net.Listen("tcp", addr); err != nil {
			_ = dual.Close()
			return nil, fmt.Errorf("--%s %q: %w", HealthProbeBindAddrFlag, addr, err)
		}
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = "https"
			r.Out.URL.Host = "secure-port"
			r.Out.Host = "localhost"
		},
		Transport: &http.Transport{
			DialContext: dual.dial,
			// The server is this process over an in-memory pipe; its
			// certificate is self-signed unless files are given.
			TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // in-process connection
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     time.Minute,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			klog.V(2).InfoS("Plain HTTP health probe could not reach the secure server", "path", r.URL.Path, "err", err)
			http.Error(w, "secure server unavailable: "+err.Error(), http.StatusServiceUnavailable)
		},
	}
	mux := http.NewServeMux()
	for _, p := range healthPaths {
		mux.Handle(p, getOnly(proxy))
		mux.Handle(p+"/", getOnly(proxy))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	klog.InfoS("Serving health probes over plain HTTP", "address", plain.Addr().String(), "paths", healthPaths, "sharedWithSecurePort", shared)
	go func() {
		if err := srv.Serve(plain); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			klog.ErrorS(err, "Plain HTTP health probe listener stopped", "address", plain.Addr().String())
		}
	}()
	go func() {
		<-stop
		_ = srv.Close()
		if !shared {
			_ = plain.Close()
		}
	}()
	return dual, nil
}

// getOnly refuses anything but GET and HEAD: probes only read.
func getOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, strings.ToLower(r.Method)+" not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}
