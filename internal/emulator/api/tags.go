package api

import (
	"maps"
	"slices"
)

// Tag semantics every product shares. What differs between products (which
// keys are legal, the error codes, the quota code, the response field names)
// stays in the product; these helpers take the field names as arguments.

// MatchTags reports whether have carries every filter tag; a filter tag with
// an empty value matches any value of its key, as in all Tag.N filters.
func MatchTags(have, filter []Tag) bool {
	for _, f := range filter {
		if !slices.ContainsFunc(have, func(h Tag) bool { return h.Key == f.Key && (f.Value == "" || h.Value == f.Value) }) {
			return false
		}
	}
	return true
}

// MergeTags returns have with add applied: an existing key takes the new
// value in place, a new key is appended. The result is never nil and never
// shares memory with have, so callers can validate it before assigning.
func MergeTags(have, add []Tag) []Tag {
	out := append(make([]Tag, 0, len(have)+len(add)), have...)
	for _, a := range add {
		replaced := false
		for i := range out {
			if out[i].Key == a.Key {
				out[i].Value, replaced = a.Value, true
			}
		}
		if !replaced {
			out = append(out, a)
		}
	}
	return out
}

// TagsFromMap turns a seed's tag map into a tag list sorted by key, so that
// seeding the same file twice gives the same listings.
func TagsFromMap(m map[string]string) []Tag {
	var out []Tag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, Tag{Key: k, Value: m[k]})
	}
	return out
}

// TagMaps renders tags as response objects; the field names differ by
// product and even by action ({Key, Value} or {TagKey, TagValue}). The
// result is never nil, so an untagged resource shows [] rather than null.
func TagMaps(tags []Tag, keyField, valueField string) []map[string]any {
	out := make([]map[string]any, 0, len(tags))
	for _, t := range tags {
		out = append(out, map[string]any{keyField: t.Key, valueField: t.Value})
	}
	return out
}

// RemoveTags returns tags without the given keys, or without any tag when
// all is set (UntagResources' All). The result is never nil and never shares
// memory with tags.
func RemoveTags(tags []Tag, keys []string, all bool) []Tag {
	out := []Tag{}
	if all {
		return out
	}
	for _, t := range tags {
		if !slices.Contains(keys, t.Key) {
			out = append(out, t)
		}
	}
	return out
}

// UntagKeys reads UntagResources' All flag and its TagKey.N list, the
// parameters RemoveTags takes.
func (p Params) UntagKeys() (keys []string, all bool, err error) {
	all, err = p.Bool("All", false)
	if err != nil {
		return nil, false, err
	}
	return p.List("TagKey"), all, nil
}
