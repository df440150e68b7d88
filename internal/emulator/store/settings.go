package store

import (
	"fmt"
	"sync"
	"time"
)

// Names of the asynchronous delays products read from Settings.
const (
	// DelayNLBProvisioning is how long a new NLB stays Provisioning.
	DelayNLBProvisioning = "nlb.provisioning"
	// DelayNLBJob is how long an NLB job stays Processing and its resource locked.
	DelayNLBJob = "nlb.job"
	// DelayRouteEntry is how long a route entry stays Pending (and its table busy).
	DelayRouteEntry = "vpc.routeEntry"
	// DelaySLBConfiguring is how long an SLB vServer group or listener stays busy after a change.
	DelaySLBConfiguring = "slb.configuring"
	// DelayECSInstance is how long an ECS instance stays Pending/Starting/Stopping.
	DelayECSInstance = "ecs.instance"
)

// Names of quotas products read from Settings.
const (
	QuotaSLBInstances            = "slb.instances"
	QuotaSLBListenersPerLB       = "slb.listenersPerLoadBalancer"
	QuotaSLBBackendsPerCall      = "slb.backendServersPerCall"
	QuotaSLBBackendsPerLB        = "slb.backendServersPerLoadBalancer"
	QuotaNLBInstances            = "nlb.instances"
	QuotaNLBListenersPerLB       = "nlb.listenersPerLoadBalancer"
	QuotaNLBServersPerCall       = "nlb.serversPerCall"
	QuotaNLBServersPerGroup      = "nlb.serversPerServerGroup"
	QuotaVPCRouteEntriesPerCall  = "vpc.routeEntriesPerCall"
	QuotaVPCCustomRoutesPerTable = "vpc.customRouteEntriesPerTable"
	QuotaTagsPerResource         = "tags.perResource"
)

// Timing modes: which delays a fresh (or reset) emulator has.
const (
	// TimingCloud is the cloud's own timing, compressed (DefaultDelays):
	// the default, so that every client is tested against it.
	TimingCloud = "cloud"
	// TimingZero makes every asynchronous transition immediate, for a
	// test that asks for it.
	TimingZero = "zero"
	// TimingCustom is reported when the delays match neither mode.
	TimingCustom = "custom"
)

// TimingModes lists the modes SetTiming accepts.
func TimingModes() []string { return []string{TimingCloud, TimingZero} }

// Settings are the runtime-tunable delays and quotas.
type Settings struct {
	mu     sync.RWMutex
	delays map[string]time.Duration
	quotas map[string]int
	// timing is the mode ResetDefaults restores.
	timing string
}

// DelaysFor returns the delays of a timing mode.
func DelaysFor(mode string) (map[string]time.Duration, error) {
	switch mode {
	case TimingCloud, "":
		return DefaultDelays(), nil
	case TimingZero:
		d := DefaultDelays()
		for k := range d {
			d[k] = 0
		}
		return d, nil
	}
	return nil, fmt.Errorf("unknown timing %q (known: %v)", mode, TimingModes())
}

// DefaultDelays are the asynchronous delays of a fresh emulator, the
// cloud's own compressed so that a test waits seconds, not minutes, yet
// every client must poll: an NLB provisions for 2 s (minutes in the
// cloud), an NLB job runs 500 ms, a route entry is Pending 500 ms, an ECS
// instance transitions for 1 s. CLB changes are synchronous, as the CLB
// API answers them (its create returns the active instance and its
// listener and backend calls apply before they answer), so slb.configuring
// is 0; a test can still set it to see ServiceIsConfiguring.
func DefaultDelays() map[string]time.Duration {
	return map[string]time.Duration{
		DelayNLBProvisioning: 2 * time.Second,
		DelayNLBJob:          500 * time.Millisecond,
		DelayRouteEntry:      500 * time.Millisecond,
		DelaySLBConfiguring:  0,
		DelayECSInstance:     1 * time.Second,
	}
}

// DefaultQuotas are the documented limits of a new account.
func DefaultQuotas() map[string]int {
	return map[string]int{
		QuotaSLBInstances:            60,
		QuotaSLBListenersPerLB:       50,
		QuotaSLBBackendsPerCall:      20,
		QuotaSLBBackendsPerLB:        200,
		QuotaNLBInstances:            60,
		QuotaNLBListenersPerLB:       50,
		QuotaNLBServersPerCall:       200,
		QuotaNLBServersPerGroup:      400,
		QuotaVPCRouteEntriesPerCall:  50,
		QuotaVPCCustomRoutesPerTable: 200,
		QuotaTagsPerResource:         20,
	}
}

// NewSettings returns the defaults.
func NewSettings() *Settings {
	return &Settings{delays: DefaultDelays(), quotas: DefaultQuotas(), timing: TimingCloud}
}

// SetTiming sets every delay to those of a timing mode, which a reset
// then restores.
func (s *Settings) SetTiming(mode string) error {
	d, err := DelaysFor(mode)
	if err != nil {
		return err
	}
	if mode == "" {
		mode = TimingCloud
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays, s.timing = d, mode
	return nil
}

// Timing names the mode the current delays match: TimingCloud,
// TimingZero or TimingCustom.
func (s *Settings) Timing() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, mode := range TimingModes() {
		d, _ := DelaysFor(mode)
		same := len(d) == len(s.delays)
		for k, v := range d {
			same = same && s.delays[k] == v
		}
		if same {
			return mode
		}
	}
	return TimingCustom
}

// Delay returns a named delay (0 when unknown).
func (s *Settings) Delay(name string) time.Duration {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.delays[name]
}

// Quota returns a named quota; unknown names panic because they are bugs.
func (s *Settings) Quota(name string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q, ok := s.quotas[name]
	if !ok {
		panic(fmt.Sprintf("unknown quota %q", name))
	}
	return q
}

// SetDelay changes a named delay.
func (s *Settings) SetDelay(name string, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return setKnown(s.delays, "delay", name, d)
}

// SetQuota changes a named quota.
func (s *Settings) SetQuota(name string, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return setKnown(s.quotas, "quota", name, n)
}

// setKnown sets m[name] to v, refusing a name m does not have and a
// negative v; kind names the setting in errors. The caller holds s.mu.
func setKnown[V ~int | ~int64](m map[string]V, kind, name string, v V) error {
	if _, ok := m[name]; !ok {
		return fmt.Errorf("unknown %s %q (known: %v)", kind, name, SortedKeys(m))
	}
	if v < 0 {
		return fmt.Errorf("%s %q must not be negative", kind, name)
	}
	m[name] = v
	return nil
}

// Snapshot returns copies of the delays and quotas.
func (s *Settings) Snapshot() (map[string]time.Duration, map[string]int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := make(map[string]time.Duration, len(s.delays))
	for k, v := range s.delays {
		d[k] = v
	}
	q := make(map[string]int, len(s.quotas))
	for k, v := range s.quotas {
		q[k] = v
	}
	return d, q
}

// ResetDefaults restores the default delays and quotas.
func (s *Settings) ResetDefaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays, _ = DelaysFor(s.timing)
	s.quotas = DefaultQuotas()
}
