package nlb

import (
	"context"
	"fmt"
	"slices"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// Per-borrower limits on a shared NLB. An NLB holds 50 listeners and 400
// ECS/ENI/IP servers by default (quotas nlb_quota_loadbalancer_listeners_num
// and nlb_quota_loadbalancer_noeci_servers_num,
// https://www.alibabacloud.com/help/en/slb/network-load-balancer/product-overview/restrictions-on-use),
// and one Service port is one listener and one server group here: without
// a limit one borrower with many ports fills them for its co-tenants, and
// groups it makes for ports without a listener hold its Nodes for nothing.
// The rules are service.LimitShared's, as for CLB.

// sharedListeners reads the listeners of the shared borrowed load balancer
// lbID that decide which of the Service's ports get a group, when the
// Service manages listeners there; otherwise an empty list (its groups
// are then only those that exist). The result is never nil, so that
// ensureListeners uses it instead of reading again.
func (p *Provider) sharedListeners(ctx context.Context, req *service.Request, lbID string) ([]CurrentListener, error) {
	if !req.Settings.ManagesListeners() {
		return []CurrentListener{}, nil
	}
	ls, err := p.api.listeners(ctx, lbID)
	if err != nil {
		return nil, fmt.Errorf("list listeners of %s: %w", lbID, err)
	}
	if ls == nil {
		ls = []CurrentListener{}
	}
	return ls, nil
}

// limitShared keeps, on a borrowed load balancer lbID that other Services
// share, the Service from making groups no listener of its uses, and from
// holding more than service.MaxGroupsPerSharedLB groups of its own: ports
// above the limit leave the model with their listeners (ours are deleted
// with their groups), ports without a listener keep theirs planned so a
// conflict is still reported. plan is planGroups' (its groups are what
// the rules read); it returns the plan of the groups left. listeners are
// the load balancer's current listeners; existing limits the ports to
// those whose group exists already (the backend pass, which reads no
// listener and creates nothing) and reports nothing. The Warning is nil
// when nothing was skipped or the load balancer is not shared.
func limitShared(req *service.Request, m *Model, plan GroupPlan, lbID string, listeners []CurrentListener, existing bool) (GroupPlan, *service.Warning) {
	if !req.Binding.Shared() {
		return plan, nil
	}
	s := req.Settings
	manages, force := s.ManagesListeners(), s.LoadBalancer.ForceOverrideListeners
	groups := make([]service.SharedGroup, len(m.Groups))
	for i, g := range m.Groups {
		id := plan.IDs[g.ServicePort]
		cur, exists := plan.current[id]
		exists = exists && g.BoundID == ""
		servable := exists
		if !servable && !existing && manages {
			servable = listenerFree(m, g.ServicePort, listeners, force)
		}
		groups[i] = service.SharedGroup{
			Ports: portsOf(m, g.ServicePort), Bound: g.BoundID != "",
			Used: exists && slices.Contains(cur.RelatedLBs, lbID), Servable: servable,
		}
	}
	verdicts, w := service.LimitShared(req.Binding, groups)
	kept, keep := service.KeepShared(m.Groups, verdicts, func(g Group) PortKey { return g.ServicePort })
	if len(kept) == len(m.Groups) {
		return plan, nil
	}
	groupsBefore := m.Groups
	m.Groups = kept
	var ls []Listener
	for _, l := range m.Listeners {
		if keep[l.ServicePort] {
			ls = append(ls, l)
		}
	}
	m.Listeners = ls
	// The groups left out are no longer created nor updated, and ours
	// among them are deleted after their listeners.
	var create []Group
	for _, g := range plan.Create {
		if slices.ContainsFunc(kept, func(k Group) bool { return k.ServicePort == g.ServicePort }) {
			create = append(create, g)
		}
	}
	plan.Create = create
	for i, g := range groupsBefore {
		if verdicts[i] == service.SharedKeep {
			continue
		}
		id := plan.IDs[g.ServicePort]
		delete(plan.IDs, g.ServicePort)
		if c, ok := plan.current[id]; ok && g.BoundID == "" {
			plan.Delete = append(plan.Delete, c)
			plan.Update = slices.DeleteFunc(plan.Update, func(u GroupUpdate) bool { return u.ID == id })
		}
	}
	if existing {
		return plan, nil
	}
	return plan, w
}

// listenerFree reports whether a listener of the Service may serve the
// port key (the rule of PlanListeners): every listener of the load
// balancer overlapping its ports is the Service's own, or a user's of the
// same protocol and port span that force-override-listeners takes over;
// none is another Service's.
func listenerFree(m *Model, key PortKey, current []CurrentListener, force bool) bool {
	return slices.ContainsFunc(m.Listeners, func(d Listener) bool {
		if d.ServicePort != key {
			return false
		}
		for _, c := range current {
			if !overlaps(d, c) {
				continue
			}
			_, named := naming.ParseNLB(c.Description)
			_, owned := m.Ref.OwnsNLB(c.Description)
			exact := c.Protocol == d.Protocol && c.Port == d.Port && c.StartPort == d.StartPort && c.EndPort == d.EndPort
			if !owned && (named || !force || !exact) {
				return false
			}
		}
		return true
	})
}

// portsOf names the Service ports of key as port/protocol (a range as
// start-end/protocol).
func portsOf(m *Model, key PortKey) []string {
	var out []string
	for _, l := range m.Listeners {
		if l.ServicePort != key {
			continue
		}
		if l.Port == 0 {
			out = append(out, fmt.Sprintf("%d-%d/%s", l.StartPort, l.EndPort, l.Protocol))
		} else {
			out = append(out, fmt.Sprintf("%d/%s", l.Port, l.Protocol))
		}
	}
	return out
}
