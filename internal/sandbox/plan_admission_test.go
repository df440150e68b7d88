package sandbox_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/sandbox"
)

// envList is sandbox.env as a process environment, as
// `set -a; . sandbox.env; set +a` gives a shell (PATH and HOME kept).
func envList(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "sandbox.env"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		out = append(out, k+"="+strings.Trim(v, "'"))
	}
	return out
}

// checkPlan runs cloud-controller-manager plan on the running, converged
// sandbox exactly as docs/sandbox.md shows: with sandbox.env sourced and
// nothing else, no instance metadata or endpoint from anywhere else. It
// must plan no cloud write (exit 0).
func checkPlan(t *testing.T, env *sandbox.Env) {
	t.Helper()
	for _, v := range []string{"ECS_ENDPOINT", "VPC_ENDPOINT", "SLB_ENDPOINT", "NLB_ENDPOINT", "ALICLOUD_CLIENT_SCHEME", "METADATA_ENDPOINT", "CLOUD_CONFIG", "CLUSTER_CIDR"} {
		if !slicesContainsPrefix(envList(t), v+"=") {
			t.Errorf("sandbox.env lacks %s", v)
		}
	}
	cmd := exec.Command(filepath.Join(dir, "bin", "cloud-controller-manager"), "plan",
		"--kubeconfig", env.Kubeconfig, "--cloud-config", env.CloudConfig, "--cluster-cidr", env.ClusterCIDR)
	cmd.Env = envList(t)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Logf("plan on the sandbox: exit 0\n%s", tailLines(out.String(), 12))
	case errors.As(err, &exit) && exit.ExitCode() == 2:
		t.Errorf("plan on the converged sandbox plans cloud writes (exit 2):\n%s", out.String())
	default:
		t.Errorf("plan on the sandbox: %v\n%s", err, out.String())
	}
}

// checkAdmission applies a Service with a bad annotation with the
// sandbox's kubectl: the admission policy make sandbox installs refuses
// it with the CCM's message.
func checkAdmission(t *testing.T, env *sandbox.Env) {
	t.Helper()
	manifest := `apiVersion: v1
kind: Service
metadata:
  name: bad-scheduler
  annotations:
    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-scheduler: fastest
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`
	cmd := exec.Command(filepath.Join(dir, "bin", "kubectl"), "apply", "-f", "-")
	cmd.Env = envList(t)
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	want := `ValidatingAdmissionPolicy 'alicloud-ccm-service-annotations' with binding 'alicloud-ccm-service-annotations' denied request: invalid Service annotation: service.beta.kubernetes.io/alibaba-cloud-loadbalancer-scheduler: invalid value "fastest": accepted: one of wrr, rr, sch, tch`
	if err == nil || !strings.Contains(string(out), want) {
		t.Errorf("kubectl apply of a bad scheduler: %v\n%s\nwant %s", err, out, want)
	}
	t.Logf("$ kubectl apply -f bad-scheduler.yaml\n%s", out)
}

func slicesContainsPrefix(ss []string, prefix string) bool {
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) && len(s) > len(prefix) {
			return true
		}
	}
	return false
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
