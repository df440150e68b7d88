package plan

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// KubeRecorder keeps the controllers' Kubernetes writes from the API
// server: each is recorded and answered with the object as it is, read
// through the same transport, so the pass goes on as if the write had
// been made. Reads go through.
type KubeRecorder struct {
	writes taken[KubeWrite]
}

// Wrap returns a copy of cfg whose requests go through k.
func (k *KubeRecorder) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return kubeTransport{k: k, next: next}
	})
	return out
}

// Take returns the writes recorded since the last Take and forgets them.
func (k *KubeRecorder) Take() []KubeWrite { return k.writes.take() }

type kubeTransport struct {
	k    *KubeRecorder
	next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t kubeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return t.next.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, fmt.Errorf("plan: read the body of %s %s: %w", req.Method, req.URL.Path, err)
		}
		_ = req.Body.Close()
	}
	t.k.writes.add(KubeWrite{Verb: req.Method, Path: req.URL.Path, Body: string(bytes.TrimSpace(body))})
	if req.Method == http.MethodPost {
		// A create (an event, say) has nothing to read back: answer with
		// what was sent.
		return &http.Response{StatusCode: http.StatusCreated, Status: "201 Created", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": []string{req.Header.Get("Content-Type")}}, Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
	}
	// The object as it is stands in for the object as written; a status
	// subresource reads as its object.
	get := req.Clone(req.Context())
	get.Method, get.Body, get.ContentLength = http.MethodGet, http.NoBody, 0
	get.URL.Path = strings.TrimSuffix(get.URL.Path, "/status")
	get.URL.RawQuery = ""
	get.Header.Del("Content-Type")
	return t.next.RoundTrip(get)
}

// Events is an EventRecorder that keeps the Warning events of a pass
// (invalid annotations, immutable attributes, conflicts), which explain
// writes the plan lists or leaves out; Normal events are dropped.
type Events struct {
	warnings taken[string]
}

var _ record.EventRecorder = (*Events)(nil)

// Event implements record.EventRecorder.
func (e *Events) Event(_ runtime.Object, eventtype, reason, message string) {
	if eventtype != corev1.EventTypeWarning {
		return
	}
	e.warnings.add(reason + ": " + message)
}

// Eventf implements record.EventRecorder.
func (e *Events) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	e.Event(obj, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf implements record.EventRecorder.
func (e *Events) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	e.Eventf(obj, eventtype, reason, messageFmt, args...)
}

// Take returns the warnings recorded since the last Take and forgets them.
func (e *Events) Take() []string { return e.warnings.take() }

// taken is a list the controllers append to concurrently and the plan
// takes whole after each item.
type taken[T any] struct {
	mu    sync.Mutex
	items []T
}

func (l *taken[T]) add(x T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, x)
}

func (l *taken[T]) take() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.items
	l.items = nil
	return out
}
