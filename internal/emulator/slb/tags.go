package slb

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/facts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// maxTagResourceIDs bounds ResourceId.N and Tag.N in the tag APIs.
const maxTagResourceIDs = 20

// The longest tag key and value, in characters.
var (
	_, tagKeyMax   = facts.Range("slb:TagKeyLength")
	_, tagValueMax = facts.Range("slb:TagValueLength")
)

func validTag(t api.Tag) error {
	k := strings.ToLower(t.Key)
	switch {
	case t.Key == "":
		return api.InvalidParameter("Tag.Key", "The tag key must not be empty.")
	case len([]rune(t.Key)) > tagKeyMax:
		return api.InvalidParameter("Tag.Key", "The tag key %q must be at most %d characters.", t.Key, tagKeyMax)
	case strings.HasPrefix(k, "aliyun") || strings.HasPrefix(k, "acs:") || strings.Contains(k, "http://") || strings.Contains(k, "https://"):
		return api.InvalidParameter("Tag.Key", "The tag key %q must not start with aliyun or acs: and must not contain http:// or https://.", t.Key)
	case len([]rune(t.Value)) > tagValueMax:
		return api.InvalidParameter("Tag.Value", "The tag value of %q must be at most %d characters.", t.Key, tagValueMax)
	case strings.Contains(strings.ToLower(t.Value), "http://") || strings.Contains(strings.ToLower(t.Value), "https://"):
		return api.InvalidParameter("Tag.Value", "The tag value of %q must not contain http:// or https://.", t.Key)
	}
	return nil
}

// validateNewTags merges tags into existing (a key's value is replaced)
// and enforces the per-resource tag quota.
func (s *Service) validateNewTags(tags, existing []api.Tag) ([]api.Tag, error) {
	for _, t := range tags {
		if err := validTag(t); err != nil {
			return nil, err
		}
	}
	out := api.MergeTags(existing, tags)
	if q := s.st.Settings().Quota(store.QuotaTagsPerResource); len(out) > q {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.TagsPerResource", "A resource can have at most %d tags.", q)
	}
	return out, nil
}

var tagResourceTypes = []string{"instance", "certificate", "acl", "listener", "vservergroup", "masterslaveservergroup"}

// tagsOf is the tag list of v (of returns its region and tags) when v is
// a resource of region; notFound otherwise.
func tagsOf[T any](v *T, region string, of func(*T) (string, *[]api.Tag), notFound error) (*[]api.Tag, error) {
	if v != nil {
		if r, tags := of(v); r == region {
			return tags, nil
		}
	}
	return nil, notFound
}

// tagTarget returns the tag list of one resource.
func (s *Service) tagTarget(region, rtype, id string) (*[]api.Tag, error) {
	switch rtype {
	case "instance":
		return tagsOf(s.state.LoadBalancers[id], region, func(lb *LoadBalancer) (string, *[]api.Tag) { return lb.RegionID, &lb.Tags }, errLBNotFound(id))
	case "certificate":
		return tagsOf(s.state.Certificates[id], region, func(c *Certificate) (string, *[]api.Tag) { return c.RegionID, &c.Tags }, errCertNotFound("Certificate", id))
	case "acl":
		return tagsOf(s.state.ACLs[id], region, func(a *ACL) (string, *[]api.Tag) { return a.RegionID, &a.Tags }, errACLNotFound(id))
	case "vservergroup":
		return tagsOf(s.state.VServerGroups[id], region, func(g *VServerGroup) (string, *[]api.Tag) { return g.RegionID, &g.Tags }, errVServerGroupNotFound())
	case "listener":
		parts := strings.Split(id, "_")
		if len(parts) == 3 {
			if lb := s.state.LoadBalancers[parts[0]]; lb != nil && lb.RegionID == region {
				if port, err := strconv.Atoi(parts[2]); err == nil {
					if l := lb.Listeners[listenerKey(strings.ToLower(parts[1]), port)]; l != nil {
						return &l.Tags, nil
					}
				}
			}
		}
		return nil, errListenerNotFound()
	}
	return nil, api.NotFound("ResourceNotFound", "The specified resource %s of type %s does not exist.", id, rtype)
}

