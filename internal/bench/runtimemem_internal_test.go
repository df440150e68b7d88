package bench

import (
	"strings"
	"testing"
)

func TestParseGauges(t *testing.T) {
	page := `# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 212
go_memstats_heap_inuse_bytes 6.5e+07
go_memstats_heap_idle_bytes 4e+07
go_gc_duration_seconds{quantile="0"} 1e-05
`
	for _, tc := range []struct {
		name    string
		page    string
		want    map[string]float64
		wantErr bool
	}{
		{"some present", page, map[string]float64{"go_goroutines": 212, "go_memstats_heap_inuse_bytes": 6.5e7, "go_memstats_heap_idle_bytes": 4e7}, false},
		{"none present", "process_cpu_seconds_total 3\n", nil, true},
		{"bad value", "go_goroutines x\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGauges(strings.NewReader(tc.page), runtimeGauges)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func TestRuntimeMemKeepsTheResidentPeak(t *testing.T) {
	m := &runtimeMem{max: map[string]float64{}}
	m.add(map[string]float64{"go_memstats_heap_inuse_bytes": 50, "go_memstats_heap_idle_bytes": 30, "go_memstats_heap_released_bytes": 0, "go_gc_heap_live_bytes": 40})
	m.add(map[string]float64{"go_memstats_heap_inuse_bytes": 70, "go_memstats_heap_idle_bytes": 50, "go_memstats_heap_released_bytes": 45, "go_gc_heap_live_bytes": 45})
	if m.peak != 80 || m.atPeak["go_gc_heap_live_bytes"] != 40 {
		t.Errorf("peak %v at %v, want 80 at the first sample", m.peak, m.atPeak)
	}
	if m.max["go_gc_heap_live_bytes"] != 45 {
		t.Errorf("max live %v, want 45", m.max["go_gc_heap_live_bytes"])
	}
}
