package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// bugAction is the call the injected bug loses: the CCM's deletion of a
// Service's source-range access control list.
const bugAction = "DeleteAccessControlList"

// bugFront is the deliberately injected bug (Options.InjectBug), kept out of
// the CCM's code so that the binary under test is the production one: the
// replicas reach the emulator through this front, which answers every
// DeleteAccessControlList with success and forwards nothing, and passes
// every other request on unchanged. Each access control list the CCM
// deletes therefore stays in the cloud while the CCM believes it gone, and
// nothing retries it once its Service is deleted: the soak's checker must
// report it ("nothing left for deleted Services").
type bugFront struct {
	next http.Handler
	srv  *http.Server
	addr string
	// lost counts the calls answered without being forwarded.
	lost atomic.Int64
}

// startBugFront serves the front on a free loopback port in front of next.
func startBugFront(next http.Handler) (*bugFront, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bug front: %w", err)
	}
	f := &bugFront{next: next, addr: l.Addr().String()}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := f.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return f, nil
}

// ServeHTTP answers the lost action itself and hands everything else on.
func (f *bugFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	action, err := rpcAction(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if action != bugAction {
		f.next.ServeHTTP(w, r)
		return
	}
	f.lost.Add(1)
	// The answer of a successful delete: its RequestId only.
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"RequestId": fmt.Sprintf("SOAK-BUG-%08d", f.lost.Load())})
}

// rpcAction is the API action a request names: in the x-acs-action header
// (V3 signature), the query or a form body (RPC). A body it reads is put
// back for the handler after it.
func rpcAction(r *http.Request) (string, error) {
	if a := r.Header.Get("x-acs-action"); a != "" {
		return a, nil
	}
	if a := r.URL.Query().Get("Action"); a != "" {
		return a, nil
	}
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	if r.Body == nil || (ct != "" && !strings.HasPrefix(ct, "application/x-www-form-urlencoded")) {
		return "", nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return "", fmt.Errorf("read the request body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	form, err := url.ParseQuery(string(data))
	if err != nil {
		// The gateway answers a malformed body with its own error.
		return "", nil
	}
	return form.Get("Action"), nil
}

// close stops serving.
func (f *bugFront) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
}
