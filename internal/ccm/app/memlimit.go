package app

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// MemoryLimitRatio is the share of the container's memory limit the CCM
// sets as its Go soft memory limit when GOMEMLIMIT is unset: the GC then
// collects harder as the heap nears the limit instead of letting the
// default GOGC=100 headroom (up to twice the live heap, the benchmark's W4) run
// the container into its OOM kill. The rest is left for what the Go
// runtime does not count: the binary's mapped pages, thread stacks.
const MemoryLimitRatio = 0.8

// setMemoryLimit sets the Go soft memory limit from the cgroup's memory
// limit when GOMEMLIMIT is unset (GOMEMLIMIT, even "off", always wins) and
// returns the limit set (0: none).
func setMemoryLimit(fsys fs.FS, getenv func(string) string) int64 {
	if v := getenv("GOMEMLIMIT"); v != "" {
		klog.V(2).InfoS("Go memory limit from GOMEMLIMIT", "value", v)
		return 0
	}
	limit, source, err := cgroupMemoryLimit(fsys)
	if err != nil {
		klog.V(2).InfoS("No cgroup memory limit found; Go memory limit not set", "err", err)
		return 0
	}
	if limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * MemoryLimitRatio)
	debug.SetMemoryLimit(soft)
	klog.InfoS("Go memory limit set from the cgroup's memory limit (GOMEMLIMIT overrides)",
		"cgroupLimit", limit, "source", source, "ratio", MemoryLimitRatio, "goMemLimit", soft)
	return soft
}

// unlimited is where cgroup v1 reports "no limit" (PAGE_COUNTER_MAX pages).
const unlimited = int64(1) << 62

// cgroupMemoryLimit is the memory limit of this process's cgroup (the
// smallest along its path, as the kernel enforces): cgroup v2's memory.max
// or v1's memory.limit_in_bytes, read from fsys rooted at "/". It returns
// 0 and no error when the cgroup has no limit.
func cgroupMemoryLimit(fsys fs.FS) (int64, string, error) {
	self, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, "", fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	var v2, v1 string
	for _, line := range strings.Split(string(self), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case hasController(parts[1], "memory"):
			v1 = parts[2]
		}
	}
	type candidate struct{ dir, file string }
	var tries []candidate
	if v1 != "" {
		tries = append(tries, candidate{path.Join("sys/fs/cgroup/memory", v1), "memory.limit_in_bytes"},
			// In a container the v1 hierarchy is mounted at its own cgroup.
			candidate{"sys/fs/cgroup/memory", "memory.limit_in_bytes"})
	}
	if v2 != "" {
		tries = append(tries, candidate{path.Join("sys/fs/cgroup", v2), "memory.max"})
	}
	for _, c := range tries {
		limit, source, found, err := smallestLimit(fsys, c.dir, c.file)
		if err != nil {
			return 0, "", err
		}
		if found {
			return limit, source, nil
		}
	}
	return 0, "", fmt.Errorf("no cgroup memory controller file readable for %q", strings.TrimSpace(string(self)))
}

// smallestLimit reads file in dir and its parents up to the hierarchy's
// root and returns the smallest limit; found says whether any was readable.
func smallestLimit(fsys fs.FS, dir, file string) (limit int64, source string, found bool, err error) {
	for d := dir; ; d = path.Dir(d) {
		data, rerr := fs.ReadFile(fsys, path.Join(d, file))
		if rerr == nil {
			found = true
			s := strings.TrimSpace(string(data))
			if s != "max" {
				n, perr := strconv.ParseInt(s, 10, 64)
				if perr != nil {
					return 0, "", true, fmt.Errorf("parse /%s: %w", path.Join(d, file), perr)
				}
				if n > 0 && n < unlimited && (limit == 0 || n < limit) {
					limit, source = n, "/"+path.Join(d, file)
				}
			}
		}
		if d == "sys/fs/cgroup" || d == "sys/fs/cgroup/memory" || d == "." || d == "/" {
			return limit, source, found, nil
		}
	}
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// DefaultGCPercent is the CCM's GOGC when the environment sets none. Go's
// default, 100, lets the heap grow to twice the live heap before a
// collection, and the runtime keeps most of that headroom resident; the
// CCM's live heap is its informer caches, so its resident set was twice
// them. At 50, W4 at 5,000 Services measured 147.5 MB peak RSS against
// 188.8 MB, at the same CPU per second (0.21 cores against 0.205): a
// controller that waits on the API server and the cloud has the CPU to
// collect more often. At 10,000 Services the heap's resident part is the
// GC goal within 1 MB (W4: 109.5 MB in use and free against a 110.4 MB
// goal), so each 10 points off GOGC is a tenth of the live heap (~7 MB)
// off the peak; at 50 the GC took 16% of the CCM's Go CPU there
// (docs/performance.md, "W4 at 10,000").
const DefaultGCPercent = 40

// setGCPercent sets DefaultGCPercent unless GOGC is set (GOGC, even "off",
// always wins) and returns the percentage set (0: none).
func setGCPercent(getenv func(string) string) int {
	if v := getenv("GOGC"); v != "" {
		klog.V(2).InfoS("GC percentage from GOGC", "value", v)
		return 0
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}

// applyMemoryLimit is setGCPercent and setMemoryLimit on the real file
// system and environment.
func applyMemoryLimit() {
	setGCPercent(os.Getenv)
	setMemoryLimit(os.DirFS("/"), os.Getenv)
}
