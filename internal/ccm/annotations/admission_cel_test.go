package annotations_test

import (
	"regexp"
	"testing"

	celgo "github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// expr adapts a policy expression to the API server's compiler.
type expr struct{ name, text string }

func (e expr) GetExpression() string { return e.text }

// ReturnTypes accepts any type: variables are lists, strings and maps.
func (e expr) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.AnyType} }

func (e expr) GetName() string { return e.name }

// TestAdmissionPolicyCompiles compiles every variable, validation, message
// expression and match condition of the generated policy with the API
// server's CEL compiler at the oldest Kubernetes version the policy
// supports (1.33), without a cluster.
func TestAdmissionPolicyCompiles(t *testing.T) {
	envSet := environment.MustBaseEnvSet(version.MajorMinor(1, 32))
	c, err := cel.NewCompositedCompiler(envSet)
	if err != nil {
		t.Fatal(err)
	}
	opts := cel.OptionalVariableDeclarations{HasAuthorizer: true}
	p := annotations.AdmissionPolicy()
	for _, v := range p.Spec.Variables {
		r := c.CompileAndStoreVariable(expr{v.Name, v.Expression}, opts, environment.StoredExpressions)
		if r.Error != nil {
			t.Errorf("variable %s: %v", v.Name, r.Error)
		}
	}
	check := func(what, text string) {
		r := c.CompileCELExpression(expr{what, text}, opts, environment.StoredExpressions)
		if r.Error != nil {
			t.Errorf("%s: %v", what, r.Error)
		}
	}
	for _, v := range p.Spec.Validations {
		check("validation "+v.Expression, v.Expression)
		check("messageExpression "+v.MessageExpression, v.MessageExpression)
	}
	for _, m := range p.Spec.MatchConditions {
		check("matchCondition "+m.Name, m.Expression)
	}
}

// TestAdmissionPolicyVariables: every variable is declared once and
// refers only to variables declared before it (the API server evaluates
// them lazily, and a cycle or shadowing would recurse or mislead).
func TestAdmissionPolicyVariables(t *testing.T) {
	seen := map[string]bool{}
	re := regexp.MustCompile(`variables\.([a-zA-Z0-9_]+)`)
	for _, v := range annotations.AdmissionPolicy().Spec.Variables {
		for _, m := range re.FindAllStringSubmatch(v.Expression, -1) {
			if !seen[m[1]] {
				t.Errorf("%s refers to %s, not declared before it", v.Name, m[1])
			}
		}
		if seen[v.Name] {
			t.Errorf("%s declared twice", v.Name)
		}
		seen[v.Name] = true
	}
}
