package slb

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// ACL limits of a CLB account.
const (
	maxACLsPerRegion     = 200
	maxEntriesPerACL     = 300
	maxEntriesPerACLCall = 50
)

func errACLNotFound(id string) error {
	return api.NotFound("ResourceNotFound.Acl", "The specified AclId %s does not exist.", id)
}

// acl returns the ACL the request's required AclId names.
func (s *Service) acl(req *api.Request) (*ACL, error) {
	return api.Lookup(req, "AclId", s.regionACL)
}

// regionACL returns the ACL id of the request's region.
func (s *Service) regionACL(req *api.Request, id string) (*ACL, error) {
	return api.InRegion(req, s.state.ACLs, id, func(a *ACL) string { return a.RegionID }, errACLNotFound)
}

// aclUsers lists the listeners an ACL is attached to.
func (s *Service) aclUsers(a *ACL) []map[string]any {
	out := []map[string]any{}
	for _, id := range s.state.Order {
		lb := s.state.LoadBalancers[id]
		for _, l := range lb.sortedListeners() {
			if l.Config["AclId"] == a.ID {
				out = append(out, map[string]any{"LoadBalancerId": lb.ID, "ListenerPort": l.Port, "Protocol": l.Protocol, "AclType": l.Config["AclType"]})
			}
		}
	}
	return out
}

func (s *Service) createAccessControlList(req *api.Request) (map[string]any, error) {
	p := req.Params
	name, err := p.Required("AclName")
	if err != nil {
		return nil, err
	}
	if err := validName("AclName", name, 80); err != nil {
		return nil, err
	}
	ver, err := p.Enum("AddressIPVersion", "ipv4", "ipv4", "ipv6")
	if err != nil {
		return nil, err
	}
	tags, err := s.validateNewTags(p.Tags(), nil)
	if err != nil {
		return nil, err
	}
	if api.Count(s.state.ACLs, func(a *ACL) bool { return a.RegionID == req.RegionID }) >= maxACLsPerRegion {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.Acl", "The number of ACLs in region %s has reached the quota %d.", req.RegionID, maxACLsPerRegion)
	}
	rg := api.ResourceGroupOr(p.String("ResourceGroupId"))
	a := &ACL{ID: store.NewID("acl"), Name: name, RegionID: req.RegionID, AddressIPVersion: ver,
		ResourceGroupID: rg, CreatedAt: req.Now, Entries: []ACLEntry{}, Tags: tags}
	s.state.ACLs[a.ID] = a
	return map[string]any{"AclId": a.ID}, nil
}

func (s *Service) deleteAccessControlList(req *api.Request) (map[string]any, error) {
	a, err := s.acl(req)
	if err != nil {
		return nil, err
	}
	if len(s.aclUsers(a)) > 0 {
		return nil, errNotAllowed("The ACL %s is still associated with listeners.", a.ID)
	}
	return removed(s.state.ACLs, a.ID)
}

func (s *Service) setAccessControlListAttribute(req *api.Request) (map[string]any, error) {
	a, err := s.acl(req)
	if err != nil {
		return nil, err
	}
	name, err := req.Params.Required("AclName")
	if err != nil {
		return nil, err
	}
	if err := validName("AclName", name, 80); err != nil {
		return nil, err
	}
	a.Name = name
	return map[string]any{"AclId": a.ID}, nil
}

func (s *Service) describeAccessControlLists(req *api.Request) (map[string]any, error) {
	p := req.Params
	name, ver, rg := p.String("AclName"), p.String("AddressIPVersion"), p.String("ResourceGroupId")
	want := p.Tags()
	var match []*ACL
	for _, id := range store.SortedKeys(s.state.ACLs) {
		a := s.state.ACLs[id]
		if a.RegionID == req.RegionID && (name == "" || a.Name == name) && (ver == "" || a.AddressIPVersion == ver) &&
			(rg == "" || a.ResourceGroupID == rg) && api.MatchTags(a.Tags, want) {
			match = append(match, a)
		}
	}
	pageNumber, pageSize, start, end, err := p.Page(len(match), 50, 100)
	if err != nil {
		return nil, err
	}
	items := make([]map[string]any, 0, end-start)
	for _, a := range match[start:end] {
		items = append(items, map[string]any{
			"AclId": a.ID, "AclName": a.Name, "AddressIPVersion": a.AddressIPVersion,
			"ResourceGroupId": api.ResourceGroupOr(a.ResourceGroupID), "CreateTime": fmtResTime(a.CreatedAt),
			"Tags": tagList{Tag: tagKVs(a.Tags)},
		})
	}
	return map[string]any{
		"Acls": map[string]any{"Acl": items}, "TotalCount": len(match), "Count": len(items),
		"PageNumber": pageNumber, "PageSize": pageSize,
	}, nil
}

