package localcluster

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// readinessGateStages drive pods that have readiness gates the way the
// kubelet does (see the file's header).
//
//go:embed kwok-readiness-gates.yaml
var readinessGateStages string

// ungatedOnly is the selector term that keeps a stage off pods with
// readiness gates.
var ungatedOnly = map[string]any{"key": "(.spec.readinessGates // []) | length", "operator": "In", "values": []any{"0"}}

// writeKwokStages writes the Stage file kwok runs with: the stages the
// control-plane build took from kwok's release, with pod-ready limited to
// pods without readiness gates, followed by the gated-pod stages. kwok's
// pod-ready sets every gate condition True itself, which would make pods
// Ready before the controller owning the gate ever acted.
func writeKwokStages(base, out string) error {
	data, err := os.ReadFile(base)
	if err != nil {
		return fmt.Errorf("read kwok stages: %w", err)
	}
	var docs []string
	found := false
	for _, doc := range strings.Split(string(data), "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var st map[string]any
		if err := yaml.Unmarshal([]byte(doc), &st); err != nil {
			return fmt.Errorf("parse kwok stage in %s: %w", base, err)
		}
		if name, _ := nested(st, "metadata", "name").(string); name == "pod-ready" {
			sel, ok := nested(st, "spec", "selector").(map[string]any)
			if !ok {
				return fmt.Errorf("kwok stage pod-ready in %s has no selector", base)
			}
			exprs, _ := sel["matchExpressions"].([]any)
			sel["matchExpressions"] = append(exprs, ungatedOnly)
			b, err := yaml.Marshal(st)
			if err != nil {
				return err
			}
			doc = string(b)
			found = true
		}
		docs = append(docs, strings.TrimSpace(doc))
	}
	if !found {
		return fmt.Errorf("kwok stages %s have no pod-ready stage", base)
	}
	docs = append(docs, strings.TrimSpace(readinessGateStages))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644)
}

func nested(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}
