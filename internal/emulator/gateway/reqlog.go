package gateway

import (
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultRequestLogSize is how many calls the request log keeps by default.
const DefaultRequestLogSize = 5000

// CodeOK is the Code of a successful call in the request log.
const CodeOK = "OK"

// RequestRecord is one API call in the request log.
type RequestRecord struct {
	// Seq numbers calls from 1 since the emulator started; it survives log resets.
	Seq uint64 `json:"seq"`
	// Time is when the call arrived.
	Time time.Time `json:"time"`
	// Product is the product name ("" when the Version was unknown).
	Product string `json:"product"`
	// Action is the action name as sent.
	Action string `json:"action"`
	// Version is the API version as sent.
	Version string `json:"version"`
	// AccessKeyID is the key that signed the call (never a secret).
	AccessKeyID string `json:"accessKeyId,omitempty"`
	// AccountID is the authenticated account.
	AccountID string `json:"accountId,omitempty"`
	// Params are the query and body parameters, without signatures, tokens
	// or secrets.
	Params map[string]string `json:"params"`
	// Code is CodeOK on success, else the error code returned.
	Code string `json:"code"`
	// Status is the HTTP status (0 when the connection was dropped).
	Status int `json:"status"`
	// Latency is how long the call took, injected latency included.
	Latency Duration `json:"latency"`
	// RequestID is the RequestId returned to the client.
	RequestID string `json:"requestId"`
	// Fault is the id of the fault rule that fired, if any.
	Fault string `json:"fault,omitempty"`
	// ResponseDropped means the call was applied (Code and Status are the
	// answer it had) but a drop fault with after closed the connection
	// instead of sending that answer.
	ResponseDropped bool `json:"responseDropped,omitempty"`
}

// RequestFilter selects records from the request log; zero fields match all.
type RequestFilter struct {
	// Product matches the product name.
	Product string
	// Action matches the action name.
	Action string
	// AccessKeyID matches the access key id that signed the call, so one
	// caller's calls (the CCM's, say) can be seen apart from another's.
	AccessKeyID string
	// Since keeps records that arrived at or after this time.
	Since time.Time
	// AfterSeq keeps records with a larger sequence number.
	AfterSeq uint64
}

// Counter counts the calls of one action.
type Counter struct {
	// Product is the product name: ecs, vpc, slb or nlb.
	Product string `json:"product"`
	// Action is the action name as sent.
	Action string `json:"action"`
	// Calls is how many calls of the action arrived.
	Calls int `json:"calls"`
	// Errors is how many of them were answered with an error code.
	Errors int `json:"errors"`
}

// requestLog is a ring buffer of recent calls plus per-action counters.
type requestLog struct {
	mu       sync.Mutex
	size     int
	ring     []RequestRecord
	next     int
	full     bool
	seq      uint64
	counters map[string]*Counter
}

func newRequestLog(size int) *requestLog {
	if size <= 0 {
		size = DefaultRequestLogSize
	}
	return &requestLog{size: size, ring: make([]RequestRecord, size), counters: map[string]*Counter{}}
}

func (l *requestLog) add(rec RequestRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	rec.Seq = l.seq
	l.ring[l.next] = rec
	l.next++
	if l.next == l.size {
		l.next = 0
		l.full = true
	}
	key := rec.Product + "/" + rec.Action
	c := l.counters[key]
	if c == nil {
		c = &Counter{Product: rec.Product, Action: rec.Action}
		l.counters[key] = c
	}
	c.Calls++
	if rec.Code != CodeOK {
		c.Errors++
	}
}

func (l *requestLog) records(f RequestFilter) []RequestRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ordered []RequestRecord
	if l.full {
		ordered = append(append(ordered, l.ring[l.next:]...), l.ring[:l.next]...)
	} else {
		ordered = l.ring[:l.next]
	}
	out := []RequestRecord{}
	for _, r := range ordered {
		if (f.Product != "" && !strings.EqualFold(f.Product, r.Product)) ||
			(f.Action != "" && f.Action != r.Action) ||
			(f.AccessKeyID != "" && f.AccessKeyID != r.AccessKeyID) ||
			(!f.Since.IsZero() && r.Time.Before(f.Since)) ||
			r.Seq <= f.AfterSeq {
			continue
		}
		cp := r
		cp.Params = make(map[string]string, len(r.Params))
		for k, v := range r.Params {
			cp.Params[k] = v
		}
		out = append(out, cp)
	}
	return out
}

func (l *requestLog) counterList() []Counter {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Counter, 0, len(l.counters))
	for _, c := range l.counters {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Product != out[j].Product {
			return out[i].Product < out[j].Product
		}
		return out[i].Action < out[j].Action
	})
	return out
}

func (l *requestLog) counter(product, action string) Counter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.counters[product+"/"+action]; c != nil {
		return *c
	}
	return Counter{Product: product, Action: action}
}

func (l *requestLog) clearRecords() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring = make([]RequestRecord, l.size)
	l.next, l.full = 0, false
}

func (l *requestLog) clearCounters() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counters = map[string]*Counter{}
}

// sanitize copies parameters for the log, leaving out signatures, tokens
// and anything that looks like a secret (AccessKeySecret, Password,
// PrivateKey of an uploaded certificate).
func sanitize(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		if isSecretParam(k) {
			continue
		}
		out[k] = v
	}
	return out
}

func isSecretParam(k string) bool {
	l := strings.ToLower(k)
	switch l {
	case "signature", "securitytoken", "bearertoken", "oidctoken":
		return true
	}
	return strings.Contains(l, "secret") || strings.Contains(l, "password") || strings.Contains(l, "privatekey")
}
