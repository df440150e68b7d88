package store

import (
	"cmp"
	"maps"
	"slices"
)

// ByCreation returns the values of m ordered by their creation sequence
// number, so listings are stable and in creation order as in the cloud,
// whatever Go's map order.
func ByCreation[V any](m map[string]V, seq func(V) int64) []V {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b V) int { return cmp.Compare(seq(a), seq(b)) })
	return out
}
