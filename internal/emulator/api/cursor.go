package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// cursorPrefix marks the emulator's NextToken format, so that a token of
// another shape (an old offset, a token of another listing) is refused.
const cursorPrefix = "c1:"

// Cursor pages a listing with MaxResults/NextToken the way the cloud's
// token-paged actions behave: NextToken is an opaque cursor, the key of the
// last item returned, so the next page starts after that item wherever it
// now is. Items created or deleted between two pages never make the caller
// skip or repeat an item that existed throughout (an offset would: a
// delete before the offset skips one). keys are the listing's sort keys,
// strictly increasing in listing order (SortByKey builds them); defMax and
// maxMax are the action's default and largest page size, and maxKey names
// the page-size parameter ("" for MaxResults).
func (p Params) Cursor(keys []string, defMax, maxMax int, maxKey string) (maxResults, start, end int, next string, err error) {
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
		last, ok := decodeCursor(tok)
		if !ok {
			err = Errorf(http.StatusBadRequest, "InvalidParameter.NextToken", "The specified NextToken %s is not valid.", quote(tok))
			return
		}
		// The first item after the last one returned, present or not.
		start = sort.Search(len(keys), func(i int) bool { return keys[i] > last })
	}
	end = min(start+maxResults, len(keys))
	if end < len(keys) {
		next = encodeCursor(keys[end-1])
	}
	return
}

// CursorAfter is the NextToken that resumes a listing after the item with
// this key (for an action answering PageNumber pages with a NextToken too).
func CursorAfter(key string) string { return encodeCursor(key) }

func encodeCursor(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + key))
}

func decodeCursor(tok string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) {
		return "", false
	}
	return strings.TrimPrefix(string(b), cursorPrefix), true
}

// SeqKey renders a creation sequence number as a key that sorts as the
// number does, for Cursor.
func SeqKey(seq int64) string { return fmt.Sprintf("%019d", seq) }

// SortByKey orders items by key (stably) and returns them with their keys,
// ready for Cursor. Keys must be unique within the listing.
func SortByKey[T any](items []T, key func(T) string) ([]T, []string) {
	type kv struct {
		k string
		v T
	}
	pairs := make([]kv, len(items))
	for i, it := range items {
		pairs[i] = kv{key(it), it}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].k < pairs[j].k })
	outItems := make([]T, len(items))
	keys := make([]string, len(items))
	for i, p := range pairs {
		outItems[i], keys[i] = p.v, p.k
	}
	return outItems, keys
}
