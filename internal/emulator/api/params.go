package api

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/clip"
)

// Params are the request parameters, query and form body merged. Lookups are
// exact first and then case-insensitive, because SDKs disagree on spellings
// (healthCheckInterval vs HealthCheckInterval).
type Params map[string]string

// Get returns the value of key and whether it was sent. Among spellings
// that differ only in case, the first in byte order wins, so a request
// always decodes the same way.
func (p Params) Get(key string) (string, bool) {
	if v, ok := p[key]; ok {
		return v, true
	}
	for _, k := range p.sortedKeys() {
		if strings.EqualFold(k, key) {
			return p[k], true
		}
	}
	return "", false
}

// sortedKeys returns the parameter names in byte order: decoding walks
// them in this order rather than in the map's random one.
func (p Params) sortedKeys() []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// hasPrefixFold reports whether k starts with prefix, ignoring case, in
// k's own bytes: lower-casing k first can change its length (invalid
// UTF-8, the Kelvin sign), and slicing k at len(prefix) after that panics
// or cuts the wrong place.
func hasPrefixFold(k, prefix string) bool {
	return len(k) >= len(prefix) && strings.EqualFold(k[:len(prefix)], prefix)
}

// maxQuoted bounds each value quoted in an error message: a request can
// carry megabytes, and the answer must not echo them.
const maxQuoted = 256

// quote quotes v, keeping at most maxQuoted bytes of it.
func quote(v string) string { return clip.Quote(v, maxQuoted) }

// String returns the value of key, or "" when absent.
func (p Params) String(key string) string {
	v, _ := p.Get(key)
	return v
}

// Has reports whether key was sent (even with an empty value).
func (p Params) Has(key string) bool {
	_, ok := p.Get(key)
	return ok
}

// Required returns the value of key or a MissingParameter error when it is
// absent or empty.
func (p Params) Required(key string) (string, error) {
	v, ok := p.Get(key)
	if !ok || v == "" {
		return "", MissingParameter(key)
	}
	return v, nil
}

// RequiredAll returns the values of keys, in order, or the
// MissingParameter error of the first one absent or empty, as reading them
// one by one with Required would.
func (p Params) RequiredAll(keys ...string) ([]string, error) {
	out := make([]string, len(keys))
	for i, k := range keys {
		v, err := p.Required(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Lookup finds the resource that the required parameter key names with
// find, which answers the product's not-found error: a handler gets its
// resource, or the error to answer, in one call.
func Lookup[T any](req *Request, key string, find func(req *Request, id string) (T, error)) (T, error) {
	id, err := req.Params.Required(key)
	if err != nil {
		var none T
		return none, err
	}
	return find(req, id)
}

// InRegion returns the resource id of m when it is in the request's
// region; otherwise notFound(id), as if it did not exist: a resource of
// another region is invisible to a call.
func InRegion[T any](req *Request, m map[string]*T, id string, region func(*T) string, notFound func(id string) error) (*T, error) {
	v, ok := m[id]
	if !ok || v == nil || region(v) != req.RegionID {
		return nil, notFound(id)
	}
	return v, nil
}

// Int returns key as an integer, def when absent, or InvalidParameter.
func (p Params) Int(key string, def int) (int, error) {
	v, ok := p.Get(key)
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, InvalidParameter(key, "The parameter %s must be an integer, got %s.", key, quote(v))
	}
	return n, nil
}

// IntRange is Int with bounds checking.
func (p Params) IntRange(key string, def, min, max int) (int, error) {
	n, err := p.Int(key, def)
	if err != nil {
		return 0, err
	}
	if p.Has(key) && p.String(key) != "" && (n < min || n > max) {
		return 0, InvalidParameter(key, "The parameter %s must be between %d and %d, got %d.", key, min, max, n)
	}
	return n, nil
}

// Bool returns key as a boolean (true/false), def when absent, or InvalidParameter.
func (p Params) Bool(key string, def bool) (bool, error) {
	v, ok := p.Get(key)
	if !ok || v == "" {
		return def, nil
	}
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, InvalidParameter(key, "The parameter %s must be true or false, got %s.", key, quote(v))
}

// Enum returns key when it is one of allowed (case-sensitive), def when
// absent, or InvalidParameter naming the accepted values.
func (p Params) Enum(key, def string, allowed ...string) (string, error) {
	v, ok := p.Get(key)
	if !ok || v == "" {
		return def, nil
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", InvalidParameter(key, "The parameter %s must be one of %s, got %s.", key, strings.Join(allowed, ", "), quote(v))
}

// List returns the values of a repeated parameter Name.1, Name.2, ... in
// index order.
func (p Params) List(name string) []string {
	type kv struct {
		i int
		v string
	}
	var items []kv
	prefix := strings.ToLower(name) + "."
	// Keys are walked in byte order and the sort is stable, so two
	// spellings of one index (Name.1, name.01) keep a fixed order.
	for _, k := range p.sortedKeys() {
		if !hasPrefixFold(k, prefix) {
			continue
		}
		n, err := strconv.Atoi(k[len(prefix):])
		if err != nil {
			continue
		}
		items = append(items, kv{n, p[k]})
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].i < items[b].i })
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.v)
	}
	return out
}

