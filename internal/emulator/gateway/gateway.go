// Package gateway is the emulator's HTTP front door: it parses RPC-style
// OpenAPI calls, authenticates them, applies throttling and fault rules,
// routes them to a product by Version and Action under the store's lock, and
// writes responses and errors in the shapes the SDKs parse. The same
// listener serves the control API (/_emulator/) and the ECS instance
// metadata service (/latest/).
package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Config configures a Gateway.
type Config struct {
	// Region is the default region for requests without RegionId.
	Region string
	// Regions is the region table; a call naming another region gets its
	// product's UnknownRegion answer. Nil accepts every region.
	Regions *api.Regions
	// Store is the state shared by every product.
	Store *store.Store
	// Products are the emulated products; their Versions must be distinct.
	Products []api.Product

	// AccessKeys are the key pairs accepted for signed calls.
	AccessKeys []AccessKey
	// DisableAuth accepts every call without checking its signature.
	DisableAuth bool
	// DefaultAccountID is the account of unauthenticated calls and of the
	// metadata role (default: the first key's account, else DefaultAccountID).
	DefaultAccountID string
	// RequestLogSize is how many calls the request log keeps (default DefaultRequestLogSize).
	RequestLogSize int

	// Identity resolves the instance the metadata service describes; it
	// is called under the store's read lock.
	Identity func(instanceID string) (api.InstanceIdentity, bool)
	// MetadataInstanceID picks that instance ("" = the first one).
	MetadataInstanceID string
	// MetadataRoleName is the RAM role whose credentials the metadata
	// service hands out (default DefaultMetadataRoleName).
	MetadataRoleName string
	// MetadataCredentialTTL is how long those credentials are valid
	// (default DefaultMetadataCredentialTTL).
	MetadataCredentialTTL time.Duration
	// MetadataRequireToken rejects metadata reads without an IMDSv2 token.
	MetadataRequireToken bool

	// Seed applies a seed for POST /_emulator/seed (nil: not offered).
	Seed func(*api.Seed) (map[string][]string, error)
}

// Gateway is an http.Handler serving every product, the control API and
// the metadata service.
type Gateway struct {
	cfg       Config
	byVersion map[string]*api.Product
	auth      *authenticator
	throttles *throttler
	faults    *faultSet
	log       *requestLog
	meta      *metadata
	control   *http.ServeMux
	started   time.Time
}

// New returns a gateway over the given products.
func New(cfg Config) (*Gateway, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("gateway needs a store")
	}
	cfg.DefaultAccountID = DefaultAccount(cfg.DefaultAccountID, cfg.AccessKeys)
	if cfg.MetadataRoleName == "" {
		cfg.MetadataRoleName = DefaultMetadataRoleName
	}
	if cfg.MetadataCredentialTTL <= 0 {
		cfg.MetadataCredentialTTL = DefaultMetadataCredentialTTL
	}
	if cfg.Identity == nil {
		cfg.Identity = func(string) (api.InstanceIdentity, bool) { return api.InstanceIdentity{}, false }
	}
	for _, k := range cfg.AccessKeys {
		if k.ID == "" || k.Secret == "" {
			return nil, fmt.Errorf("access key %q needs an id and a secret", k.ID)
		}
	}
	g := &Gateway{
		cfg:       cfg,
		byVersion: map[string]*api.Product{},
		auth:      newAuthenticator(cfg.AccessKeys, cfg.DisableAuth),
		throttles: &throttler{},
		faults:    newFaultSet(cfg.Products),
		log:       newRequestLog(cfg.RequestLogSize),
		meta:      newMetadata(),
		started:   time.Now(),
	}
	for i := range cfg.Products {
		p := &cfg.Products[i]
		if _, dup := g.byVersion[p.Version]; dup {
			return nil, fmt.Errorf("two products answer version %s", p.Version)
		}
		g.byVersion[p.Version] = p
	}
	g.control = g.controlMux()
	return g, nil
}

