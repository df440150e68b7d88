package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Metadata service defaults.
const (
	// DefaultMetadataRoleName is the RAM role the metadata service reports.
	DefaultMetadataRoleName = "alicloud-emulator-role"
	// DefaultMetadataCredentialTTL is how long issued STS credentials last.
	DefaultMetadataCredentialTTL = time.Hour
	// maxMetadataTokenTTL is the IMDSv2 token lifetime limit (6 hours).
	maxMetadataTokenTTL = 21600
)

// metadataCreds is the JSON document of /latest/meta-data/ram/security-credentials/ROLE.
type metadataCreds struct {
	AccessKeyID     string `json:"AccessKeyId"`
	AccessKeySecret string `json:"AccessKeySecret"`
	SecurityToken   string `json:"SecurityToken"`
	Expiration      string `json:"Expiration"`
	LastUpdated     string `json:"LastUpdated"`
	Code            string `json:"Code"`
	expires         time.Time
	issued          time.Time
}

// metadata is the ECS instance metadata service (100.100.100.200) served on
// the emulator's own listener under /latest/.
type metadata struct {
	mu     sync.Mutex
	tokens map[string]time.Time
	creds  *metadataCreds
}

func newMetadata() *metadata { return &metadata{tokens: map[string]time.Time{}} }

func (g *Gateway) serveMetadata(w http.ResponseWriter, r *http.Request) {
	m := g.meta
	now := time.Now()
	if r.URL.Path == "/latest/api/token" {
		if r.Method != http.MethodPut {
			metaError(w, http.StatusMethodNotAllowed)
			return
		}
		ttl, err := strconv.Atoi(r.Header.Get("X-aliyun-ecs-metadata-token-ttl-seconds"))
		if err != nil || ttl < 1 || ttl > maxMetadataTokenTTL {
			metaError(w, http.StatusBadRequest)
			return
		}
		tok := store.RandomString(48)
		m.mu.Lock()
		for t, exp := range m.tokens {
			if now.After(exp) {
				delete(m.tokens, t)
			}
		}
		m.tokens[tok] = now.Add(time.Duration(ttl) * time.Second)
		m.mu.Unlock()
		metaText(w, tok)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		metaError(w, http.StatusMethodNotAllowed)
		return
	}
	if tok := r.Header.Get("X-aliyun-ecs-metadata-token"); tok != "" {
		m.mu.Lock()
		exp, ok := m.tokens[tok]
		m.mu.Unlock()
		if !ok || now.After(exp) {
			metaError(w, http.StatusUnauthorized)
			return
		}
	} else if g.cfg.MetadataRequireToken {
		metaError(w, http.StatusForbidden)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/latest/meta-data")
	role := g.cfg.MetadataRoleName
	switch path {
	case "", "/":
		metaText(w, strings.Join([]string{"hostname", "instance/", "instance-id", "mac", "private-ipv4", "ram/",
			"region-id", "vpc-cidr-block", "vpc-id", "vswitch-id", "zone-id"}, "\n"))
		return
	case "/instance", "/instance/":
		metaText(w, "instance-type")
		return
	case "/ram", "/ram/":
		metaText(w, "security-credentials/")
		return
	case "/ram/security-credentials", "/ram/security-credentials/":
		metaText(w, role)
		return
	}
	if name, ok := strings.CutPrefix(path, "/ram/security-credentials/"); ok {
		if name != role {
			metaError(w, http.StatusNotFound)
			return
		}
		data, _ := json.MarshalIndent(g.roleCredentials(now), "", "  ")
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(data)
		return
	}
	g.cfg.Store.RLock()
	id, ok := g.cfg.Identity(g.cfg.MetadataInstanceID)
	g.cfg.Store.RUnlock()
	if !ok {
		metaError(w, http.StatusNotFound)
		return
	}
	values := map[string]string{
		"/region-id":              id.RegionID,
		"/zone-id":                id.ZoneID,
		"/instance-id":            id.InstanceID,
		"/vpc-id":                 id.VpcID,
		"/vswitch-id":             id.VSwitchID,
		"/private-ipv4":           id.PrivateIPv4,
		"/vpc-cidr-block":         id.VpcCIDRBlock,
		"/hostname":               id.Hostname,
		"/instance/instance-type": id.InstanceType,
		"/mac":                    id.MAC,
	}
	v, ok := values[path]
	if !ok {
		metaError(w, http.StatusNotFound)
		return
	}
	metaText(w, v)
}

// roleCredentials returns the role's current STS credentials, issuing new
// ones once half of their lifetime has passed, as the real service rotates
// them well before they expire.
func (g *Gateway) roleCredentials(now time.Time) metadataCreds {
	m := g.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	ttl := g.cfg.MetadataCredentialTTL
	if m.creds == nil || now.After(m.creds.issued.Add(ttl/2)) {
		id, secret, token, exp := g.auth.issueSTS(g.cfg.DefaultAccountID, now, ttl)
		m.creds = &metadataCreds{
			AccessKeyID: id, AccessKeySecret: secret, SecurityToken: token,
			Expiration:  exp.UTC().Format("2006-01-02T15:04:05Z"),
			LastUpdated: now.UTC().Format("2006-01-02T15:04:05Z"),
			Code:        "Success", expires: exp, issued: now,
		}
	}
	return *m.creds
}

func metaText(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(s))
}

func metaError(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	text := http.StatusText(status)
	_, _ = w.Write([]byte("<?xml version=\"1.0\" encoding=\"iso-8859-1\"?>\n<html><head><title>" + strconv.Itoa(status) + " - " + text +
		"</title></head><body><h1>" + strconv.Itoa(status) + " - " + text + "</h1></body></html>"))
}
