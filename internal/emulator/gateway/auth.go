package gateway

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// AccessKey is an AccessKey pair the gateway accepts, and the account it
// belongs to.
type AccessKey struct {
	// ID is the AccessKeyId, e.g. LTAI5t....
	ID string `json:"id"`
	// Secret is the AccessKeySecret.
	Secret string `json:"secret"`
	// AccountID is the owning account (DefaultAccountID when empty).
	AccountID string `json:"accountId,omitempty"`
}

// DefaultAccountID is the account of keys configured without one, and of
// every call when authentication is disabled.
const DefaultAccountID = "1234567890123456"

// MaxClockSkew is how far a request's timestamp may be from the emulator's
// clock, as on the real gateway; it is also how long nonces are remembered.
const MaxClockSkew = 15 * time.Minute

// stsGrace keeps expired STS credentials known for a while so that late
// callers get InvalidSecurityToken.Expired rather than an unknown key.
const stsGrace = time.Hour

// credential is a key the authenticator knows: a long-term AccessKey or an
// STS key with its token and expiry.
type credential struct {
	secret  string
	account string
	token   string
	expires time.Time
}

// authenticator verifies V1 and V3 signatures against configured keys and
// STS credentials issued by the metadata service.
type authenticator struct {
	disabled bool

	mu     sync.RWMutex
	keys   map[string]credential
	nonces *nonceCache
}

func newAuthenticator(keys []AccessKey, disabled bool) *authenticator {
	a := &authenticator{disabled: disabled, keys: map[string]credential{}, nonces: newNonceCache(200000)}
	for _, k := range keys {
		acct := k.AccountID
		if acct == "" {
			acct = DefaultAccountID
		}
		a.keys[k.ID] = credential{secret: k.Secret, account: acct}
	}
	return a
}

// issueSTS registers a temporary credential and forgets long-expired ones.
func (a *authenticator) issueSTS(account string, now time.Time, ttl time.Duration) (id, secret, token string, expires time.Time) {
	id = "STS.NT" + store.RandomString(26)
	secret = store.RandomString(40)
	token = "CAIS" + store.RandomString(300)
	expires = now.Add(ttl)
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, c := range a.keys {
		if c.token != "" && now.After(c.expires.Add(stsGrace)) {
			delete(a.keys, k)
		}
	}
	a.keys[id] = credential{secret: secret, account: account, token: token, expires: expires}
	return id, secret, token, expires
}

func (a *authenticator) lookup(id string) (credential, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	c, ok := a.keys[id]
	return c, ok
}

// identity is who signed a request.
type identity struct {
	account     string
	accessKeyID string
}

// verify authenticates one API call to product.
func (a *authenticator) verify(r *http.Request, in *incoming, product string, now time.Time) (identity, error) {
	authz := r.Header.Get("Authorization")
	if a.disabled {
		id := identity{account: DefaultAccountID, accessKeyID: in.params.String("AccessKeyId")}
		if strings.HasPrefix(authz, "ACS3-") {
			if f, err := parseV3Authorization(authz); err == nil {
				id.accessKeyID = f.credential
			}
		}
		return id, nil
	}
	if strings.HasPrefix(authz, "ACS3-") {
		return a.verifyV3(r, in, authz, now)
	}
	return a.verifyV1(r, in, product, now)
}