// DefaultAccount is the account of unauthenticated calls and of the
// metadata role: explicit, else the first key's account, else
// DefaultAccountID.
func DefaultAccount(explicit string, keys []AccessKey) string {
	switch {
	case explicit != "":
		return explicit
	case len(keys) > 0 && keys[0].AccountID != "":
		return keys[0].AccountID
	}
	return DefaultAccountID
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == "/_emulator" || strings.HasPrefix(p, ControlPrefix):
		g.control.ServeHTTP(w, r)
	case strings.HasPrefix(p, "/latest/"):
		g.serveMetadata(w, r)
	default:
		g.serveAPI(w, r)
	}
}

// incoming is a parsed API call before routing.
type incoming struct {
	params api.Params
	pairs  []pair
	body   []byte
}

var notFoundAPI = api.Errorf(http.StatusNotFound, "InvalidApi.NotFound", "Specified api is not found, please check your url and method.")

// invalidVersion is the gateway's answer to a Version no product serves:
// the real gateway checks the version before the action.
var invalidVersion = api.Errorf(http.StatusBadRequest, "InvalidVersion", "Specified parameter Version is not valid.")

func (g *Gateway) serveAPI(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := RequestRecord{Time: start, RequestID: g.newRequestID()}
	// Every answer, error or not, names its request in this header as the
	// real gateway does; clients log it when the body cannot be parsed.
	w.Header().Set("x-acs-request-id", rec.RequestID)
	host := "emulator"
	format := formatJSON
	finish := func(status int, code string) {
		rec.Status, rec.Code = status, code
		rec.Latency = Duration(time.Since(start))
		g.log.add(rec)
	}
	fail := func(err error) {
		e := asAPIError(err)
		writeError(w, format, rec.RequestID, host, e)
		finish(e.Status, e.Code)
	}

	in, err := readIncoming(r)
	if in != nil {
		rec.Params = sanitize(in.params)
	}
	if err != nil {
		fail(err)
		return
	}
	if format, err = answerFormat(r, in); err != nil {
		fail(err)
		return
	}
	action, version := in.params.String("Action"), in.params.String("Version")
	if strings.HasPrefix(r.Header.Get("Authorization"), "ACS3-") || action == "" {
		if a := r.Header.Get("x-acs-action"); a != "" {
			action = a
		}
		if v := r.Header.Get("x-acs-version"); v != "" {
			version = v
		}
	}
	rec.Action, rec.Version = action, version
	if action == "" {
		fail(api.MissingParameter("Action"))
		return
	}
	if version == "" {
		fail(api.MissingParameter("Version"))
		return
	}
	prod, ok := g.byVersion[version]
	if !ok {
		fail(invalidVersion)
		return
	}
	host, rec.Product = prod.Host, prod.Name
	act, ok := prod.Actions[action]
	if !ok {
		fail(notFoundAPI)
		return
	}
	var who identity
	if !act.Anonymous {
		who, err = g.auth.verify(r, in, prod.Name, start)
		rec.AccessKeyID, rec.AccountID = who.accessKeyID, who.account
		if err != nil {
			fail(err)
			return
		}
	}
	if err := g.throttles.allow(prod.Name, action, who.account, start); err != nil {
		fail(err)
		return
	}
	fo := g.faults.match(prod.Name, action, in.params)
	rec.Fault = fo.ruleID
	if fo.latency > 0 {
		t := time.NewTimer(fo.latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			finish(0, "ClientClosed")
			return
		}
	}
	if fo.drop && !fo.dropAfter {
		// Logged before the close, so a client that sees the dropped
		// connection also sees the call in the request log.
		finish(0, "ConnectionDropped")
		dropConnection(w)
		return
	}
	if fo.err != nil {
		fail(fo.err)
		return
	}

	region := in.params.String("RegionId")
	switch {
	case region == "" && prod.RegionRequired && !prod.RegionOptional[action]:
		fail(api.MissingParameter("RegionId"))
		return
	case region == "":
		region = g.cfg.Region
	case g.cfg.Regions != nil && prod.UnknownRegion != nil:
		// A mistyped region must fail loudly: answering it with empty
		// lists would let a controller take "nothing found" for truth.
		if _, ok := g.cfg.Regions.Lookup(region); !ok {
			fail(prod.UnknownRegion(region))
			return
		}
	}
	req := &api.Request{
		Product:     prod.Name,
		Action:      action,
		Version:     version,
		RegionID:    region,
		Regions:     g.cfg.Regions,
		AccountID:   who.account,
		AccessKeyID: who.accessKeyID,
		RequestID:   rec.RequestID,
		Now:         start,
		Params:      in.params,
		FailJob:     fo.failJob,
	}
	body, err := g.run(act, req)
	if fo.dropAfter {
		// A lost response: the call is applied and logged with the answer it
		// would have had, then the client sees the connection close. Log
		// first, so the record is there by the time the client fails.
		rec.ResponseDropped = true
		if err != nil {
			e := asAPIError(err)
			finish(e.Status, e.Code)
		} else {
			finish(http.StatusOK, CodeOK)
		}
		dropConnection(w)
		return
	}
	if err != nil {
		fail(err)
		return
	}
	if body == nil {
		body = map[string]any{}
	}
	body["RequestId"] = rec.RequestID
	if format == formatXML {
		writeXML(w, http.StatusOK, action+"Response", body)
	} else {
		writeJSON(w, http.StatusOK, body)
	}
	finish(http.StatusOK, CodeOK)
}

