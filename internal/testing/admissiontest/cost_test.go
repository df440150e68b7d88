package admissiontest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// totalAnnotationBytes is the API server's limit on a Service's annotations
// (keys and values), 256 KiB.
const totalAnnotationBytes = 256 << 10

// TestCostEveryAnnotationAtMaximum: a Service carrying every annotation of
// the registry, together filling the API server's 256 KiB, is refused with
// the parser's kind of message, never with a CEL cost error; and one whose
// every list sits at the largest size the policy checks (64 elements,
// about 4 KiB each, each element passing its own checks so the repeat scan
// runs over all of them) is judged as the parser judges it.
func TestCostEveryAnnotationAtMaximum(t *testing.T) {
	ctx := context.Background()
	for _, owner := range []annotations.Owner{annotations.OwnerCLB, annotations.OwnerNLB} {
		t.Run(owner.String()+"/filled", func(t *testing.T) {
			var keys []string
			size := 0
			for i := range annotations.Registry {
				a := &annotations.Registry[i]
				if a.Scope == annotations.ScopeRouting || slices.Contains(keys, a.Key) {
					continue
				}
				keys = append(keys, a.Key)
				size += len(a.Key)
			}
			each := (totalAnnotationBytes - size) / len(keys)
			var kv []string
			for _, k := range keys {
				// Lists of many tiny elements are the most work per byte.
				kv = append(kv, k, strings.Repeat("a,", each/2))
			}
			svc := service("filled", classOf(owner), kv...)
			start := time.Now()
			err := create(ctx, cs, denyNS, svc)
			t.Logf("%d annotations of %d bytes: %v in %v", len(keys), each, err != nil, time.Since(start))
			if err == nil || !strings.Contains(err.Error(), "denied request: invalid Service annotation: ") {
				t.Fatalf("want a refusal with the parser's message, got %v", err)
			}
			for _, bad := range []string{"cost", "budget", "failed expression"} {
				if strings.Contains(strings.ToLower(err.Error()), bad) {
					t.Errorf("refusal mentions %q: %v", bad, err)
				}
			}
		})
		t.Run(owner.String()+"/largest-checked", func(t *testing.T) {
			var kv []string
			for i := range annotations.Registry {
				a := &annotations.Registry[i]
				s, ok := sampleOf(a, owner)
				if !ok || a.Kind != annotations.KindFormat || !strings.Contains(s.valid, ",") && !strings.Contains(s.valid, ":") {
					continue
				}
				elem := strings.Split(s.valid, ",")[0]
				pad := (annotations.AdmissionMaxCheckedChars/annotations.AdmissionMaxCheckedElements - len(elem) - 1) / 2
				one := strings.Repeat(" ", pad) + elem + strings.Repeat(" ", pad)
				v := strings.TrimSuffix(strings.Repeat(one+",", annotations.AdmissionMaxCheckedElements), ",")
				kv = append(kv, a.Key, v)
			}
			svc := service("largest", classOf(owner), kv...)
			start := time.Now()
			compare(ctx, t, svc)
			t.Logf("%d lists of %d characters: %v", len(kv)/2, len(kv[1]), time.Since(start))
		})
	}
}
