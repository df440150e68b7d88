package annotations_test

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"strings"
	"testing"

	celgo "github.com/google/cel-go/cel"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// policyEvaluator evaluates the generated policy's validations in process
// with the API server's CEL library, for fast checks; internal/testing/admissiontest
// runs the same policy on a real kube-apiserver.
type policyEvaluator struct {
	valid, msg cel.ConditionEvaluator
}

func newPolicyEvaluator(t testing.TB) *policyEvaluator {
	t.Helper()
	c, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(version.MajorMinor(1, 32)))
	if err != nil {
		t.Fatal(err)
	}
	opts := cel.OptionalVariableDeclarations{HasAuthorizer: true}
	p := annotations.AdmissionPolicy()
	for _, v := range p.Spec.Variables {
		c.CompileAndStoreVariable(expr{v.Name, v.Expression}, opts, environment.StoredExpressions)
	}
	var vs, ms []cel.ExpressionAccessor
	for _, v := range p.Spec.Validations {
		vs = append(vs, boolExpr(v.Expression))
		ms = append(ms, expr{"m", v.MessageExpression})
	}
	return &policyEvaluator{valid: c.CompileCondition(vs, opts, environment.StoredExpressions), msg: c.CompileCondition(ms, opts, environment.StoredExpressions)}
}

type boolExpr string

func (e boolExpr) GetExpression() string { return string(e) }

// ReturnTypes is bool, as for a validation.
func (e boolExpr) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.BoolType} }

// eval returns the messages of the failing validations for a Service create.
func (p *policyEvaluator) eval(t testing.TB, svc *corev1.Service) []string {
	t.Helper()
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	attr := admission.NewAttributesRecord(svc, nil, gvk, "default", svc.Name, schema.GroupVersionResource{Version: "v1", Resource: "services"}, "", admission.Create, &metav1.CreateOptions{}, false, nil)
	va := &admission.VersionedAttributes{Attributes: attr, VersionedObject: svc, VersionedKind: gvk}
	req := cel.CreateAdmissionRequest(attr, metav1.GroupVersionResource{Version: "v1", Resource: "services"}, metav1.GroupVersionKind{Version: "v1", Kind: "Service"})
	ctx := context.Background()
	results, _, err := p.valid.ForInput(ctx, va, req, cel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	msgs, _, err := p.msg.ForInput(ctx, va, req, cel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
	if err != nil {
		t.Fatalf("evaluate messages: %v", err)
	}
	var out []string
	for i, r := range results {
		if r.Error != nil {
			t.Fatalf("validation %d: %v\n  annotations %q", i, r.Error, svc.Annotations)
		}
		if r.EvalResult.Value() == true {
			continue
		}
		if msgs[i].Error != nil {
			t.Fatalf("message %d: %v", i, msgs[i].Error)
		}
		out = append(out, strings.TrimPrefix(msgs[i].EvalResult.Value().(string), "invalid Service annotation: "))
	}
	return out
}

// TestAdmissionPolicyAgreesWithParser evaluates the policy in process on
// random Services built from this package's example values and mutations
// of them, and requires it to agree with Parse as the integration test
// does (every policy message is a parser problem; the same annotations
// have problems).
func TestAdmissionPolicyAgreesWithParser(t *testing.T) {
	ev := newPolicyEvaluator(t)
	rng := rand.New(rand.NewSource(1))
	mutate := []func(string) string{
		func(v string) string { return v },
		func(v string) string { return "x" + v },
		func(v string) string { return v + ",," + v },
		func(v string) string { return strings.ToUpper(v) },
		func(v string) string { return " " + v + " " },
		func(v string) string { return v + ":1" },
		func(v string) string { return strings.ReplaceAll(v, ":", "::") },
		func(v string) string { return "99" },
		func(v string) string { return "-1" },
		func(v string) string { return "a=b,a=c" },
	}
	n := 800
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		owner := annotations.OwnerCLB
		if rng.Intn(2) == 1 {
			owner = annotations.OwnerNLB
		}
		ann := map[string]string{}
		for k := rng.Intn(5) + 1; k > 0; k-- {
			a := annotations.Registry[rng.Intn(len(annotations.Registry))]
			if a.Scope == annotations.ScopeRouting {
				continue
			}
			v, ok := perKind[owner][a.Suffix()]
			if !ok {
				v = examples[a.Suffix()]
			}
			v = mutate[rng.Intn(len(mutate))](v)
			key := a.Key
			if a.Legacy != "" && rng.Intn(4) == 0 {
				key = a.Legacy
			}
			ann[key] = v
		}
		// The cluster's default backend type is left to the CCM.
		if bt := strings.ToLower(strings.TrimSpace(ann[annotations.BackendTypeKey])); (ann[annotations.Key("listener-port-range")] != "" || ann[annotations.LegacyKey("listener-port-range")] != "") && bt != "ecs" && bt != "eni" {
			ann[annotations.BackendTypeKey] = "eni"
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
				{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 443, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}}},
		}
		if owner == annotations.OwnerNLB {
			class := annotations.NLBClass
			svc.Spec.LoadBalancerClass = &class
		}
		got := ev.eval(t, svc)
		var want, wantKeys, gotKeys []string
		var problems []annotations.Problem
		if _, err := annotations.Parse(svc, annotations.Defaults{}); err != nil {
			var inv *annotations.InvalidError
			if !errors.As(err, &inv) {
				t.Fatal(err)
			}
			problems = inv.Problems
		}
		for _, p := range problems {
			want = append(want, p.String())
			if !slices.Contains(wantKeys, p.Key) {
				wantKeys = append(wantKeys, p.Key)
			}
		}
		for _, w := range got {
			j := slices.Index(want, w)
			if j < 0 {
				t.Errorf("policy: %q\n  parser: %q\n  annotations: %q", w, want, ann)
				continue
			}
			if !slices.Contains(gotKeys, problems[j].Key) {
				gotKeys = append(gotKeys, problems[j].Key)
			}
		}
		slices.Sort(wantKeys)
		slices.Sort(gotKeys)
		if !slices.Equal(wantKeys, gotKeys) {
			t.Errorf("parser keys %q, policy keys %q\n  parser: %q\n  policy: %q\n  annotations: %q", wantKeys, gotKeys, want, got, ann)
		}
		if t.Failed() {
			return
		}
	}
}
