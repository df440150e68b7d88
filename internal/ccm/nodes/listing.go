package nodes

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/klog/v2"
)

// sharedListing holds the result of the latest listing of something in the
// cluster VPC (its instances, its primary ENIs' checks) and runs the next
// one for every lookup that needs it: one at a time, at least the owner's
// ListingGap after the previous one began, each on a context detached from
// the callers' with the owner's ListingTimeout.
type sharedListing[T any] struct {
	owner *Index
	// what names the listing in logs and errors.
	what string
	list func(ctx context.Context) (T, error)

	// flights runs each listing once, in a goroutine of its own, for all
	// the lookups waiting for it; each waits on its own context.
	flights singleflight.Group

	mu    sync.Mutex
	value T
	// listedAt is when the listing value comes from began (zero: none yet).
	listedAt time.Time
	// failure is the error of the last failed listing, which began at
	// failedAt.
	failure  error
	failedAt time.Time
	// next is the listing running or about to begin; nil when none is.
	next *flight
	// lastStart is when the latest listing began.
	lastStart time.Time
	seq       uint64
}

// flight is one listing, shared by every lookup waiting for it.
type flight struct {
	// key names it in sharedListing.flights.
	key string
}

func newSharedListing[T any](owner *Index, what string, list func(ctx context.Context) (T, error)) *sharedListing[T] {
	return &sharedListing[T]{owner: owner, what: what, list: list}
}

// lookupIn answers find from l's latest listing when that can answer: a
// hit from a listing begun at or after hitSince, a miss from one begun at
// or after missSince. Otherwise it waits for a listing begun late enough,
// shared with every lookup waiting meanwhile, and answers from it.
func lookupIn[T, R any](ctx context.Context, l *sharedListing[T], hitSince, missSince time.Time, find func(T) (R, bool)) (R, bool, error) {
	for waited := false; ; waited = true {
		l.mu.Lock()
		value, listedAt := l.value, l.listedAt
		l.mu.Unlock()
		if !listedAt.IsZero() && !listedAt.Before(hitSince) {
			if r, ok := find(value); ok {
				return r, true, nil
			}
			if !listedAt.Before(missSince) {
				var zero R
				return zero, false, nil
			}
			if !waited {
				// Without this wait, the miss of a Node that joined with
				// its instance started the node controller's backoff.
				klog.FromContext(ctx).V(4).Info("Miss in a listing begun before it can prove one; waiting for a newer listing",
					"listing", l.what, "listedAt", listedAt, "since", missSince)
			}
		}
		// A listing too old for a hit must be replaced by one new enough
		// for either answer: waiting only for missSince returned at once
		// when the hit bound was the later (a cache TTL below the refresh
		// interval), and the lookup spun without ever listing.
		need := missSince
		if listedAt.IsZero() || listedAt.Before(hitSince) {
			need = latest(hitSince, missSince)
		}
		if err := l.await(ctx, need); err != nil {
			var zero R
			return zero, false, err
		}
	}
}

// await returns once a listing begun at or after since has ended, with
// its error; it joins the listing in flight, or starts one. A listing in
// flight that began earlier is waited for first, as one runs at a time.
func (l *sharedListing[T]) await(ctx context.Context, since time.Time) error {
	for {
		l.mu.Lock()
		if !l.listedAt.IsZero() && !l.listedAt.Before(since) {
			l.mu.Unlock()
			return nil
		}
		if l.failure != nil && !l.failedAt.Before(since) {
			err := l.failure
			l.mu.Unlock()
			return err
		}
		done := l.join(ctx)
		l.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("waiting for a listing of the %s: %w", l.what, ctx.Err())
		}
	}
}

// join, called with l.mu held, returns the end of the listing in flight,
// starting one when none is. The listing runs on a context detached from
// the caller's, so one caller giving up does not fail the others.
func (l *sharedListing[T]) join(ctx context.Context) <-chan singleflight.Result {
	f := l.next
	if f == nil {
		l.seq++
		f = &flight{key: strconv.FormatUint(l.seq, 10)}
		l.next = f
		detached := context.WithoutCancel(ctx)
		return l.flights.DoChan(f.key, func() (any, error) { return nil, l.run(detached) })
	}
	// l.next is cleared under l.mu before its function returns, so the key
	// is still in flight and this joins it rather than start another.
	return l.flights.DoChan(f.key, func() (any, error) {
		return nil, fmt.Errorf("listing %s of the %s ended before it was joined", f.key, l.what)
	})
}

// run waits out the gap since the previous listing began, then lists.
func (l *sharedListing[T]) run(ctx context.Context) error {
	x := l.owner
	l.mu.Lock()
	gap := l.lastStart.Add(x.ListingGap).Sub(x.now())
	l.mu.Unlock()
	if gap > 0 {
		time.Sleep(gap)
	}
	ctx, cancel := context.WithTimeout(ctx, x.ListingTimeout)
	defer cancel()
	l.mu.Lock()
	start := x.now()
	l.lastStart = start
	l.mu.Unlock()
	value, err := l.list(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next = nil
	if err != nil {
		l.failure, l.failedAt = err, start
		klog.ErrorS(err, "Listing failed", "listing", l.what)
		return err
	}
	l.failure = nil
	l.value, l.listedAt = value, start
	klog.V(4).InfoS("Listed", "listing", l.what, "took", x.now().Sub(start), "waitedForGap", max(gap, 0))
	// A second past the horizon in real time: the owner's clock is not
	// read from the timer, as tests move it from their own goroutine.
	time.AfterFunc(x.horizon()+time.Second, func() { l.expire(start) })
	return nil
}

// expire drops the listing begun at start once no lookup can be answered
// from it any more (Index.horizon). Between Nodes joining, the listing is
// only memory: at 2,000 instances it held ~3 MB of the CCM's heap (the
// benchmark's W4) for the minutes between the node controllers' passes.
func (l *sharedListing[T]) expire(start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.listedAt.Equal(start) {
		// Replaced by a newer listing, which expires on its own.
		return
	}
	var zero T
	l.value, l.listedAt = zero, time.Time{}
}
