package service

import (
	"maps"
	"slices"
	"testing"
)

// TestKeepShared: the verdicts applied to a provider's groups. Kept groups
// stay in order; a port without a listener of the Service loses its group
// but keeps its listener (so its conflict is reported); a port over the cap
// loses both.
func TestKeepShared(t *testing.T) {
	type group struct{ port PortKey }
	groups := []group{{80}, {KeyOf(53, true)}, {443}, {8080}}
	verdicts := []SharedVerdict{SharedKeep, SharedNoListener, SharedKeep, SharedOverCap}

	kept, listeners := KeepShared(groups, verdicts, func(g group) PortKey { return g.port })
	if want := []group{{80}, {443}}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	if want := map[PortKey]bool{80: true, KeyOf(53, true): true, 443: true}; !maps.Equal(listeners, want) {
		t.Errorf("listener ports %v, want %v", listeners, want)
	}

	all, _ := KeepShared(groups, make([]SharedVerdict, len(groups)), func(g group) PortKey { return g.port })
	if len(all) != len(groups) {
		t.Errorf("every verdict SharedKeep: kept %v, want all %v", all, groups)
	}
}
