package app

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// madvPageout is MADV_PAGEOUT (Linux 5.4): reclaim the range's pages now.
// madvRandom is MADV_RANDOM: a fault reads only its own page, not the
// read-around window, so what comes back is what is used.
const (
	madvPageout = 21
	madvRandom  = 1
)

// StartupPagesDelays are when, after start, the CCM gives back the pages
// of its own binary that running has not needed since. The first, once
// package initialization and the controllers' setup are done, comes
// before the initial listing and the Nodes' initialization have grown the
// heap: released only at 90 s, the start-up pages (~70 MB) and that heap
// made W4's peak resident set (115.0 MB at 5,000 Services, 71 of them
// file-backed, at 86 s; docs/performance.md). The second gives back what
// the initial passes touched once.
var StartupPagesDelays = []time.Duration{15 * time.Second, 90 * time.Second}

// releaseStartupPages reclaims, at each of StartupPagesDelays, the
// resident pages of the binary's read-only mappings (code, read-only data,
// the function tables). Start-up touches far more of them than running
// does: package initialization registers every Kubernetes API type, flags,
// the controllers' setup. With the 150 MB binary that is ~60 MB of the
// resident set (the benchmark's W4) that the CCM never reads again; the
// pages it does read are faulted back in from the file (clean pages:
// nothing is lost, the cost is a read), one page at a time (MADV_RANDOM)
// rather than the kernel's read-around window, which would bring back
// neighbours never used. Errors only log: this saves memory and is never
// required.
func releaseStartupPages(stop <-chan struct{}) {
	go func() {
		start := time.Now()
		for _, at := range StartupPagesDelays {
			select {
			case <-stop:
				return
			case <-time.After(time.Until(start.Add(at))):
			}
			n, err := pageOutExecutable()
			if err != nil {
				klog.V(2).InfoS("Could not release the binary's start-up pages", "err", err)
				return
			}
			klog.InfoS("Released the binary's start-up pages", "bytes", n, "afterStart", at)
		}
	}()
}

// pageOutExecutable applies MADV_PAGEOUT to the executable's read-only
// file mappings and returns the bytes advised.
func pageOutExecutable() (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	ranges, err := readOnlyMappings("/proc/self/maps", exe)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, r := range ranges {
		for _, advice := range []uintptr{madvRandom, madvPageout} {
			if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r[0], r[1]-r[0], advice); errno != 0 {
				return total, fmt.Errorf("madvise(%d) %#x-%#x: %w", advice, r[0], r[1], errno)
			}
		}
		total += int64(r[1] - r[0])
	}
	return total, nil
}

// readOnlyMappings lists the [start, end) ranges of path's mappings in a
// /proc/<pid>/maps file that are not writable.
func readOnlyMappings(maps, path string) ([][2]uintptr, error) {
	f, err := os.Open(maps)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || strings.Join(fields[5:], " ") != path || strings.Contains(fields[1], "w") {
			continue
		}
		start, end, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		s, err1 := strconv.ParseUint(start, 16, 64)
		e, err2 := strconv.ParseUint(end, 16, 64)
		if err1 != nil || err2 != nil || e <= s {
			return nil, fmt.Errorf("bad mapping line %q", sc.Text())
		}
		out = append(out, [2]uintptr{uintptr(s), uintptr(e)})
	}
	return out, sc.Err()
}
