package deploytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/yaml"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/config"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// sourceEnv selects where the CCM-backed tests take their RBAC, cloud-config
// and flags from: deploy/ (unset) or the chart rendered with values
// equivalent to deploy/ ("chart"). TestCCMUnderChartRBAC runs this binary
// again with it set.
const sourceEnv = "DEPLOYTEST_SOURCE"

// chartRunMarker is what setup prints when it takes its objects from the
// chart, so that TestCCMUnderChartRBAC knows the switch took effect.
const chartRunMarker = "deploytest: RBAC, cloud-config and flags from charts/alicloud-ccm (helm template)"

// fromChart reports whether this run takes its objects from the chart.
func fromChart() bool { return os.Getenv(sourceEnv) == "chart" }

// defaultEquivalent are the values under which the chart must render
// deploy/'s objects: deploy/cloud-config.yaml's example cluster id, every
// other value its default.
var defaultEquivalent = []string{"--set", "clusterID=c-example"}

// helmLabels are the labels the chart adds to deploy/'s for Helm's
// bookkeeping; they are the only metadata allowed to differ.
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary builds helm once per test binary when it is missing.
func helmBinary(ctx context.Context) (string, error) {
	helmOnce.Do(func() {
		helmPath, helmErr = localcluster.EnsureHelm(ctx, func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		})
	})
	return helmPath, helmErr
}

func chartDir() (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", "alicloud-ccm"), nil
}

// runHelm runs one helm command on the chart, the chart's directory as the
// last argument; the error carries helm's stderr.
func runHelm(ctx context.Context, args ...string) ([]byte, error) {
	bin, err := helmBinary(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := chartDir()
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(args, dir)...)
	// No user's helm configuration or cache leaks into the test.
	home := filepath.Join(os.TempDir(), "deploytest-helm")
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home+"/config", "HELM_CACHE_HOME="+home+"/cache", "HELM_DATA_HOME="+home+"/data")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// Only the subcommand: values may hold credentials.
		return stdout.Bytes(), fmt.Errorf("helm %s: %w: %s%s", args[0], err, stderr.String(), stdout.String())
	}
	return stdout.Bytes(), nil
}

// renderChart runs helm template with the given value flags and decodes
// its output strictly.
func renderChart(ctx context.Context, values ...string) ([]object, []byte, error) {
	out, err := runHelm(ctx, append([]string{"template", "alicloud-ccm", "--namespace", namespace}, values...)...)
	if err != nil {
		return nil, nil, err
	}
	objs, err := decodeManifest("chart", out)
	return objs, out, err
}

// deployFileOf is the deploy/ file holding an object of this kind.
func deployFileOf(kind string) string {
	switch kind {
	case "ConfigMap":
		return "cloud-config.yaml"
	case "Deployment":
		return "deployment.yaml"
	case "Service":
		return "metrics.yaml"
	case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		return "admission"
	default:
		return "rbac.yaml"
	}
}

// chartManifests renders the chart with deploy/-equivalent values, grouped
// as deploy/'s files are, so that setup can run the CCM from either.
func chartManifests(ctx context.Context) (*manifests, error) {
	objs, _, err := renderChart(ctx, defaultEquivalent...)
	if err != nil {
		return nil, err
	}
	m := &manifests{byFile: map[string][]object{}}
	for _, o := range objs {
		f := deployFileOf(o.kind)
		o.file = f
		m.byFile[f] = append(m.byFile[f], o)
	}
	return m, nil
}

func render(t *testing.T, values ...string) ([]object, []byte) {
	t.Helper()
	objs, out, err := renderChart(context.Background(), values...)
	if err != nil {
		t.Fatal(err)
	}
	return objs, out
}

