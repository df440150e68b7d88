package app

import (
	"runtime/debug"
	"testing"
	"testing/fstest"
)

func TestCgroupMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name    string
		fs      fstest.MapFS
		want    int64
		wantErr bool
	}{
		{"v2 container (cgroup namespace)", fstest.MapFS{
			"proc/self/cgroup":           file("0::/\n"),
			"sys/fs/cgroup/memory.max":   file("536870912\n"),
			"sys/fs/cgroup/memory.stat":  file(""),
			"sys/fs/cgroup/cgroup.procs": file("1\n"),
		}, 536870912, false},
		{"v2 no limit", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}, 0, false},
		{"v2 nested: the parent's smaller limit holds", fstest.MapFS{
			"proc/self/cgroup":                           file("0::/kubepods/pod1/ctr\n"),
			"sys/fs/cgroup/kubepods/pod1/ctr/memory.max": file("max\n"),
			"sys/fs/cgroup/kubepods/pod1/memory.max":     file("268435456\n"),
			"sys/fs/cgroup/kubepods/memory.max":          file("8589934592\n"),
		}, 268435456, false},
		{"v1 with the full path", fstest.MapFS{
			"proc/self/cgroup": file("12:cpu,cpuacct:/kubepods/x\n4:memory:/kubepods/x\n0::/\n"),
			"sys/fs/cgroup/memory/kubepods/x/memory.limit_in_bytes": file("536870912\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":            file("9223372036854771712\n"),
		}, 536870912, false},
		{"v1 mounted at the container's own cgroup", fstest.MapFS{
			"proc/self/cgroup":                           file("4:memory:/kubepods/x\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("402653184\n"),
		}, 402653184, false},
		{"v1 unlimited", fstest.MapFS{
			"proc/self/cgroup":                           file("4:memory:/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, 0, false},
		{"no cgroup files", fstest.MapFS{"proc/self/cgroup": file("0::/\n")}, 0, true},
		{"garbage", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("lots\n"),
		}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := cgroupMemoryLimit(tc.fs)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("limit = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	limited := fstest.MapFS{
		"proc/self/cgroup":         {Data: []byte("0::/\n")},
		"sys/fs/cgroup/memory.max": {Data: []byte("1000000000\n")},
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}
	if got := setMemoryLimit(limited, env("")); got != 800000000 || debug.SetMemoryLimit(-1) != 800000000 {
		t.Errorf("from the cgroup: set %d, runtime %d; want 800000000", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(before)
	// GOMEMLIMIT, even "off", is the runtime's to apply: nothing is set.
	for _, v := range []string{"300MiB", "off"} {
		if got := setMemoryLimit(limited, env(v)); got != 0 || debug.SetMemoryLimit(-1) != before {
			t.Errorf("GOMEMLIMIT=%s: set %d, runtime %d", v, got, debug.SetMemoryLimit(-1))
		}
	}
}

func TestSetGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, tc := range []struct {
		gogc    string
		set     int
		runtime int
	}{
		{"", DefaultGCPercent, DefaultGCPercent},
		// GOGC, even "off", is the runtime's to apply: nothing is set.
		{"200", 0, 100},
		{"off", 0, 100},
	} {
		debug.SetGCPercent(100)
		got := setGCPercent(func(k string) string {
			if k == "GOGC" {
				return tc.gogc
			}
			return ""
		})
		if now := debug.SetGCPercent(100); got != tc.set || now != tc.runtime {
			t.Errorf("GOGC=%q: set %d, runtime %d; want %d, %d", tc.gogc, got, now, tc.set, tc.runtime)
		}
	}
}
