package nlb

import (
	"net/http"
	"slices"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/facts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Resource types of the NLB tag API.
const (
	ResourceLoadBalancer   = "loadbalancer"
	ResourceServerGroup    = "servergroup"
	ResourceListener       = "listener"
	ResourceSecurityPolicy = "securitypolicy"
)

// The longest tag key and value, in characters.
var (
	_, tagKeyMax   = facts.Range("nlb:TagKeyLength")
	_, tagValueMax = facts.Range("nlb:TagValueLength")
)

// maxTagResourceIDs is how many ResourceId.N one tag call takes.
const maxTagResourceIDs = 50

// validTags checks Tag.N of a call: keys present, unique, not reserved and
// within the documented lengths, and no more than the per-resource quota.
func (s *Service) validTags(tags []api.Tag) error {
	if q := s.st.Settings().Quota(store.QuotaTagsPerResource); len(tags) > q {
		return api.Errorf(http.StatusBadRequest, "QuotaExceeded.TagsNum", "The number of tags exceeds the quota of %d.", q)
	}
	seen := map[string]bool{}
	for _, t := range tags {
		switch {
		case t.Key == "":
			return api.MissingParameter("Tag.N.Key")
		case len([]rune(t.Key)) > tagKeyMax || strings.HasPrefix(t.Key, "aliyun") || strings.HasPrefix(t.Key, "acs:"):
			return api.Errorf(http.StatusBadRequest, "IllegalParam.TagKey", "The param TagKey [%s] is illegal.", t.Key)
		case len([]rune(t.Value)) > tagValueMax || strings.HasPrefix(t.Value, "aliyun") || strings.HasPrefix(t.Value, "acs:"):
			return api.Errorf(http.StatusBadRequest, "IllegalParam.TagValue", "The param TagValue [%s] is illegal.", t.Value)
		case seen[t.Key]:
			return api.Errorf(http.StatusBadRequest, "DuplicatedParam.TagKey", "The tag key %s is duplicated.", t.Key)
		}
		seen[t.Key] = true
	}
	return nil
}

// resourceType reads ResourceType, accepting any letter case.
func resourceType(p api.Params) (string, error) {
	if _, err := p.Required("ResourceType"); err != nil {
		return "", err
	}
	return canonical(p, "ResourceType", "", ResourceLoadBalancer, ResourceServerGroup, ResourceListener, ResourceSecurityPolicy)
}

// tagsOf returns the tag list of a taggable resource of the request's region.
func (s *Service) tagsOf(req *api.Request, typ, id string) (*[]api.Tag, error) {
	switch typ {
	case ResourceLoadBalancer:
		lb, err := s.lb(req, id)
		if err != nil {
			return nil, err
		}
		return &lb.Tags, nil
	case ResourceServerGroup:
		g, err := s.serverGroup(req, id)
		if err != nil {
			return nil, err
		}
		return &g.Tags, nil
	case ResourceListener:
		l, err := s.listener(req, id)
		if err != nil {
			return nil, err
		}
		return &l.Tags, nil
	}
	return nil, api.NotFound("ResourceNotFound.securityPolicy", "The specified resource %s is not found.", id)
}

func (s *Service) tagTargets(req *api.Request) (string, []string, error) {
	typ, err := resourceType(req.Params)
	if err != nil {
		return "", nil, err
	}
	ids := dedupe(req.Params.List("ResourceId"))
	if len(ids) == 0 {
		return "", nil, api.MissingParameter("ResourceId")
	}
	if len(ids) > maxTagResourceIDs {
		return "", nil, api.InvalidParameter("ResourceId", "The number of ResourceId exceeds the limit of %d.", maxTagResourceIDs)
	}
	return typ, ids, nil
}

func (s *Service) tagResources(req *api.Request) (map[string]any, error) {
	typ, ids, err := s.tagTargets(req)
	if err != nil {
		return nil, err
	}
	tags := req.Params.Tags()
	if len(tags) == 0 {
		return nil, api.MissingParameter("Tag")
	}
	if err := s.validTags(tags); err != nil {
		return nil, err
	}
	q := s.st.Settings().Quota(store.QuotaTagsPerResource)
	lists, err := s.tagListsToChange(req, typ, ids, func(id string, l []api.Tag) error {
		if n := len(api.MergeTags(l, tags)); n > q {
			return api.Errorf(http.StatusBadRequest, "QuotaExceeded.TagsNum", "Resource %s would have %d tags; the quota is %d.", id, n, q)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, l := range lists {
		*l = api.MergeTags(*l, tags)
	}
	return tagJob(s, req, typ, ids), nil
}

// tagListsToChange returns the tag lists of the ids a Tag/UntagResources
// request names, after check (when not nil) passed on each and the DryRun
// check passed, so that a failure changes no resource.
func (s *Service) tagListsToChange(req *api.Request, typ string, ids []string, check func(id string, tags []api.Tag) error) ([]*[]api.Tag, error) {
	lists := make([]*[]api.Tag, 0, len(ids))
	for _, id := range ids {
		l, err := s.tagsOf(req, typ, id)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(id, *l); err != nil {
				return nil, err
			}
		}
		lists = append(lists, l)
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	return lists, nil
}

// tagJob answers a tag change with the JobId its SDK models carry
// (TagResourcesResponse and UntagResourcesResponse of
// alibaba-cloud-sdk-go services/nlb); the change itself is applied at
// once, so the job locks nothing.
func tagJob(s *Service, req *api.Request, typ string, ids []string) map[string]any {
	return map[string]any{"JobId": s.startJob(req, strings.ToLower(typ), ids[0]).ID}
}

func (s *Service) untagResources(req *api.Request) (map[string]any, error) {
	typ, ids, err := s.tagTargets(req)
	if err != nil {
		return nil, err
	}
	keys, all, err := req.Params.UntagKeys()
	if err != nil {
		return nil, err
	}
	if !all && len(keys) == 0 {
		return nil, api.MissingParameter("TagKey")
	}
	lists, err := s.tagListsToChange(req, typ, ids, nil)
	if err != nil {
		return nil, err
	}
	for _, l := range lists {
		*l = api.RemoveTags(*l, keys, all)
	}
	return tagJob(s, req, typ, ids), nil
}

func (s *Service) listTagResources(req *api.Request) (map[string]any, error) {
	typ, err := resourceType(req.Params)
	if err != nil {
		return nil, err
	}
	ids := req.Params.List("ResourceId")
	filter := req.Params.Tags()
	if len(ids) == 0 && len(filter) == 0 {
		return nil, api.MissingParameter("ResourceId")
	}
	type owned struct {
		id   string
		tags []api.Tag
	}
	var res []owned
	switch typ {
	case ResourceLoadBalancer:
		for _, lb := range s.sortedLBs(req.Now) {
			if lb.RegionID == req.RegionID {
				res = append(res, owned{lb.ID, lb.Tags})
			}
		}
	case ResourceServerGroup:
		for _, g := range s.sortedServerGroups(req.Now) {
			if g.RegionID == req.RegionID {
				res = append(res, owned{g.ID, g.Tags})
			}
		}
	case ResourceListener:
		for _, l := range s.sortedListeners(req.Now) {
			if l.RegionID == req.RegionID {
				res = append(res, owned{l.ID, l.Tags})
			}
		}
	}
	var rows []map[string]any
	for _, r := range res {
		if (len(ids) > 0 && !slices.Contains(ids, r.id)) || !api.MatchTags(r.tags, filter) {
			continue
		}
		for _, t := range r.tags {
			rows = append(rows, map[string]any{
				"ResourceId": r.id, "ResourceType": typ, "TagKey": t.Key, "TagValue": t.Value,
				"RegionNo": req.RegionID, "AliUid": aliUID(req.AccountID), "Scope": "Custom", "Category": "Custom",
			})
		}
	}
	key := func(m map[string]any) string { return m["ResourceId"].(string) + "\x00" + m["TagKey"].(string) }
	return cursorList(req.Params, rows, key, "TagResources", func(m map[string]any) map[string]any { return m })
}
