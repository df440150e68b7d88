package cloud

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Placeholder ids the Recorder answers writes with start with
// PlaceholderPrefix, e.g. "<new LoadBalancer>": a later write of the same
// pass that names one (listeners on the load balancer created before
// them) is recorded with it, and a read that names one is answered empty
// by the Recorder instead of asking the cloud about an id it never made.
const PlaceholderPrefix = "<new "

// readPrefixes start the actions that only read, in every product the CCM
// calls; every other action counts as a write and is never sent.
var readPrefixes = []string{"Describe", "List", "Get", "Query"}

// IsRead reports whether action only reads. Unknown verbs count as writes,
// so a Recorder errs towards not sending.
func IsRead(action string) bool {
	for _, p := range readPrefixes {
		if strings.HasPrefix(action, p) {
			return true
		}
	}
	return false
}

// versions maps each product's API version to the product, as the SDK
// sends it on every call.
var versions = map[string]Product{"2014-05-26": ECS, "2016-04-28": VPC, "2014-05-15": SLB, "2022-04-30": NLB}

// unrecorded are the request parameters that are the call's envelope
// (signature, credentials, format, idempotence token), not what it
// changes.
var unrecorded = map[string]bool{
	"Action": true, "Version": true, "Format": true, "AccessKeyId": true, "SecurityToken": true,
	"Signature": true, "SignatureMethod": true, "SignatureVersion": true, "SignatureNonce": true, "SignatureType": true,
	"Timestamp": true, "RegionId": true, "ClientToken": true, "BearerToken": true,
}

// WithoutEnvelope returns the parameters of a call that say what it does:
// params without its signature, credentials, format, region and
// idempotence token.
func WithoutEnvelope(params map[string]string) map[string]string {
	out := make(map[string]string, len(params))
	for k, v := range params {
		if !unrecorded[k] {
			out[k] = v
		}
	}
	return out
}

// RecordedWrite is one write a Recorder kept from the cloud.
type RecordedWrite struct {
	// Product is the product the write was for.
	Product Product `json:"product"`
	// Action is the API action.
	Action string `json:"action"`
	// Params are the parameters it would have sent, envelope left out.
	Params map[string]string `json:"params"`
	// Created is the placeholder id the Recorder answered a create with
	// ("" for other writes).
	Created string `json:"created,omitempty"`
}

// Recorder is an http.RoundTripper for Options.Transport that lets reads
// through and keeps every write from the cloud: it records it and answers
// it as the cloud would a success, with a placeholder id for what a create
// makes, so the pass that made it goes on to its later writes. It is the
// `plan` command's safety net and its record: the controllers run their
// own passes through it, and whatever they would write is listed, never
// sent.
type Recorder struct {
	next http.RoundTripper

	mu     sync.Mutex
	writes []RecordedWrite
	made   map[string]int
}

// NewRecorder returns a Recorder sending reads through next (nil: the
// client's own transport).
func NewRecorder(next http.RoundTripper) *Recorder {
	if next == nil {
		next = newTransport()
	}
	return &Recorder{next: next, made: map[string]int{}}
}

// Take returns the writes recorded since the last Take and forgets them.
func (r *Recorder) Take() []RecordedWrite {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.writes
	r.writes = nil
	return out
}

// RoundTrip implements http.RoundTripper.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	params, err := requestParams(req)
	if err != nil {
		return nil, fmt.Errorf("recorder: read the request's parameters: %w", err)
	}
	action := params["Action"]
	if action == "" {
		// Not an OpenAPI call: nothing the CCM writes goes without an Action.
		return nil, fmt.Errorf("recorder: refusing a request without an Action to %s", req.URL.Host)
	}
	if IsRead(action) {
		for _, v := range params {
			if strings.Contains(v, PlaceholderPrefix) {
				return answer(req, r.readPlaceholder(action, params))
			}
		}
		return r.next.RoundTrip(req)
	}
	w := RecordedWrite{Product: versions[params["Version"]], Action: action, Params: WithoutEnvelope(params)}
	body := map[string]any{"RequestId": "plan-" + action, "JobId": PlaceholderPrefix + "job>", "Success": true}
	r.mu.Lock()
	if field, noun, ok := created(action); ok {
		r.made[noun]++
		w.Created = PlaceholderPrefix + noun + ">"
		if n := r.made[noun]; n > 1 {
			w.Created = fmt.Sprintf("%s%s#%d>", PlaceholderPrefix, noun, n)
		}
		body[field] = w.Created
		if field == "LoadBalancerId" {
			// NLB's CreateLoadBalancer answers LoadbalancerId, and the
			// SDK matches answer fields case-sensitively.
			body["LoadbalancerId"] = w.Created
		}
	}
	r.writes = append(r.writes, w)
	r.mu.Unlock()
	return answer(req, body)
}

// readPlaceholder answers a read that names a placeholder: nothing exists
// under it yet, except that an NLB created in this pass reads as Active,
// as the pass waits for that before its listeners.
func (r *Recorder) readPlaceholder(action string, params map[string]string) map[string]any {
	body := map[string]any{"RequestId": "plan-" + action}
	if action == "GetLoadBalancerAttribute" {
		body["LoadBalancerId"] = params["LoadBalancerId"]
		body["LoadBalancerStatus"] = "Active"
	}
	return body
}

// created names the id field a create's answer carries and the noun of its
// placeholder: Create<Thing> answers <Thing>Id, except the CLB access
// control list's AclId.
func created(action string) (field, noun string, ok bool) {
	thing, ok := strings.CutPrefix(action, "Create")
	if !ok || thing == "" || strings.HasSuffix(thing, "Entries") || strings.HasSuffix(thing, "Listener") && thing != "Listener" {
		// Route entries answer no id per entry; a CLB listener is named
		// by its port.
		return "", "", false
	}
	if thing == "AccessControlList" {
		return "AclId", thing, true
	}
	return thing + "Id", thing, true
}

// requestParams are the query and form parameters of an OpenAPI request;
// the body is put back for the next transport.
func requestParams(req *http.Request) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range req.URL.Query() {
		out[k] = v[0]
	}
	if req.Body == nil || req.Body == http.NoBody {
		return out, nil
	}
	data, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	_ = req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(data))
	if !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return out, nil
	}
	form, err := url.ParseQuery(string(data))
	if err != nil {
		return nil, err
	}
	for k, v := range form {
		out[k] = v[0]
	}
	return out, nil
}

// answer is a 200 JSON response to req.
func answer(req *http.Request, body map[string]any) (*http.Response, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(data)),
		ContentLength: int64(len(data)), Request: req,
	}, nil
}
