package provider_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// childConfig names the cloud-config the child builds its provider from.
const childConfig = "PROVIDER_TEST_CLOUD_CONFIG"

// TestProviderSignsWithRRSA: the CCM started as a pod with RRSA (the
// variables the ServiceAccount's webhook injects, STS_ENDPOINT naming the
// emulator's STS) signs its cloud calls with the role's STS credentials,
// although the metadata service would also hand out the instance role's:
// RRSA comes first in the chain. The provider runs in a child process,
// as credentials-go reads the variables and system roots once.
func TestProviderSignsWithRRSA(t *testing.T) {
	issuer := emulatortest.NewOIDCIssuer(t, "https://oidc.emulator.test/provider")
	env := emulatortest.StartWith(t, emulator.Config{STS: emulatortest.RRSAConfig(issuer)})
	env.Seed(t, &api.Seed{
		VPCs:      []api.SeedVPC{{ID: "vpc-rrsa", CIDRBlock: "192.168.0.0/16", VSwitches: []api.SeedVSwitch{{ID: "vsw-rrsa", ZoneID: "cn-hangzhou-h", CIDRBlock: "192.168.0.0/24"}}}},
		Instances: []api.SeedInstance{{VSwitchID: "vsw-rrsa"}},
	})
	stsAddr, certPEM, err := env.Emulator.StartTLS("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"ca.pem": string(certPEM),
		"token":  issuer.Token(t, emulatortest.RRSASubject, "sts.aliyuncs.com", time.Hour),
		"cloud-config.yaml": "Global:\n  clusterID: c-rrsa\n  region: " + env.Region + "\n  vpcid: vpc-rrsa\n" +
			"  ecsEndpoint: " + env.Endpoint + "\n  scheme: HTTP\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out := emulatortest.RunChild(t, "TestProviderChild", "HOME="+dir, "SSL_CERT_FILE="+filepath.Join(dir, "ca.pem"),
		"ALIBABA_CLOUD_ROLE_ARN="+emulatortest.RRSARoleARN, "ALIBABA_CLOUD_OIDC_PROVIDER_ARN="+emulatortest.RRSAProviderARN,
		"ALIBABA_CLOUD_OIDC_TOKEN_FILE="+filepath.Join(dir, "token"),
		"STS_ENDPOINT="+stsAddr, "METADATA_ENDPOINT="+env.URL(), childConfig+"="+filepath.Join(dir, "cloud-config.yaml"))
	var signed []string
	for _, r := range env.Emulator.Requests(gateway.RequestFilter{Action: "DescribeInstances"}) {
		signed = append(signed, r.AccessKeyID)
	}
	if len(signed) == 0 {
		t.Fatal("the provider made no ECS call")
	}
	for _, id := range signed {
		if !strings.HasPrefix(id, "STS.") {
			t.Fatalf("an ECS call was signed with %s, not RRSA's STS credentials", id)
		}
	}
	if n := len(env.Emulator.Requests(gateway.RequestFilter{Action: "AssumeRoleWithOIDC"})); n != 1 {
		t.Fatalf("want one token exchange, got %d", n)
	}
	if strings.Contains(out, files["token"][len(files["token"])/2:]) {
		t.Fatal("the provider's output shows the OIDC token")
	}
}

// TestProviderChild is TestProviderSignsWithRRSA's CCM; alone it skips.
func TestProviderChild(t *testing.T) {
	path := os.Getenv(childConfig)
	if path == "" {
		t.Skip("run by TestProviderSignsWithRRSA")
	}
	p, err := provider.New(path, provider.Options{IMDSv2: true, Network: provider.NetworkPublic})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cloud.Do(context.Background(), p.Client, cloud.ECS, "DescribeInstances", func(cl *cloud.Clients) (*ecs.DescribeInstancesResponse, error) {
		return cl.ECS.DescribeInstances(ecs.CreateDescribeInstancesRequest())
	})
	if err != nil {
		t.Fatalf("cloud call: %v", err)
	}
}
