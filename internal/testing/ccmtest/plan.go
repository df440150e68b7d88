package ccmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/plan"
)

// PlanRun is what one `cloud-controller-manager plan -o json` printed.
type PlanRun struct {
	// Report is its JSON report.
	Report *plan.Report
	// ExitCode is its exit code.
	ExitCode int
	// Log is its standard error (the controllers' log lines).
	Log string
}

// RunPlan runs `cloud-controller-manager plan -o json` as an operator
// would, with o's kubeconfig, cloud-config (written under dir) and cloud
// environment, and args after them (e.g. --cluster-cidr).
func RunPlan(o CCMOptions, dir string, args ...string) (*PlanRun, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "plan-cloud-config.conf")
	if err := os.WriteFile(cfg, []byte(o.CloudConfig), 0o600); err != nil {
		return nil, fmt.Errorf("write the plan's cloud-config: %w", err)
	}
	cmd := exec.Command(bin, append([]string{"plan", "--kubeconfig=" + o.Kubeconfig, "--cloud-config=" + cfg, "-o", "json"}, args...)...)
	cmd.Env = append(os.Environ(), o.Environ()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	out := &PlanRun{}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		out.ExitCode = exit.ExitCode()
	case err != nil:
		return nil, fmt.Errorf("run plan: %w", err)
	}
	out.Log = stderr.String()
	var r plan.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("plan exited %d without a JSON report (%w); stderr:\n%s", out.ExitCode, err, out.Log)
	}
	out.Report = &r
	return out, nil
}