func (a *authenticator) verifyV1(r *http.Request, in *incoming, product string, now time.Time) (identity, error) {
	p := in.params
	for _, name := range []string{"AccessKeyId", "Signature", "SignatureNonce", "Timestamp"} {
		if p.String(name) == "" {
			return identity{}, api.MissingParameter(name)
		}
	}
	if m := p.String("SignatureMethod"); m != "" && m != "HMAC-SHA1" {
		return identity{}, api.InvalidParameter("SignatureMethod", "The specified SignatureMethod %q is not supported; use HMAC-SHA1.", m)
	}
	if v := p.String("SignatureVersion"); v != "" && v != "1.0" {
		return identity{}, api.InvalidParameter("SignatureVersion", "The specified SignatureVersion %q is not supported; use 1.0.", v)
	}
	if t := p.String("SignatureType"); t != "" {
		return identity{}, api.InvalidParameter("SignatureType", "The specified SignatureType %q is not supported by the emulator.", t)
	}
	if err := checkTimestamp(p.String("Timestamp"), now); err != nil {
		return identity{}, err
	}
	keyID := p.String("AccessKeyId")
	cred, err := a.credentialFor(keyID, p.String("SecurityToken"), now)
	if err != nil {
		return identity{}, err
	}
	sts := stringToSignV1(r.Method, in.pairs)
	mac := hmac.New(sha1.New, []byte(cred.secret+"&"))
	mac.Write([]byte(sts))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if subtle.ConstantTimeCompare([]byte(want), []byte(p.String("Signature"))) != 1 {
		if product == v1IncompleteProduct {
			return identity{}, incompleteSignatureMismatch(sts)
		}
		return identity{}, signatureMismatch(sts)
	}
	if !a.nonces.add(keyID+"\x00"+p.String("SignatureNonce"), now) {
		return identity{}, nonceUsed()
	}
	return identity{account: cred.account, accessKeyID: keyID}, nil
}

// v3Fields is a parsed ACS3 Authorization header.
type v3Fields struct {
	algorithm     string
	credential    string
	signedHeaders []string
	signature     string
}

func parseV3Authorization(h string) (v3Fields, error) {
	var f v3Fields
	alg, rest, ok := strings.Cut(h, " ")
	if !ok {
		return f, incompleteSignature("the Authorization header has no Credential, SignedHeaders and Signature")
	}
	f.algorithm = alg
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f.credential = v
		case "SignedHeaders":
			if v != "" {
				f.signedHeaders = strings.Split(v, ";")
			}
		case "Signature":
			f.signature = v
		}
	}
	switch {
	case f.credential == "":
		return f, incompleteSignature("Credential is missing from the Authorization header")
	case len(f.signedHeaders) == 0:
		return f, incompleteSignature("SignedHeaders is missing from the Authorization header")
	case f.signature == "":
		return f, incompleteSignature("Signature is missing from the Authorization header")
	}
	return f, nil
}

func (a *authenticator) verifyV3(r *http.Request, in *incoming, authz string, now time.Time) (identity, error) {
	f, err := parseV3Authorization(authz)
	if err != nil {
		return identity{}, err
	}
	if f.algorithm != "ACS3-HMAC-SHA256" {
		return identity{}, api.InvalidParameter("SignatureAlgorithm", "The signature algorithm %q is not supported by the emulator; use ACS3-HMAC-SHA256.", f.algorithm)
	}
	for _, h := range []string{"x-acs-date", "x-acs-signature-nonce", "x-acs-content-sha256"} {
		if r.Header.Get(h) == "" {
			return identity{}, api.MissingParameter(h)
		}
	}
	if err := checkTimestamp(r.Header.Get("x-acs-date"), now); err != nil {
		return identity{}, err
	}
	sum := sha256.Sum256(in.body)
	if !strings.EqualFold(r.Header.Get("x-acs-content-sha256"), hex.EncodeToString(sum[:])) {
		return identity{}, api.Errorf(http.StatusBadRequest, "InvalidParameter", "The x-acs-content-sha256 header does not match the SHA-256 of the request body.")
	}
	cred, err := a.credentialFor(f.credential, r.Header.Get("x-acs-security-token"), now)
	if err != nil {
		return identity{}, err
	}
	sts := stringToSignV3(r, f.signedHeaders)
	mac := hmac.New(sha256.New, []byte(cred.secret))
	mac.Write([]byte(sts))
	want := hex.EncodeToString(mac.Sum(nil))
	if subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(f.signature))) != 1 {
		return identity{}, signatureMismatch(sts)
	}
	if !a.nonces.add(f.credential+"\x00"+r.Header.Get("x-acs-signature-nonce"), now) {
		return identity{}, nonceUsed()
	}
	return identity{account: cred.account, accessKeyID: f.credential}, nil
}

