package nodes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeLister struct {
	calls atomic.Int32
	mu    sync.Mutex
	list  []Instance
	delay time.Duration
}

func (f *fakeLister) ListVPCInstances(ctx context.Context, vpc string) ([]Instance, error) {
	f.calls.Add(1)
	time.Sleep(f.delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Instance(nil), f.list...), nil
}

func TestIndexSharesOneListingAcrossConcurrentLookups(t *testing.T) {
	f := &fakeLister{delay: 20 * time.Millisecond}
	for i := 0; i < 250; i++ {
		f.list = append(f.list, Instance{ID: fmt.Sprintf("i-%d", i), PrivateIPs: []string{fmt.Sprintf("10.0.%d.%d", i/200, i%200)}})
	}
	x := NewIndex(f, "vpc-1")
	var wg sync.WaitGroup
	for i := 0; i < 250; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			in, err := x.ByID(context.Background(), fmt.Sprintf("i-%d", i))
			if err != nil || in == nil {
				t.Errorf("lookup i-%d: %v %v", i, in, err)
			}
		}(i)
	}
	wg.Wait()
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("250 concurrent lookups made %d listings, want 1", n)
	}
	in, err := x.ByPrivateIP(context.Background(), "10.0.1.3")
	if err != nil || in == nil || in.ID != "i-203" {
		t.Fatalf("by IP: %v %v", in, err)
	}
}

