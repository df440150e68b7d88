package slb

import (
	"net/http"
	"sort"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// group returns a vServer group of the request's region.
func (s *Service) group(req *api.Request) (*VServerGroup, error) {
	return api.Lookup(req, "VServerGroupId", s.regionGroup)
}

// regionGroup returns the vServer group id of the request's region.
func (s *Service) regionGroup(req *api.Request, id string) (*VServerGroup, error) {
	return api.InRegion(req, s.state.VServerGroups, id, func(g *VServerGroup) string { return g.RegionID },
		func(string) error { return errVServerGroupNotFound() })
}

// mutableGroup is group plus the in-flight check every change makes.
func (s *Service) mutableGroup(req *api.Request) (*VServerGroup, *LoadBalancer, error) {
	g, err := s.group(req)
	if err != nil {
		return nil, nil, err
	}
	if req.Now.Before(g.BusyUntil) {
		return nil, nil, api.Errorf(http.StatusBadRequest, "VServerGroupProcessing", "The vServer group %s is being configured, please try again later.", g.ID)
	}
	return g, s.state.LoadBalancers[g.LoadBalancerID], nil
}

func (s *Service) touchGroup(req *api.Request, g *VServerGroup) {
	g.BusyUntil = req.Now.Add(s.st.Settings().Delay(store.DelaySLBConfiguring))
}

func groupResponse(g *VServerGroup) map[string]any {
	return map[string]any{
		"VServerGroupId": g.ID,
		"BackendServers": map[string]any{"BackendServer": backendViews(g.Backends, true)},
	}
}

// groupBackends resolves members of a vServer group, which need a port.
func (s *Service) groupBackends(lb *LoadBalancer, reqs []backendReq) ([]Backend, error) {
	for _, r := range reqs {
		if !r.HasPort {
			return nil, api.MissingParameter("BackendServers.Port")
		}
	}
	return s.resolveAll(lb, reqs)
}

func (s *Service) createVServerGroup(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	name := req.Params.String("VServerGroupName")
	if err := validName("VServerGroupName", name, 80); err != nil {
		return nil, err
	}
	reqs, err := s.parseBackends(req.Params, "BackendServers", false)
	if err != nil {
		return nil, err
	}
	members, err := s.groupBackends(lb, reqs)
	if err != nil {
		return nil, err
	}
	members, added := mergeBackends(nil, members)
	if err := s.checkBackendQuota(lb, added); err != nil {
		return nil, err
	}
	tags, err := s.validateNewTags(req.Params.Tags(), nil)
	if err != nil {
		return nil, err
	}
	if members == nil {
		members = []Backend{}
	}
	g := &VServerGroup{ID: store.NewID("rsp"), Name: name, LoadBalancerID: lb.ID, RegionID: lb.RegionID,
		CreatedAt: req.Now, Backends: members, Tags: tags}
	s.state.VServerGroups[g.ID] = g
	return groupResponse(g), nil
}

// groupUsers lists the listeners forwarding to a vServer group.
func (s *Service) groupUsers(g *VServerGroup) []*Listener {
	lb := s.state.LoadBalancers[g.LoadBalancerID]
	if lb == nil {
		return nil
	}
	var out []*Listener
	for _, l := range lb.sortedListeners() {
		if l.VServerGroupID == g.ID {
			out = append(out, l)
		}
	}
	return out
}

func (s *Service) deleteVServerGroup(req *api.Request) (map[string]any, error) {
	g, _, err := s.mutableGroup(req)
	if err != nil {
		return nil, err
	}
	if len(s.groupUsers(g)) > 0 {
		return nil, api.Errorf(http.StatusBadRequest, "RspoolVipExist", "there are vips associating with this vServer group.")
	}
	return removed(s.state.VServerGroups, g.ID)
}

func (s *Service) describeVServerGroups(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	p := req.Params
	includeListener, err := p.Bool("IncludeListener", false)
	if err != nil {
		return nil, err
	}
	includeRule, err := p.Bool("IncludeRule", false)
	if err != nil {
		return nil, err
	}
	desc := p.String("Description")
	want := p.Tags()
	var groups []*VServerGroup
	for _, g := range s.state.VServerGroups {
		if g.LoadBalancerID == lb.ID && (desc == "" || g.Name == desc) && api.MatchTags(g.Tags, want) {
			groups = append(groups, g)
		}
	}
	sort.Slice(groups, func(i, j int) bool {
		if !groups[i].CreatedAt.Equal(groups[j].CreatedAt) {
			return groups[i].CreatedAt.Before(groups[j].CreatedAt)
		}
		return groups[i].ID < groups[j].ID
	})
	items := make([]map[string]any, 0, len(groups))
	for _, g := range groups {
		it := map[string]any{
			"VServerGroupId":   g.ID,
			"VServerGroupName": g.Name,
			"ServerCount":      len(g.Backends),
			"CreateTime":       fmtResTime(g.CreatedAt),
			"Tags":             tagList{Tag: tagKVs(g.Tags)},
		}
		assoc := map[string]any{}
		if includeListener {
			ls := []map[string]any{}
			for _, l := range s.groupUsers(g) {
				ls = append(ls, map[string]any{"Port": l.Port, "Protocol": l.Protocol})
			}
			assoc["Listeners"] = map[string]any{"Listener": ls}
		}
		if includeRule {
			assoc["Rules"] = map[string]any{"Rule": []any{}}
		}
		it["AssociatedObjects"] = assoc
		items = append(items, it)
	}
	return map[string]any{"VServerGroups": map[string]any{"VServerGroup": items}}, nil
}

func (s *Service) describeVServerGroupAttribute(req *api.Request) (map[string]any, error) {
	g, err := s.group(req)
	if err != nil {
		return nil, err
	}
	out := groupResponse(g)
	out["VServerGroupName"] = g.Name
	out["LoadBalancerId"] = g.LoadBalancerID
	out["CreateTime"] = fmtResTime(g.CreatedAt)
	out["Tags"] = tagList{Tag: tagKVs(g.Tags)}
	return out, nil
}

// groupChange reads a membership change of a vServer group: the group
// (which must accept changes), its load balancer and the servers listed
// under key.
func (s *Service) groupChange(req *api.Request, key string) (*VServerGroup, *LoadBalancer, []backendReq, error) {
	g, lb, err := s.mutableGroup(req)
	if err != nil {
		return nil, nil, nil, err
	}
	reqs, err := s.parseBackends(req.Params, key, true)
	return g, lb, reqs, err
}

// touched records a membership change of g and answers with its members.
func (s *Service) touched(req *api.Request, g *VServerGroup) map[string]any {
	s.touchGroup(req, g)
	return groupResponse(g)
}

func (s *Service) addVServerGroupBackendServers(req *api.Request) (map[string]any, error) {
	g, lb, reqs, err := s.groupChange(req, "BackendServers")
	if err != nil {
		return nil, err
	}
	if g.Backends, err = s.withAdded(lb, g.Backends, reqs, s.groupBackends); err != nil {
		return nil, err
	}
	return s.touched(req, g), nil
}

func (s *Service) removeVServerGroupBackendServers(req *api.Request) (map[string]any, error) {
	g, _, reqs, err := s.groupChange(req, "BackendServers")
	if err != nil {
		return nil, err
	}
	g.Backends = removeMatching(g.Backends, reqs)
	return s.touched(req, g), nil
}

func (s *Service) modifyVServerGroupBackendServers(req *api.Request) (map[string]any, error) {
	g, lb, olds, err := s.groupChange(req, "OldBackendServers")
	if err != nil {
		return nil, err
	}
	news, err := s.parseBackends(req.Params, "NewBackendServers", true)
	if err != nil {
		return nil, err
	}
	for _, o := range olds {
		found := false
		for _, m := range g.Backends {
			if matchBackend(m, o) {
				found = true
				break
			}
		}
		if !found {
			return nil, api.InvalidParameter("OldBackendServers", "The backend server %s is not a member of vServer group %s.", o.ServerID, g.ID)
		}
	}
	add, err := s.groupBackends(lb, news)
	if err != nil {
		return nil, err
	}
	remaining := removeMatching(append([]Backend(nil), g.Backends...), olds)
	if err := s.checkBackendQuota(lb, countNew(remaining, add)-(len(g.Backends)-len(remaining))); err != nil {
		return nil, err
	}
	g.Backends, _ = mergeBackends(remaining, add)
	return s.touched(req, g), nil
}

func (s *Service) setVServerGroupAttribute(req *api.Request) (map[string]any, error) {
	g, _, err := s.mutableGroup(req)
	if err != nil {
		return nil, err
	}
	if name, ok := req.Params.Get("VServerGroupName"); ok && name != "" {
		if err := validName("VServerGroupName", name, 80); err != nil {
			return nil, err
		}
		g.Name = name
	}
	reqs, err := s.parseBackends(req.Params, "BackendServers", false)
	if err != nil {
		return nil, err
	}
	reweigh(g.Backends, reqs)
	if len(reqs) > 0 {
		s.touchGroup(req, g)
	}
	out := groupResponse(g)
	out["VServerGroupName"] = g.Name
	return out, nil
}
