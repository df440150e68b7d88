package localcluster

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// kwok filters an annotation selector on the client side and never hears
// that a Node stopped matching, so it would renew that Node's lease forever.
// A label selector is evaluated by the API server, whose watch reports a
// Node that stops matching as deleted, which makes kwok let go. So kwok
// selects on a label, and this mirror keeps that label equal to the
// kwok.x-k8s.io/node annotation that users and tests set.
func runKwokMirror(ctx context.Context, cs kubernetes.Interface) {
	factory := informers.NewSharedInformerFactory(cs, 10*time.Minute)
	inf := factory.Core().V1().Nodes().Informer()
	sync := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		want, annotated := n.Annotations[KwokNodeAnnotation]
		have, labelled := n.Labels[KwokNodeAnnotation]
		if annotated == labelled && want == have {
			return
		}
		var value any
		if annotated {
			value = want
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{KwokNodeAnnotation: value}}})
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, _ = cs.CoreV1().Nodes().Patch(pctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    sync,
		UpdateFunc: func(_, obj any) { sync(obj) },
	})
	factory.Start(ctx.Done())
}