// allTagTargets lists every resource of a type in a region, in a stable order.
func (s *Service) allTagTargets(region, rtype string) []string {
	var ids []string
	switch rtype {
	case "instance":
		for _, id := range s.state.Order {
			if s.state.LoadBalancers[id].RegionID == region {
				ids = append(ids, id)
			}
		}
		return ids
	case "listener":
		for _, id := range s.state.Order {
			lb := s.state.LoadBalancers[id]
			if lb.RegionID != region {
				continue
			}
			for _, l := range lb.sortedListeners() {
				ids = append(ids, ListenerResourceID(lb.ID, l.Protocol, l.Port))
			}
		}
		return ids
	case "certificate":
		for _, id := range store.SortedKeys(s.state.Certificates) {
			if s.state.Certificates[id].RegionID == region {
				ids = append(ids, id)
			}
		}
	case "acl":
		for _, id := range store.SortedKeys(s.state.ACLs) {
			if s.state.ACLs[id].RegionID == region {
				ids = append(ids, id)
			}
		}
	case "vservergroup":
		for _, id := range store.SortedKeys(s.state.VServerGroups) {
			if s.state.VServerGroups[id].RegionID == region {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

func tagRequest(p api.Params) (string, []string, error) {
	if _, err := p.Required("ResourceType"); err != nil {
		return "", nil, err
	}
	rtype, err := p.Enum("ResourceType", "", tagResourceTypes...)
	if err != nil {
		return "", nil, err
	}
	ids := p.List("ResourceId")
	if len(ids) > maxTagResourceIDs {
		return "", nil, api.InvalidParameter("ResourceId", "At most %d ResourceId values are allowed.", maxTagResourceIDs)
	}
	return rtype, ids, nil
}

// tagChangeRequest is tagRequest for Tag/UntagResources, which need at
// least one ResourceId.
func tagChangeRequest(p api.Params) (string, []string, error) {
	rtype, ids, err := tagRequest(p)
	if err != nil {
		return "", nil, err
	}
	if len(ids) == 0 {
		return "", nil, api.MissingParameter("ResourceId.1")
	}
	return rtype, ids, nil
}

// legacyTagChange returns the load balancer an AddTags/RemoveTags request
// names and the tags it lists.
func (s *Service) legacyTagChange(req *api.Request) (*LoadBalancer, []api.Tag, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, nil, err
	}
	tags, err := legacyTags(req.Params, true)
	if err != nil {
		return nil, nil, err
	}
	return lb, tags, nil
}

func (s *Service) tagResources(req *api.Request) (map[string]any, error) {
	rtype, ids, err := tagChangeRequest(req.Params)
	if err != nil {
		return nil, err
	}
	tags := req.Params.Tags()
	if len(tags) == 0 {
		return nil, api.MissingParameter("Tag.1.Key")
	}
	if len(tags) > maxTagResourceIDs {
		return nil, api.InvalidParameter("Tag", "At most %d tags are allowed per call.", maxTagResourceIDs)
	}
	// Validate every resource before changing any, so a call is all or nothing.
	targets := make([]*[]api.Tag, 0, len(ids))
	merged := make([][]api.Tag, 0, len(ids))
	for _, id := range ids {
		t, err := s.tagTarget(req.RegionID, rtype, id)
		if err != nil {
			return nil, err
		}
		m, err := s.validateNewTags(tags, *t)
		if err != nil {
			return nil, err
		}
		targets, merged = append(targets, t), append(merged, m)
	}
	for i, t := range targets {
		*t = merged[i]
	}
	return map[string]any{}, nil
}

func (s *Service) untagResources(req *api.Request) (map[string]any, error) {
	rtype, ids, err := tagChangeRequest(req.Params)
	if err != nil {
		return nil, err
	}
	keyList, all, err := req.Params.UntagKeys()
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for _, k := range keyList {
		keys[k] = true
	}
	if !all && len(keys) == 0 {
		return nil, api.MissingParameter("TagKey.1")
	}
	if len(keys) > maxTagResourceIDs {
		return nil, api.InvalidParameter("TagKey", "At most %d TagKey values are allowed.", maxTagResourceIDs)
	}
	targets := make([]*[]api.Tag, 0, len(ids))
	for _, id := range ids {
		t, err := s.tagTarget(req.RegionID, rtype, id)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}
	for _, t := range targets {
		*t = api.RemoveTags(*t, req.Params.List("TagKey"), all)
	}
	return map[string]any{}, nil
}

type tagResource struct {
	ResourceID   string `json:"ResourceId"`
	ResourceType string `json:"ResourceType"`
	TagKey       string `json:"TagKey"`
	TagValue     string `json:"TagValue"`
}

func (s *Service) listTagResources(req *api.Request) (map[string]any, error) {
	rtype, ids, err := tagRequest(req.Params)
	if err != nil {
		return nil, err
	}
	want := req.Params.Tags()
	if len(want) > maxTagResourceIDs {
		return nil, api.InvalidParameter("Tag", "At most %d tags are allowed per call.", maxTagResourceIDs)
	}
	if len(ids) == 0 && len(want) == 0 {
		return nil, api.MissingParameter("ResourceId.1")
	}
	if len(ids) == 0 {
		ids = s.allTagTargets(req.RegionID, rtype)
	}
	var rows []tagResource
	for _, id := range ids {
		t, err := s.tagTarget(req.RegionID, rtype, id)
		if err != nil {
			if len(req.Params.List("ResourceId")) > 0 {
				return nil, err
			}
			continue
		}
		if !api.MatchTags(*t, want) {
			continue
		}
		for _, tag := range *t {
			rows = append(rows, tagResource{ResourceID: id, ResourceType: rtype, TagKey: tag.Key, TagValue: tag.Value})
		}
	}
	rows, keys := api.SortByKey(rows, func(r tagResource) string { return r.ResourceID + "\x00" + r.TagKey })
	_, start, end, next, err := req.Params.Cursor(keys, 50, 50, "MaxResults")
	if err != nil {
		return nil, err
	}
	page := append([]tagResource{}, rows[start:end]...)
	return map[string]any{"TagResources": map[string]any{"TagResource": page}, "NextToken": next}, nil
}

// The legacy load-balancer-only tag API takes Tags as JSON.

func legacyTags(p api.Params, required bool) ([]api.Tag, error) {
	var items []struct {
		TagKey   string `json:"TagKey"`
		TagValue string `json:"TagValue"`
	}
	ok, err := p.JSON("Tags", &items)
	if err != nil {
		return nil, err
	}
	if !ok && required {
		return nil, api.MissingParameter("Tags")
	}
	if len(items) > 10 {
		return nil, api.InvalidParameter("Tags", "At most 10 tags are allowed per call.")
	}
	out := make([]api.Tag, 0, len(items))
	for _, it := range items {
		out = append(out, api.Tag{Key: it.TagKey, Value: it.TagValue})
	}
	return out, nil
}

func (s *Service) addTags(req *api.Request) (map[string]any, error) {
	lb, tags, err := s.legacyTagChange(req)
	if err != nil {
		return nil, err
	}
	merged, err := s.validateNewTags(tags, lb.Tags)
	if err != nil {
		return nil, err
	}
	lb.Tags = merged
	return map[string]any{}, nil
}

func (s *Service) removeTags(req *api.Request) (map[string]any, error) {
	lb, tags, err := s.legacyTagChange(req)
	if err != nil {
		return nil, err
	}
	out := []api.Tag{}
	for _, t := range lb.Tags {
		drop := false
		for _, r := range tags {
			if r.Key == t.Key && (r.Value == "" || r.Value == t.Value) {
				drop = true
			}
		}
		if !drop {
			out = append(out, t)
		}
	}
	lb.Tags = out
	return map[string]any{}, nil
}

func (s *Service) describeTags(req *api.Request) (map[string]any, error) {
	p := req.Params
	want, err := legacyTags(p, false)
	if err != nil {
		return nil, err
	}
	distinct, err := p.Bool("DistinctKey", false)
	if err != nil {
		return nil, err
	}
	only := p.String("LoadBalancerId")
	if only != "" {
		if lb := s.state.LoadBalancers[only]; lb == nil || lb.RegionID != req.RegionID {
			return nil, errLBNotFound(only)
		}
	}
	type set struct {
		key, value string
		count      int
	}
	counts := map[string]*set{}
	var order []string
	for _, id := range s.state.Order {
		lb := s.state.LoadBalancers[id]
		if lb.RegionID != req.RegionID || (only != "" && id != only) {
			continue
		}
		for _, t := range lb.Tags {
			if len(want) > 0 && !tagMatchesAny(t, want) {
				continue
			}
			k := t.Key + "\x00" + t.Value
			if distinct {
				k = t.Key
			}
			if counts[k] == nil {
				counts[k] = &set{key: t.Key, value: t.Value}
				order = append(order, k)
			}
			counts[k].count++
		}
	}
	pageNumber, pageSize, start, end, err := p.Page(len(order), 50, 100)
	if err != nil {
		return nil, err
	}
	sets := make([]map[string]any, 0, end-start)
	for _, k := range order[start:end] {
		c := counts[k]
		v := c.value
		if distinct {
			v = ""
		}
		sets = append(sets, map[string]any{"TagKey": c.key, "TagValue": v, "InstanceCount": c.count})
	}
	return map[string]any{
		"TagSets":    map[string]any{"TagSet": sets},
		"PageNumber": pageNumber, "PageSize": pageSize, "TotalCount": len(order),
	}, nil
}

func tagMatchesAny(t api.Tag, want []api.Tag) bool {
	for _, w := range want {
		if w.Key == t.Key && (w.Value == "" || w.Value == t.Value) {
			return true
		}
	}
	return false
}
