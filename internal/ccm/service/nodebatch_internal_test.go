package service

import (
	"slices"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestNodeBatch: the Services of Node changes less than a window apart are
// queued together, each once, when the changes have been quiet for a
// window or the batch has been open for maxWait; a change after that opens
// the next batch.
func TestNodeBatch(t *testing.T) {
	type change struct {
		at  time.Duration
		key string
	}
	const s = time.Second
	// everySecond is a change a second for n seconds, key k<i> at i s.
	everySecond := func(n int) []change {
		var out []change
		for i := 0; i < n; i++ {
			out = append(out, change{time.Duration(i) * s, "k" + string(rune('0'+i))})
		}
		return out
	}
	for _, tc := range []struct {
		name            string
		window, maxWait time.Duration
		changes         []change
		// batches are the keys queued together, in the order the
		// batches close, each sorted.
		batches [][]string
	}{
		{"no window: at once", -1, 0, []change{{0, "a"}, {s, "a"}}, [][]string{{"a"}, {"a"}}},
		{"one change waits for the window", 2 * s, 15 * s, []change{{0, "a"}}, [][]string{{"a"}}},
		{"Nodes a second apart: one batch, each Service once", 2 * s, 15 * s,
			[]change{{0, "a"}, {0, "b"}, {s, "a"}, {s, "c"}, {1900 * time.Millisecond, "b"}}, [][]string{{"a", "b", "c"}}},
		{"a change within the window keeps the batch open", 2 * s, 15 * s,
			[]change{{0, "a"}, {1500 * time.Millisecond, "b"}, {2500 * time.Millisecond, "b"}, {3 * s, "c"}}, [][]string{{"a", "b", "c"}}},
		{"ten Nodes one per second: one batch", 2 * s, 15 * s, everySecond(10),
			[][]string{{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}}},
		{"a gap longer than the window: two batches", 2 * s, 15 * s,
			[]change{{0, "a"}, {2500 * time.Millisecond, "b"}}, [][]string{{"a"}, {"b"}}},
		{"maxWait closes a batch that changes keep open", 2 * s, 4500 * time.Millisecond, everySecond(9),
			[][]string{{"k0", "k1", "k2", "k3", "k4"}, {"k5", "k6", "k7", "k8"}}},
		{"no maxWait: open while changes come", 2 * s, -1, everySecond(9),
			[][]string{{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			var mu sync.Mutex
			var batches [][]string
			var open []string
			b := &nodeBatch{window: tc.window, maxWait: tc.maxWait, clock: clk, add: func(k string) {
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
			for i := 0; i < 300; i++ {
				clk.Step(100 * time.Millisecond)
				closeBatch()
			}
			if !slices.EqualFunc(batches, tc.batches, slices.Equal[[]string]) {
				t.Errorf("batches %v, want %v", batches, tc.batches)
			}
		})
	}
}
