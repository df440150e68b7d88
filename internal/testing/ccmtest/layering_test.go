package ccmtest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// TestProductImportsNoHarness: no package of the CCM's product (what
// cmd/cloud-controller-manager links, and every package under
// internal/ccm and internal/cloud) depends on the emulator or on the test
// harness, directly or through another package. Test files may; they are
// not part of the binary.
func TestProductImportsNoHarness(t *testing.T) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/alicloud-ccm/alicloud-ccm/"
	forbidden := []string{module + "internal/emulator", module + "internal/testing"}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`,
		"./cmd/cloud-controller-manager", "./internal/ccm/...", "./internal/cloud/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list named %d packages, want the product's (at least 10):\n%s", len(lines), out)
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		for _, dep := range fields[1:] {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s", fields[0], dep)
				}
			}
		}
	}
}
