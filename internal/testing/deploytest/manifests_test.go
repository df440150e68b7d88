package deploytest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// kustomization is the part of kustomize's Kustomization that deploy/ uses;
// strict decoding rejects any other field.
type kustomization struct {
	metav1.TypeMeta `json:",inline"`
	Resources       []string `json:"resources"`
	// Components are directories of deploy/ holding a kustomize Component
	// (admissionComponent).
	Components []string `json:"components,omitempty"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
}

// object is one YAML document of a manifest file, decoded into its type.
type object struct {
	file string
	kind string
	meta *metav1.ObjectMeta // nil for the Kustomization
	obj  any
}

// kinds maps each kind deploy/ may hold to its apiVersion and a new typed value.
var kinds = map[string]struct {
	apiVersion string
	new        func() (any, *metav1.ObjectMeta)
}{
	"ServiceAccount": {"v1", func() (any, *metav1.ObjectMeta) { o := &corev1.ServiceAccount{}; return o, &o.ObjectMeta }},
	"ConfigMap":      {"v1", func() (any, *metav1.ObjectMeta) { o := &corev1.ConfigMap{}; return o, &o.ObjectMeta }},
	"Secret":         {"v1", func() (any, *metav1.ObjectMeta) { o := &corev1.Secret{}; return o, &o.ObjectMeta }},
	"ClusterRole": {"rbac.authorization.k8s.io/v1", func() (any, *metav1.ObjectMeta) {
		o := &rbacv1.ClusterRole{}
		return o, &o.ObjectMeta
	}},
	"ClusterRoleBinding": {"rbac.authorization.k8s.io/v1", func() (any, *metav1.ObjectMeta) {
		o := &rbacv1.ClusterRoleBinding{}
		return o, &o.ObjectMeta
	}},
	"Role":        {"rbac.authorization.k8s.io/v1", func() (any, *metav1.ObjectMeta) { o := &rbacv1.Role{}; return o, &o.ObjectMeta }},
	"RoleBinding": {"rbac.authorization.k8s.io/v1", func() (any, *metav1.ObjectMeta) { o := &rbacv1.RoleBinding{}; return o, &o.ObjectMeta }},
	"Deployment":  {"apps/v1", func() (any, *metav1.ObjectMeta) { o := &appsv1.Deployment{}; return o, &o.ObjectMeta }},
	// The chart's metrics Service (deploy/ has none).
	"Service": {"v1", func() (any, *metav1.ObjectMeta) { o := &corev1.Service{}; return o, &o.ObjectMeta }},
	"Kustomization": {"kustomize.config.k8s.io/v1beta1", func() (any, *metav1.ObjectMeta) {
		return &kustomization{}, nil
	}},
}

// deployDir is the repository's deploy/ directory.
func deployDir() (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "deploy"), nil
}

// manifestFiles lists deploy/*.yaml, sorted.
func manifestFiles() ([]string, error) {
	dir, err := deployDir()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no YAML in %s", dir)
	}
	sort.Strings(files)
	return files, nil
}

// readManifest strictly decodes every document of a file: an unknown field,
// kind or apiVersion is an error, so a typo cannot silently drop a setting.
func readManifest(path string) ([]object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeManifest(filepath.Base(path), data)
}

// decodeManifest strictly decodes every document of a YAML stream named
// file (a file of deploy/ or the chart's rendered output).
func decodeManifest(file string, data []byte) ([]object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []object
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if s := strings.TrimSpace(string(js)); s == "null" || s == "" {
			continue // comments only
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		k, ok := kinds[tm.Kind]
		if !ok {
			return nil, fmt.Errorf("%s: document %d: unexpected kind %q", file, i, tm.Kind)
		}
		if tm.APIVersion != k.apiVersion {
			return nil, fmt.Errorf("%s: %s: apiVersion %q, want %q", file, tm.Kind, tm.APIVersion, k.apiVersion)
		}
		obj, meta := k.new()
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %w", file, i, tm.Kind, err)
		}
		out = append(out, object{file: file, kind: tm.Kind, meta: meta, obj: obj})
	}
	return out, nil
}

// manifests is every object in deploy/, by file.
type manifests struct {
	byFile map[string][]object
}

func loadManifests() (*manifests, error) {
	files, err := manifestFiles()
	if err != nil {
		return nil, err
	}
	m := &manifests{byFile: map[string][]object{}}
	for _, f := range files {
		objs, err := readManifest(f)
		if err != nil {
			return nil, err
		}
		m.byFile[filepath.Base(f)] = objs
	}
	return m, nil
}

// all returns the objects of one kind across files.
func (m *manifests) all(kind string) []object {
	var files []string
	for f := range m.byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	var out []object
	for _, f := range files {
		for _, o := range m.byFile[f] {
			if o.kind == kind {
				out = append(out, o)
			}
		}
	}
	return out
}

// one returns the only object of a kind, or an error.
func (m *manifests) one(kind string) (any, error) {
	objs := m.all(kind)
	if len(objs) != 1 {
		return nil, fmt.Errorf("%d %s objects in deploy/, want 1", len(objs), kind)
	}
	return objs[0].obj, nil
}

// deploymentContainer is the CCM container of a decoded Deployment.
func deploymentContainer(o any) corev1.Container {
	return o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
}
