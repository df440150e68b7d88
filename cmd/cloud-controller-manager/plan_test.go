package main

import (
	"strings"
	"testing"
)

// TestPlanHelp: the plan subcommand shows its own flags, not the CCM's.
func TestPlanHelp(t *testing.T) {
	got := execute(t, "plan", "--help")
	for _, want := range []string{"plan reads the cluster and the cloud", "Exit code: 0", "--cluster-cidr", "--output", "--cloud-config"} {
		if !strings.Contains(got, want) {
			t.Errorf("plan --help lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "--leader-elect") {
		t.Errorf("plan --help lists the CCM's flags:\n%.500s", got)
	}
}

// TestPlanErrors: a plan that cannot be made is an error (exit 1), before
// any cluster or cloud is read.
func TestPlanErrors(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "-o", "yaml"},
		{"plan", "--kubeconfig", "/nonexistent/kubeconfig"},
		{"plan", "extra-argument"},
	} {
		if out, err := run(t, args...); err == nil {
			t.Errorf("%v: no error; output:\n%s", args, out)
		}
	}
}
