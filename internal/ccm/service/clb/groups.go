package clb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// vServer groups and their backends: read, diffed (PlanGroups,
// PlanBackends, limitShared on a shared load balancer), applied in batches,
// and the Service's members released from groups it no longer binds.

// CurrentGroup is a vServer group as read from the cloud.
type CurrentGroup struct {
	// ID and Name identify it.
	ID, Name string
	// Listeners counts the listeners forwarding to it.
	Listeners int
	// Tags are its cloud tags (the grant of a vgroup-port group).
	Tags map[string]string
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
	kept, keep := service.KeepShared(m.Groups, verdicts, func(g Group) PortKey { return g.ServicePort })
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
	return slices.ContainsFunc(m.Listeners, func(l Listener) bool {
		if l.ServicePort != key {
			return false
		}
		for _, c := range current {
			if samePort(l.Port, l.Protocol, c) {
				_, owned := m.Ref.OwnsCLB(c.Description)
				_, named := naming.ParseCLB(c.Description)
				return owned || !named && force
			}
		}
		return true
	})
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

// groups lists the load balancer's vServer groups with the number of
// listeners using each.
func (a api) groups(ctx context.Context, lbID string) ([]CurrentGroup, error) {
	req := slb.CreateDescribeVServerGroupsRequest()
	req.LoadBalancerId = lbID
	req.IncludeListener = requests.NewBoolean(true)
	resp, err := cloud.Call(ctx, a.c, req, slb.CreateDescribeVServerGroupsResponse)
	if err != nil {
		return nil, err
	}
	var out []CurrentGroup
	for _, g := range resp.VServerGroups.VServerGroup {
		out = append(out, CurrentGroup{ID: g.VServerGroupId, Name: g.VServerGroupName, Listeners: len(g.AssociatedObjects.Listeners.Listener), Tags: tagMap(g.Tags.Tag)})
	}
	return out, nil
}

func (a api) members(ctx context.Context, groupID string) ([]Backend, error) {
	req := slb.CreateDescribeVServerGroupAttributeRequest()
	req.VServerGroupId = groupID
	resp, err := cloud.Call(ctx, a.c, req, slb.CreateDescribeVServerGroupAttributeResponse)
	if err != nil {
		return nil, err
	}
	var out []Backend
	for _, b := range resp.BackendServers.BackendServer {
		t := strings.ToLower(b.Type)
		if t == "" {
			t = "ecs"
		}
		m := Backend{ServerID: b.ServerId, Type: t, Port: int32(b.Port), Weight: b.Weight, Description: b.Description}
		if t == "eni" {
			m.IP = b.ServerIp
		}
		out = append(out, m)
	}
	return out, nil
}

// backendJSON encodes members as the BackendServers parameter.
func backendJSON(bs []Backend, withWeight bool) string {
	type server struct {
		ServerID    string `json:"ServerId"`
		ServerIP    string `json:"ServerIp,omitempty"`
		Type        string `json:"Type"`
		Port        string `json:"Port"`
		Weight      string `json:"Weight,omitempty"`
		Description string `json:"Description,omitempty"`
	}
	out := make([]server, 0, len(bs))
	for _, b := range bs {
		s := server{ServerID: b.ServerID, ServerIP: b.IP, Type: b.Type, Port: strconv.Itoa(int(b.Port)), Description: b.Description}
		if withWeight {
			s.Weight = strconv.Itoa(b.Weight)
		}
		out = append(out, s)
	}
	data, _ := json.Marshal(out)
	return string(data)
}

func (a api) createGroup(ctx context.Context, lbID, name string, first []Backend) (string, error) {
	req := slb.CreateCreateVServerGroupRequest()
	req.LoadBalancerId = lbID
	req.VServerGroupName = name
	if len(first) > 0 {
		req.BackendServers = backendJSON(first, true)
	}
	resp, err := cloud.Call(ctx, a.c, req, slb.CreateCreateVServerGroupResponse)
	if err != nil {
		return "", err
	}
	return resp.VServerGroupId, nil
}

func (a api) deleteGroup(ctx context.Context, id string) error {
	req := slb.CreateDeleteVServerGroupRequest()
	req.VServerGroupId = id
	_, err := cloud.Call(ctx, a.c, req, slb.CreateDeleteVServerGroupResponse)
	if cloud.IsNotFound(err) {
		return nil
	}
	return err
}

// applyMembers applies a backend plan in batches of at most batch members
// per call: removals, then weight updates, then additions.
func (a api) applyMembers(ctx context.Context, groupID string, plan BackendPlan, batch int) error {
	steps := []struct {
		members  []Backend
		weighted bool
		send     func(servers string) error
	}{
		{plan.Remove, false, func(servers string) error {
			r := slb.CreateRemoveVServerGroupBackendServersRequest()
			r.VServerGroupId, r.BackendServers = groupID, servers
			_, err := cloud.Call(ctx, a.c, r, newAck)
			return err
		}},
		{plan.Update, true, func(servers string) error {
			r := slb.CreateSetVServerGroupAttributeRequest()
			r.VServerGroupId, r.BackendServers = groupID, servers
			_, err := cloud.Call(ctx, a.c, r, newAck)
			return err
		}},
		{plan.Add, true, func(servers string) error {
			r := slb.CreateAddVServerGroupBackendServersRequest()
			r.VServerGroupId, r.BackendServers = groupID, servers
			_, err := cloud.Call(ctx, a.c, r, newAck)
			return err
		}},
	}
	for _, step := range steps {
		for _, part := range cloud.Chunks(step.members, batch) {
			if err := step.send(backendJSON(part, step.weighted)); err != nil {
				return err
			}
		}
	}
	return nil
}

// syncGroups creates missing groups with their first batch of members and
// reconciles the members of existing ones.
func (p *Provider) syncGroups(ctx context.Context, lbID string, m *Model, plan GroupPlan, s *annotations.Settings) error {
	creating := map[int32]bool{}
	for _, g := range plan.Create {
		creating[g.ServicePort] = true
		first, rest := g.Backends, []Backend(nil)
		if len(first) > p.opts.BatchSize {
			first, rest = first[:p.opts.BatchSize], first[p.opts.BatchSize:]
		}
		id, err := p.api.createGroup(ctx, lbID, g.Name, first)
		if err != nil {
			return fmt.Errorf("create vServer group %s: %w", g.Name, err)
		}
		plan.IDs[g.ServicePort] = id
		if err := p.api.applyMembers(ctx, id, BackendPlan{Add: rest}, p.opts.BatchSize); err != nil {
			return fmt.Errorf("add backends to vServer group %s: %w", id, err)
		}
	}
	for _, g := range m.Groups {
		if creating[g.ServicePort] {
			continue
		}
		id := plan.IDs[g.ServicePort]
		cur, err := p.api.members(ctx, id)
		if err != nil {
			return fmt.Errorf("read backends of vServer group %s: %w", id, err)
		}
		bp := PlanBackends(g.Backends, cur, g.BoundID != "", g.Name, s.Backend.IgnoreWeightUpdate)
		if bp.Empty() {
			continue
		}
		klog.FromContext(ctx).V(2).Info("Updating backends", "group", id, "add", len(bp.Add), "remove", len(bp.Remove), "reweigh", len(bp.Update))
		if err := p.api.applyMembers(ctx, id, bp, p.opts.BatchSize); err != nil {
			return fmt.Errorf("update backends of vServer group %s: %w", id, err)
		}
	}
	return nil
}

// deleteGroups deletes the vServer groups the model no longer has; one
// still used by a listener we do not manage is left.
func (p *Provider) deleteGroups(ctx context.Context, groups []CurrentGroup) error {
	for _, g := range groups {
		if err := p.api.deleteGroup(ctx, g.ID); err != nil {
			if cloud.CodeOf(err) == "RspoolVipExist" {
				// Still used by a listener we do not manage: leave it.
				klog.FromContext(ctx).Info("Keeping a vServer group still in use", "group", g.ID, "name", g.Name)
				continue
			}
			return fmt.Errorf("delete vServer group %s (%s): %w", g.ID, g.Name, err)
		}
	}
	return nil
}

// boundGroups are the ids of the groups the model binds with vgroup-port.
func boundGroups(m *Model) map[string]bool {
	out := map[string]bool{}
	for _, g := range m.Groups {
		if g.BoundID != "" {
			out[g.BoundID] = true
		}
	}
	return out
}

// releaseMembers removes the Service's members from the load balancer's
// user-made vServer groups it is no longer bound to (all but keep; see
// service.ReleaseMembers), each removal right after its group's read.
func (p *Provider) releaseMembers(ctx context.Context, req *service.Request, groups []CurrentGroup, keep map[string]bool) error {
	return service.ReleaseMembers(ctx, req.Identity, groups, keep, service.MemberRelease[CurrentGroup, Backend]{
		Kind: "vServer group", Noun: "backends", Parse: naming.ParseCLB,
		Group:   func(g CurrentGroup) (string, string) { return g.ID, g.Name },
		Members: p.api.members,
		Remove: func(ctx context.Context, id string, mine []Backend) error {
			klog.FromContext(ctx).Info("Removing the Service's backends from a vServer group it is no longer bound to", "group", id, "backends", len(mine))
			return p.api.applyMembers(ctx, id, BackendPlan{Remove: mine}, p.opts.BatchSize)
		},
	})
}

// tagMap turns the SLB API's tag list into a map.
func tagMap(tags []slb.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[t.TagKey] = t.TagValue
	}
	return m
}
