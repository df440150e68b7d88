// Package metadata reads the ECS instance metadata service
// (http://100.100.100.200 by default), with IMDSv2 session tokens: the
// instance's region, VPC and zone for the cloud-config. The instance RAM
// role's credentials are credentials-go's (see cloud.NewChain).
package metadata

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Client reads instance metadata. It is safe for concurrent use.
type Client struct {
	base string
	http *http.Client
	v2   bool

	mu       sync.Mutex
	token    string
	tokenExp time.Time
}

// New returns a client for the metadata service at base; v2 uses IMDSv2
// session tokens, as the existing CCM does by default.
func New(base string, v2 bool) *Client {
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 5 * time.Second}, v2: v2}
}

const tokenTTL = 6 * time.Hour

func (c *Client) sessionToken(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && time.Now().Before(c.tokenExp) {
		return c.token, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.base+"/latest/api/token", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-aliyun-ecs-metadata-token-ttl-seconds", fmt.Sprint(int(tokenTTL.Seconds())))
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("metadata token: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("metadata token: HTTP %d", resp.StatusCode)
	}
	c.token = strings.TrimSpace(string(body))
	c.tokenExp = time.Now().Add(tokenTTL - time.Minute)
	return c.token, nil
}

// Get returns the value at /latest/meta-data/<path>.
func (c *Client) Get(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.GetContext(ctx, path)
}

// GetContext is Get with a context.
func (c *Client) GetContext(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/latest/meta-data/"+strings.TrimLeft(path, "/"), nil)
	if err != nil {
		return "", err
	}
	if c.v2 {
		tok, err := c.sessionToken(ctx)
		if err != nil {
			return "", err
		}
		req.Header.Set("X-aliyun-ecs-metadata-token", tok)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("metadata %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", fmt.Errorf("metadata %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("metadata %s: HTTP %d", path, resp.StatusCode)
	}
	return string(body), nil
}
