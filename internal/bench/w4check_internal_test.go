package bench

import (
	"strings"
	"testing"
)

func TestParseHeapCounts(t *testing.T) {
	page := `# HELP go_gc_heap_allocs_bytes_total Cumulative sum of memory allocated to the heap by the application.
# TYPE go_gc_heap_allocs_bytes_total counter
go_gc_heap_allocs_bytes_total 1.2345678e+09
go_gc_heap_allocs_objects_total 4.2e+06
# TYPE go_gc_heap_live_bytes gauge
go_gc_heap_live_bytes 3.1e+07
`
	h, err := parseHeapCounts(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if h.alloc != 1234567800 || h.live != 31000000 {
		t.Errorf("parsed %+v", h)
	}
	if _, err := parseHeapCounts(strings.NewReader("go_gc_heap_live_bytes 1\n")); err == nil {
		t.Error("a page without the allocation counter parsed")
	}
}
