package clb

import (
	"fmt"
	"sort"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// CurrentListener is a listener as read from the cloud.
type CurrentListener struct {
	// Port and Protocol identify it on its load balancer.
	Port     int32
	Protocol string
	// Description is the ownership mark.
	Description string
	// Status is running, stopped, starting, ...
	Status string
	// VServerGroupID is the group it forwards to.
	VServerGroupID string
	// Params are its settings under their API parameter names.
	Params map[string]string
}

// CurrentGroup is a vServer group as read from the cloud.
type CurrentGroup struct {
	// ID and Name identify it.
	ID, Name string
	// Listeners counts the listeners forwarding to it.
	Listeners int
	// Tags are its cloud tags (the grant of a vgroup-port group).
	Tags map[string]string
}

// ListenerUpdate is a change to an existing listener.
type ListenerUpdate struct {
	// Listener is the desired listener.
	Listener Listener
	// Params are only the parameters to send (the changed ones).
	Params map[string]string
}

// ListenerPlan is what must happen to a load balancer's listeners, in
// order: Delete, Create, Update, Start.
type ListenerPlan struct {
	// Delete are our listeners that are no longer wanted or must be
	// recreated with another protocol.
	Delete []CurrentListener
	// Create are missing listeners.
	Create []Listener
	// Update are listeners whose settings or group differ.
	Update []ListenerUpdate
	// Start are stopped listeners that must run.
	Start []CurrentListener
	// Conflicts describe desired ports held by listeners we must not touch.
	Conflicts []string
}

// Empty reports whether the plan changes nothing.
func (p ListenerPlan) Empty() bool {
	return len(p.Delete) == 0 && len(p.Create) == 0 && len(p.Update) == 0 && len(p.Start) == 0
}

func tcpFamily(proto string) bool { return proto == "tcp" || proto == "http" || proto == "https" }

// samePort reports whether two listeners compete for one port: UDP may
// share a port number with the TCP family, nothing else may.
func samePort(port int32, proto string, c CurrentListener) bool {
	return c.Port == port && (c.Protocol == proto || tcpFamily(c.Protocol) && tcpFamily(proto))
}

// PlanListeners compares the desired listeners with the load balancer's.
// Only listeners whose description proves they belong to ref are ever
// deleted; a listener of someone else on a desired port is reported, or
// with force (force-override-listeners) taken over: its update carries our
// description with the other changes, so from then on it is ours like one
// we created (deleted when its port or the Service goes) instead of a
// listener we change but never clean up. Listeners on ports no Service
// port wants are never touched unless ours. groupIDs maps PortKeys to the
// id of the group serving them.
func PlanListeners(desired []Listener, current []CurrentListener, ref naming.Ref, force bool, groupIDs map[PortKey]string) ListenerPlan {
	var plan ListenerPlan
	matched := map[int]bool{}
	for _, d := range desired {
		idx := -1
		for i, c := range current {
			if !matched[i] && samePort(d.Port, d.Protocol, c) {
				idx = i
				break
			}
		}
		if idx < 0 {
			plan.Create = append(plan.Create, d)
			continue
		}
		matched[idx] = true
		c := current[idx]
		parsed, named := naming.ParseCLB(c.Description)
		_, owned := ref.OwnsCLB(c.Description)
		if !owned && named {
			// Another Service's listener (of this cluster or another) is
			// never taken over, force or not: two namespaces borrowing one
			// load balancer must not hijack each other's ports.
			plan.Conflicts = append(plan.Conflicts, fmt.Sprintf("listener %s:%d belongs to Service %s/%s (cluster %s) and is never taken over, even with force-override-listeners", c.Protocol, c.Port, parsed.Namespace, parsed.Name, parsed.ClusterID))
			continue
		}
		if !owned && !force {
			plan.Conflicts = append(plan.Conflicts, fmt.Sprintf("listener %s:%d (description %q) is not managed by this Service; set force-override-listeners to \"true\" to manage it", c.Protocol, c.Port, c.Description))
			continue
		}
		if c.Protocol != d.Protocol {
			plan.Delete = append(plan.Delete, c)
			plan.Create = append(plan.Create, d)
			continue
		}
		changed := map[string]string{}
		for k, v := range d.Set {
			if !strings.EqualFold(strings.TrimSpace(c.Params[k]), v) {
				changed[k] = v
			}
		}
		if kubeProxyShaped(c.Protocol, c.Params) {
			for k, v := range d.ResetKubeProxy {
				if !strings.EqualFold(strings.TrimSpace(c.Params[k]), v) {
					changed[k] = v
				}
			}
		}
		if d.ServicePort != 0 {
			if id := groupIDs[d.ServicePort]; id != "" && id != c.VServerGroupID {
				changed["VServerGroup"] = "on"
				changed["VServerGroupId"] = id
			}
		}
		if c.Description != d.Description {
			changed["Description"] = d.Description
		}
		if len(changed) > 0 {
			plan.Update = append(plan.Update, ListenerUpdate{Listener: d, Params: changed})
		}
		if c.Status == "stopped" {
			plan.Start = append(plan.Start, c)
		}
	}
	for i, c := range current {
		if matched[i] {
			continue
		}
		if _, owned := ref.OwnsCLB(c.Description); owned {
			plan.Delete = append(plan.Delete, c)
		}
	}
	// A forwarding HTTP listener must go before the HTTPS one it targets.
	sort.SliceStable(plan.Delete, func(i, j int) bool {
		return plan.Delete[i].Protocol == "http" && plan.Delete[j].Protocol != "http"
	})
	return plan
}

// GroupPlan is what must happen to a load balancer's vServer groups.
type GroupPlan struct {
	// Create are our groups that do not exist yet.
	Create []Group
	// IDs maps PortKeys to existing groups (ours or bound).
	IDs map[PortKey]string
	// Delete are our groups no Service port wants any more, and duplicates
	// of a wanted one (deleted after the listeners that use them moved).
	Delete []CurrentGroup
	// MissingBound are vgroup-port ids that do not exist on the load balancer.
	MissingBound []string
}

// PlanGroups matches desired groups with the load balancer's: bound groups
// by id, ours by name. Of several groups of ours with one name (a lost
// create's retry, or an earlier version that made one per protocol for
// 53/TCP and 53/UDP) the one most listeners use is kept and the others
// deleted, since a group no listener uses makes every backend pass ask for
// a full sync. Groups of other Services or users are never listed for
// deletion.
func PlanGroups(desired []Group, current []CurrentGroup, ref naming.Ref) GroupPlan {
	plan := GroupPlan{IDs: map[PortKey]string{}}
	byID := map[string]CurrentGroup{}
	byName := map[string]CurrentGroup{}
	for _, c := range current {
		byID[c.ID] = c
		if _, ok := ref.OwnsCLB(c.Name); ok {
			if kept, dup := byName[c.Name]; !dup || c.Listeners > kept.Listeners {
				byName[c.Name] = c
			}
		}
	}
	wanted := map[string]bool{}
	for _, d := range desired {
		if d.BoundID != "" {
			if _, ok := byID[d.BoundID]; ok {
				plan.IDs[d.ServicePort] = d.BoundID
			} else {
				plan.MissingBound = append(plan.MissingBound, d.BoundID)
			}
			continue
		}
		wanted[d.Name] = true
		if c, ok := byName[d.Name]; ok {
			plan.IDs[d.ServicePort] = c.ID
		} else {
			plan.Create = append(plan.Create, d)
		}
	}
	for _, c := range current {
		if kept, ours := byName[c.Name]; ours && (!wanted[c.Name] || kept.ID != c.ID) {
			plan.Delete = append(plan.Delete, c)
		}
	}
	return plan
}

// BackendPlan is the change to one vServer group's members.
type BackendPlan = service.MemberPlan[Backend]

// PlanBackends compares a group's desired members with its current ones
// (see service.PlanMembers).
func PlanBackends(desired, current []Backend, shared bool, description string, ignoreWeight bool) BackendPlan {
	return service.PlanMembers(desired, current, shared, description, ignoreWeight)
}
