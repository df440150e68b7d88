package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// admissionFiles are deploy/admission's policy and binding (generated from
// the annotation registry), in the order they are applied.
var admissionFiles = []string{"policy.yaml", "binding.yaml"}

// applyAdmission server-side applies the annotation admission policy and
// its Deny binding from deploy/admission in root, so that kubectl apply of
// a Service with a bad annotation is refused in the sandbox as in a cluster
// installed from deploy/ or the chart. Applying again updates them to the
// checkout's generated version.
func applyAdmission(ctx context.Context, cfg *rest.Config, root string) ([]string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: "sandbox", Force: &force}
	var applied []string
	for _, f := range admissionFiles {
		path := filepath.Join(root, "deploy", "admission", f)
		objs, err := readManifests(path)
		if err != nil {
			return applied, err
		}
		for _, obj := range objs {
			data, err := json.Marshal(obj.Object)
			if err != nil {
				return applied, err
			}
			api := cs.AdmissionregistrationV1()
			switch obj.GetKind() {
			case "ValidatingAdmissionPolicy":
				_, err = api.ValidatingAdmissionPolicies().Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
			case "ValidatingAdmissionPolicyBinding":
				_, err = api.ValidatingAdmissionPolicyBindings().Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
			default:
				err = fmt.Errorf("unexpected kind %s", obj.GetKind())
			}
			if err != nil {
				return applied, fmt.Errorf("%s: apply %s %s: %w", path, obj.GetKind(), obj.GetName(), err)
			}
			applied = append(applied, obj.GetKind()+" "+obj.GetName())
		}
	}
	return applied, nil
}
