package clb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// aclEntriesPerCall is the documented limit of entries one
// Add/RemoveAccessControlListEntry call takes.
const aclEntriesPerCall = 50

// ACLName is the name of the access control list that enforces a CLB
// Service's loadBalancerSourceRanges, after the NLB security group's
// k8s-nlb-<name>. The name proves nothing: the tags do.
func ACLName(defaultLBName string) string { return "k8s-clb-" + defaultLBName }

// ownedACL is one access control list carrying the Service's tags.
type ownedACL struct {
	ID, Version string
}

// ownACLs lists the access control lists tagged with every one of tags:
// the Service's default-name tag and the cluster tag prove they are ours.
func (a api) ownACLs(ctx context.Context, tags []naming.Tag) ([]ownedACL, error) {
	var out []ownedACL
	for page := 1; ; page++ {
		r := slb.CreateDescribeAccessControlListsRequest()
		ts := make([]slb.DescribeAccessControlListsTag, 0, len(tags))
		for _, t := range tags {
			ts = append(ts, slb.DescribeAccessControlListsTag{Key: t.Key, Value: t.Value})
		}
		r.Tag = &ts
		r.PageNumber, r.PageSize = requests.NewInteger(page), requests.NewInteger(50)
		resp, err := cloud.Call(ctx, a.c, r, slb.CreateDescribeAccessControlListsResponse)
		if err != nil {
			return nil, err
		}
		for _, acl := range resp.Acls.Acl {
			// Re-check the tags: a filter the cloud ignored must not make
			// someone else's list ours.
			have := map[string]string{}
			for _, t := range acl.Tags.Tag {
				have[t.TagKey] = t.TagValue
			}
			mine := true
			for _, t := range tags {
				if v, ok := have[t.Key]; !ok || v != t.Value {
					mine = false
				}
			}
			if mine {
				out = append(out, ownedACL{ID: acl.AclId, Version: acl.AddressIPVersion})
			}
		}
		if len(resp.Acls.Acl) == 0 || page*50 >= resp.TotalCount {
			return out, nil
		}
	}
}

// aclEntries reads every entry of an access control list, canonical.
func (a api) aclEntries(ctx context.Context, id string) (map[netip.Prefix]string, error) {
	out := map[netip.Prefix]string{}
	for page := 1; ; page++ {
		r := slb.CreateDescribeAccessControlListAttributeRequest()
		r.AclId, r.Page, r.PageSize = id, requests.NewInteger(page), requests.NewInteger(300)
		resp, err := cloud.Call(ctx, a.c, r, slb.CreateDescribeAccessControlListAttributeResponse)
		if err != nil {
			return nil, err
		}
		for _, e := range resp.AclEntrys.AclEntry {
			if p, ok := entryPrefix(e.AclEntryIP); ok {
				out[p] = e.AclEntryIP
			}
		}
		if len(resp.AclEntrys.AclEntry) == 0 || page*300 >= resp.TotalAclEntry {
			return out, nil
		}
	}
}

// entryPrefix reads an entry as the cloud reports it: a CIDR block, or a
// bare address meaning a single host.
func entryPrefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

func (a api) createACL(ctx context.Context, name, version, resourceGroup string, tags []naming.Tag) (string, error) {
	r := slb.CreateCreateAccessControlListRequest()
	r.AclName, r.AddressIPVersion, r.ResourceGroupId = name, version, resourceGroup
	ts := make([]slb.CreateAccessControlListTag, 0, len(tags))
	for _, t := range tags {
		ts = append(ts, slb.CreateAccessControlListTag{Key: t.Key, Value: t.Value})
	}
	r.Tag = &ts
	resp, err := cloud.Call(ctx, a.c, r, slb.CreateCreateAccessControlListResponse)
	if err != nil {
		return "", err
	}
	return resp.AclId, nil
}

