package cloud

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud/metadata"
)

// Credentials are what signs a request: an AccessKey, or an STS triple.
type Credentials struct {
	// AccessKeyID is the AccessKey id (LTAI... or STS.... for temporary
	// credentials).
	AccessKeyID     string
	accessKeySecret string
	// SecurityToken is the STS token of temporary credentials; empty for an
	// AccessKey.
	SecurityToken string
	// Expiration is zero for long-lived AccessKeys.
	Expiration time.Time
}

// NewCredentials returns credentials from an AccessKey pair.
func NewCredentials(id, secret, token string, exp time.Time) Credentials {
	return Credentials{AccessKeyID: id, accessKeySecret: secret, SecurityToken: token, Expiration: exp}
}

// Secret returns the AccessKey secret, for the signer only.
func (c Credentials) Secret() string { return c.accessKeySecret }

// String never prints the secret or the token.
func (c Credentials) String() string {
	return fmt.Sprintf("Credentials{AccessKeyID:%s sts:%v}", c.AccessKeyID, c.SecurityToken != "")
}

// CredentialsProvider returns the credentials to use now.
type CredentialsProvider interface {
	Credentials(ctx context.Context) (Credentials, error)
}

// StaticProvider always returns the same AccessKey.
type StaticProvider struct {
	// Creds are returned by every Credentials call.
	Creds Credentials
}

// Credentials implements CredentialsProvider.
func (p StaticProvider) Credentials(context.Context) (Credentials, error) { return p.Creds, nil }

// RAMRoleProvider returns the instance RAM role's STS credentials from the
// metadata service and refreshes them before they expire.
type RAMRoleProvider struct {
	md   *metadata.Client
	role string
	// RefreshBefore is how long before expiry new credentials are fetched.
	RefreshBefore time.Duration

	mu  sync.Mutex
	cur Credentials
}

// NewRAMRoleProvider uses role (empty: the instance's only role).
func NewRAMRoleProvider(md *metadata.Client, role string) *RAMRoleProvider {
	return &RAMRoleProvider{md: md, role: role, RefreshBefore: 10 * time.Minute}
}

// Credentials implements CredentialsProvider.
func (p *RAMRoleProvider) Credentials(ctx context.Context) (Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur.AccessKeyID != "" && time.Until(p.cur.Expiration) > p.RefreshBefore {
		return p.cur, nil
	}
	if p.role == "" {
		role, err := p.md.RoleName(ctx)
		if err != nil {
			return Credentials{}, fmt.Errorf("find the instance RAM role: %w", err)
		}
		p.role = role
	}
	rc, err := p.md.Credentials(ctx, p.role)
	if err != nil {
		if p.cur.AccessKeyID != "" && time.Now().Before(p.cur.Expiration) {
			// Still valid: keep using them and retry the refresh next call.
			return p.cur, nil
		}
		return Credentials{}, fmt.Errorf("credentials of RAM role %s: %w", p.role, err)
	}
	p.cur = NewCredentials(rc.AccessKeyID, rc.AccessKeySecret, rc.SecurityToken, rc.Expiration)
	return p.cur, nil
}