func (s *Service) describeAccessControlListAttribute(req *api.Request) (map[string]any, error) {
	a, err := s.acl(req)
	if err != nil {
		return nil, err
	}
	p := req.Params
	comment := p.String("AclEntryComment")
	var entries []ACLEntry
	for _, e := range a.Entries {
		if comment == "" || e.Comment == comment {
			entries = append(entries, e)
		}
	}
	page, err := p.Int("Page", 1)
	if err != nil {
		return nil, err
	}
	size, err := p.IntRange("PageSize", 50, 1, 300)
	if err != nil {
		return nil, err
	}
	if page < 1 {
		return nil, api.InvalidParameter("Page", "The parameter Page must be at least 1.")
	}
	start := min((page-1)*size, len(entries))
	end := min(start+size, len(entries))
	views := make([]map[string]any, 0, end-start)
	for _, e := range entries[start:end] {
		views = append(views, map[string]any{"AclEntryIP": e.Entry, "AclEntryComment": e.Comment})
	}
	return map[string]any{
		"AclId": a.ID, "AclName": a.Name, "AddressIPVersion": a.AddressIPVersion,
		"ResourceGroupId": api.ResourceGroupOr(a.ResourceGroupID), "CreateTime": fmtResTime(a.CreatedAt),
		"TotalAclEntry": len(entries), "Tags": tagList{Tag: tagKVs(a.Tags)},
		"AclEntrys":        map[string]any{"AclEntry": views},
		"RelatedListeners": map[string]any{"RelatedListener": s.aclUsers(a)},
	}, nil
}

// parseACLEntries decodes AclEntrys: [{"entry":"10.0.0.0/24","comment":"…"}],
// keys case-insensitive.
func parseACLEntries(p api.Params, ver string) ([]ACLEntry, error) {
	raw, err := p.Required("AclEntrys")
	if err != nil {
		return nil, err
	}
	var items []map[string]any
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		return nil, api.InvalidParameter("AclEntrys", "The parameter AclEntrys is not a valid JSON array: %v", err)
	}
	if len(items) == 0 {
		return nil, api.MissingParameter("AclEntrys")
	}
	if len(items) > maxEntriesPerACLCall {
		return nil, api.InvalidParameter("AclEntrys", "At most %d entries can be added or removed in one call.", maxEntriesPerACLCall)
	}
	out := make([]ACLEntry, 0, len(items))
	for _, it := range items {
		var e ACLEntry
		for k, v := range it {
			switch strings.ToLower(k) {
			case "entry":
				e.Entry = jsonString(v)
			case "comment":
				e.Comment = jsonString(v)
			}
		}
		cidr := e.Entry
		if !strings.Contains(cidr, "/") {
			if strings.Contains(cidr, ":") {
				cidr += "/128"
			} else {
				cidr += "/32"
			}
		}
		ip, _, err := net.ParseCIDR(cidr)
		if err != nil || (ver == "ipv4") != (ip.To4() != nil) {
			return nil, api.InvalidParameter("AclEntrys", "The ACL entry %q is not a valid %s CIDR block.", e.Entry, ver)
		}
		e.Entry = cidr
		out = append(out, e)
	}
	return out, nil
}

// aclEntryChange returns the ACL an Add/RemoveAccessControlListEntry request
// names and the entries it lists, parsed for the ACL's IP version.
func (s *Service) aclEntryChange(req *api.Request) (*ACL, []ACLEntry, error) {
	a, err := s.acl(req)
	if err != nil {
		return nil, nil, err
	}
	entries, err := parseACLEntries(req.Params, a.AddressIPVersion)
	if err != nil {
		return nil, nil, err
	}
	return a, entries, nil
}

func (s *Service) addAccessControlListEntry(req *api.Request) (map[string]any, error) {
	a, entries, err := s.aclEntryChange(req)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, e := range a.Entries {
		have[e.Entry] = true
	}
	for _, e := range entries {
		if have[e.Entry] {
			return nil, api.InvalidParameter("AclEntrys", "The ACL entry %s already exists in ACL %s.", e.Entry, a.ID)
		}
		have[e.Entry] = true
	}
	if len(a.Entries)+len(entries) > maxEntriesPerACL {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.AclEntry", "An ACL can hold at most %d entries.", maxEntriesPerACL)
	}
	a.Entries = append(a.Entries, entries...)
	return map[string]any{}, nil
}

func (s *Service) removeAccessControlListEntry(req *api.Request) (map[string]any, error) {
	a, entries, err := s.aclEntryChange(req)
	if err != nil {
		return nil, err
	}
	drop := map[string]bool{}
	for _, e := range entries {
		drop[e.Entry] = true
	}
	out := []ACLEntry{}
	for _, e := range a.Entries {
		if !drop[e.Entry] {
			out = append(out, e)
		}
	}
	if len(out) == 0 && len(a.Entries) > 0 && len(s.aclUsers(a)) > 0 {
		// Documented: a list a listener uses may not lose all its entries.
		return nil, errNotAllowed("The ACL %s is associated with listeners and cannot lose all its entries.", a.ID)
	}
	a.Entries = out
	return map[string]any{}, nil
}
