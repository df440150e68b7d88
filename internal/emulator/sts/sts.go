// Package sts emulates the Security Token Service (2015-04-01) over the
// shared gateway: AssumeRoleWithOIDC, which RRSA (credentials-go's
// oidc_role_arn source) calls with a ServiceAccount token to get the STS
// credentials of a RAM role. The credentials are registered with the
// gateway, which accepts them for signatures until they expire.
package sts

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// Version is the STS API version.
const Version = "2015-04-01"

// DefaultAudience is the audience RRSA tokens carry, and the client id an
// OIDC provider accepts when it names none.
const DefaultAudience = "sts.aliyuncs.com"

// DefaultMaxSessionDuration is a role's longest session unless it sets one.
const DefaultMaxSessionDuration = time.Hour

// minSessionDuration is the shortest session STS grants.
const minSessionDuration = 15 * time.Minute

// OIDCProvider is an identity provider registered with RAM: its tokens are
// what AssumeRoleWithOIDC accepts.
type OIDCProvider struct {
	// Name makes the ARN acs:ram::<account>:oidc-provider/<Name>.
	Name string `json:"name"`
	// IssuerURL must equal the tokens' iss.
	IssuerURL string `json:"issuerURL"`
	// ClientIDs are the audiences accepted (default DefaultAudience).
	ClientIDs []string `json:"clientIDs,omitempty"`
	// JWKS is the issuer's public key set as its jwks_uri serves it (RSA
	// keys for RS256, P-256 keys for ES256).
	JWKS json.RawMessage `json:"jwks"`
}

// Role is a RAM role that OIDC tokens may assume.
type Role struct {
	// Name makes the ARN acs:ram::<account>:role/<Name>.
	Name string `json:"name"`
	// Providers are the OIDC providers the role's trust policy names; a
	// token of another provider gets AuthenticationFail.NoPermission.
	Providers []string `json:"providers"`
	// Subjects, when set, are the only token subjects trusted
	// (system:serviceaccount:<namespace>:<name> for RRSA).
	Subjects []string `json:"subjects,omitempty"`
	// MaxSessionDurationSeconds bounds DurationSeconds (default 3600).
	MaxSessionDurationSeconds int `json:"maxSessionDurationSeconds,omitempty"`
}

// Config is what RAM holds for STS: providers and roles of one account.
type Config struct {
	// AccountID owns the roles and providers (the emulator's account).
	AccountID string `json:"accountID,omitempty"`
	// OIDCProviders are the registered identity providers.
	OIDCProviders []OIDCProvider `json:"oidcProviders"`
	// Roles are the roles tokens may assume.
	Roles []Role `json:"roles"`
	// CredentialTTL, when set, is the lifetime of every credential issued,
	// whatever DurationSeconds asks: a test knob (the real service grants
	// at least 15 minutes) that the response's Expiration states truthfully.
	CredentialTTL time.Duration `json:"-"`
}

// Issuer registers temporary credentials for account with the gateway,
// which then accepts them until expires.
type Issuer func(account string, now time.Time, ttl time.Duration) (id, secret, token string, expires time.Time)

// Service is the emulated STS.
type Service struct {
	cfg       Config
	providers map[string]provider
	issue     Issuer
}

// provider is a registered OIDC provider with its parsed keys.
type provider struct {
	OIDCProvider
	keys []publicKey
}

// New checks cfg (every provider's keys parse, every role trusts known
// providers) and returns the service; issue is called per credential.
func New(cfg Config, issue Issuer) (*Service, error) {
	if issue == nil {
		return nil, fmt.Errorf("sts: no credential issuer")
	}
	s := &Service{cfg: cfg, providers: map[string]provider{}, issue: issue}
	for i, p := range cfg.OIDCProviders {
		if p.Name == "" || p.IssuerURL == "" {
			return nil, fmt.Errorf("sts: OIDC provider %d needs a name and an issuerURL", i)
		}
		keys, err := parseJWKS(p.JWKS)
		if err != nil {
			return nil, fmt.Errorf("sts: OIDC provider %s: %w", p.Name, err)
		}
		s.providers[p.Name] = provider{p, keys}
	}
	for _, r := range cfg.Roles {
		if r.Name == "" {
			return nil, fmt.Errorf("sts: a role needs a name")
		}
		for _, p := range r.Providers {
			if _, ok := s.providers[p]; !ok {
				return nil, fmt.Errorf("sts: role %s trusts unknown OIDC provider %s", r.Name, p)
			}
		}
	}
	return s, nil
}

// Product registers STS with the gateway. AssumeRoleWithOIDC is anonymous:
// the OIDC token is the caller's proof, as on the real service.
func (s *Service) Product() api.Product {
	return api.Product{
		Name:    "sts",
		Version: Version,
		Host:    "sts.aliyuncs.com",
		Actions: map[string]api.Action{
			"AssumeRoleWithOIDC": {Handler: s.assumeRoleWithOIDC, ReadOnly: true, Anonymous: true},
		},
	}
}

// arnPattern matches acs:ram::<account>:<kind>/<name>.
var arnPattern = regexp.MustCompile(`^acs:ram::(\d+):(role|oidc-provider)/([^/]+)$`)