// normalize makes a chart object and its deploy/ counterpart comparable:
// Helm's labels and the config checksum go, the cloud-config is compared as
// data (deploy/'s comments go) and deploy/'s image gets kustomize's
// rewrite.
func normalize(t *testing.T, o object, images []imageRewrite) string {
	t.Helper()
	strip := func(labels map[string]string) map[string]string {
		for _, l := range helmLabels {
			delete(labels, l)
		}
		if len(labels) == 0 {
			return nil
		}
		return labels
	}
	o.meta.Labels = strip(o.meta.Labels)
	switch v := o.obj.(type) {
	case *appsv1.Deployment:
		tm := &v.Spec.Template.ObjectMeta
		tm.Labels = strip(tm.Labels)
		delete(tm.Annotations, "checksum/cloud-config")
		if len(tm.Annotations) == 0 {
			tm.Annotations = nil
		}
		for i, c := range v.Spec.Template.Spec.Containers {
			for _, img := range images {
				if name, tag, _ := strings.Cut(c.Image, ":"); name == img.name {
					if img.newName != "" {
						name = img.newName
					}
					if img.newTag != "" {
						tag = img.newTag
					}
					v.Spec.Template.Spec.Containers[i].Image = name + ":" + tag
				}
			}
		}
	case *corev1.ConfigMap:
		for k, data := range v.Data {
			var parsed any
			if err := yaml.Unmarshal([]byte(data), &parsed); err != nil {
				t.Fatalf("ConfigMap %s: %s: %v", o.meta.Name, k, err)
			}
			js, err := json.Marshal(parsed)
			if err != nil {
				t.Fatal(err)
			}
			v.Data[k] = string(js)
		}
	}
	js, err := json.MarshalIndent(o.obj, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// asData decodes normalized JSON for a field-by-field diff.
func asData(t *testing.T, js string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

type imageRewrite struct{ name, newName, newTag string }

func objectKey(o object) string { return o.kind + " " + o.meta.Namespace + "/" + o.meta.Name }

// TestChartRendersDeploy: the chart with deploy/-equivalent values renders
// exactly deploy/'s objects (what kubectl apply -k deploy/ applies), up to
// Helm's labels and the config checksum, so the two cannot drift apart.
func TestChartRendersDeploy(t *testing.T) {
	m := mustLoad(t)
	k, err := m.one("Kustomization")
	if err != nil {
		t.Fatal(err)
	}
	var images []imageRewrite
	for _, img := range k.(*kustomization).Images {
		images = append(images, imageRewrite{img.Name, img.NewName, img.NewTag})
	}
	want := map[string]string{}
	for _, file := range k.(*kustomization).Resources {
		for _, o := range m.byFile[file] {
			want[objectKey(o)] = normalize(t, o, images)
		}
	}
	for _, dir := range k.(*kustomization).Components {
		for _, o := range componentObjects(t, dir) {
			want[objectKey(o)] = normalize(t, o, images)
		}
	}
	objs, _ := render(t, defaultEquivalent...)
	got := map[string]string{}
	for _, o := range objs {
		key := objectKey(o)
		if _, dup := got[key]; dup {
			t.Errorf("the chart renders %s twice", key)
		}
		got[key] = normalize(t, o, nil)
	}
	for key, w := range want {
		g, ok := got[key]
		switch {
		case !ok:
			t.Errorf("deploy/ has %s, the chart does not render it", key)
		case g != w:
			t.Errorf("%s differs (- deploy/, + chart):\n%s", key, diff.Diff(asData(t, w), asData(t, g)))
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("the chart renders %s, which deploy/ does not have", key)
		}
	}
	if len(want) < 10 {
		t.Fatalf("only %d objects in deploy/: the comparison lost its input", len(want))
	}
}

// TestChartLint: helm lint --strict passes with a cluster id and fails,
// naming the field, without one.
func TestChartLint(t *testing.T) {
	ctx := context.Background()
	if out, err := runHelm(ctx, "lint", "--strict", "--set", "clusterID=c-lint"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := runHelm(ctx, "lint", "--strict")
	if err == nil {
		t.Fatalf("helm lint passes without clusterID:\n%s", out)
	}
	if !strings.Contains(err.Error(), "/clusterID") {
		t.Fatalf("the lint error does not name clusterID: %v", err)
	}
}

// TestChartTakesOverDeploy follows docs/helm.md's move from deploy/ to the
// chart against the objects setup applied from deploy/: helm install
// refuses them until they carry the release's ownership, then accepts them
// (server-side dry run) and prints NOTES saying where credentials come from,
// for a Secret and for a RAM role.
func TestChartTakesOverDeploy(t *testing.T) {
	if fromChart() {
		t.Skip("setup applied the chart's objects")
	}
	ctx := context.Background()
	install := func(values ...string) ([]byte, error) {
		return runHelm(ctx, append([]string{"install", "alicloud-ccm", "--namespace", namespace, "--dry-run=server", "--kubeconfig", cluster.KubeconfigPath}, values...)...)
	}
	if _, err := install(defaultEquivalent...); err == nil || !strings.Contains(err.Error(), "cannot be imported into the current release") {
		t.Fatalf("helm install took over deploy/'s objects without their ownership metadata: %v", err)
	}
	dir, err := deployDir()
	if err != nil {
		t.Fatal(err)
	}
	// setup applied rbac.yaml only; docs/helm.md does the same with -k deploy/.
	for _, args := range [][]string{
		{"annotate", "-f", filepath.Join(dir, "rbac.yaml"), "meta.helm.sh/release-name=alicloud-ccm", "meta.helm.sh/release-namespace=" + namespace},
		{"label", "-f", filepath.Join(dir, "rbac.yaml"), "app.kubernetes.io/managed-by=Helm"},
	} {
		if out, err := kubectl(args...); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", args[0], err, out)
		}
	}
	for _, tc := range []struct {
		name   string
		values []string
		want   string
	}{
		{"Secret", defaultEquivalent, "kubectl -n kube-system create secret generic alibaba-cloud-credentials"},
		{"RAM role", []string{"--set", "clusterID=c-ram", "--set", "credentials.secretName=", "--set", "credentials.ramRoleName=KubernetesMasterRole"},
			"the RAM role KubernetesMasterRole"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := install(tc.values...)
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(out, []byte("NOTES:"))
			if i < 0 {
				t.Fatalf("no NOTES:\n%s", tailLines(string(out), 20))
			}
			if notes := string(out[i:]); !strings.Contains(notes, tc.want) || !strings.Contains(notes, "--cloud-provider=external") {
				t.Fatalf("NOTES lack %q:\n%s", tc.want, notes)
			}
		})
	}
}

// kubectl runs the control plane's kubectl as the cluster's admin.
func kubectl(args ...string) (string, error) {
	out, err := exec.Command(filepath.Join(cluster.Options.BinDir, "kubectl"), append([]string{"--kubeconfig", cluster.KubeconfigPath}, args...)...).CombinedOutput()
	return string(out), err
}

// kubectlDryRun applies a rendered manifest with a server-side dry run: the
// API server validates every field (strict field validation) and runs
// admission, and nothing is stored.
func kubectlDryRun(t *testing.T, manifest []byte) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(cluster.Options.BinDir, "kubectl"), "--kubeconfig", cluster.KubeconfigPath,
		"apply", "--dry-run=server", "--validate=strict", "-f", "-")
	cmd.Stdin = bytes.NewReader(manifest)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

func findObject[T any](t *testing.T, objs []object, kind, name string) T {
	t.Helper()
	for _, o := range objs {
		if o.kind == kind && o.meta.Name == name {
			return o.obj.(T)
		}
	}
	var zero T
	t.Fatalf("no %s %s rendered", kind, name)
	return zero
}

func hasObject(objs []object, kind, name string) bool {
	return slices.ContainsFunc(objs, func(o object) bool { return o.kind == kind && o.meta.Name == name })
}

// renderedConfig parses the rendered cloud-config as the CCM does, without
// instance metadata: every setting a test checks must come from the file.
func renderedConfig(t *testing.T, objs []object) *config.Config {
	t.Helper()
	cm := findObject[*corev1.ConfigMap](t, objs, "ConfigMap", cloudConfigCM)
	f, warnings, err := config.Parse([]byte(cm.Data["cloud-config.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("unknown cloud-config fields %v", warnings)
	}
	md := fakeMetadata{"region-id": "cn-md", "vpc-id": "vpc-md", "zone-id": "cn-md-a", "vswitch-id": "vsw-md"}
	cfg, err := config.Build(f, func(string) (string, bool) { return "", false }, md, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func container(t *testing.T, objs []object) corev1.Container {
	t.Helper()
	return findObject[*appsv1.Deployment](t, objs, "Deployment", rootSA).Spec.Template.Spec.Containers[0]
}

func roleServiceAccounts(t *testing.T, objs []object) []string {
	t.Helper()
	for _, r := range findObject[*rbacv1.Role](t, objs, "Role", rootSA).Rules {
		if slices.Contains(r.Resources, "serviceaccounts/token") {
			return r.ResourceNames
		}
	}
	return nil
}

// TestChartValueSets renders the chart with several value sets, checks what
// each set changes and has the local API server validate every object with
// kubectl apply --dry-run=server.
func TestChartValueSets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		check  func(t *testing.T, objs []object)
	}{
		{"defaults", defaultEquivalent, func(t *testing.T, objs []object) {
			c := container(t, objs)
			if !slices.Contains(c.Args, "--configure-cloud-routes=true") || len(c.Env) != 2 {
				t.Errorf("args %v, env %v", c.Args, c.Env)
			}
			if got := renderedConfig(t, objs); got.ClusterID != "c-example" || got.VpcID != "vpc-md" || got.LoadBalancerReuse != "tagged" {
				t.Errorf("cloud-config: clusterID %q vpc %q loadBalancerReuse %q, want tagged (a new install borrows by grant)", got.ClusterID, got.VpcID, got.LoadBalancerReuse)
			}
		}},
		{"borrowing as the existing CCM", []string{"--set", "clusterID=c-any", "--set", "loadBalancerReuse=any"}, func(t *testing.T, objs []object) {
			if got := renderedConfig(t, objs).LoadBalancerReuse; got != "any" {
				t.Errorf("loadBalancerReuse %q, want any", got)
			}
		}},
		{"RAM role instead of a Secret", []string{"--set", "clusterID=c-ram", "--set", "credentials.secretName=", "--set", "credentials.ramRoleName=KubernetesMasterRole"},
			func(t *testing.T, objs []object) {
				if env := container(t, objs).Env; len(env) != 0 {
					t.Errorf("env %v, want none: no Secret", env)
				}
				if got := renderedConfig(t, objs).RAMRoleName; got != "KubernetesMasterRole" {
					t.Errorf("ramRoleName %q", got)
				}
			}},
		{"routes off", []string{"--set", "clusterID=c-noroutes", "--set", "controllers.route=false"}, func(t *testing.T, objs []object) {
			args := container(t, objs).Args
			for _, want := range []string{"--configure-cloud-routes=false", "--controllers=cloud-node,cloud-node-lifecycle,service"} {
				if !slices.Contains(args, want) {
					t.Errorf("args %v lack %s", args, want)
				}
			}
			if hasObject(objs, "ClusterRole", rootSA+":route-controller") || hasObject(objs, "ClusterRoleBinding", rootSA+":route-controller") {
				t.Error("the route controller's RBAC is rendered with routes off")
			}
			if ids := roleServiceAccounts(t, objs); slices.Contains(ids, "route-controller") || len(ids) != 3 {
				t.Errorf("token rule names %v", ids)
			}
		}},
		{"metrics on", []string{"--set", "clusterID=c-metrics", "--set", "metrics.enabled=true",
			"--set", "metrics.scraper.name=prometheus", "--set", "metrics.scraper.namespace=monitoring"},
			func(t *testing.T, objs []object) {
				svc := findObject[*corev1.Service](t, objs, "Service", rootSA+"-metrics")
				if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 10258 ||
					svc.Spec.Selector[appLabel] != rootSA {
					t.Errorf("metrics Service %+v", svc.Spec)
				}
				b := findObject[*rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", rootSA+":metrics-reader")
				if b.Subjects[0].Name != "prometheus" || b.Subjects[0].Namespace != "monitoring" {
					t.Errorf("metrics-reader subjects %+v", b.Subjects)
				}
				r := findObject[*rbacv1.ClusterRole](t, objs, "ClusterRole", rootSA+":metrics-reader")
				if len(r.Rules) != 1 || !slices.Equal(r.Rules[0].NonResourceURLs, []string{"/metrics"}) || !slices.Equal(r.Rules[0].Verbs, []string{"get"}) {
					t.Errorf("metrics-reader rules %+v", r.Rules)
				}
			}},
		{"priority class, tolerations, resources", []string{"--set", "clusterID=c-sched", "--set", "priorityClassName=system-node-critical",
			"--set-json", `tolerations=[{"key":"dedicated","operator":"Equal","value":"ccm","effect":"NoExecute"}]`,
			"--set-json", `resources={"requests":{"cpu":"50m","memory":"64Mi"},"limits":{"cpu":"1","memory":"256Mi"}}`,
			"--set-json", `nodeSelector={"kubernetes.io/os":"linux"}`},
			func(t *testing.T, objs []object) {
				spec := findObject[*appsv1.Deployment](t, objs, "Deployment", rootSA).Spec.Template.Spec
				if spec.PriorityClassName != "system-node-critical" {
					t.Errorf("priorityClassName %q", spec.PriorityClassName)
				}
				if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "dedicated" || spec.Tolerations[0].Effect != corev1.TaintEffectNoExecute {
					t.Errorf("tolerations %+v", spec.Tolerations)
				}
				if spec.NodeSelector["kubernetes.io/os"] != "linux" {
					t.Errorf("nodeSelector %v", spec.NodeSelector)
				}
				r := spec.Containers[0].Resources
				if r.Limits.Cpu().String() != "1" || r.Requests.Memory().String() != "64Mi" || r.Limits.Memory().String() != "256Mi" {
					t.Errorf("resources %+v", r)
				}
			}},
		{"replicas 2 and every cloud setting", []string{"--set", "clusterID=c-full", "--set", "replicas=2", "--set", "region=cn-shanghai",
			"--set", "vpcID=vpc-abc", "--set", "vswitches={cn-shanghai-a:vsw-a1,cn-shanghai-b:vsw-b1}", "--set", "routeTableIDs={vtb-one,vtb-two}",
			"--set", "clusterCIDR=172.20.0.0/16", "--set", "resourceGroupID=rg-abc", "--set", "disablePublicSLB=true",
			"--set", "extraCloudConfig.serviceBackendType=eni", "--set", "image.tag=v0.1.0", "--set", "image.repository=registry.example/ccm",
			"--set", "extraArgs={--cloud-api-qps=20}", "--set", "image.pullPolicy=IfNotPresent", "--set-json", `imagePullSecrets=[{"name":"registry"}]`,
			"--set-json", `extraEnv=[{"name":"METADATA_ENDPOINT","value":"http://100.100.100.200"}]`, "--set", "podAnnotations.team=platform"},
			func(t *testing.T, objs []object) {
				d := findObject[*appsv1.Deployment](t, objs, "Deployment", rootSA)
				if *d.Spec.Replicas != 2 {
					t.Errorf("replicas %d", *d.Spec.Replicas)
				}
				c := d.Spec.Template.Spec.Containers[0]
				if c.Image != "registry.example/ccm:v0.1.0" || !slices.Contains(c.Args, "--cluster-cidr=172.20.0.0/16") || !slices.Contains(c.Args, "--cloud-api-qps=20") {
					t.Errorf("image %s args %v", c.Image, c.Args)
				}
				if c.ImagePullPolicy != corev1.PullIfNotPresent || len(c.Env) != 3 || c.Env[2].Name != "METADATA_ENDPOINT" ||
					d.Spec.Template.Spec.ImagePullSecrets[0].Name != "registry" || d.Spec.Template.Annotations["team"] != "platform" {
					t.Errorf("pull policy %q, env %v, pull secrets %v, annotations %v", c.ImagePullPolicy, c.Env, d.Spec.Template.Spec.ImagePullSecrets, d.Spec.Template.Annotations)
				}
				cfg := renderedConfig(t, objs)
				if cfg.ClusterID != "c-full" || cfg.Region != "cn-shanghai" || cfg.VpcID != "vpc-abc" || !cfg.DisablePublicSLB ||
					!slices.Equal(cfg.RouteTableIDs, []string{"vtb-one", "vtb-two"}) || cfg.ResourceGroupID != "rg-abc" {
					t.Errorf("cloud-config %+v", cfg)
				}
				if cfg.VSwitchIDs["cn-shanghai-a"] != "vsw-a1" || cfg.VSwitchIDs["cn-shanghai-b"] != "vsw-b1" || cfg.ServiceBackendType != "eni" {
					t.Errorf("vswitches %v, backend type %q", cfg.VSwitchIDs, cfg.ServiceBackendType)
				}
			}},
		{"one identity for every controller", []string{"--set", "clusterID=c-oneid", "--set", "useServiceAccountCredentials=false"},
			func(t *testing.T, objs []object) {
				if ids := roleServiceAccounts(t, objs); ids != nil {
					t.Errorf("token rules %v without per-controller credentials", ids)
				}
				for _, o := range objs {
					if b, ok := o.obj.(*rbacv1.ClusterRoleBinding); ok && (len(b.Subjects) != 1 || b.Subjects[0].Name != rootSA) {
						t.Errorf("%s binds %+v, want only %s", b.Name, b.Subjects, rootSA)
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, manifest := render(t, tc.values...)
			tc.check(t, objs)
			out := kubectlDryRun(t, manifest)
			if n := strings.Count(out, "(server dry run)"); n != len(objs) {
				t.Fatalf("kubectl dry-ran %d objects, the chart rendered %d:\n%s", n, len(objs), out)
			}
		})
	}
}

// TestChartRejectsInvalidValues: bad values fail helm template with a
// message naming the value, and never echo a credential.
func TestChartRejectsInvalidValues(t *testing.T) {
	const secret = "s3cr3t-do-not-print"
	for _, tc := range []struct {
		name   string
		values []string
		want   string
	}{
		{"no clusterID", nil, "at '/clusterID': minLength"},
		{"a typo in a value name", []string{"--set", "clusterId=c-typo"}, "additional properties 'clusterId' not allowed"},
		{"a malformed vSwitch", []string{"--set", "clusterID=c-x", "--set", "vswitches={cn-hangzhou-h=vsw-a}"}, "at '/vswitches/0'"},
		{"an unknown reuse policy", []string{"--set", "clusterID=c-x", "--set", "loadBalancerReuse=some"}, "at '/loadBalancerReuse'"},
		{"no replicas", []string{"--set", "clusterID=c-x", "--set", "replicas=0"}, "at '/replicas': minimum"},
		{"every controller off", []string{"--set", "clusterID=c-x", "--set", "controllers.cloudNode=false", "--set", "controllers.cloudNodeLifecycle=false",
			"--set", "controllers.service=false", "--set", "controllers.route=false"}, "every controller is off"},
		{"routes without a cluster CIDR", []string{"--set", "clusterID=c-x", "--set", "clusterCIDR="}, "clusterCIDR is required while controllers.route is on"},
		{"an AccessKey in the cloud-config", []string{"--set", "clusterID=c-x", "--set", "extraCloudConfig.accessKeySecret=" + secret},
			"extraCloudConfig.accessKeySecret: credentials do not belong"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := renderChart(context.Background(), tc.values...)
			if err == nil {
				t.Fatal("helm template accepted the values")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
	// The legacy default needs no clusterID.
	objs, _ := render(t, "--set", "legacyDefaultClusterID=true")
	if !slices.Contains(container(t, objs).Args, "--legacy-default-cluster-id") {
		t.Fatal("legacyDefaultClusterID=true does not pass --legacy-default-cluster-id")
	}
}

// ccmSuite are the tests that run the CCM under the RBAC, cloud-config and
// flags of the run's source.
const ccmSuite = "^(TestReadinessGateUnderRBAC|TestNodesInitializedAndRouted|TestNodeLifecycle|TestLoadBalancerService|TestSecurePortDelegatesAuth|" +
	"TestControllersActAsTheirOwnServiceAccounts|TestLeastPrivilege|TestNoForbiddenRequests)$"

// topLevelPass matches a passed top-level test in go test -v output.
var topLevelPass = regexp.MustCompile(`(?m)^--- PASS: (Test\w+)`)

// TestCCMUnderChartRBAC runs the CCM suite again in a fresh control plane,
// this time from the chart's rendered RBAC, cloud-config and flags (this
// binary, with DEPLOYTEST_SOURCE=chart): the least-privilege proof holds
// for what helm install creates, not only for deploy/.
func TestCCMUnderChartRBAC(t *testing.T) {
	if fromChart() {
		t.Skip("this is the chart's run")
	}
	if testing.Short() {
		t.Skip("-short: a second control plane and CCM")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+ccmSuite, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), sourceEnv+"=chart")
	// SIGTERM lets the child's TestMain stop its control plane; the parent
	// dying (a go test timeout) sends it too.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the CCM suite under the chart's objects failed: %v\n%s", err, tailLines(string(out), 60))
	}
	if !strings.Contains(string(out), chartRunMarker) {
		t.Fatalf("the run did not take its objects from the chart:\n%s", tailLines(string(out), 60))
	}
	passed := topLevelPass.FindAllStringSubmatch(string(out), -1)
	if len(passed) != strings.Count(ccmSuite, "Test") {
		t.Fatalf("%d of the suite's tests passed under the chart's objects:\n%s", len(passed), tailLines(string(out), 60))
	}
	t.Logf("the CCM suite passed under the chart's objects in %s", time.Since(start).Round(time.Millisecond))
}
