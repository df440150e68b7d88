package ecs

import (
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// tagPageSize is the fixed page size of ListTagResources.
const tagPageSize = 50

// taggable returns the tag list of a resource of the request's region.
func (s *Service) taggable(req *api.Request, typ, id string) (*[]api.Tag, bool) {
	switch typ {
	case "instance":
		if i, ok := s.state.Instances[id]; ok && i.RegionID == req.RegionID {
			return &i.Tags, true
		}
	case "securitygroup":
		if g, ok := s.state.SecurityGroups[id]; ok && g.RegionID == req.RegionID {
			return &g.Tags, true
		}
	case "eni":
		if e, ok := s.state.ENIs[id]; ok && e.RegionID == req.RegionID {
			return &e.Tags, true
		}
	}
	return nil, false
}

func resourceType(p api.Params) (string, error) {
	typ := strings.ToLower(p.String("ResourceType"))
	if typ == "" {
		return "", api.MissingParameter("ResourceType")
	}
	switch typ {
	case "instance", "securitygroup", "eni":
		return typ, nil
	}
	return "", api.Errorf(http.StatusBadRequest, "InvalidResourceType.NotFound", "The resource type %q is not supported (the emulator tags instance, securitygroup and eni).", p.String("ResourceType"))
}

// targets resolves ResourceId.N (1 to 50) to tag lists, all or nothing.
func (s *Service) targets(req *api.Request, typ string) ([]*[]api.Tag, error) {
	ids := req.Params.List("ResourceId")
	if len(ids) == 0 {
		return nil, api.MissingParameter("ResourceId.N")
	}
	if len(ids) > 50 {
		return nil, api.InvalidParameter("ResourceId", "At most 50 resources may be tagged in one call.")
	}
	var out []*[]api.Tag
	for _, id := range ids {
		t, ok := s.taggable(req, typ, id)
		if !ok {
			return nil, api.NotFound("InvalidResourceId.NotFound", "The specified resource %s of type %s does not exist.", id, typ)
		}
		out = append(out, t)
	}
	return out, nil
}

func (s *Service) tagResources(req *api.Request) (map[string]any, error) {
	typ, err := resourceType(req.Params)
	if err != nil {
		return nil, err
	}
	tags := req.Params.Tags()
	if len(tags) == 0 {
		return nil, api.MissingParameter("Tag.N.Key")
	}
	if len(tags) > 20 {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidTagCount", "At most 20 tags may be added in one call.")
	}
	if err := checkTagKeys(tags); err != nil {
		return nil, err
	}
	list, err := s.targets(req, typ)
	if err != nil {
		return nil, err
	}
	merged := make([][]api.Tag, len(list))
	for k, t := range list {
		if merged[k], err = s.mergeTags(*t, tags); err != nil {
			return nil, err
		}
	}
	for k, t := range list {
		*t = merged[k]
	}
	return map[string]any{}, nil
}

func (s *Service) untagResources(req *api.Request) (map[string]any, error) {
	typ, err := resourceType(req.Params)
	if err != nil {
		return nil, err
	}
	keys, all, err := req.Params.UntagKeys()
	if err != nil {
		return nil, err
	}
	if len(keys) > 20 {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidTagCount", "At most 20 tag keys may be removed in one call.")
	}
	list, err := s.targets(req, typ)
	if err != nil {
		return nil, err
	}
	for _, t := range list {
		*t = api.RemoveTags(*t, keys, all)
	}
	return map[string]any{}, nil
}

func (s *Service) listTagResources(req *api.Request) (map[string]any, error) {
	p := req.Params
	typ, err := resourceType(p)
	if err != nil {
		return nil, err
	}
	ids := p.List("ResourceId")
	if len(ids) > 50 {
		return nil, api.InvalidParameter("ResourceId", "At most 50 resource ids may be queried at once.")
	}
	filter := p.Tags()
	if len(filter) > 20 {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidTagCount", "At most 20 tags may be used as a filter.")
	}
	resIDs := s.resourceIDs(typ)
	var rows []map[string]any
	for _, id := range resIDs {
		if len(ids) > 0 && !slices.Contains(ids, id) {
			continue
		}
		tags, ok := s.taggable(req, typ, id)
		if !ok || !api.MatchTags(*tags, filter) {
			continue
		}
		for _, t := range *tags {
			rows = append(rows, map[string]any{"ResourceId": id, "ResourceType": typ, "TagKey": t.Key, "TagValue": t.Value})
		}
	}
	rows, keys := api.SortByKey(rows, func(m map[string]any) string { return m["ResourceId"].(string) + "\x00" + m["TagKey"].(string) })
	_, start, end, next, err := p.Cursor(keys, tagPageSize, tagPageSize, "MaxResults")
	if err != nil {
		return nil, err
	}
	page := []map[string]any{}
	if rows != nil {
		page = rows[start:end]
	}
	return map[string]any{"TagResources": map[string]any{"TagResource": page}, "NextToken": next}, nil
}

// describeTags is the older tag listing: the distinct key/value pairs on
// the resources of one type (optionally one ResourceId), each with a count
// of the resources carrying it, paged by PageNumber/PageSize.
func (s *Service) describeTags(req *api.Request) (map[string]any, error) {
	p := req.Params
	typ := "instance"
	if p.String("ResourceType") != "" {
		var err error
		if typ, err = resourceType(p); err != nil {
			return nil, err
		}
	}
	id, filter := p.String("ResourceId"), p.Tags()
	type pair struct{ key, value string }
	counts := map[pair]int{}
	var order []pair
	for _, tags := range s.tagListsOf(req, typ, id) {
		if !api.MatchTags(tags, filter) {
			continue
		}
		for _, t := range tags {
			k := pair{t.Key, t.Value}
			if counts[k] == 0 {
				order = append(order, k)
			}
			counts[k]++
		}
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].key != order[j].key {
			return order[i].key < order[j].key
		}
		return order[i].value < order[j].value
	})
	num, size, start, end, err := p.Page(len(order), 50, 100)
	if err != nil {
		return nil, err
	}
	countKey := map[string]string{"instance": "Instance", "securitygroup": "Securitygroup", "eni": "Eni"}[typ]
	rows := make([]map[string]any, 0, end-start)
	for _, k := range order[start:end] {
		rows = append(rows, map[string]any{"TagKey": k.key, "TagValue": k.value,
			"ResourceTypeCount": map[string]any{countKey: counts[k]}})
	}
	return map[string]any{"Tags": map[string]any{"Tag": rows}, "PageNumber": num, "PageSize": size, "TotalCount": len(order)}, nil
}

// tagListsOf returns the tag lists of the region's resources of typ, or of
// the one resource id when id is set (none when it does not exist).
func (s *Service) tagListsOf(req *api.Request, typ, id string) [][]api.Tag {
	if id != "" {
		if t, ok := s.taggable(req, typ, id); ok {
			return [][]api.Tag{*t}
		}
		return nil
	}
	var out [][]api.Tag
	for _, id := range s.resourceIDs(typ) {
		if t, ok := s.taggable(req, typ, id); ok {
			out = append(out, *t)
		}
	}
	return out
}

// resourceIDs returns the ids of every resource of a taggable type, in
// every region, sorted (callers filter by region through taggable).
func (s *Service) resourceIDs(typ string) []string {
	var ids []string
	switch typ {
	case "instance":
		for id := range s.state.Instances {
			ids = append(ids, id)
		}
	case "securitygroup":
		for id := range s.state.SecurityGroups {
			ids = append(ids, id)
		}
	case "eni":
		for id := range s.state.ENIs {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}