func parseARN(param, arn, kind string) (account, name string, err error) {
	m := arnPattern.FindStringSubmatch(arn)
	if m == nil || m[2] != kind {
		return "", "", api.Errorf(http.StatusBadRequest, "InvalidParameter."+param, "The parameter %s is wrongly formed.", param)
	}
	return m[1], m[3], nil
}

var sessionNamePattern = regexp.MustCompile(`^[a-zA-Z0-9.@_-]{2,64}$`)

func (s *Service) assumeRoleWithOIDC(req *api.Request) (map[string]any, error) {
	p := req.Params
	for _, name := range []string{"RoleArn", "OIDCProviderArn"} {
		if p.String(name) == "" {
			return nil, api.MissingParameter(name)
		}
	}
	roleAcct, roleName, err := parseARN("RoleArn", p.String("RoleArn"), "role")
	if err != nil {
		return nil, err
	}
	provAcct, provName, err := parseARN("OIDCProviderArn", p.String("OIDCProviderArn"), "oidc-provider")
	if err != nil {
		return nil, err
	}
	session := p.String("RoleSessionName")
	if session != "" && !sessionNamePattern.MatchString(session) {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidParameter.RoleSessionName", "The parameter RoleSessionName is wrongly formed.")
	}
	prov, ok := s.providers[provName]
	if !ok || provAcct != s.cfg.AccountID {
		return nil, api.Errorf(http.StatusUnauthorized, "AuthenticationFail.NoPermission", "No such OIDC Provider registered.")
	}
	c, err := parseToken(p.String("OIDCToken"), prov.keys)
	if err != nil {
		return nil, err
	}
	if c.Issuer != prov.IssuerURL {
		return nil, tokenInvalid("The issuer of the JsonWebToken does not match the OIDC provider's issuer URL.")
	}
	if err := c.checkTimes(req.Now); err != nil {
		return nil, err
	}
	clientIDs := prov.ClientIDs
	if len(clientIDs) == 0 {
		clientIDs = []string{DefaultAudience}
	}
	if !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(clientIDs, a) }) {
		return nil, api.Errorf(http.StatusUnauthorized, "AuthenticationFail.OIDCToken.AudienceNotMatch", "Invalid audience.")
	}
	role, ok := s.role(roleName)
	if !ok || roleAcct != s.cfg.AccountID {
		return nil, api.Errorf(http.StatusNotFound, "EntityNotExist.Role", "The role not exists: %s.", p.String("RoleArn"))
	}
	if !slices.Contains(role.Providers, provName) || (len(role.Subjects) > 0 && !slices.Contains(role.Subjects, c.Subject)) {
		return nil, api.Errorf(http.StatusUnauthorized, "AuthenticationFail.NoPermission", "There is no permission")
	}
	maxDur := DefaultMaxSessionDuration
	if role.MaxSessionDurationSeconds > 0 {
		maxDur = time.Duration(role.MaxSessionDurationSeconds) * time.Second
	}
	dur := time.Hour
	if v := p.String("DurationSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || time.Duration(n)*time.Second < minSessionDuration || time.Duration(n)*time.Second > maxDur {
			return nil, api.Errorf(http.StatusBadRequest, "InvalidParameter.DurationSeconds", "The Min/Max value of DurationSeconds is 15min/%s.", maxDur)
		}
		dur = time.Duration(n) * time.Second
	}
	dur = min(dur, maxDur)
	if s.cfg.CredentialTTL > 0 {
		dur = s.cfg.CredentialTTL
	}
	if session == "" {
		session = "oidc-session"
	}
	// Expiration is stated to the second; the gateway enforces that same
	// instant, not a fraction of a second later.
	expires := req.Now.Add(dur).UTC().Truncate(time.Second)
	id, secret, token, expires := s.issue(roleAcct, req.Now, expires.Sub(req.Now))
	stamp := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }
	roleID := roleIDOf(roleAcct, roleName)
	return map[string]any{
		"Credentials": map[string]any{
			"AccessKeyId": id, "AccessKeySecret": secret, "SecurityToken": token, "Expiration": stamp(expires),
		},
		"AssumedRoleUser": map[string]any{
			"AssumedRoleId": roleID + ":" + session,
			"Arn":           "acs:ram::" + roleAcct + ":role/" + strings.ToLower(roleName) + "/" + session,
		},
		"OIDCTokenInfo": map[string]any{
			"Subject": c.Subject, "Issuer": c.Issuer, "ClientIds": strings.Join(c.Audience, ","),
			"ExpirationTime": stamp(time.Unix(c.Expiry, 0)), "IssuanceTime": stamp(time.Unix(c.IssuedAt, 0)),
			"VerificationInfo": "Success",
		},
	}, nil
}

func (s *Service) role(name string) (Role, bool) {
	for _, r := range s.cfg.Roles {
		// RAM role names are case-insensitive.
		if strings.EqualFold(r.Name, name) {
			return r, true
		}
	}
	return Role{}, false
}

// roleIDOf is a stable 19-digit role id, as RAM shows them.
func roleIDOf(account, name string) string {
	sum := sha256.Sum256([]byte(account + "/" + strings.ToLower(name)))
	return strconv.FormatUint(300000000000000000+binary.BigEndian.Uint64(sum[:8])%99999999999999999, 10)
}
