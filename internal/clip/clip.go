// Package clip bounds user-supplied text quoted in errors and events: a
// value can be megabytes long, and what echoes it must stay readable.
package clip

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Prefix returns the longest prefix of s of at most n bytes that does not
// split a character.
func Prefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Quote quotes s whole when it has at most n bytes; otherwise it quotes its
// Prefix and says how long the whole was.
func Quote(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s…(%d bytes)", strconv.Quote(Prefix(s, n)), len(s))
}
