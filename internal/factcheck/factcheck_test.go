package factcheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/facts"
)

// rule is either side's rule in one shape.
type rule struct {
	key      string
	min, max int
	values   []string
	valid    func(string) bool
	source   string
}

func emulatorRules() map[string]rule {
	out := map[string]rule{}
	for _, r := range facts.All() {
		out[r.Key] = rule{key: r.Key, min: r.Min, max: r.Max, values: r.Values, valid: r.Valid, source: r.Source}
	}
	return out
}

func ccmRules() map[string]rule {
	out := map[string]rule{}
	for _, r := range annotations.CloudFacts {
		out[r.Key] = rule{key: r.Key, min: r.Min, max: r.Max, values: r.Values, valid: r.Valid, source: r.Source}
	}
	return out
}

// nameProbes are the strings both sides' name rules are asked about: the
// lengths around both bounds, and every printable ASCII character (and a
// few others) first, in the middle and last.
func nameProbes(a, b rule) []string {
	var out []string
	for _, n := range []int{0, 1, 2, a.min - 1, a.min, a.max, a.max + 1, b.min - 1, b.min, b.max, b.max + 1} {
		if n >= 1 {
			out = append(out, "a"+strings.Repeat("b", n-1))
		}
	}
	chars := []rune{' ', '\t', '中', 'é', '٣'}
	for c := rune(33); c < 127; c++ {
		chars = append(chars, c)
	}
	for _, c := range chars {
		s := string(c)
		out = append(out, s+"web", "web"+s+"lb", "web"+s)
	}
	return out
}

// cross compares the rules present on both sides and lists each
// disagreement, naming both sources; a CCM rule with no emulator rule is
// one too, since the emulator would then accept what the CCM refuses and
// no test could tell which is right.
func cross(emu, ccm map[string]rule) []string {
	var out []string
	keys := make([]string, 0, len(ccm))
	for k := range ccm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := ccm[k]
		e, ok := emu[k]
		if !ok {
			out = append(out, fmt.Sprintf("%s: the CCM checks it (%s) but the emulator has no rule", k, c.source))
			continue
		}
		say := func(what, ev, cv string) {
			out = append(out, fmt.Sprintf("%s: %s: emulator %s (%s); CCM %s (%s)", k, what, ev, e.source, cv, c.source))
		}
		switch {
		case (e.values != nil) != (c.values != nil) || (e.valid != nil) != (c.valid != nil):
			say("kind differs", kind(e), kind(c))
		case e.values != nil:
			es, cs := slices.Clone(e.values), slices.Clone(c.values)
			slices.Sort(es)
			slices.Sort(cs)
			if !slices.Equal(es, cs) {
				say("values differ", strings.Join(e.values, ","), strings.Join(c.values, ","))
			}
		default:
			if e.min != c.min || e.max != c.max {
				say("bounds differ", fmt.Sprintf("%d..%d", e.min, e.max), fmt.Sprintf("%d..%d", c.min, c.max))
			}
			if e.valid != nil {
				for _, p := range nameProbes(e, c) {
					if ev, cv := e.valid(p), c.valid(p); ev != cv {
						say(fmt.Sprintf("name %q", p), accepts(ev), accepts(cv))
					}
				}
			}
		}
	}
	return out
}

func kind(r rule) string {
	switch {
	case r.values != nil:
		return "an enumeration"
	case r.valid != nil:
		return "a name rule"
	}
	return "a range"
}

func accepts(ok bool) string {
	if ok {
		return "accepts it"
	}
	return "refuses it"
}

// TestFactsAgree is the crossing: every rule the CCM checks must exist in
// the emulator and agree with it value by value.
func TestFactsAgree(t *testing.T) {
	emu, ccm := emulatorRules(), ccmRules()
	for _, d := range cross(emu, ccm) {
		t.Error(d)
	}
	both := 0
	for k := range ccm {
		if _, ok := emu[k]; ok {
			both++
		}
	}
	t.Logf("%d rules crossed (emulator %d, CCM %d)", both, len(emu), len(ccm))
	if both < 40 {
		t.Errorf("only %d rules on both sides", both)
	}
}

// TestCrossFindsDisagreements plants differences in copies of the tables
// and checks that the crossing reports each, naming both sources.
func TestCrossFindsDisagreements(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    string
		change func(*rule)
		want   string
	}{
		{"name refuses /", "slb:LoadBalancerName", func(r *rule) {
			old := r.valid
			r.valid = func(s string) bool { return old(s) && !strings.Contains(s, "/") }
		}, `name "web/lb": emulator accepts it`},
		{"range", "slb:HealthCheckInterval", func(r *rule) { r.max = 60 }, "bounds differ: emulator 1..50"},
		{"enum case", "nlb:AddressIpVersion", func(r *rule) { r.values = []string{"ipv4", "dualstack"} }, "values differ"},
		{"kind", "slb:Weight", func(r *rule) { r.values = []string{"0"} }, "kind differs"},
		{"missing", "nlb:Cps", nil, "the emulator has no rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emu, ccm := emulatorRules(), ccmRules()
			if tc.change != nil {
				r := ccm[tc.key]
				tc.change(&r)
				ccm[tc.key] = r
			} else {
				delete(emu, tc.key)
			}
			got := strings.Join(cross(emu, ccm), "\n")
			if !strings.Contains(got, tc.key+": ") || !strings.Contains(got, tc.want) {
				t.Fatalf("crossing missed %s:\n%s", tc.name, got)
			}
			if tc.change != nil && (!strings.Contains(got, emu[tc.key].source) || !strings.Contains(got, ccm[tc.key].source)) {
				t.Errorf("the report does not name both sources:\n%s", got)
			}
		})
	}
}
