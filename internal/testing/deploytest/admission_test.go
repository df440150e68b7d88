package deploytest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func init() {
	kinds["ValidatingAdmissionPolicy"] = struct {
		apiVersion string
		new        func() (any, *metav1.ObjectMeta)
	}{"admissionregistration.k8s.io/v1", func() (any, *metav1.ObjectMeta) {
		o := &admissionv1.ValidatingAdmissionPolicy{}
		return o, &o.ObjectMeta
	}}
	kinds["ValidatingAdmissionPolicyBinding"] = struct {
		apiVersion string
		new        func() (any, *metav1.ObjectMeta)
	}{"admissionregistration.k8s.io/v1", func() (any, *metav1.ObjectMeta) {
		o := &admissionv1.ValidatingAdmissionPolicyBinding{}
		return o, &o.ObjectMeta
	}}
}

// component is the part of a kustomize Component that deploy/ uses.
type component struct {
	metav1.TypeMeta `json:",inline"`
	Resources       []string `json:"resources"`
}

// componentObjects decodes the resources of the Component in deploy/dir.
func componentObjects(t *testing.T, dir string) []object {
	t.Helper()
	root, err := deployDir()
	if err != nil {
		t.Fatal(err)
	}
	var c component
	data, err := os.ReadFile(filepath.Join(root, dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatalf("deploy/%s/kustomization.yaml: %v", dir, err)
	}
	if c.Kind != "Component" || c.APIVersion != "kustomize.config.k8s.io/v1alpha1" {
		t.Fatalf("deploy/%s: %s %s, want a kustomize Component", dir, c.APIVersion, c.Kind)
	}
	var out []object
	for _, r := range c.Resources {
		objs, err := readManifest(filepath.Join(root, dir, r))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, objs...)
	}
	return out
}

// TestAdmissionComponent: deploy/ includes the admission Component (the
// policy and its Deny binding), which TestChartRendersDeploy compares with
// the chart's defaults.
func TestAdmissionComponent(t *testing.T) {
	m := mustLoad(t)
	k, err := m.one("Kustomization")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(k.(*kustomization).Components, "admission") {
		t.Fatalf("deploy/kustomization.yaml does not include the admission component: %v", k.(*kustomization).Components)
	}
	var kindsSeen []string
	for _, o := range componentObjects(t, "admission") {
		kindsSeen = append(kindsSeen, o.kind)
		if b, ok := o.obj.(*admissionv1.ValidatingAdmissionPolicyBinding); ok && !slices.Equal(b.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
			t.Errorf("binding actions %v, want [Deny]", b.Spec.ValidationActions)
		}
	}
	if !slices.Equal(kindsSeen, []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}) {
		t.Errorf("component objects %v", kindsSeen)
	}
}

// TestChartAdmissionValues: the chart's admission values select the
// binding's actions and turn both objects off.
func TestChartAdmissionValues(t *testing.T) {
	ctx := context.Background()
	count := func(objs []object) (policies int, actions []admissionv1.ValidationAction) {
		for _, o := range objs {
			switch v := o.obj.(type) {
			case *admissionv1.ValidatingAdmissionPolicy:
				policies++
			case *admissionv1.ValidatingAdmissionPolicyBinding:
				actions = v.Spec.ValidationActions
			}
		}
		return policies, actions
	}
	objs, _, err := renderChart(ctx, append(defaultEquivalent, "--set", "admission.validationActions={Warn,Audit}")...)
	if err != nil {
		t.Fatal(err)
	}
	if n, a := count(objs); n != 1 || !slices.Equal(a, []admissionv1.ValidationAction{admissionv1.Warn, admissionv1.Audit}) {
		t.Errorf("Warn,Audit: %d policies, actions %v", n, a)
	}
	objs, _, err = renderChart(ctx, append(defaultEquivalent, "--set", "admission.enabled=false")...)
	if err != nil {
		t.Fatal(err)
	}
	if n, a := count(objs); n != 0 || a != nil {
		t.Errorf("disabled: %d policies, actions %v", n, a)
	}
	if _, _, err := renderChart(ctx, append(defaultEquivalent, "--set", "admission.validationActions={Refuse}")...); err == nil {
		t.Errorf("an unknown action renders")
	}
}

// TestReplicasSpreadAcrossZonesAndHosts: deploy/'s Deployment (and so the
// chart's defaults, TestChartRendersDeploy) spreads the replicas across
// zones and hosts.
func TestReplicasSpreadAcrossZonesAndHosts(t *testing.T) {
	d := deployment(t, mustLoad(t))
	got := map[string]string{}
	for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
		if c.LabelSelector == nil || c.LabelSelector.MatchLabels["app.kubernetes.io/name"] != "cloud-controller-manager" || c.MaxSkew != 1 {
			t.Errorf("constraint %+v does not select the CCM's pods with maxSkew 1", c)
		}
		got[c.TopologyKey] = string(c.WhenUnsatisfiable)
	}
	want := map[string]string{"topology.kubernetes.io/zone": "ScheduleAnyway", "kubernetes.io/hostname": "DoNotSchedule"}
	if len(got) != len(want) || got["topology.kubernetes.io/zone"] != want["topology.kubernetes.io/zone"] || got["kubernetes.io/hostname"] != want["kubernetes.io/hostname"] {
		t.Errorf("topology spread %v, want %v", got, want)
	}
}