func (g *Gateway) run(act api.Action, req *api.Request) (map[string]any, error) {
	st := g.cfg.Store
	if act.ReadOnly {
		st.RLock()
		defer st.RUnlock()
		return act.Handler(req)
	}
	st.Lock()
	defer st.Unlock()
	body, err := act.Handler(req)
	if err != nil {
		return nil, err
	}
	if err := st.SaveLocked(); err != nil {
		return nil, api.Errorf(http.StatusInternalServerError, "InternalError", "The request processing has failed due to some unknown error: %v", err)
	}
	return body, nil
}

// newRequestID returns a random request id in the cloud's form: a
// version-4 UUID in upper-case hex (9DEC9C28-AB05-4DDF-9A78-6B08EC9CE18C in
// the API reference's examples). Random rather than counted, so that no
// client or test can come to rely on an order the cloud does not give.
func (g *Gateway) newRequestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return strings.ToUpper(string(out[:]))
}

func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

func asAPIError(err error) *api.Error {
	if e, ok := err.(*api.Error); ok {
		return e
	}
	return api.Errorf(http.StatusInternalServerError, "InternalError", "The request processing has failed due to some unknown error, exception or failure.")
}

func writeError(w http.ResponseWriter, format, reqID, host string, e *api.Error) {
	for k, v := range e.Headers {
		w.Header().Set(k, v)
	}
	body := map[string]any{
		"RequestId": reqID,
		"HostId":    host,
		"Code":      e.Code,
		"Message":   e.Message,
		"Recommend": "https://api.aliyun.com/troubleshoot?q=" + url.QueryEscape(e.Code),
	}
	if format == formatXML {
		writeXML(w, e.Status, "Error", body)
		return
	}
	writeJSON(w, e.Status, body)
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	data, err := json.Marshal(body)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"Code":"InternalError","Message":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// Products returns the products the gateway routes to, with their action
// tables (the emulator's dispatch table, which the conformance test covers).
func (g *Gateway) Products() []api.Product {
	return append([]api.Product(nil), g.cfg.Products...)
}

// Requests returns the logged calls matching f, oldest first.
func (g *Gateway) Requests(f RequestFilter) []RequestRecord { return g.log.records(f) }

// Counters returns the per-action call and error counts, sorted.
func (g *Gateway) Counters() []Counter { return g.log.counterList() }

// Counter returns the counts of one action (zero when never called).
func (g *Gateway) Counter(product, action string) Counter { return g.log.counter(product, action) }

// ResetRequests empties the request log (sequence numbers keep counting).
func (g *Gateway) ResetRequests() { g.log.clearRecords() }

// ResetCounters zeroes the per-action counters.
func (g *Gateway) ResetCounters() { g.log.clearCounters() }

// AddFault installs a fault rule and returns it with its id.
func (g *Gateway) AddFault(r FaultRule) (FaultRule, error) { return g.faults.add(r) }

// Faults lists the active fault rules.
func (g *Gateway) Faults() []FaultRule { return g.faults.list() }

// RemoveFault deletes one fault rule and reports whether it existed.
func (g *Gateway) RemoveFault(id string) bool { return g.faults.remove(id) }

// ClearFaults deletes every fault rule.
func (g *Gateway) ClearFaults() { g.faults.clear() }

// AddThrottle installs a throttle rule and returns it with its id.
func (g *Gateway) AddThrottle(r ThrottleRule) (ThrottleRule, error) { return g.throttles.add(r) }

// Throttles lists the active throttle rules.
func (g *Gateway) Throttles() []ThrottleRule { return g.throttles.list() }

// RemoveThrottle deletes one throttle rule and reports whether it existed.
func (g *Gateway) RemoveThrottle(id string) bool { return g.throttles.remove(id) }

// ClearThrottles deletes every throttle rule.
func (g *Gateway) ClearThrottles() { g.throttles.clear() }

// Settings returns the store's delays and quotas.
func (g *Gateway) Settings() SettingsDoc {
	d, q := g.cfg.Store.Settings().Snapshot()
	doc := SettingsDoc{Timing: g.cfg.Store.Settings().Timing(), Delays: map[string]Duration{}, Quotas: q}
	for k, v := range d {
		doc.Delays[k] = Duration(v)
	}
	return doc
}

// UpdateSettings changes the named delays and quotas; it checks every name
// first so that a bad document changes nothing.
func (g *Gateway) UpdateSettings(doc SettingsDoc) error {
	s := g.cfg.Store.Settings()
	d, q := s.Snapshot()
	if doc.Timing != "" {
		if _, err := store.DelaysFor(doc.Timing); err != nil {
			return err
		}
	}
	for k, v := range doc.Delays {
		if _, ok := d[k]; !ok {
			return fmt.Errorf("unknown delay %q (known: %s)", k, strings.Join(store.SortedKeys(d), ", "))
		}
		if v < 0 {
			return fmt.Errorf("delay %q must not be negative", k)
		}
	}
	for k, v := range doc.Quotas {
		if _, ok := q[k]; !ok {
			return fmt.Errorf("unknown quota %q (known: %s)", k, strings.Join(store.SortedKeys(q), ", "))
		}
		if v < 0 {
			return fmt.Errorf("quota %q must not be negative", k)
		}
	}
	if doc.Timing != "" {
		if err := s.SetTiming(doc.Timing); err != nil {
			return err
		}
	}
	for k, v := range doc.Delays {
		if err := s.SetDelay(k, time.Duration(v)); err != nil {
			return err
		}
	}
	for k, v := range doc.Quotas {
		if err := s.SetQuota(k, v); err != nil {
			return err
		}
	}
	return nil
}

// Reset returns the emulator to a fresh account: empty state, default
// settings, and no request log, counters, faults or throttles.
func (g *Gateway) Reset() error {
	if err := g.cfg.Store.Reset(); err != nil {
		return fmt.Errorf("reset state: %w", err)
	}
	g.cfg.Store.Settings().ResetDefaults()
	g.ResetRequests()
	g.ResetCounters()
	g.ClearFaults()
	g.ClearThrottles()
	return nil
}

// IssueSTS registers temporary credentials of account valid for ttl from
// now, which signed calls may use with their SecurityToken until they
// expire; the STS product issues its credentials through it.
func (g *Gateway) IssueSTS(account string, now time.Time, ttl time.Duration) (accessKeyID, accessKeySecret, securityToken string, expires time.Time) {
	return g.auth.issueSTS(account, now, ttl)
}

// RoleCredentials returns the STS credentials the metadata service
// currently hands out for its role, for in-process callers.
func (g *Gateway) RoleCredentials() (accessKeyID, accessKeySecret, securityToken string, expires time.Time) {
	c := g.roleCredentials(time.Now())
	return c.AccessKeyID, c.AccessKeySecret, c.SecurityToken, c.expires
}