func TestIndexMissesRefreshAtMostOncePerInterval(t *testing.T) {
	now := time.Unix(1000, 0)
	f := &fakeLister{list: []Instance{{ID: "i-a"}}}
	x := NewIndex(f, "vpc-1")
	x.now = func() time.Time { return now }
	ctx := context.Background()
	for _, tc := range []struct {
		advance  time.Duration
		id       string
		found    bool
		listings int32
	}{
		{0, "i-a", true, 1},                // first lookup lists
		{time.Second, "i-b", false, 1},     // young listing: a miss is authoritative
		{2 * time.Second, "i-b", false, 2}, // older than MinRefreshInterval: relist once
		{0, "i-a", true, 2},                // fresh hit
		{16 * time.Second, "i-a", true, 3}, // older than MaxAge: relist even on a hit
	} {
		now = now.Add(tc.advance)
		in, err := x.ByID(ctx, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if (in != nil) != tc.found {
			t.Fatalf("%s found=%v, want %v", tc.id, in != nil, tc.found)
		}
		if n := f.calls.Load(); n != tc.listings {
			t.Fatalf("after lookup of %s: %d listings, want %d", tc.id, n, tc.listings)
		}
	}
	f.mu.Lock()
	f.list = append(f.list, Instance{ID: "i-new"})
	f.mu.Unlock()
	now = now.Add(3 * time.Second)
	if in, _ := x.ByID(ctx, "i-new"); in == nil {
		t.Fatal("a new instance is found after the refresh interval")
	}
}

// TestShortCacheTTLRelistsForAHit: with MaxAge below MinRefreshInterval
// (--instance-cache-ttl=1s), a hit on a listing older than MaxAge but
// younger than the refresh interval lists again and answers from it. It
// used to wait only for the miss bound, which the old listing met, and
// spin forever: the node lifecycle controller's goroutine never came back.
func TestShortCacheTTLRelistsForAHit(t *testing.T) {
	now := time.Unix(1000, 0)
	f := &fakeLister{list: []Instance{{ID: "i-a", Status: "Running"}}}
	x := NewIndex(f, "vpc-1")
	x.MaxAge = time.Second
	x.now = func() time.Time { return now }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if in, err := x.ByID(ctx, "i-a"); err != nil || in == nil {
		t.Fatalf("i-a: %v %v", in, err)
	}
	f.mu.Lock()
	f.list[0].Status = "Stopped"
	f.mu.Unlock()
	now = now.Add(1500 * time.Millisecond)
	var in *Instance
	var err error
	done := make(chan struct{})
	go func() { in, err = x.ByID(ctx, "i-a"); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the lookup did not come back in 5 s (it spins without listing)")
	}
	if err != nil || in == nil || in.Status != "Stopped" {
		t.Fatalf("after 1.5 s with a 1 s cache: %+v %v; want the relisted, stopped instance", in, err)
	}
	if n := f.calls.Load(); n != 2 {
		t.Fatalf("%d listings, want 2", n)
	}
}

// TestFreshLookupSeesInstancesCreatedAfterTheListing: a plain miss on a
// young listing says "no such instance" (cheap, for lookups), but under
// Fresh — used before deleting a Node — a listing begun after the miss
// answers, so a just-created instance is found.
func TestFreshLookupSeesInstancesCreatedAfterTheListing(t *testing.T) {
	now := time.Unix(1000, 0)
	f := &fakeLister{list: []Instance{{ID: "i-a"}}}
	x := NewIndex(f, "vpc-1")
	x.now = func() time.Time { return now }
	ctx := context.Background()
	if in, err := x.ByID(ctx, "i-a"); err != nil || in == nil {
		t.Fatalf("i-a: %v %v", in, err)
	}
	f.mu.Lock()
	f.list = append(f.list, Instance{ID: "i-new"})
	f.mu.Unlock()
	now = now.Add(500 * time.Millisecond)
	if in, _ := x.ByID(ctx, "i-new"); in != nil {
		t.Fatal("a plain lookup relisted within MinRefreshInterval")
	}
	if in, err := x.ByID(x.Fresh(ctx), "i-new"); err != nil || in == nil {
		t.Fatalf("fresh lookup: %v %v", in, err)
	}
	now = now.Add(time.Millisecond)
	if in, err := x.ByID(x.Fresh(ctx), "i-gone"); err != nil || in != nil {
		t.Fatalf("fresh lookup of a missing instance: %v %v", in, err)
	}
	if n := f.calls.Load(); n != 3 {
		t.Fatalf("%d listings, want 3 (first, and one per fresh lookup)", n)
	}
}

// TestIndexWarmServesTheFirstLookups: the start-up check's listing answers
// the lookups made during and after it; a failed one reports its error.
func TestIndexWarmServesTheFirstLookups(t *testing.T) {
	f := &fakeLister{delay: 20 * time.Millisecond, list: []Instance{{ID: "i-a", PrivateIPs: []string{"10.0.0.1"}}}}
	x := NewIndex(f, "vpc-1")
	done := make(chan error)
	go func() { done <- x.Warm(context.Background()) }()
	time.Sleep(5 * time.Millisecond) // the lookup joins the warm-up in flight
	in, err := x.ByPrivateIP(context.Background(), "10.0.0.1")
	if err != nil || in == nil || in.ID != "i-a" {
		t.Fatalf("lookup during warm-up: %v %v", in, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if in, err := x.ByID(context.Background(), "i-a"); err != nil || in == nil {
		t.Fatalf("lookup after warm-up: %v %v", in, err)
	}
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("warm-up and two lookups made %d listings, want 1", n)
	}

	failing := NewIndex(failingLister{}, "vpc-1")
	if err := failing.Warm(context.Background()); err == nil {
		t.Fatal("a failed warm-up listing reported no error")
	}
}

type failingLister struct{}

func (failingLister) ListVPCInstances(context.Context, string) ([]Instance, error) {
	return nil, fmt.Errorf("throttled")
}

// gatedLister answers with the instances it held when a listing began,
// once released (one listing per value sent on release), and records when each listing began and whether its context was done at
// its end.
type gatedLister struct {
	release chan struct{}
	mu      sync.Mutex
	list    []Instance
	starts  []time.Time
	ctxErrs []error
}

func newGatedLister(list ...Instance) *gatedLister {
	return &gatedLister{release: make(chan struct{}), list: list}
}

func (g *gatedLister) ListVPCInstances(ctx context.Context, vpc string) ([]Instance, error) {
	g.mu.Lock()
	g.starts = append(g.starts, time.Now())
	list := append([]Instance(nil), g.list...)
	g.mu.Unlock()
	<-g.release
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ctxErrs = append(g.ctxErrs, ctx.Err())
	return list, nil
}

func (g *gatedLister) add(in Instance) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.list = append(g.list, in)
}

func (g *gatedLister) listings() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.starts)
}