// aclEntryCall adds or removes entries, aclEntriesPerCall at a time.
func (a api) aclEntryCall(ctx context.Context, id string, add bool, entries []string) error {
	for len(entries) > 0 {
		n := min(len(entries), aclEntriesPerCall)
		part := entries[:n]
		entries = entries[n:]
		items := make([]map[string]string, 0, len(part))
		for _, e := range part {
			items = append(items, map[string]string{"entry": e})
		}
		data, err := json.Marshal(items)
		if err != nil {
			return err
		}
		if add {
			r := slb.CreateAddAccessControlListEntryRequest()
			r.AclId, r.AclEntrys = id, string(data)
			_, err = cloud.Call(ctx, a.c, r, slb.CreateAddAccessControlListEntryResponse)
		} else {
			r := slb.CreateRemoveAccessControlListEntryRequest()
			r.AclId, r.AclEntrys = id, string(data)
			_, err = cloud.Call(ctx, a.c, r, slb.CreateRemoveAccessControlListEntryResponse)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a api) deleteACL(ctx context.Context, id string) error {
	r := slb.CreateDeleteAccessControlListRequest()
	r.AclId = id
	_, err := cloud.Call(ctx, a.c, r, slb.CreateDeleteAccessControlListResponse)
	return err
}

// aclVersion is the ACL address family a CLB's listeners take.
func aclVersion(lb *slb.LoadBalancer) string {
	if strings.EqualFold(lb.AddressIPVersion, "ipv6") {
		return "ipv6"
	}
	return "ipv4"
}

// syncSourceRanges makes the Service's access control list match
// loadBalancerSourceRanges and sets the listener settings that attach it
// (white list on every listener of the model) or detach it; it must run
// before the listener plan. The returned step runs after the listeners
// were applied: it deletes lists of ours no listener should use any more.
//
// Precedence: the acl-status/acl-id/acl-type annotations name a list the
// user manages; when they are set the ranges are not applied (Warning) and
// a list of ours is detached and deleted. Lists are ours only by their
// tags (the Service's default-name tag and the cluster tag); nothing else
// is ever read for entries, changed or deleted.
func (p *Provider) syncSourceRanges(ctx context.Context, req *service.Request, sr service.SourceRanges, lb *slb.LoadBalancer, m *Model, current []CurrentListener) (func(context.Context) error, []service.Warning, error) {
	noop := func(context.Context) error { return nil }
	if sr.Frozen() {
		return noop, []service.Warning{sr.Warning()}, nil
	}
	var warnings []service.Warning
	l := req.Settings.Listener
	want := len(sr.Prefixes) > 0
	if want && (l.ACLStatus != nil || l.ACLID != nil) {
		warnings = append(warnings, service.Warning{Reason: service.EventSourceRangesIgnored, Message: fmt.Sprintf(
			"loadBalancerSourceRanges are not applied: %s/%s name an access control list you manage, and they win",
			req.Settings.Key("acl-status"), req.Settings.Key("acl-id"))})
		want = false
	}
	version := aclVersion(lb)
	var entries []string
	var other []string
	for _, pr := range sr.Prefixes {
		if pr.Addr().Is4() == (version == "ipv4") {
			entries = append(entries, pr.String())
		} else {
			other = append(other, pr.String())
		}
	}
	if want && len(other) > 0 {
		warnings = append(warnings, service.Warning{Reason: service.EventSourceRangesIgnored, Message: fmt.Sprintf(
			"loadBalancerSourceRanges %s are not %s and cannot apply to this %s load balancer", strings.Join(other, ", "), version, version)})
		if len(entries) == 0 {
			// A white list of nothing would shut every client out, and no
			// list leaves it open: leave the cloud as it is.
			return noop, warnings, nil
		}
	}
	attached := false
	for _, c := range current {
		if c.Params["AclId"] != "" {
			attached = true
		}
	}
	if !want && !attached && !p.owedACLs.Has(req.Service.UID) {
		// Nothing to apply, no listener uses any list and no delete of
		// ours is owed: no read at all, so Services without ranges cost
		// nothing.
		return noop, warnings, nil
	}
	tags := req.Identity.Tags
	owned, err := p.api.ownACLs(ctx, tags)
	if err != nil {
		return nil, warnings, fmt.Errorf("find the access control list of loadBalancerSourceRanges: %w", err)
	}
	ours := map[string]bool{}
	for _, a := range owned {
		ours[a.ID] = true
	}
	inUse := map[string]bool{}
	for _, c := range current {
		if id := c.Params["AclId"]; ours[id] {
			inUse[id] = true
		}
	}
	if !want {
		detachOurs(m, current, ours)
		ids := make([]string, 0, len(owned))
		for _, a := range owned {
			ids = append(ids, a.ID)
		}
		return p.deleteACLsLater(req, ids), warnings, nil
	}

	extra, err := p.applyACL(ctx, req, lb, m, owned, inUse, entries, version)
	if err != nil {
		return nil, warnings, err
	}
	return p.deleteACLsLater(req, extra), warnings, nil
}

// planEntries returns the entries to add (canonical text) and to remove
// (as the cloud spells them), each sorted.
func planEntries(want []string, have map[netip.Prefix]string) (add, remove []string) {
	wanted := map[netip.Prefix]bool{}
	for _, w := range want {
		p, _ := entryPrefix(w)
		wanted[p] = true
		if _, ok := have[p]; !ok {
			add = append(add, w)
		}
	}
	for p, raw := range have {
		if !wanted[p] {
			remove = append(remove, raw)
		}
	}
	sort.Strings(add)
	sort.Strings(remove)
	return add, remove
}

// deleteSourceRangeACLs deletes the Service's access control lists after
// its listeners are gone (Service deleted). A list still used by a
// listener we do not manage is an error, so the finalizer stays until it
// is released.
func (p *Provider) deleteSourceRangeACLs(ctx context.Context, req *service.Request) (int, error) {
	owned, err := p.api.ownACLs(ctx, req.Identity.Tags)
	if err != nil {
		return 0, fmt.Errorf("find the access control list of loadBalancerSourceRanges: %w", err)
	}
	for _, a := range owned {
		if err := p.api.deleteACL(ctx, a.ID); err != nil && !cloud.IsNotFound(err) {
			return 0, fmt.Errorf("delete access control list %s: %w", a.ID, err)
		}
	}
	return len(owned), nil
}

// cleanSourceRanges deletes the Service's access control lists on Service
// deletion, once its listeners are gone. It reads for every Service, with
// ranges or not: a list whose ranges were removed goes in the sync after
// the removal, and a Service deleted before that sync completed (the
// list's delete failed, or the leader died between detaching and
// deleting it) would otherwise leave it for good. One read per deletion.
func (p *Provider) cleanSourceRanges(ctx context.Context, req *service.Request, done *[]string) error {
	n, err := p.deleteSourceRangeACLs(ctx, req)
	if err != nil {
		return err
	}
	p.owedACLs.Clear(req.Service.UID)
	if n > 0 {
		*done = append(*done, fmt.Sprintf("deleted %d access control list(s) of loadBalancerSourceRanges", n))
	}
	return nil
}

// deleteACLsLater is the step that deletes the lists of ours ids once the
// listeners no longer use them; a retryable failure is remembered
// (owedACLs) and fails the sync, so that the next one looks again.
func (p *Provider) deleteACLsLater(req *service.Request, ids []string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, id := range ids {
			if err := p.api.deleteACL(ctx, id); err != nil {
				if cloud.IsNotFound(err) {
					continue
				}
				if cloud.ClassOf(err).Retryable() {
					// Detached already, so the next sync would not
					// see it: remember to look, and fail the sync so
					// that it comes.
					p.owedACLs.Mark(req.Service.UID)
					return fmt.Errorf("delete access control list %s: %w", id, err)
				}
				// Still used by a listener we do not manage: keep it
				// rather than fail the Service; the next full sync
				// tries again.
				klog.FromContext(ctx).Info("Keeping an access control list of ours still in use", "acl", id, "err", err)
				continue
			}
			klog.FromContext(ctx).Info("Deleted the access control list of loadBalancerSourceRanges", "acl", id)
		}
		p.owedACLs.Clear(req.Service.UID)
		return nil
	}
}

// detachOurs turns our white list off on the model's listeners that use
// it, unless the user's annotations set the listener's ACL.
func detachOurs(m *Model, current []CurrentListener, ours map[string]bool) {
	for i := range m.Listeners {
		ml := &m.Listeners[i]
		if _, set := ml.Set["AclStatus"]; set {
			continue // the user's annotations replace our list
		}
		for _, c := range current {
			if c.Port == ml.Port && c.Protocol == ml.Protocol && ours[c.Params["AclId"]] && c.Params["AclStatus"] == "on" {
				ml.Set["AclStatus"] = "off"
			}
		}
	}
}

// applyACL makes the Service's list (kept, or created) hold entries and
// attaches it to every listener of the model; it returns the duplicate
// lists of ours a lost create response may have left.
func (p *Provider) applyACL(ctx context.Context, req *service.Request, lb *slb.LoadBalancer, m *Model, owned []ownedACL, inUse map[string]bool, entries []string, version string) ([]string, error) {
	log := klog.FromContext(ctx)
	var err error
	// Keep the list a listener already uses (or the first), drop the
	// duplicates a lost create response may have left.
	sort.SliceStable(owned, func(i, j int) bool { return inUse[owned[i].ID] && !inUse[owned[j].ID] })
	var keep string
	var extra []string
	for _, a := range owned {
		if keep == "" && a.Version == version {
			keep = a.ID
			continue
		}
		extra = append(extra, a.ID)
	}
	have := map[netip.Prefix]string{}
	if keep == "" {
		// No ClientToken on CreateAccessControlList: a lost response is
		// caught by the lookup by tag at the next sync instead.
		id, err := p.api.createACL(ctx, ACLName(req.Identity.Name), version, lb.ResourceGroupId, req.Identity.Tags)
		if err != nil {
			return nil, fmt.Errorf("create the access control list of loadBalancerSourceRanges: %w", err)
		}
		keep = id
		log.Info("Created the access control list of loadBalancerSourceRanges", "acl", id)
	} else if have, err = p.api.aclEntries(ctx, keep); err != nil {
		return nil, fmt.Errorf("read access control list %s: %w", keep, err)
	}
	add, remove := planEntries(entries, have)
	// Add before remove: a list a listener uses may not become empty.
	if err := p.api.aclEntryCall(ctx, keep, true, add); err != nil {
		return nil, fmt.Errorf("add %d entries to access control list %s: %w", len(add), keep, err)
	}
	if err := p.api.aclEntryCall(ctx, keep, false, remove); err != nil {
		return nil, fmt.Errorf("remove %d entries from access control list %s: %w", len(remove), keep, err)
	}
	for i := range m.Listeners {
		ml := &m.Listeners[i]
		ml.Set["AclStatus"], ml.Set["AclId"], ml.Set["AclType"] = "on", keep, "white"
	}
	return extra, nil
}