// credentialFor resolves a key id, checking the STS token for STS keys.
func (a *authenticator) credentialFor(keyID, token string, now time.Time) (credential, error) {
	cred, ok := a.lookup(keyID)
	if !ok {
		return credential{}, api.Errorf(http.StatusNotFound, "InvalidAccessKeyId.NotFound", "Specified access key is not found.")
	}
	if cred.token == "" {
		return cred, nil
	}
	if token == "" {
		return credential{}, api.Errorf(http.StatusBadRequest, "MissingSecurityToken", "SecurityToken is mandatory for this action.")
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(cred.token)) != 1 {
		return credential{}, api.Errorf(http.StatusBadRequest, "InvalidSecurityToken.MismatchWithAccessKey", "Specified SecurityToken mismatch with the AccessKey.")
	}
	if !now.Before(cred.expires) {
		return credential{}, api.Errorf(http.StatusBadRequest, "InvalidSecurityToken.Expired", "Specified SecurityToken is expired.")
	}
	return cred, nil
}

func checkTimestamp(ts string, now time.Time) error {
	t, err := time.Parse("2006-01-02T15:04:05Z", ts)
	if err != nil {
		if t, err = time.Parse(time.RFC3339, ts); err != nil {
			return api.Errorf(http.StatusBadRequest, "InvalidTimeStamp.Format", "Specified time stamp or date value is not well formatted.")
		}
	}
	d := now.Sub(t)
	if d < 0 {
		d = -d
	}
	if d > MaxClockSkew {
		return api.Errorf(http.StatusBadRequest, "InvalidTimeStamp.Expired", "Specified time stamp or date value is expired.")
	}
	return nil
}

func signatureMismatch(stringToSign string) *api.Error {
	return api.Errorf(http.StatusBadRequest, "SignatureDoesNotMatch", "Specified signature is not matched with our calculation. server string to sign is:%s", stringToSign)
}

// v1IncompleteProduct answers a V1 signature that does not match (a wrong
// secret or a parameter changed after signing) with IncompleteSignature
// rather than SignatureDoesNotMatch, as ECS does: ecs.aliyuncs.com's answer
// quoted in github.com/fog/fog-aliyun issue 32 ("IncompleteSignature", "The
// request signature does not conform to Aliyun standards. server string to
// sign is: ..."), and github.com/aliyun/alibaba-cloud-sdk-go
// sdk/errors/signature_does_not_match_wrapper.go, which reads the server's
// string to sign after "server string to sign is:" from either code. The
// other products keep SignatureDoesNotMatch (no recording of theirs).
const v1IncompleteProduct = "ecs"

// incompleteSignatureMismatch is ECS's answer to a V1 signature that does
// not match, with the server's string to sign where SDKs look for it.
func incompleteSignatureMismatch(stringToSign string) *api.Error {
	return api.Errorf(http.StatusBadRequest, "IncompleteSignature", "The request signature does not conform to Aliyun standards. server string to sign is:%s", stringToSign)
}

func nonceUsed() *api.Error {
	return api.Errorf(http.StatusBadRequest, "SignatureNonceUsed", "Specified signature nonce was used already.")
}

func incompleteSignature(why string) *api.Error {
	return api.Errorf(http.StatusBadRequest, "IncompleteSignature", "The request signature does not conform to Aliyun standards: %s.", why)
}

// percentEncode is the RFC 3986 encoding both signature versions use.
func percentEncode(s string) string {
	e := url.QueryEscape(s)
	if !strings.ContainsAny(e, "+*%") {
		return e
	}
	e = strings.ReplaceAll(e, "+", "%20")
	e = strings.ReplaceAll(e, "*", "%2A")
	return strings.ReplaceAll(e, "%7E", "~")
}

