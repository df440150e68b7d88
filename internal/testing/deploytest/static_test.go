package deploytest

import (
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/app"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/config"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

const (
	namespace     = "kube-system"
	appLabel      = "app.kubernetes.io/name"
	rootSA        = "cloud-controller-manager"
	cloudConfigCM = "cloud-config"
)

func mustLoad(t *testing.T) *manifests {
	t.Helper()
	m, err := loadManifests()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func deployment(t *testing.T, m *manifests) *appsv1.Deployment {
	t.Helper()
	o, err := m.one("Deployment")
	if err != nil {
		t.Fatal(err)
	}
	return o.(*appsv1.Deployment)
}

// TestEveryManifestParses decodes every document of deploy/*.yaml strictly
// and checks names, namespaces and labels.
func TestEveryManifestParses(t *testing.T) {
	m := mustLoad(t)
	for file, objs := range m.byFile {
		t.Run(file, func(t *testing.T) {
			if len(objs) == 0 {
				t.Fatal("no objects")
			}
			for _, o := range objs {
				if o.meta == nil {
					continue // the Kustomization
				}
				if o.meta.Name == "" {
					t.Errorf("%s without a name", o.kind)
				}
				clusterScoped := o.kind == "ClusterRole" || o.kind == "ClusterRoleBinding"
				switch {
				case clusterScoped && o.meta.Namespace != "":
					t.Errorf("%s %s: cluster-scoped but namespace %q", o.kind, o.meta.Name, o.meta.Namespace)
				case !clusterScoped && o.meta.Namespace != namespace:
					t.Errorf("%s %s: namespace %q, want %s", o.kind, o.meta.Name, o.meta.Namespace, namespace)
				}
				if o.meta.Labels[appLabel] != rootSA {
					t.Errorf("%s %s: label %s=%q, want %s", o.kind, o.meta.Name, appLabel, o.meta.Labels[appLabel], rootSA)
				}
			}
		})
	}
}

// TestKustomizationListsTheManifests: kubectl apply -k deploy/ applies every
// manifest except the example credentials, which would overwrite real ones.
func TestKustomizationListsTheManifests(t *testing.T) {
	m := mustLoad(t)
	o, err := m.one("Kustomization")
	if err != nil {
		t.Fatal(err)
	}
	k := o.(*kustomization)
	if m.byFile["kustomization.yaml"] == nil {
		t.Fatal("the Kustomization must be in kustomization.yaml")
	}
	var want []string
	for file := range m.byFile {
		if file != "kustomization.yaml" && !strings.HasSuffix(file, ".example.yaml") {
			want = append(want, file)
		}
	}
	got := slices.Clone(k.Resources)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("resources %v, want %v", got, want)
	}
	d := deployment(t, m)
	image := d.Spec.Template.Spec.Containers[0].Image
	found := false
	for _, img := range k.Images {
		if strings.HasPrefix(image, img.Name+":") || image == img.Name {
			found = true
		}
	}
	if !found {
		t.Errorf("no images entry sets the Deployment's image %s", image)
	}
}

// TestRBACIsSelfContainedAndNarrow: every binding points at a role defined
// in deploy/ and at a kube-system ServiceAccount; no rule uses a wildcard;
// leader election may touch only the CCM's Lease.
func TestRBACIsSelfContainedAndNarrow(t *testing.T) {
	m := mustLoad(t)
	roles := map[string][]rbacv1.PolicyRule{}
	for _, o := range m.all("ClusterRole") {
		roles["ClusterRole/"+o.meta.Name] = o.obj.(*rbacv1.ClusterRole).Rules
	}
	for _, o := range m.all("Role") {
		roles["Role/"+o.meta.Name] = o.obj.(*rbacv1.Role).Rules
	}
	type binding struct {
		name     string
		ref      rbacv1.RoleRef
		subjects []rbacv1.Subject
	}
	var bindings []binding
	for _, o := range m.all("ClusterRoleBinding") {
		b := o.obj.(*rbacv1.ClusterRoleBinding)
		bindings = append(bindings, binding{"ClusterRoleBinding/" + b.Name, b.RoleRef, b.Subjects})
	}
	for _, o := range m.all("RoleBinding") {
		b := o.obj.(*rbacv1.RoleBinding)
		bindings = append(bindings, binding{"RoleBinding/" + b.Name, b.RoleRef, b.Subjects})
	}
	bound := map[string]bool{}
	for _, b := range bindings {
		if b.ref.APIGroup != rbacv1.GroupName {
			t.Errorf("%s: roleRef apiGroup %q", b.name, b.ref.APIGroup)
		}
		key := b.ref.Kind + "/" + b.ref.Name
		if _, ok := roles[key]; !ok {
			t.Errorf("%s: roleRef %s is not defined in deploy/", b.name, key)
		}
		bound[key] = true
		if len(b.subjects) == 0 {
			t.Errorf("%s: no subjects", b.name)
		}
		for _, s := range b.subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != namespace {
				t.Errorf("%s: subject %+v, want a ServiceAccount in %s", b.name, s, namespace)
			}
		}
	}
	for key, rules := range roles {
		if !bound[key] {
			t.Errorf("%s is bound to nobody", key)
		}
		for _, r := range rules {
			for _, list := range [][]string{r.Verbs, r.Resources, r.APIGroups} {
				if slices.Contains(list, "*") {
					t.Errorf("%s: wildcard in rule %+v", key, r)
				}
			}
			if len(r.Verbs) == 0 || len(r.Resources) == 0 || len(r.NonResourceURLs) > 0 {
				t.Errorf("%s: rule %+v", key, r)
			}
			if slices.Contains(r.Resources, "secrets") {
				t.Errorf("%s: the CCM reads no Secret through the API (credentials come as environment)", key)
			}
			if slices.Contains(r.Resources, "leases") && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "create" }) &&
				!slices.Equal(r.ResourceNames, []string{app.LeaseName}) {
				t.Errorf("%s: lease rule %+v must be limited to the Lease %s", key, r, app.LeaseName)
			}
		}
	}
}

