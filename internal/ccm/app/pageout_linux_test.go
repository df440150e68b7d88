package app

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestReadOnlyMappings(t *testing.T) {
	maps := filepath.Join(t.TempDir(), "maps")
	data := `00400000-02ca2000 r-xp 00000000 08:01 123 /usr/bin/ccm
02ca2000-068d1000 r--p 028a2000 08:01 123 /usr/bin/ccm
068d1000-06990000 rw-p 064d1000 08:01 123 /usr/bin/ccm
06990000-069a0000 r--p 00000000 08:01 124 /usr/bin/ccm-other
7f0000000000-7f0000010000 rw-p 00000000 00:00 0 
7f0000010000-7f0000020000 r-xp 00000000 08:01 99 /usr/lib/libc.so.6
`
	if err := os.WriteFile(maps, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readOnlyMappings(maps, "/usr/bin/ccm")
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]uintptr{{0x400000, 0x2ca2000}, {0x2ca2000, 0x68d1000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mappings %x, want %x", got, want)
	}
}

// TestPageOutExecutable releases this test binary's pages for real: its
// file-backed resident set must shrink.
func TestPageOutExecutable(t *testing.T) {
	before := rssFileKB(t)
	n, err := pageOutExecutable()
	if err != nil {
		t.Skipf("MADV_PAGEOUT unavailable here: %v", err)
	}
	after := rssFileKB(t)
	t.Logf("advised %d bytes; RssFile %d kB → %d kB", n, before, after)
	if n == 0 || after >= before {
		t.Errorf("advised %d bytes; RssFile %d kB → %d kB, want a drop", n, before, after)
	}
}

func rssFileKB(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
