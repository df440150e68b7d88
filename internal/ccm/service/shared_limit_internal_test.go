package service

import (
	"strings"
	"testing"
)

// TestLimitSharedVerdicts: the product-neutral rules of a Service's groups
// on a shared borrowed load balancer. Bound ports are never limited; a
// group a listener uses is never taken away and counts first; a port no
// listener of the Service can serve gets no group; above
// MaxGroupsPerSharedLB the rest get none. Alone on it, nothing changes.
func TestLimitSharedVerdicts(t *testing.T) {
	shared := &Binding{LB: &LoadBalancer{ID: "lb-x"}, Reused: true, SharedWith: []string{"team-b/web"}}
	var groups []SharedGroup
	groups = append(groups, SharedGroup{Ports: []string{"1/TCP"}})              // no listener
	groups = append(groups, SharedGroup{Ports: []string{"2/TCP"}, Bound: true}) // vgroup-port
	for i := 0; i < MaxGroupsPerSharedLB; i++ {
		groups = append(groups, SharedGroup{Ports: []string{"s/TCP"}, Servable: true})
	}
	groups = append(groups, SharedGroup{Ports: []string{"used/TCP"}, Used: true, Servable: true})

	got, w := LimitShared(shared, groups)
	want := []SharedVerdict{SharedNoListener, SharedKeep}
	for i := 0; i < MaxGroupsPerSharedLB-1; i++ {
		want = append(want, SharedKeep)
	}
	want = append(want, SharedOverCap, SharedKeep)
	if len(got) != len(want) {
		t.Fatalf("%d verdicts, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("group %d (%v): verdict %d, want %d", i, groups[i].Ports, got[i], want[i])
		}
	}
	if w == nil || w.Reason != EventSharedPortsSkipped || !strings.Contains(w.Message, "port(s) 1/TCP, which have no listener") ||
		!strings.Contains(w.Message, "port(s) s/TCP, which are above the limit of 10") || !strings.Contains(w.Message, "lb-x is shared with team-b/web") {
		t.Errorf("warning %+v", w)
	}

	alone := &Binding{LB: &LoadBalancer{ID: "lb-x"}, Reused: true}
	got, w = LimitShared(alone, groups)
	for i, v := range got {
		if v != SharedKeep {
			t.Errorf("alone: group %d verdict %d", i, v)
		}
	}
	if w != nil {
		t.Errorf("alone: warning %+v", w)
	}
	if _, w := LimitShared(shared, groups[1:MaxGroupsPerSharedLB+1]); w != nil {
		t.Errorf("within the limit: warning %+v", w)
	}
}
