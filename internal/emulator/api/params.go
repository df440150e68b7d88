package api

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Params are the request parameters, query and form body merged. Lookups are
// exact first and then case-insensitive, because SDKs disagree on spellings
// (healthCheckInterval vs HealthCheckInterval).
type Params map[string]string

// Get returns the value of key and whether it was sent.
func (p Params) Get(key string) (string, bool) {
	if v, ok := p[key]; ok {
		return v, true
	}
	for k, v := range p {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

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

// Int returns key as an integer, def when absent, or InvalidParameter.
func (p Params) Int(key string, def int) (int, error) {
	v, ok := p.Get(key)
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, InvalidParameter(key, "The parameter %s must be an integer, got %q.", key, v)
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
	return false, InvalidParameter(key, "The parameter %s must be true or false, got %q.", key, v)
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
	return "", InvalidParameter(key, "The parameter %s must be one of %s, got %q.", key, strings.Join(allowed, ", "), v)
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
	for k, v := range p {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, prefix) {
			continue
		}
		n, err := strconv.Atoi(lk[len(prefix):])
		if err != nil {
			continue
		}
		items = append(items, kv{n, v})
	}
	sort.Slice(items, func(a, b int) bool { return items[a].i < items[b].i })
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
	for k, v := range p {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, prefix) {
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
	for k, v := range p {
		if strings.HasPrefix(strings.ToLower(k), prefix) {
			out[k[len(prefix):]] = v
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
	start = (pageNumber - 1) * pageSize
	if start > total {
		start = total
	}
	end = start + pageSize
	if end > total {
		end = total
	}
	return
}

// Token validates MaxResults/NextToken paging (the token is the decimal
// offset) and returns the slice bounds and the next token ("" at the end).
func (p Params) Token(total, defMax, maxMax int, maxKey string) (maxResults, start, end int, next string, err error) {
	if maxKey == "" {
		maxKey = "MaxResults"
	}
	maxResults, err = p.Int(maxKey, defMax)
	if err != nil {
		return
	}
	if maxResults < 1 || maxResults > maxMax {
		err = InvalidParameter(maxKey, "The parameter %s must be between 1 and %d.", maxKey, maxMax)
		return
	}
	if tok := p.String("NextToken"); tok != "" {
		n, convErr := strconv.Atoi(tok)
		if convErr != nil || n < 0 {
			err = Errorf(http.StatusBadRequest, "InvalidParameter.NextToken", "The specified NextToken %q is not valid.", tok)
			return
		}
		start = n
	}
	if start > total {
		start = total
	}
	end = start + maxResults
	if end > total {
		end = total
	}
	if end < total {
		next = strconv.Itoa(end)
	}
	return
}
