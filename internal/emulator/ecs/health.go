package ecs

import (
	"slices"
	"time"
)

// Backend health, as the load balancers' health checks would see it. The
// emulator runs no probes; it answers from its own model instead:
//
//   - a backend whose instance no longer exists is unhealthy (InstanceGone);
//   - a backend whose instance is not Running (Pending, Starting, Stopping,
//     Stopped) is unhealthy (InstanceNotRunning);
//   - a Running instance listens on every port unless the control API told
//     the emulator which ports listen on it (SetListeningPorts, PUT
//     /_emulator/listening); then a check of any other port fails
//     (PortNotListening).
//
// A backend given as an ENI (eni backends, pods on ENIs) is judged by the
// instance the ENI is attached to; a detached ENI is unhealthy.

// Reasons a backend is unhealthy, for the load balancers' health answers.
const (
	HealthInstanceGone       = "InstanceGone"
	HealthInstanceNotRunning = "InstanceNotRunning"
	HealthPortNotListening   = "PortNotListening"
)

// BackendHealth judges a backend (an instance or ENI id) checked on port:
// "" when healthy, else the reason. The caller holds the store's lock.
func (s *Service) BackendHealth(serverID string, port int, now time.Time) string {
	id := serverID
	if e, ok := s.state.ENIs[serverID]; ok {
		if e.InstanceID == "" {
			return HealthInstanceGone
		}
		id = e.InstanceID
	}
	i, ok := s.state.Instances[id]
	if !ok {
		return HealthInstanceGone
	}
	if i.status(now) != "Running" {
		return HealthInstanceNotRunning
	}
	if i.ListeningPorts != nil && port != 0 && !slices.Contains(*i.ListeningPorts, port) {
		return HealthPortNotListening
	}
	return ""
}

// SetListeningPorts tells the health model which ports listen on an
// instance; nil restores the default (every port listens). It returns false
// when the instance does not exist. The caller holds the store's write
// lock.
func (s *Service) SetListeningPorts(instanceID string, ports []int) bool {
	i, ok := s.state.Instances[instanceID]
	if !ok {
		return false
	}
	if ports == nil {
		i.ListeningPorts = nil
		return true
	}
	cp := slices.Clone(ports)
	slices.Sort(cp)
	i.ListeningPorts = &cp
	return true
}
