package admissiontest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

// Namespaces: the committed binding (Deny) applies to denyNS, a Warn
// binding of the same policy to warnNS, none to freeNS.
const (
	denyNS  = "admission-deny"
	warnNS  = "admission-warn"
	freeNS  = "admission-free"
	nsLabel = "admissiontest.alicloud-ccm.io/mode"
)

var (
	cluster *localcluster.Cluster
	cs      *kubernetes.Clientset
	// warnCS records the warnings of its requests in warnings.
	warnCS   *kubernetes.Clientset
	warnMu   sync.Mutex
	warnings []string
)

func TestMain(m *testing.M) {
	ccmtest.Main(m, &cluster, localcluster.Options{}, setup)
}

type recorder struct{}

func (recorder) HandleWarningHeader(code int, agent, text string) {
	warnMu.Lock()
	defer warnMu.Unlock()
	warnings = append(warnings, text)
}

// takeWarnings returns and clears the warnings recorded so far.
func takeWarnings() []string {
	warnMu.Lock()
	defer warnMu.Unlock()
	w := warnings
	warnings = nil
	return w
}

func setup() error {
	ctx := context.Background()
	var err error
	if cs, err = cluster.Clientset(); err != nil {
		return err
	}
	wc := rest.CopyConfig(cluster.RESTConfig)
	wc.WarningHandler = recorder{}
	if warnCS, err = kubernetes.NewForConfig(wc); err != nil {
		return err
	}
	for ns, mode := range map[string]string{denyNS: "deny", warnNS: "warn", freeNS: "none"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{nsLabel: mode}}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	// The committed manifests, as kubectl apply -k deploy/admission would
	// create them, the binding narrowed to one namespace.
	root := filepath.Join("..", "..", "..", "deploy", "admission")
	var policy admissionv1.ValidatingAdmissionPolicy
	if err := readYAML(filepath.Join(root, "policy.yaml"), &policy); err != nil {
		return err
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &policy, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create policy: %w", err)
	}
	var deny admissionv1.ValidatingAdmissionPolicyBinding
	if err := readYAML(filepath.Join(root, "binding.yaml"), &deny); err != nil {
		return err
	}
	deny.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{nsLabel: "deny"}}}
	warn := annotations.AdmissionBinding(admissionv1.Warn)
	warn.Name += "-warn"
	warn.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{nsLabel: "warn"}}}
	for _, b := range []*admissionv1.ValidatingAdmissionPolicyBinding{&deny, warn} {
		if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create binding %s: %w", b.Name, err)
		}
	}
	return waitActive(ctx)
}

func readYAML(path string, into any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// waitActive waits until the API server enforces the policy (its
// informers pick policies and bindings up asynchronously) and its type
// check found no error.
func waitActive(ctx context.Context) error {
	probe := service("probe", nil, annotations.Key("scheduler"), "nope")
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		p, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, annotations.AdmissionPolicyName, metav1.GetOptions{})
		if err == nil && p.Status.TypeChecking != nil && len(p.Status.TypeChecking.ExpressionWarnings) > 0 {
			return fmt.Errorf("policy type check: %+v", p.Status.TypeChecking.ExpressionWarnings)
		}
		if err := create(ctx, cs, denyNS, probe); err != nil && apierrors.IsInvalid(err) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("the policy refused nothing within a minute")
}

// service is a LoadBalancer Service with TCP 80, TCP 443 and UDP 53, the
// given spec.loadBalancerClass (nil: CLB) and annotations as key, value
// pairs.
func service(name string, class *string, kv ...string) *corev1.Service {
	ann := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		ann[kv[i]] = kv[i+1]
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: class,
			Selector:          map[string]string{"app": name},
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
				{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8443)},
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			},
		},
	}
}

// create sends a dry-run create: admission runs, nothing is stored.
func create(ctx context.Context, c kubernetes.Interface, ns string, svc *corev1.Service) error {
	_, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// denial is the API server's message for a refusal by the Deny binding.
func denial(msg string) string {
	return fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", annotations.AdmissionPolicyName, annotations.AdmissionPolicyName, msg)
}

// warnPrefix starts each warning of the Warn binding.
var warnPrefix = fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s-warn': ", annotations.AdmissionPolicyName, annotations.AdmissionPolicyName)

func parse(svc *corev1.Service) error {
	_, err := annotations.Parse(svc, annotations.Defaults{})
	return err
}

func ptr[T any](v T) *T { return &v }

func nlbClass() *string { return ptr(annotations.NLBClass) }

func trimAll(ss []string, prefix string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, strings.TrimPrefix(s, prefix))
	}
	return out
}
