package service

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// TestFairQueue: keys come out round-robin over namespaces, FIFO within
// one; one namespace alone is plain FIFO.
func TestFairQueue(t *testing.T) {
	q := newFairQueue()
	for _, k := range []string{"a/1", "a/2", "a/3", "a/4", "b/1", "c/1", "b/2"} {
		q.Push(k)
	}
	var got []string
	for q.Len() > 0 {
		got = append(got, q.Pop())
	}
	if want := []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3", "a/4"}; !reflect.DeepEqual(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
	for _, k := range []string{"x/1", "x/2", "x/3"} {
		q.Push(k)
	}
	got = nil
	for q.Len() > 0 {
		got = append(got, q.Pop())
	}
	if want := []string{"x/1", "x/2", "x/3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("one namespace popped %v, want FIFO %v", got, want)
	}
}

// TestServiceQueueFairness: through the controller's real workqueue, a
// namespace that queued 100 Services first does not make another
// namespace's Service wait behind all of them.
func TestServiceQueueFairness(t *testing.T) {
	q := newServiceQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	for i := range 100 {
		q.Add("noisy/" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
	}
	q.Add("quiet/web")
	for i := 0; ; i++ {
		k, _ := q.Get()
		q.Done(k)
		if k == "quiet/web" {
			if i > 1 {
				t.Errorf("the other namespace's Service came out after %d keys, want at most 1", i)
			}
			return
		}
	}
}

// TestSyncLimiter: a burst, then one sync per 1/rate; the wait says when
// the next token comes and takes nothing; buckets are per Service.
func TestSyncLimiter(t *testing.T) {
	l := newSyncLimiter(2, 3)
	now := time.Now()
	for i := range 3 {
		if w := l.wait("ns/a", now); w != 0 {
			t.Fatalf("sync %d of the burst waits %v", i, w)
		}
	}
	w := l.wait("ns/a", now)
	if w < 400*time.Millisecond || w > 500*time.Millisecond {
		t.Errorf("after the burst: wait %v, want about 500ms", w)
	}
	if w2 := l.wait("ns/a", now); w2 != w {
		t.Errorf("asking again took a token: %v then %v", w, w2)
	}
	if w := l.wait("ns/b", now); w != 0 {
		t.Errorf("another Service waits %v", w)
	}
	if w := l.wait("ns/a", now.Add(500*time.Millisecond)); w != 0 {
		t.Errorf("after the wait: still %v", w)
	}
	l.forget("ns/a")
	var nilLimiter *syncLimiter
	if nilLimiter.wait("x/y", now) != 0 {
		t.Error("a nil limiter waits")
	}
}
