package routes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
)

// TestInstanceExistenceCache: the fallback's existence check asks ECS only
// about instances it has no answer for: a missing one is never asked again,
// an existing one after a resync period; more than 100 ids take one call per
// 100.
func TestInstanceExistenceCache(t *testing.T) {
	t.Parallel()
	const resync = 1500 * time.Millisecond
	h := newHarness(t, "exist", 1, 0)
	h.start(func(o *routes.Options) { o.ResyncPeriod = resync })
	alive, never := h.instances[0], "i-bp1neverexisted000"
	var many []string
	for i := 0; i < 101; i++ {
		many = append(many, fmt.Sprintf("i-bp1missing%08d", i))
	}
	steps := []struct {
		name string
		// before runs first (a release, a wait).
		before func()
		ids    []string
		// vanished is the answer; asked the ids of each DescribeInstances.
		vanished []string
		asked    [][]string
	}{
		{name: "first time: one call for both", ids: []string{alive, never}, vanished: []string{never}, asked: [][]string{{alive, never}}},
		{name: "again at once: no call", ids: []string{alive, never}, vanished: []string{never}},
		{
			name: "released within the period: still existing, no call", before: func() { h.releaseInstance(alive) },
			ids: []string{alive, never}, vanished: []string{never},
		},
		{
			name: "after the period: only the existing one is asked again", before: func() { time.Sleep(resync) },
			ids: []string{alive, never}, vanished: []string{alive, never}, asked: [][]string{{alive}},
		},
		{name: "gone is for good: no call", ids: []string{never, alive}, vanished: []string{alive, never}},
		{name: "101 new ids: two calls", ids: many, vanished: many, asked: [][]string{many[:100], many[100:]}},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		seq := h.lastSeq()
		got := h.ctrl.VanishedAmong(context.Background(), s.ids)
		var names []string
		for id, gone := range got {
			if gone {
				names = append(names, id)
			}
		}
		sort.Strings(names)
		want := append([]string(nil), s.vanished...)
		sort.Strings(want)
		if !reflect.DeepEqual(names, want) {
			t.Errorf("%s: vanished %v, want %v", s.name, names, want)
		}
		var asked [][]string
		for _, r := range h.describeInstances(seq) {
			var ids []string
			if err := json.Unmarshal([]byte(r.Params["InstanceIds"]), &ids); err != nil {
				t.Fatalf("%s: InstanceIds %q: %v", s.name, r.Params["InstanceIds"], err)
			}
			sort.Strings(ids)
			asked = append(asked, ids)
		}
		wantAsked := [][]string{}
		for _, a := range s.asked {
			a = append([]string(nil), a...)
			sort.Strings(a)
			wantAsked = append(wantAsked, a)
		}
		if len(asked) != len(wantAsked) || (len(asked) > 0 && !reflect.DeepEqual(asked, wantAsked)) {
			t.Errorf("%s: DescribeInstances asked %v, want %v", s.name, asked, wantAsked)
		}
	}
}
