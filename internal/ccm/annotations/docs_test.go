package annotations_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

var update = flag.Bool("update", false, "rewrite docs/annotations.md from the registry")

// docsPath is the committed, generated annotation reference.
var docsPath = filepath.Join("..", "..", "..", "docs", "annotations.md")

func TestDocsUpToDate(t *testing.T) {
	want := annotations.Docs()
	if *update {
		if err := os.WriteFile(docsPath, want, 0o644); err != nil {
			t.Fatalf("write %s: %v", docsPath, err)
		}
		return
	}
	got, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatalf("read %s: %v (run go generate ./internal/ccm/annotations)", docsPath, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go generate ./internal/ccm/annotations", docsPath)
	}
}
