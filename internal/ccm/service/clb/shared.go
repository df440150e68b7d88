package clb

import (
	"fmt"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// limitShared keeps, on a borrowed load balancer other Services share, the
// Service from filling it with groups no listener uses (the rules of
// service.LimitShared): a new group is made for an unbound port only when
// a listener of the Service serves it, and the Service keeps at most
// service.MaxGroupsPerSharedLB groups of its own. Groups above the limit
// leave the model with their listeners, so ours are deleted. existing
// limits the ports to those whose group exists already (the backend pass,
// which does not read listeners and creates nothing). It returns the
// Warning to report, nil when nothing was skipped, the load balancer is
// not shared, or existing is set.
func limitShared(b *service.Binding, m *Model, groups []CurrentGroup, listeners []CurrentListener, manages, force, existing bool) *service.Warning {
	if !b.Shared() {
		return nil
	}
	used, exists := map[string]bool{}, map[string]bool{}
	for _, g := range groups {
		if _, ours := m.Ref.OwnsCLB(g.Name); ours {
			exists[g.Name] = true
			used[g.Name] = used[g.Name] || g.Listeners > 0
		}
	}
	shared := make([]service.SharedGroup, len(m.Groups))
	for i, g := range m.Groups {
		ok := exists[g.Name]
		if !ok && !existing && manages {
			ok = listenerFree(m, g.ServicePort, listeners, force)
		}
		shared[i] = service.SharedGroup{Ports: portsOf(m, g.ServicePort), Bound: g.BoundID != "", Used: used[g.Name], Servable: ok}
	}
	verdicts, w := service.LimitShared(b, shared)
	// keep are the ports whose listeners stay in the model: those with a
	// group, and those without a free port (still planned, so the conflict
	// with the listener holding it is reported as before).
	keep := map[PortKey]bool{}
	var kept []Group
	for i, g := range m.Groups {
		if verdicts[i] != service.SharedOverCap {
			keep[g.ServicePort] = true
		}
		if verdicts[i] == service.SharedKeep {
			kept = append(kept, g)
		}
	}
	if len(kept) == len(m.Groups) {
		return nil
	}
	m.Groups = kept
	var ls []Listener
	for _, l := range m.Listeners {
		if l.ServicePort == 0 || keep[l.ServicePort] {
			ls = append(ls, l)
		}
	}
	m.Listeners = ls
	if existing {
		return nil
	}
	return w
}

// listenerFree reports whether a listener of the Service may serve the
// group of key: one of its ports is free, or held by a listener of ours,
// or by a user's listener force-override-listeners takes over.
func listenerFree(m *Model, key PortKey, current []CurrentListener, force bool) bool {
	for _, l := range m.Listeners {
		if l.ServicePort != key {
			continue
		}
		free := true
		for _, c := range current {
			if !samePort(l.Port, l.Protocol, c) {
				continue
			}
			_, owned := m.Ref.OwnsCLB(c.Description)
			_, named := naming.ParseCLB(c.Description)
			free = owned || !named && force
			break
		}
		if free {
			return true
		}
	}
	return false
}

// portsOf names the Service ports a group serves, as port/protocol.
func portsOf(m *Model, key PortKey) []string {
	var out []string
	for _, l := range m.Listeners {
		if l.ServicePort == key {
			out = append(out, fmt.Sprintf("%d/%s", l.Port, l.Protocol))
		}
	}
	return out
}
