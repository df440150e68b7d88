package clip

import (
	"strings"
	"testing"
)

func TestPrefixAndQuote(t *testing.T) {
	for _, c := range []struct {
		s      string
		n      int
		prefix string
		quote  string
	}{
		{"abc", 5, "abc", `"abc"`},
		{"abc", 3, "abc", `"abc"`},
		{"abcdef", 3, "abc", `"abc"…(6 bytes)`},
		{"aé", 2, "a", `"a"…(3 bytes)`}, // é is two bytes: never split
		{"ééé", 3, "é", `"é"…(6 bytes)`},
		{"abc", 0, "", `""…(3 bytes)`},
		{"\xff\xfe\xfd", 2, "\xff\xfe", `"\xff\xfe"…(3 bytes)`},
	} {
		if got := Prefix(c.s, c.n); got != c.prefix {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.prefix)
		}
		if got := Quote(c.s, c.n); got != c.quote {
			t.Errorf("Quote(%q, %d) = %s, want %s", c.s, c.n, got, c.quote)
		}
	}
	if got := Quote(strings.Repeat("x", 1<<20), 256); len(got) > 300 {
		t.Errorf("Quote of 1 MiB is %d bytes", len(got))
	}
}