// waitListings waits (bounded) until n listings have begun.
func (g *gatedLister) waitListings(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.listings() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d listings began, want %d", g.listings(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSinceMissesShareOneListingBegunAfterThem: lookups whose instances
// were created while a listing was in flight do not take that listing's
// miss as final; they all wait for it to end and share the next one,
// which finds them.
func TestSinceMissesShareOneListingBegunAfterThem(t *testing.T) {
	g := newGatedLister(Instance{ID: "i-old"})
	x := NewIndex(g, "vpc-1")
	x.ListingGap = 0
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := x.ByID(ctx, "i-old")
		first <- err
	}()
	g.waitListings(t, 1)
	// Created and seen after the first listing began.
	seen := time.Now()
	const n = 50
	for i := 0; i < n; i++ {
		g.add(Instance{ID: fmt.Sprintf("i-new-%d", i)})
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			in, err := x.ByID(x.Since(ctx, seen), fmt.Sprintf("i-new-%d", i))
			if err == nil && in == nil {
				err = fmt.Errorf("i-new-%d not found", i)
			}
			errs <- err
		}(i)
	}
	g.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	g.waitListings(t, 2)
	g.release <- struct{}{}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := g.listings(); got != 2 {
		t.Fatalf("%d listings, want 2 (the one in flight, then one shared by the %d lookups)", got, n)
	}
	// A real miss, proved by a listing begun after it, is answered at once.
	if in, err := x.ByID(x.Since(ctx, seen), "i-none"); err != nil || in != nil {
		t.Fatalf("i-none: %v %v", in, err)
	}
	if got := g.listings(); got != 2 {
		t.Fatalf("a proved miss made a listing (%d)", got)
	}
}

// TestListingOutlivesTheCallerThatStartedIt: the caller whose lookup
// started a listing gives up; the listing goes on (its context is not
// done) and answers the other waiter.
func TestListingOutlivesTheCallerThatStartedIt(t *testing.T) {
	g := newGatedLister(Instance{ID: "i-a"})
	x := NewIndex(g, "vpc-1")
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := x.ByID(ctx, "i-a")
		first <- err
	}()
	g.waitListings(t, 1)
	second := make(chan error, 1)
	go func() {
		in, err := x.ByID(context.Background(), "i-a")
		if err == nil && in == nil {
			err = fmt.Errorf("i-a not found")
		}
		second <- err
	}()
	cancel()
	if err := <-first; err == nil {
		t.Fatal("the cancelled caller got no error")
	}
	g.release <- struct{}{}
	if err := <-second; err != nil {
		t.Fatalf("the other waiter: %v", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.starts) != 1 || g.ctxErrs[0] != nil {
		t.Fatalf("listings %d, context at the end %v; want 1 listing, not cancelled", len(g.starts), g.ctxErrs)
	}
}

// TestListingsAreSpacedByTheGap: misses arriving one after another wait
// for the gap after the previous listing began, so they share listings.
func TestListingsAreSpacedByTheGap(t *testing.T) {
	f := &fakeLister{}
	var mu sync.Mutex
	var starts []time.Time
	x := NewIndex(listerFunc(func(ctx context.Context, vpc string) ([]Instance, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return f.ListVPCInstances(ctx, vpc)
	}), "vpc-1")
	x.ListingGap = 200 * time.Millisecond
	for i := 0; i < 3; i++ {
		if _, err := x.ByID(x.Fresh(context.Background()), "i-none"); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != 3 {
		t.Fatalf("%d listings, want 3", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-1]); d < x.ListingGap {
			t.Errorf("listing %d began %v after the previous one, want at least %v", i, d, x.ListingGap)
		}
	}
}

type listerFunc func(ctx context.Context, vpc string) ([]Instance, error)

func (f listerFunc) ListVPCInstances(ctx context.Context, vpc string) ([]Instance, error) {
	return f(ctx, vpc)
}

func TestListingIsDroppedOnceNoLookupCanUseIt(t *testing.T) {
	f := &fakeLister{list: []Instance{{ID: "i-a"}}}
	x := NewIndex(f, "vpc-1")
	x.MaxAge, x.MinRefreshInterval, x.ListingGap = 50*time.Millisecond, 20*time.Millisecond, 0
	if in, err := x.ByID(context.Background(), "i-a"); err != nil || in == nil {
		t.Fatalf("lookup: %v %v", in, err)
	}
	held := func() bool {
		x.instances.mu.Lock()
		defer x.instances.mu.Unlock()
		return x.instances.value.byID != nil
	}
	if !held() {
		t.Fatal("the listing is not held right after it ended")
	}
	deadline := time.Now().Add(5 * time.Second)
	for held() {
		if time.Now().After(deadline) {
			t.Fatal("the listing is still held 5 s after its 50 ms horizon")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if in, err := x.ByID(context.Background(), "i-a"); err != nil || in == nil || f.calls.Load() != 2 {
		t.Fatalf("lookup after the drop: %v %v, %d listings (want 2)", in, err, f.calls.Load())
	}
}
