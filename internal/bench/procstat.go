package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat;
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// ProcSample is the resource use of a process at one moment.
type ProcSample struct {
	// RSSBytes is the resident set (VmRSS), PeakRSSBytes the high-water
	// mark since the process started (VmHWM).
	RSSBytes     int64 `json:"rssBytes"`
	PeakRSSBytes int64 `json:"peakRssBytes"`
	// AnonBytes is the anonymous part of the resident set (RssAnon: heap,
	// stacks), FileBytes the file-backed part (RssFile: mostly the
	// binary's own text and data pages).
	AnonBytes int64 `json:"anonBytes"`
	FileBytes int64 `json:"fileBytes"`
	// CPUSeconds is user + system time since the process started.
	CPUSeconds float64 `json:"cpuSeconds"`
}

// readProc reads /proc/<pid>/status and /proc/<pid>/stat.
func readProc(pid int) (ProcSample, error) {
	var s ProcSample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			s.RSSBytes = n * 1024
		case "VmHWM":
			s.PeakRSSBytes = n * 1024
		case "RssAnon":
			s.AnonBytes = n * 1024
		case "RssFile":
			s.FileBytes = n * 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the parenthesized command name: state is field 3,
	// utime 14 and stime 15 (1-based).
	str := string(stat)
	i := strings.LastIndexByte(str, ')')
	if i < 0 {
		return s, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(str[i+1:])
	if len(f) < 13 {
		return s, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	s.CPUSeconds = (ut + st) / clockTicks
	return s, nil
}

// ProcUsage summarizes a sampled interval.
type ProcUsage struct {
	// PeakRSSMB is the largest resident set seen (VmHWM at the end).
	PeakRSSMB float64 `json:"peakRssMB"`
	// EndRSSMB is the resident set at the end, PeakAnonMB the largest
	// anonymous part seen (heap and stacks, what the CCM's own data costs)
	// and EndFileMB the file-backed part at the end (the binary's pages).
	EndRSSMB   float64 `json:"endRssMB"`
	PeakAnonMB float64 `json:"peakAnonMB"`
	EndFileMB  float64 `json:"endFileMB"`
	// CPUSeconds is the CPU time used in the interval, AvgCores that over
	// the interval's length, PeakCores the largest 1-second average.
	CPUSeconds float64 `json:"cpuSeconds"`
	AvgCores   float64 `json:"avgCores"`
	PeakCores  float64 `json:"peakCores"`
	Seconds    float64 `json:"seconds"`
}

// sampler samples a process every interval until stopped.
type sampler struct {
	pid   int
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	first ProcSample
	last  ProcSample
	start time.Time
	end   time.Time
	peak  float64
	anon  int64
}

func startSampler(pid int, interval time.Duration) *sampler {
	s := &sampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	s.first, _ = readProc(pid)
	s.last = s.first
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		prev, prevAt := s.first, time.Now()
		for {
			select {
			case <-s.stop:
				return
			case now := <-t.C:
				cur, err := readProc(pid)
				if err != nil {
					return
				}
				s.mu.Lock()
				if el := now.Sub(prevAt).Seconds(); el > 0 {
					if c := (cur.CPUSeconds - prev.CPUSeconds) / el; c > s.peak {
						s.peak = c
					}
				}
				s.last, s.end = cur, now
				if cur.AnonBytes > s.anon {
					s.anon = cur.AnonBytes
				}
				s.mu.Unlock()
				prev, prevAt = cur, now
			}
		}
	}()
	return s
}

// finish stops sampling and summarizes.
func (s *sampler) finish() ProcUsage {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, err := readProc(s.pid); err == nil {
		s.last, s.end = cur, time.Now()
		if cur.AnonBytes > s.anon {
			s.anon = cur.AnonBytes
		}
	}
	el := s.end.Sub(s.start).Seconds()
	u := ProcUsage{
		PeakRSSMB:  float64(s.last.PeakRSSBytes) / (1 << 20),
		EndRSSMB:   float64(s.last.RSSBytes) / (1 << 20),
		PeakAnonMB: float64(s.anon) / (1 << 20),
		EndFileMB:  float64(s.last.FileBytes) / (1 << 20),
		CPUSeconds: s.last.CPUSeconds - s.first.CPUSeconds,
		PeakCores:  s.peak,
		Seconds:    el,
	}
	if el > 0 {
		u.AvgCores = u.CPUSeconds / el
	}
	return u
}
