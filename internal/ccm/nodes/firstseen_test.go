package nodes

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
)

func uninitializedNode(name, ip string, created time.Time) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule}}},
		Status:     v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}},
	}
}

func notFoundAnswers(t *testing.T) float64 {
	t.Helper()
	v, _, err := ccmmetrics.Value("alicloud_node_uninitialized_not_found_total", nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestUninitializedNodeMissWaitsForAListingAfterItWasSeen: the instance of
// a Node seen after the cached listing began (in the same second: its
// creationTimestamp is before the listing) is found by a newer listing
// instead of being answered "not found", and a Node on an address an older
// listing gives to a gone instance gets its own; a Node with no instance gets
// "not found" after one listing begun after it was seen, and at once
// from then on.
func TestUninitializedNodeMissWaitsForAListingAfterItWasSeen(t *testing.T) {
	f := &fakeLister{list: []Instance{{ID: "i-a", PrivateIPs: []string{"10.0.0.1"}}}}
	x := NewIndex(f, "vpc-1")
	x.ListingGap = 0
	s := NewInstances(x, "cn-hangzhou", nil)
	ctx := context.Background()
	second := time.Now().Truncate(time.Second)
	if err := s.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.list = append(f.list, Instance{ID: "i-b", PrivateIPs: []string{"10.0.0.2"}})
	f.mu.Unlock()
	before := notFoundAnswers(t)

	joined := uninitializedNode("joined", "10.0.0.2", second)
	s.observed(joined, time.Now())
	md, err := s.InstanceMetadata(ctx, joined)
	if err != nil {
		t.Fatalf("a Node whose instance is newer than the cached listing: %v", err)
	}
	if md.ProviderID != "cn-hangzhou.i-b" {
		t.Fatalf("providerID %q", md.ProviderID)
	}
	if n := f.calls.Load(); n != 2 {
		t.Fatalf("%d listings, want 2", n)
	}

	// The address of an instance gone since the cached listing began is
	// taken by a new instance: its Node gets the new one, not the gone one.
	f.mu.Lock()
	f.list = []Instance{{ID: "i-a", PrivateIPs: []string{"10.0.0.1"}}, {ID: "i-c", PrivateIPs: []string{"10.0.0.2"}}}
	f.mu.Unlock()
	reused := uninitializedNode("reused", "10.0.0.2", second)
	s.observed(reused, time.Now())
	if md, err := s.InstanceMetadata(ctx, reused); err != nil || md.ProviderID != "cn-hangzhou.i-c" {
		t.Fatalf("a Node on a reused address: %+v %v, want providerID cn-hangzhou.i-c", md, err)
	}
	if n := f.calls.Load(); n != 3 {
		t.Fatalf("%d listings, want 3", n)
	}

	// Not seen through the informer: the first lookup counts as seen.
	orphan := uninitializedNode("orphan", "10.0.0.9", second)
	for i := 0; i < 2; i++ {
		if _, err := s.InstanceMetadata(ctx, orphan); !errors.Is(err, cloudprovider.InstanceNotFound) {
			t.Fatalf("lookup %d of a Node without instance: %v, want InstanceNotFound", i, err)
		}
	}
	if n := f.calls.Load(); n != 4 {
		t.Fatalf("%d listings, want 4: one proves the orphan's miss, the retry is answered from it", n)
	}
	if got := notFoundAnswers(t) - before; got != 2 {
		t.Fatalf("not-found answers counted %g, want 2 (the orphan's)", got)
	}
}

// TestInitializationWaitsForTheInformerToHoldItsWrite: after its status
// patch, initialization returns once the Node informer delivers the
// patched resourceVersion (the upstream controller then updates from a
// current copy), at once when the store already holds it.
func TestInitializationWaitsForTheInformerToHoldItsWrite(t *testing.T) {
	s := NewInstances(NewIndex(&fakeLister{}, "vpc-1"), "cn-hangzhou", nil)
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	s.nodes, s.versionWaits = store, map[string]*versionWait{}
	node := func(rv string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: rv}}
	}
	if err := store.Add(node("1")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		s.awaitObserved(context.Background(), node("2"))
		close(done)
	}()
	s.delivered(node("1"))
	select {
	case <-done:
		t.Fatal("returned before the informer delivered the write")
	case <-time.After(50 * time.Millisecond):
	}
	if err := store.Update(node("2")); err != nil {
		t.Fatal(err)
	}
	s.delivered(node("2"))
	<-done
	// Already held: no wait (a wait would last observeTimeout).
	held := make(chan struct{})
	go func() {
		s.awaitObserved(context.Background(), node("2"))
		close(held)
	}()
	select {
	case <-held:
	case <-time.After(observeTimeout / 2):
		t.Fatal("waited for a write the store already held")
	}
	if len(s.versionWaits) != 0 {
		t.Fatalf("waits left behind: %v", s.versionWaits)
	}
}
