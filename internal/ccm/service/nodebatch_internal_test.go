package service

import (
	"slices"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestNodeBatch: the Services of Node changes within one window are queued
// together when the window that the batch's first change opened closes,
// each once; a change after that opens the next window.
func TestNodeBatch(t *testing.T) {
	type change struct {
		at  time.Duration
		key string
	}
	for _, tc := range []struct {
		name    string
		window  time.Duration
		changes []change
		// batches are the keys queued together, in the order the
		// batches close, each sorted.
		batches [][]string
	}{
		{"no window: at once", -1, []change{{0, "a"}, {time.Second, "a"}}, [][]string{{"a"}, {"a"}}},
		{"one change waits for the window", 2 * time.Second, []change{{0, "a"}}, [][]string{{"a"}}},
		{"Nodes a second apart: one batch, each Service once", 2 * time.Second,
			[]change{{0, "a"}, {0, "b"}, {time.Second, "a"}, {time.Second, "c"}, {1900 * time.Millisecond, "b"}}, [][]string{{"a", "b", "c"}}},
		{"the window is not extended by later changes", 2 * time.Second,
			[]change{{0, "a"}, {1500 * time.Millisecond, "b"}, {2500 * time.Millisecond, "b"}, {3 * time.Second, "c"}}, [][]string{{"a", "b"}, {"b", "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			var mu sync.Mutex
			var batches [][]string
			var open []string
			b := &nodeBatch{window: tc.window, clock: clk, add: func(k string) {
				mu.Lock()
				defer mu.Unlock()
				open = append(open, k)
			}}
			// closeBatch records what was queued since the last batch.
			closeBatch := func() {
				mu.Lock()
				defer mu.Unlock()
				if len(open) > 0 {
					slices.Sort(open)
					batches = append(batches, open)
					open = nil
				}
			}
			start := clk.Now()
			for _, c := range tc.changes {
				// Step in small increments so that a window closing
				// before the change is recorded as its own batch.
				for clk.Since(start) < c.at {
					clk.Step(100 * time.Millisecond)
					if tc.window > 0 {
						closeBatch()
					}
				}
				b.queue(c.key)
				if tc.window <= 0 {
					closeBatch()
				}
			}
			for i := 0; i < 100; i++ {
				clk.Step(100 * time.Millisecond)
				closeBatch()
			}
			if !slices.EqualFunc(batches, tc.batches, slices.Equal[[]string]) {
				t.Errorf("batches %v, want %v", batches, tc.batches)
			}
		})
	}
}
