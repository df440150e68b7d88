package nlb

import (
	"fmt"
	"sort"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// CurrentGroup is a server group as read from the cloud.
type CurrentGroup struct {
	// ID and Name identify it.
	ID, Name string
	// Protocol is TCP, UDP or TCPSSL.
	Protocol string
	// Type is Instance or Ip.
	Type string
	// AnyPort reports an any-port group.
	AnyPort bool
	// AddressIPVersion is ipv4 or DualStack.
	AddressIPVersion string
	// Params are its tunables under the parameter names of Group.Set.
	Params map[string]string
	// RelatedLBs are the load balancers whose listeners use it.
	RelatedLBs []string
	// Tags are its cloud tags (the grant of a vgroup-port group).
	Tags map[string]string
}

// CurrentListener is a listener as read from the cloud.
type CurrentListener struct {
	// ID identifies it.
	ID string
	// Port is the listener port (0 for a port range).
	Port int32
	// StartPort and EndPort bound a port-range listener.
	StartPort, EndPort int32
	// Protocol is TCP, UDP or TCPSSL.
	Protocol string
	// Description is the ownership mark.
	Description string
	// Status is Running, Stopped, Provisioning, ...
	Status string
	// ServerGroupID is the group it forwards to.
	ServerGroupID string
	// Params are its settings under the parameter names of Listener.Set.
	Params map[string]string
}

func (c CurrentListener) span() (int32, int32) {
	if c.Port != 0 {
		return c.Port, c.Port
	}
	return c.StartPort, c.EndPort
}

// transport is the port namespace of a protocol: TCP and TCPSSL share one.
func transport(proto string) string {
	if strings.EqualFold(proto, "UDP") {
		return "UDP"
	}
	return "TCP"
}

// overlaps reports whether a desired and a current listener compete for a port.
func overlaps(d Listener, c CurrentListener) bool {
	if transport(d.Protocol) != transport(c.Protocol) {
		return false
	}
	ds, de := d.span()
	cs, ce := c.span()
	return ds <= ce && cs <= de
}

// ListenerUpdate is a change to an existing listener.
type ListenerUpdate struct {
	// ID is the listener.
	ID string
	// Listener is the desired listener.
	Listener Listener
	// Params are only the parameters to send (the changed ones).
	Params map[string]string
	// ServerGroup is set when the listener must forward elsewhere.
	ServerGroup bool
}

// ListenerPlan is what must happen to a load balancer's listeners, in
// order: Delete, Create, Update, Start.
type ListenerPlan struct {
	service.ListenerChanges[CurrentListener, Listener, ListenerUpdate]
	// Kept maps the Service ports served by an existing listener (updated
	// or not) to its id.
	Kept map[PortKey]string
}

// PlanListeners compares the desired listeners with the load balancer's.
//
// The ownership rule: a listener is ours only when its description parses
// as this Service's (naming.OwnsNLB). Ours are updated, recreated when
// their protocol or port span changes, and deleted when no Service port
// wants them. Any other listener is never deleted. One that holds a port
// we want is reported as a conflict; with force (force-override-listeners)
// it is taken over in place instead, provided it has the same protocol and
// port span (anything else would need a delete, which we never do to a
// listener that is not ours): its update carries our description with the
// settings and target group, so from then on it is ours like one we
// created, deleted when its port or the Service goes, instead of a
// listener we change but never clean up. groupIDs maps PortKeys to the
// group serving them.
func PlanListeners(desired []Listener, current []CurrentListener, ref naming.Ref, force bool, groupIDs map[PortKey]string) ListenerPlan {
	plan := ListenerPlan{Kept: map[PortKey]string{}}
	matched := map[int]bool{}
	deleting := map[int]bool{}
	for _, d := range desired {
		var hits []int
		for i, c := range current {
			if overlaps(d, c) {
				hits = append(hits, i)
			}
		}
		blocked := false
		var keep = -1
		for _, i := range hits {
			c := current[i]
			parsed, named := naming.ParseNLB(c.Description)
			_, owned := ref.OwnsNLB(c.Description)
			exact := c.Protocol == d.Protocol && c.Port == d.Port && c.StartPort == d.StartPort && c.EndPort == d.EndPort
			switch {
			case named && !owned:
				// Another Service's listener is never taken over, force or
				// not (see the CLB rule).
				blocked = true
				plan.Conflicts = append(plan.Conflicts, fmt.Sprintf("listener %s (%s:%d) belongs to Service %s/%s (cluster %s) and is never taken over, even with force-override-listeners",
					c.ID, c.Protocol, c.Port, parsed.Namespace, parsed.Name, parsed.ClusterID))
			case exact && keep < 0 && (owned || force):
				keep = i
			case owned:
				if !deleting[i] {
					deleting[i] = true
					plan.Delete = append(plan.Delete, c)
				}
			default:
				blocked = true
				plan.Conflicts = append(plan.Conflicts, conflictText(d, c, force))
			}
			matched[i] = true
		}
		if blocked {
			continue
		}
		if keep < 0 {
			plan.Create = append(plan.Create, d)
			continue
		}
		c := current[keep]
		plan.Kept[d.ServicePort] = c.ID
		u := ListenerUpdate{ID: c.ID, Listener: d, Params: changed(d.Set, c.Params)}
		if c.Description != d.Description {
			u.Params["ListenerDescription"] = d.Description
		}
		if id := groupIDs[d.ServicePort]; id != "" && id != c.ServerGroupID {
			u.ServerGroup = true
		}
		if len(u.Params) > 0 || u.ServerGroup {
			plan.Update = append(plan.Update, u)
		}
		if strings.EqualFold(c.Status, "Stopped") {
			plan.Start = append(plan.Start, c)
		}
	}
	plan.DeleteUnmatched(current, matched, func(c CurrentListener) bool {
		_, owned := ref.OwnsNLB(c.Description)
		return owned
	})
	return plan
}

func conflictText(d Listener, c CurrentListener, force bool) string {
	where := fmt.Sprintf("%s:%d", d.Protocol, d.Port)
	if d.Port == 0 {
		where = fmt.Sprintf("%s:%d-%d", d.Protocol, d.StartPort, d.EndPort)
	}
	if force {
		return fmt.Sprintf("listener %s (%s, description %q) is not managed by this Service and differs in protocol or port range from %s; it is left alone", c.ID, c.Protocol, c.Description, where)
	}
	return fmt.Sprintf("port %s is held by listener %s (description %q), which is not managed by this Service; set force-override-listeners to \"true\" to manage it", where, c.ID, c.Description)
}

// changed returns the desired settings that the current ones lack.
func changed(want, have map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range want {
		if !sameValue(k, v, have[k]) {
			out[k] = v
		}
	}
	return out
}

// sameValue compares one setting: lists as sets, the rest case-insensitively.
func sameValue(key, a, b string) bool {
	if listParams[key] {
		return sameSet(a, b)
	}
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

func sameSet(a, b string) bool {
	split := func(s string) []string {
		var out []string
		for _, x := range strings.Split(s, ",") {
			if x = strings.ToLower(strings.TrimSpace(x)); x != "" {
				out = append(out, x)
			}
		}
		sort.Strings(out)
		return out
	}
	return strings.Join(split(a), ",") == strings.Join(split(b), ",")
}

// GroupUpdate is a change to the tunables of an existing group.
type GroupUpdate struct {
	// ID is the group.
	ID string
	// Params are only the parameters to send (the changed ones).
	Params map[string]string
}

// GroupPlan is what must happen to the Service's server groups.
type GroupPlan struct {
	// Create are our groups that do not exist yet (or must be replaced).
	Create []Group
	// Update are our groups whose tunables differ.
	Update []GroupUpdate
	// IDs maps PortKeys to existing groups (ours or bound).
	IDs map[PortKey]string
	// Delete are our groups no Service port wants (any more, or in that
	// type or protocol); deleted after the listeners that use them moved.
	Delete []CurrentGroup
	// MissingBound are vgroup-port ids that do not exist.
	MissingBound []string

	// current indexes the groups read, by id.
	current map[string]CurrentGroup
}

// bind serves d's port with the user's group it is bound to (vgroup-port),
// or reports that group missing.
func (p *GroupPlan) bind(d Group, bound map[string]CurrentGroup) {
	if _, ok := bound[d.BoundID]; !ok {
		p.MissingBound = append(p.MissingBound, d.BoundID)
		return
	}
	p.IDs[d.ServicePort] = d.BoundID
}

// compatible reports whether an existing group can serve a desired one:
// type, protocol, any-port and address family cannot change after
// creation.
func compatible(d Group, c CurrentGroup) bool {
	return strings.EqualFold(c.Type, d.Type) && strings.EqualFold(groupProtocol(strings.ToUpper(c.Protocol)), d.Protocol) && c.AnyPort == d.AnyPort &&
		sameIPVersion(c.AddressIPVersion, d.AddressIPVersion)
}

// PlanGroups matches desired groups with the existing ones: bound groups
// by id, ours by name (and ownership). An owned group that cannot serve its
// port any more (type, protocol or any-port changed) is replaced: a new
// one is created, the listener moves, the old one is deleted. Groups of
// other Services or users are never listed for deletion or update.
func PlanGroups(desired []Group, owned []CurrentGroup, bound map[string]CurrentGroup, ref naming.Ref) GroupPlan {
	plan := GroupPlan{IDs: map[PortKey]string{}}
	byName := map[string][]CurrentGroup{}
	for _, c := range owned {
		if _, ok := ref.OwnsNLB(c.Name); ok {
			byName[c.Name] = append(byName[c.Name], c)
		}
	}
	kept := map[string]bool{}
	for _, d := range desired {
		if d.BoundID != "" {
			plan.bind(d, bound)
			continue
		}
		found := false
		for _, c := range byName[d.Name] {
			if kept[c.ID] || !compatible(d, c) {
				continue
			}
			kept[c.ID], found = true, true
			plan.IDs[d.ServicePort] = c.ID
			if p := changed(groupWants(d, c.Params), c.Params); len(p) > 0 {
				plan.Update = append(plan.Update, GroupUpdate{ID: c.ID, Params: p})
			}
			break
		}
		if !found {
			plan.Create = append(plan.Create, d)
		}
	}
	for _, c := range owned {
		if _, ok := ref.OwnsNLB(c.Name); ok && !kept[c.ID] {
			plan.Delete = append(plan.Delete, c)
		}
	}
	return plan
}

// ServerPlan is the change to one server group's members.
type ServerPlan = service.MemberPlan[Server]

// PlanServers compares a group's desired members with its current ones
// (see service.PlanMembers).
func PlanServers(desired, current []Server, shared bool, description string, ignoreWeight bool) ServerPlan {
	return service.PlanMembers(desired, current, shared, description, ignoreWeight)
}

// SecurityGroupPlan says which security groups the load balancer must
// leave and join.
type SecurityGroupPlan struct {
	Leave, Join []string
}

// PlanSecurityGroups makes the load balancer's security groups exactly
// desired (an empty desired set leaves them all).
func PlanSecurityGroups(desired, current []string) SecurityGroupPlan {
	var plan SecurityGroupPlan
	want := map[string]bool{}
	for _, d := range desired {
		want[d] = true
	}
	have := map[string]bool{}
	for _, c := range current {
		have[c] = true
		if !want[c] {
			plan.Leave = append(plan.Leave, c)
		}
	}
	for _, d := range desired {
		if !have[d] {
			plan.Join = append(plan.Join, d)
			have[d] = true
		}
	}
	return plan
}
