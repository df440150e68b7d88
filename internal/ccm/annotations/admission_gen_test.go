package annotations_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// admissionFiles are the committed, generated admission manifests: the
// kustomize component's policy and binding and the chart's copy of the
// policy (the chart templates its own binding).
var admissionFiles = map[string]func() []byte{
	filepath.Join("..", "..", "..", "deploy", "admission", "policy.yaml"):                       func() []byte { p, _ := annotations.AdmissionManifests(); return p },
	filepath.Join("..", "..", "..", "deploy", "admission", "binding.yaml"):                      func() []byte { _, b := annotations.AdmissionManifests(); return b },
	filepath.Join("..", "..", "..", "charts", "alicloud-ccm", "files", "admission-policy.yaml"): func() []byte { p, _ := annotations.AdmissionManifests(); return p },
}

func TestAdmissionUpToDate(t *testing.T) {
	for path, gen := range admissionFiles {
		want := gen()
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatalf("write %s: %v", path, err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read %s: %v (run go generate ./internal/ccm/annotations)", path, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./internal/ccm/annotations", path)
		}
	}
}
