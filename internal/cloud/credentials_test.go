package cloud_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud/metadata"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/emulatortest"
)

// TestRAMRoleCredentialsAreRefreshedBeforeExpiry: with no AccessKey, the
// client signs with the instance role's STS credentials from the metadata
// service (IMDSv2), and fetches new ones before the old expire.
func TestRAMRoleCredentialsAreRefreshedBeforeExpiry(t *testing.T) {
	env := emulatortest.StartWith(t, emulator.Config{MetadataCredentialTTL: 4 * time.Second, MetadataRequireToken: true})
	env.Seed(t, emulatortestSeed())
	md := metadata.New(env.URL(), true)
	p := cloud.NewRAMRoleProvider(md, "")
	p.RefreshBefore = 3 * time.Second
	ctx := context.Background()
	first, err := p.Credentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.SecurityToken == "" || first.Expiration.IsZero() {
		t.Fatalf("want STS credentials, got %v", first)
	}
	again, _ := p.Credentials(ctx)
	if again.AccessKeyID != first.AccessKeyID {
		t.Fatal("credentials far from expiry must be reused")
	}
	c, err := cloud.New(cloud.Options{Region: env.Region, Credentials: p,
		Endpoints: cloud.Endpoints{ECS: env.Endpoint, Scheme: "HTTP"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := describeInstances(ctx, c); err != nil {
		t.Fatalf("call signed with STS credentials: %v", err)
	}
	// Past half the lifetime the metadata service rotates, and we are within
	// RefreshBefore of expiry.
	time.Sleep(2200 * time.Millisecond)
	second, err := p.Credentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.AccessKeyID == first.AccessKeyID {
		t.Fatal("credentials close to expiry were not refreshed")
	}
	time.Sleep(2 * time.Second) // the first set has expired now (4s)
	if err := describeInstances(ctx, c); err != nil {
		t.Fatalf("call after the first credentials expired: %v", err)
	}
}