// pair is one decoded parameter as sent, in query or form body.
type pair struct{ k, v string }

// canonicalQuery sorts and encodes decoded parameters as k=v&k=v.
func canonicalQuery(pairs []pair) string {
	enc := make([]pair, 0, len(pairs))
	for _, p := range pairs {
		enc = append(enc, pair{percentEncode(p.k), percentEncode(p.v)})
	}
	sort.Slice(enc, func(i, j int) bool {
		if enc[i].k != enc[j].k {
			return enc[i].k < enc[j].k
		}
		return enc[i].v < enc[j].v
	})
	var b strings.Builder
	for i, p := range enc {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

// stringToSignV1 follows signature V1: every query and form parameter but
// Signature, canonicalized, then encoded a second time.
func stringToSignV1(method string, pairs []pair) string {
	signed := make([]pair, 0, len(pairs))
	for _, p := range pairs {
		if p.k != "Signature" {
			signed = append(signed, p)
		}
	}
	return method + "&%2F&" + percentEncode(canonicalQuery(signed))
}

// stringToSignV3 follows ACS3-HMAC-SHA256 over the headers the client says
// it signed, with the Host as received.
func stringToSignV3(r *http.Request, signedHeaders []string) string {
	names := make([]string, len(signedHeaders))
	for i, h := range signedHeaders {
		names[i] = strings.ToLower(strings.TrimSpace(h))
	}
	sort.Strings(names)
	var hdrs strings.Builder
	for _, n := range names {
		v := r.Header.Get(n)
		if n == "host" {
			v = r.Host
		} else if vs := r.Header.Values(n); len(vs) > 1 {
			v = strings.Join(vs, ",")
		}
		hdrs.WriteString(n)
		hdrs.WriteByte(':')
		hdrs.WriteString(strings.TrimSpace(v))
		hdrs.WriteByte('\n')
	}
	var qp []pair
	for k, vs := range r.URL.Query() {
		for _, v := range vs {
			qp = append(qp, pair{k, v})
		}
	}
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	canonical := r.Method + "\n" + path + "\n" + canonicalQuery(qp) + "\n" + hdrs.String() + "\n" +
		strings.Join(names, ";") + "\n" + r.Header.Get("x-acs-content-sha256")
	sum := sha256.Sum256([]byte(canonical))
	return "ACS3-HMAC-SHA256\n" + hex.EncodeToString(sum[:])
}

// nonceCache remembers nonces for the skew window in bounded memory: the
// oldest entries are dropped first when it is full, and entries older than
// the window are useless anyway because their timestamps are rejected.
type nonceCache struct {
	mu    sync.Mutex
	max   int
	seen  map[string]time.Time
	order []nonceEntry
	head  int
}

type nonceEntry struct {
	key string
	at  time.Time
}

func newNonceCache(max int) *nonceCache {
	return &nonceCache{max: max, seen: map[string]time.Time{}}
}

// add records a nonce and reports whether it was new.
func (c *nonceCache) add(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.head < len(c.order) {
		e := c.order[c.head]
		if now.Sub(e.at) <= 2*MaxClockSkew && len(c.order)-c.head < c.max {
			break
		}
		if at, ok := c.seen[e.key]; ok && at.Equal(e.at) {
			delete(c.seen, e.key)
		}
		c.order[c.head] = nonceEntry{}
		c.head++
	}
	if c.head > 1024 && c.head*2 > len(c.order) {
		c.order = append([]nonceEntry(nil), c.order[c.head:]...)
		c.head = 0
	}
	if at, ok := c.seen[key]; ok && now.Sub(at) <= 2*MaxClockSkew {
		return false
	}
	c.seen[key] = now
	c.order = append(c.order, nonceEntry{key, now})
	return true
}

func (c *nonceCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = map[string]time.Time{}
	c.order = nil
	c.head = 0
}
