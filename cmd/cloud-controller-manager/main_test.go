package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/app"
)

// execute runs the command in process with args and returns its output.
func execute(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return out
}

// run runs the command in process with args and returns its output and
// error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd, err := app.NewCommand(make(chan struct{}))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), err
}

// versionLine is what --version prints, with or without stamped values.
var versionLine = regexp.MustCompile(`^alicloud-ccm v\S+ \(commit \S+(, built \S+)?, kubernetes libraries v0\.\d+\.\d+\S*, go\S+\)\n$`)

func TestVersion(t *testing.T) {
	got := execute(t, "--version")
	if !versionLine.MatchString(got) {
		t.Errorf("--version printed %q, want our line", got)
	}
}

func TestHelpOpening(t *testing.T) {
	got := execute(t, "--help")
	if !strings.HasPrefix(got, "cloud-controller-manager is the Kubernetes cloud controller manager for\nAlibaba Cloud") {
		t.Errorf("--help does not open with what the CCM is:\n%.300s", got)
	}
	opening, _, _ := strings.Cut(got, "Usage:")
	for _, want := range []string{"--cloud-config", "Global:", "clusterID", "routeTableIDs", "resourceGroupID", "disablePublicSLB", "featureGates",
		"ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ECS_ENDPOINT", "METADATA_ENDPOINT", "ALICLOUD_CLIENT_SCHEME",
		"ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE", "STS_ENDPOINT", "stsEndpoint"} {
		if !strings.Contains(opening, want) {
			t.Errorf("--help opening lacks %q", want)
		}
	}
	if !strings.Contains(got, "--legacy-default-cluster-id") {
		t.Error("--help lacks the flags")
	}
}

// TestStampedBinary builds the binary as make build does and runs it.
func TestStampedBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "cloud-controller-manager")
	pkg := "github.com/alicloud-ccm/alicloud-ccm/internal/version"
	build := exec.Command("go", "build", "-o", bin, "-ldflags",
		"-X "+pkg+".Version=v9.8.7-test -X "+pkg+".Commit=abc1234 -X "+pkg+".BuildDate=2026-11-25T04:40:00Z", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--version"}, {"--version=true"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("%v: %v (want exit 0)", args, err)
		}
		want := regexp.MustCompile(`^alicloud-ccm v9\.8\.7-test \(commit abc1234, built 2026-11-25T04:40:00Z, kubernetes libraries v0\.\d+\.\d+\S*, go\S+\)\n$`)
		if !want.Match(out) {
			t.Errorf("%v printed %q", args, out)
		}
	}
}
