package admissiontest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// TestAdmittedBeforeThePolicy: a Service with a bad annotation stored
// before the policy applied to it keeps working with the controller: its
// finalizer can be added and removed and the Service deleted, while a
// change of its annotations is judged.
func TestAdmittedBeforeThePolicy(t *testing.T) {
	ctx := context.Background()
	ns := "admission-later"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := service("old", nil, annotations.Key("scheduler"), "nope")
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create without a binding: %v", err)
	}
	// Now the Deny binding covers the namespace.
	n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels = map[string]string{nsLabel: "deny"}
	if _, err := cs.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A new Service there is refused, so the binding applies. The API
	// server matches namespaceSelector against its own namespace informer,
	// so the new label takes effect a moment after the update returns.
	refused := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := create(ctx, cs, ns, service("new", nil, annotations.Key("scheduler"), "nope")); err != nil {
			refused = true
			break
		}
	}
	if !refused {
		t.Fatal("a new bad Service admitted in the namespace 30s after its label matched the Deny binding")
	}
	patch := func(p string) error {
		_, err := cs.CoreV1().Services(ns).Patch(ctx, "old", types.MergePatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	if err := patch(`{"metadata":{"finalizers":["` + naming.FinalizerCLB + `"]}}`); err != nil {
		t.Errorf("adding the controller's finalizer refused: %v", err)
	}
	if err := patch(`{"metadata":{"labels":{"team":"web"}}}`); err != nil {
		t.Errorf("a label change refused: %v", err)
	}
	if err := patch(`{"metadata":{"annotations":{"` + annotations.Key("scheduler") + `":"still-bad"}}}`); err == nil {
		t.Errorf("a new bad annotation value admitted")
	}
	if err := cs.CoreV1().Services(ns).Delete(ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := patch(`{"metadata":{"finalizers":null}}`); err != nil {
		t.Errorf("removing the finalizer of a deleted Service refused: %v", err)
	}
}