// TestDeploymentWiring checks the Deployment against the rest of deploy/
// and the brief: identity, config mount, credentials, HA and placement.
func TestDeploymentWiring(t *testing.T) {
	m := mustLoad(t)
	d := deployment(t, m)
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	args := map[string]string{}
	for _, a := range c.Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		args[name] = value
	}
	var cm *corev1.ConfigMap
	for _, o := range m.all("ConfigMap") {
		if o.meta.Name == cloudConfigCM {
			cm = o.obj.(*corev1.ConfigMap)
		}
	}
	var sas []string
	for _, o := range m.all("ServiceAccount") {
		sas = append(sas, o.meta.Name)
	}
	secret := map[string]bool{}
	for _, o := range m.all("Secret") {
		for k := range o.obj.(*corev1.Secret).StringData {
			secret[o.meta.Name+"/"+k] = true
		}
	}
	mounts := map[string]string{} // volume → mount path
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm.MountPath
	}
	cmVolume := ""
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == cloudConfigCM {
			cmVolume = v.Name
		}
	}
	hasToleration := func(key string) bool {
		return slices.ContainsFunc(spec.Tolerations, func(tl corev1.Toleration) bool {
			return tl.Key == key && tl.Effect == corev1.TaintEffectNoSchedule
		})
	}
	for _, tc := range []struct {
		what string
		ok   bool
	}{
		{"2 replicas", d.Spec.Replicas != nil && *d.Spec.Replicas == 2},
		{"runs as the ServiceAccount of rbac.yaml", spec.ServiceAccountName == rootSA && slices.Contains(sas, rootSA)},
		{"host network", spec.HostNetwork},
		{"leader election on", args["leader-elect"] == "true"},
		{"per-controller credentials", args["use-service-account-credentials"] == "true"},
		{"routes on with a cluster CIDR", args["configure-cloud-routes"] == "true" && args["cluster-cidr"] != ""},
		{"cloud-config path", args["cloud-config"] == "/etc/kubernetes/cloud-config/cloud-config.yaml"},
		{"cloud-config ConfigMap mounted at the flag's directory", cmVolume != "" && mounts[cmVolume] == path.Dir(args["cloud-config"])},
		{"the ConfigMap has the flag's file", cm != nil && cm.Data[path.Base(args["cloud-config"])] != ""},
		{"tolerates the uninitialized taint", hasToleration(cloudapi.TaintExternalCloudProvider)},
		{"tolerates the control-plane taint", hasToleration("node-role.kubernetes.io/control-plane")},
		{"placed on control-plane nodes", spec.Affinity != nil && spec.Affinity.NodeAffinity != nil &&
			spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil &&
			spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key == "node-role.kubernetes.io/control-plane"},
		{"replicas on different nodes", spec.Affinity != nil && spec.Affinity.PodAntiAffinity != nil &&
			len(spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 1},
		{"liveness on https :10258/healthz", c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil &&
			c.LivenessProbe.HTTPGet.Scheme == corev1.URISchemeHTTPS && c.LivenessProbe.HTTPGet.Port.IntValue() == 10258 &&
			c.LivenessProbe.HTTPGet.Path == "/healthz"},
	} {
		if !tc.ok {
			t.Errorf("Deployment: %s: not so", tc.what)
		}
	}
	// Credentials: optional Secret keys (the RAM role otherwise), matching
	// the example Secret.
	want := map[string]bool{"ALIBABA_CLOUD_ACCESS_KEY_ID": false, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": false}
	for _, e := range c.Env {
		if _, ok := want[e.Name]; !ok {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref == nil || ref.Optional == nil || !*ref.Optional {
			t.Errorf("env %s must come from an optional Secret key", e.Name)
			continue
		}
		if !secret[ref.Name+"/"+ref.Key] {
			t.Errorf("env %s reads %s/%s, which the example Secret does not have", e.Name, ref.Name, ref.Key)
		}
		want[e.Name] = true
	}
	for name, ok := range want {
		if !ok {
			t.Errorf("env %s missing", name)
		}
	}
}

type fakeMetadata map[string]string

func (f fakeMetadata) Get(p string) (string, error) {
	if v, ok := f[p]; ok {
		return v, nil
	}
	return "", fmt.Errorf("no metadata %s", p)
}

// commentedSetting matches an example setting left commented out.
var commentedSetting = regexp.MustCompile(`(?m)^(\s*)# ([A-Za-z]+: \S.*)$`)

// TestExampleCloudConfigIsValid: the example loads without unknown-field
// warnings both as shipped (region, VPC and vSwitch from metadata) and
// with every commented setting switched on.
func TestExampleCloudConfigIsValid(t *testing.T) {
	m := mustLoad(t)
	var data string
	for _, o := range m.all("ConfigMap") {
		if o.meta.Name == cloudConfigCM {
			data = o.obj.(*corev1.ConfigMap).Data["cloud-config.yaml"]
		}
	}
	noEnv := func(string) (string, bool) { return "", false }
	md := fakeMetadata{"region-id": "cn-hangzhou", "vpc-id": "vpc-md", "zone-id": "cn-hangzhou-h", "vswitch-id": "vsw-md"}
	for _, tc := range []struct {
		name, data string
		md         config.MetadataSource
		wantVPC    string
	}{
		{"as shipped", data, md, "vpc-md"},
		{"every setting on", commentedSetting.ReplaceAllString(data, "$1$2"), nil, "vpc-xxxxxxxxxxxxxxxxxxxxx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, warnings, err := config.Parse([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) > 0 {
				t.Fatalf("unknown fields %v", warnings)
			}
			cfg, err := config.Build(f, noEnv, tc.md, config.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ClusterID != "c-example" || cfg.VpcID != tc.wantVPC {
				t.Fatalf("clusterID %q vpc %q", cfg.ClusterID, cfg.VpcID)
			}
			if cfg.LoadBalancerReuse != "tagged" {
				t.Fatalf("loadBalancerReuse %q, want tagged: a new install borrows by grant", cfg.LoadBalancerReuse)
			}
		})
	}
	if n := len(commentedSetting.FindAllString(data, -1)); n < 5 {
		t.Fatalf("only %d commented settings found; the pattern no longer matches the example", n)
	}
}

// TestDeploymentFlagsAccepted: each flag of the Deployment is in the
// binary's --help, and the binary parses them all (cobra rejects an unknown
// flag or a bad value before it looks at --help).
func TestDeploymentFlagsAccepted(t *testing.T) {
	bin, err := ccmtest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	help, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, help)
	}
	args := deployment(t, mustLoad(t)).Spec.Template.Spec.Containers[0].Args
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "--") || !regexp.MustCompile(`(?m)^\s+(-\w, )?`+regexp.QuoteMeta(name)+`\b`).Match(help) {
			t.Errorf("flag %s is not in cloud-controller-manager --help", name)
		}
	}
	out, err := exec.Command(bin, append(slices.Clone(args), "--help")...).CombinedOutput()
	if err != nil {
		t.Fatalf("the binary rejects the Deployment's flags: %v\n%s", err, tailLines(string(out), 10))
	}
	if !strings.Contains(string(out), "Usage:") {
		t.Fatalf("no usage printed:\n%s", tailLines(string(out), 10))
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
