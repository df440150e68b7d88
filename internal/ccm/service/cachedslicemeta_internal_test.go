package service

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// TestSliceMetaKeysAndTombstones: the trimmed metadata is all the store's
// key functions, the tombstone path and sliceOf read.
func TestSliceMetaKeysAndTombstones(t *testing.T) {
	full := fullSlice()
	del := metav1.NewTime(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	full.DeletionTimestamp = &del
	obj, _ := compactSliceTransform(full)
	sl := obj.(*cachedSlice)
	if n := unsafe.Sizeof(sliceMeta{}); n > 72 {
		t.Errorf("sliceMeta is %d bytes", n)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatalf("meta.Accessor: %v", err)
	}
	if m.GetName() != "web-abc" || m.GetNamespace() != "default" || m.GetUID() != "u1" || m.GetResourceVersion() != "42" ||
		m.GetDeletionTimestamp() == nil || !m.GetDeletionTimestamp().Equal(&del) {
		t.Errorf("accessor reads %s/%s uid %s rv %s deleted %v", m.GetNamespace(), m.GetName(), m.GetUID(), m.GetResourceVersion(), m.GetDeletionTimestamp())
	}
	if unsafe.StringData(sl.Namespace) == unsafe.StringData(full.Namespace) || sl.DeletionTimestamp == full.DeletionTimestamp {
		t.Error("the cached slice shares the decoded slice's namespace or deletion time")
	}
	for name, fn := range map[string]cache.KeyFunc{"MetaNamespaceKeyFunc": cache.MetaNamespaceKeyFunc, "DeletionHandlingMetaNamespaceKeyFunc": cache.DeletionHandlingMetaNamespaceKeyFunc} {
		if k, err := fn(obj); err != nil || k != "default/web-abc" {
			t.Errorf("%s: %q, %v", name, k, err)
		}
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "default/web-abc", Obj: obj}
	if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(tomb); err != nil || k != "default/web-abc" {
		t.Errorf("tombstone key %q, %v", k, err)
	}
	if sliceOf(tomb) != sl || sliceOf(obj) != sl {
		t.Error("sliceOf does not find the cached slice")
	}
	cp := sl.deepCopy()
	if cp.sliceMeta.DeletionTimestamp == sl.DeletionTimestamp || !cp.DeletionTimestamp.Equal(sl.DeletionTimestamp) || cp.Name != sl.Name {
		t.Error("deepCopy shares or loses the metadata")
	}
}

// TestSliceMetaInformer: an EndpointSlice informer with the transform and
// the controller's indexes keys, indexes, updates and deletes cached
// slices (pure unit test: a fake clientset).
func TestSliceMetaInformer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	inf := informers.NewSharedInformerFactory(client, 0).Discovery().V1().EndpointSlices().Informer()
	if err := inf.SetTransform(compactSliceTransform); err != nil {
		t.Fatal(err)
	}
	if err := inf.AddIndexers(sliceIndexers); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []string
	record := func(kind string, obj any) {
		mu.Lock()
		defer mu.Unlock()
		sl := sliceOf(obj)
		if sl == nil {
			events = append(events, kind+" nil")
			return
		}
		events = append(events, kind+" "+sl.Namespace+"/"+sl.Name+"@"+sl.ResourceVersion)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record("add", obj) },
		UpdateFunc: func(_, obj any) { record("update", obj) },
		DeleteFunc: func(obj any) { record("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("cache not synced")
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%s: events %v", what, events)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	sls := client.DiscoveryV1().EndpointSlices("default")
	s := fullSlice()
	if _, err := sls.Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("add", func() bool { _, ok, _ := inf.GetStore().GetByKey("default/web-abc"); return ok })
	got, _, _ := inf.GetStore().GetByKey("default/web-abc")
	if sl, ok := got.(*cachedSlice); !ok || sl.service != "web" || len(sl.endpoints) != 4 {
		t.Fatalf("cached %T %+v", got, got)
	}
	byNode, err := inf.GetIndexer().ByIndex(sliceByNode, "n2")
	if err != nil || len(byNode) != 1 {
		t.Errorf("by node n2: %d, %v", len(byNode), err)
	}
	// Endpoints leave n2: the index follows the update.
	s.Endpoints = s.Endpoints[:2]
	s.ResourceVersion = "43"
	s.Endpoints[0].Conditions.Ready = ptr.To(false)
	if _, err := sls.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("update", func() bool {
		got, _, _ := inf.GetStore().GetByKey("default/web-abc")
		return sliceOf(got) != nil && sliceOf(got).ResourceVersion == "43"
	})
	if byNode, _ := inf.GetIndexer().ByIndex(sliceByNode, "n2"); len(byNode) != 0 {
		t.Errorf("by node n2 after the update: %d", len(byNode))
	}
	if bySvc, _ := inf.GetIndexer().ByIndex(sliceByService, "default/web"); len(bySvc) != 1 {
		t.Errorf("by service: %d", len(bySvc))
	}
	if err := sls.Delete(ctx, "web-abc", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("delete", func() bool { return len(inf.GetStore().ListKeys()) == 0 })
	if bySvc, _ := inf.GetIndexer().ByIndex(sliceByService, "default/web"); len(bySvc) != 0 {
		t.Errorf("by service after the delete: %d", len(bySvc))
	}
	waitFor("delete event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(events, "delete default/web-abc@43")
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(events, "add default/web-abc@42") || !slices.Contains(events, "update default/web-abc@43") {
		t.Errorf("events %v", events)
	}
}
