package cloud

// Chunks splits items into batches of at most n, for API calls with a
// per-call limit.
func Chunks[T any](items []T, n int) [][]T {
	var out [][]T
	for len(items) > n {
		out = append(out, items[:n])
		items = items[n:]
	}
	if len(items) > 0 {
		out = append(out, items)
	}
	return out
}