// Objects returns the members of a repeated object parameter
// Name.N.Field[.Sub...] as one Params per index, keyed by the rest of the
// name after "Name.N.", in index order.
func (p Params) Objects(name string) []Params {
	byIndex := map[int]Params{}
	prefix := strings.ToLower(name) + "."
	// In byte order: of two spellings of one member (Tag.1.Key,
	// tag.01.Key) the last in that order wins, every time.
	for _, k := range p.sortedKeys() {
		v := p[k]
		if !hasPrefixFold(k, prefix) {
			continue
		}
		rest := k[len(prefix):]
		dot := strings.IndexByte(rest, '.')
		if dot < 0 {
			continue
		}
		n, err := strconv.Atoi(rest[:dot])
		if err != nil {
			continue
		}
		if byIndex[n] == nil {
			byIndex[n] = Params{}
		}
		byIndex[n][rest[dot+1:]] = v
	}
	idx := make([]int, 0, len(byIndex))
	for i := range byIndex {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]Params, 0, len(idx))
	for _, i := range idx {
		out = append(out, byIndex[i])
	}
	return out
}

// Object returns the members of a dotted object parameter Name.Field as
// Params keyed by Field.
func (p Params) Object(name string) Params {
	out := Params{}
	prefix := strings.ToLower(name) + "."
	for _, k := range p.sortedKeys() {
		if hasPrefixFold(k, prefix) {
			out[k[len(prefix):]] = p[k]
		}
	}
	return out
}

// JSON decodes a JSON-string parameter into v; absent leaves v untouched and
// returns false.
func (p Params) JSON(key string, v any) (bool, error) {
	s, ok := p.Get(key)
	if !ok || s == "" {
		return false, nil
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return true, InvalidParameter(key, "The parameter %s is not valid JSON: %v", key, err)
	}
	return true, nil
}

// Tags returns the Tag.N.Key / Tag.N.Value pairs in order.
func (p Params) Tags() []Tag {
	var out []Tag
	for _, o := range p.Objects("Tag") {
		out = append(out, Tag{Key: o.String("Key"), Value: o.String("Value")})
	}
	return out
}

// Tag is one resource tag.
type Tag struct {
	// Key is the tag key (Tag.N.Key).
	Key string `json:"Key"`
	// Value is the tag value (Tag.N.Value), possibly empty.
	Value string `json:"Value"`
}

// Page validates PageNumber/PageSize paging and returns the slice bounds of
// a list of total items.
func (p Params) Page(total, defSize, maxSize int) (pageNumber, pageSize, start, end int, err error) {
	pageNumber, err = p.Int("PageNumber", 1)
	if err != nil {
		return
	}
	pageSize, err = p.Int("PageSize", defSize)
	if err != nil {
		return
	}
	if pageNumber < 1 {
		err = InvalidParameter("PageNumber", "The parameter PageNumber must be at least 1.")
		return
	}
	if pageSize < 1 || pageSize > maxSize {
		err = InvalidParameter("PageSize", "The parameter PageSize must be between 1 and %d.", maxSize)
		return
	}
	// A huge PageNumber must not overflow into a negative start.
	if pageNumber-1 > total/pageSize {
		start = total
	} else {
		start = (pageNumber - 1) * pageSize
	}
	if start > total {
		start = total
	}
	end = start + pageSize
	if end > total {
		end = total
	}
	return
}

// PageViews pages list by the request's PageNumber/PageSize (as Page does)
// and renders the items of the requested page; the result is never nil, so
// an empty page serialises as [] rather than null.
func PageViews[T any](p Params, list []T, defSize, maxSize int, view func(T) map[string]any) (items []map[string]any, pageNumber, pageSize int, err error) {
	pageNumber, pageSize, start, end, err := p.Page(len(list), defSize, maxSize)
	if err != nil {
		return nil, 0, 0, err
	}
	items = []map[string]any{}
	for _, v := range list[start:end] {
		items = append(items, view(v))
	}
	return items, pageNumber, pageSize, nil
}

// WithoutKeys deletes keys from view and returns it, for an answer whose
// SDK model lacks fields the shared view has.
func WithoutKeys(view map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		delete(view, k)
	}
	return view
}

// Count is the number of values of m that match: how many of a kind a
// quota check counts.
func Count[T any](m map[string]T, match func(T) bool) int {
	n := 0
	for _, v := range m {
		if match(v) {
			n++
		}
	}
	return n
}
