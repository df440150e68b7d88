package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnsureHelm returns the path of the helm binary that hack/helm.sh builds
// from the module pinned in hack/helm, building it first when it is missing
// (2.5 CPU-minutes from a cold Go build cache), as EnsureBinaries does
// for the control plane.
// HELM_BIN overrides.
func EnsureHelm(ctx context.Context, logf func(string, ...any)) (string, error) {
	if p := os.Getenv("HELM_BIN"); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "hack", "helm.sh")
	out, err := exec.CommandContext(ctx, script, "--print-path").Output()
	if err != nil {
		return "", fmt.Errorf("%s --print-path: %w", script, err)
	}
	path := strings.TrimSpace(string(out))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if logf != nil {
		logf("localcluster: helm missing, building it with %s", script)
	}
	cmd := exec.CommandContext(ctx, script)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build helm: %w", err)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("build helm: %s not built: %w", path, err)
	}
	return path, nil
}
