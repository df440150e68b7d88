package sts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// publicKey is one key of a provider's JSON Web Key Set.
type publicKey struct {
	kid string
	key crypto.PublicKey
}

// jwk is the subset of RFC 7517 members an OIDC issuer publishes for
// RS256 and ES256 signing keys (kube-apiserver's are one or the other).
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// parseJWKS reads the keys of a {"keys":[...]} document.
func parseJWKS(data []byte) ([]publicKey, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("decode JWKS: %w", err)
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("JWKS has no keys")
	}
	out := make([]publicKey, 0, len(set.Keys))
	for i, k := range set.Keys {
		pk, err := k.public()
		if err != nil {
			return nil, fmt.Errorf("JWKS key %d (kid %q): %w", i, k.Kid, err)
		}
		out = append(out, publicKey{kid: k.Kid, key: pk})
	}
	return out, nil
}

func (k jwk) public() (crypto.PublicKey, error) {
	b := func(s string) (*big.Int, error) {
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(raw) == 0 {
			return nil, fmt.Errorf("bad base64url member")
		}
		return new(big.Int).SetBytes(raw), nil
	}
	switch k.Kty {
	case "RSA":
		n, err := b(k.N)
		if err != nil {
			return nil, fmt.Errorf("n: %w", err)
		}
		e, err := b(k.E)
		if err != nil || !e.IsInt64() {
			return nil, fmt.Errorf("e: not a small integer")
		}
		return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
	case "EC":
		if k.Crv != "P-256" {
			return nil, fmt.Errorf("curve %q is not supported (P-256 only)", k.Crv)
		}
		x, err := b(k.X)
		if err != nil {
			return nil, fmt.Errorf("x: %w", err)
		}
		y, err := b(k.Y)
		if err != nil {
			return nil, fmt.Errorf("y: %w", err)
		}
		return &ecdsa.PublicKey{Curve: elliptic.P256(), X: x, Y: y}, nil
	}
	return nil, fmt.Errorf("key type %q is not supported (RSA or EC)", k.Kty)
}

// claims are the registered claims AssumeRoleWithOIDC checks.
type claims struct {
	Issuer    string   `json:"iss"`
	Subject   string   `json:"sub"`
	Audience  audience `json:"aud"`
	Expiry    int64    `json:"exp"`
	IssuedAt  int64    `json:"iat"`
	NotBefore int64    `json:"nbf"`
}

// audience is a JWT "aud": one string or a list of them.
type audience []string

// UnmarshalJSON accepts both forms.
func (a *audience) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(data, &many); err != nil {
		return err
	}
	*a = many
	return nil
}

// The STS codes of a token that cannot be used, as the real service names
// them (all HTTP 401).
func tokenInvalid(msg string) *api.Error {
	return api.Errorf(http.StatusUnauthorized, "AuthenticationFail.OIDCToken.Invalid", "%s", msg)
}

// parseToken decodes a compact JWS and checks its signature with one of
// keys; it returns the claims unverified for time and audience.
func parseToken(token string, keys []publicKey) (claims, error) {
	var c claims
	if token == "" {
		return c, tokenInvalid("The OIDCToken can not empty.")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, tokenInvalid("The number of Jwt field should be divided into 3 parts with '.' .")
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	pb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return c, tokenInvalid("Cannot decode base64 encoded response(format invalided).")
	}
	if json.Unmarshal(hb, &header) != nil || json.Unmarshal(pb, &c) != nil {
		return c, tokenInvalid("The Jwt content is invalid that cannot be recognized.")
	}
	if header.Alg != "RS256" && header.Alg != "ES256" {
		return c, tokenInvalid(fmt.Sprintf("The algorithm %s that be specified in Jwt header is unknown.", header.Alg))
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	for _, k := range keys {
		if header.Kid != "" && k.kid != "" && k.kid != header.Kid {
			continue
		}
		if verify(header.Alg, k.key, digest[:], sig) {
			return c, nil
		}
	}
	return c, api.Errorf(http.StatusUnauthorized, "AuthenticationFail.OIDCToken.InvalidSignature", "OIDC token validate failed: invalid signature.")
}

func verify(alg string, key crypto.PublicKey, digest, sig []byte) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return alg == "RS256" && rsa.VerifyPKCS1v15(k, crypto.SHA256, digest, sig) == nil
	case *ecdsa.PublicKey:
		// JWS carries ES256 signatures as r||s, 32 bytes each.
		if alg != "ES256" || len(sig) != 64 {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(k, digest, r, s)
	}
	return false
}

// checkTimes refuses a token past its exp or before its nbf, with the
// clock skew the real service allows.
func (c claims) checkTimes(now time.Time) error {
	if c.Expiry == 0 || now.After(time.Unix(c.Expiry, 0).Add(tokenSkew)) {
		return api.Errorf(http.StatusUnauthorized, "AuthenticationFail.OIDCToken.Expired", "This JsonWebToken is expired.")
	}
	if c.NotBefore != 0 && now.Add(tokenSkew).Before(time.Unix(c.NotBefore, 0)) {
		return tokenInvalid("The JsonWebToken is not valid yet (nbf is in the future).")
	}
	return nil
}

// tokenSkew is how far the token's times may be off the emulator's clock.
const tokenSkew = 30 * time.Second
