package annotations

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alicloud-ccm/alicloud-ccm/internal/clip"
)

// MaxValueChars bounds each user value or list element quoted in a
// message: annotation values can be up to 256 KiB, and an event that
// echoes one whole would hide everything else.
const MaxValueChars = 256

// MaxMessageBytes bounds InvalidError.Error, which is used verbatim as an
// event message: Kubernetes cuts event messages at 1024 bytes, and a cut
// of our own keeps whole problems and says how many were left out.
const MaxMessageBytes = 1024

// Problem is one invalid annotation: the key as the user wrote it, the
// offending value, and what would be accepted.
type Problem struct {
	// Key is the annotation key (current or legacy prefix, as written), or
	// a spec field path such as spec.ports[0].protocol.
	Key string
	// Value is the rejected value, whole (messages quote at most
	// MaxValueChars of it).
	Value string
	// Index is the 1-based position of the bad element in a comma-separated
	// Value, counting elements as written (empty ones included); 0 when the
	// problem is with the value as a whole.
	Index int
	// Element is the bad element, trimmed (when Index > 0).
	Element string
	// Reason says what exactly is wrong, when Accepted alone would leave
	// the user guessing ("" = see Accepted).
	Reason string
	// Accepted says what is accepted (values, range, format or requirement).
	Accepted string
	// AffectsBackends reports that the problem leaves a setting the backend
	// pass reads (backend type, selection, weights, ports and their server
	// groups, the reused load balancer) unknown, so the partial Settings
	// cannot drive backends either.
	AffectsBackends bool
}

// String renders the problem for events and logs, user text cut at
// MaxValueChars.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Key)
	if p.Index > 0 {
		fmt.Fprintf(&b, ": element %d %s is invalid", p.Index, quote(p.Element))
	} else {
		fmt.Fprintf(&b, ": invalid value %s", quote(p.Value))
	}
	switch {
	case p.Reason != "":
		fmt.Fprintf(&b, ": %s (accepted: %s)", p.Reason, p.Accepted)
	case p.Index > 0:
		fmt.Fprintf(&b, " (accepted: %s)", p.Accepted)
	default:
		fmt.Fprintf(&b, ": accepted: %s", p.Accepted)
	}
	return b.String()
}

// quote quotes user text, keeping at most MaxValueChars characters and
// saying how long the whole was when it cut.
func quote(v string) string {
	n := utf8.RuneCountInString(v)
	if n <= MaxValueChars {
		return strconv.Quote(v)
	}
	cut, i := 0, 0
	for cut = range v {
		if i == MaxValueChars {
			break
		}
		i++
	}
	return fmt.Sprintf("%s…(truncated, %d chars)", strconv.Quote(v[:cut]), n)
}

// InvalidError lists every invalid annotation of a Service, so a single
// event can tell the user everything to fix.
type InvalidError struct {
	// Problems are in parse order (load balancer, listener, backend and port
	// annotations, each list element by element), then cross-field checks.
	Problems []Problem
}

// Error implements error: the problems, each in full while they fit in
// MaxMessageBytes, then how many more there are (see Problems for all of
// them). Problems that also stop backend updates come first, since they
// explain why nothing at all is synced; the rest keep their order.
func (e *InvalidError) Error() string {
	noun := "annotation"
	if len(e.Problems) > 1 {
		noun = "annotations"
	}
	ordered := slices.Clone(e.Problems)
	slices.SortStableFunc(ordered, func(a, b Problem) int {
		switch {
		case a.AffectsBackends == b.AffectsBackends:
			return 0
		case a.AffectsBackends:
			return -1
		}
		return 1
	})
	var b strings.Builder
	b.WriteString("invalid Service " + noun + ": ")
	for i, p := range ordered {
		text := p.String()
		if i > 0 {
			text = "; " + text
		}
		// Keep room to say how many follow in case the next one does not fit.
		reserve := len(more(len(e.Problems) - i - 1))
		if b.Len()+len(text)+reserve <= MaxMessageBytes {
			b.WriteString(text)
			continue
		}
		if i == 0 {
			// Even the first problem is too long: show as much of it as fits.
			room := MaxMessageBytes - b.Len() - len(more(len(e.Problems)-1)) - len("…")
			b.WriteString(cutBytes(text, room) + "…")
			i++
		}
		b.WriteString(more(len(e.Problems) - i))
		break
	}
	return b.String()
}

// BackendsUsable reports whether every problem lies outside the settings
// the backend pass reads, so that the partial Settings Parse returned with
// e can compute and sync the Service's backends while its load balancer
// and listener settings stay frozen until the annotations are fixed.
func (e *InvalidError) BackendsUsable() bool {
	for _, p := range e.Problems {
		if p.AffectsBackends {
			return false
		}
	}
	return true
}

// more is the tail of a message that leaves n problems out.
func more(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; and 1 more problem"
	}
	return fmt.Sprintf("; and %d more problems", n)
}

// cutBytes returns the longest prefix of s of at most n bytes that does
// not split a character.
func cutBytes(s string, n int) string { return clip.Prefix(s, n) }
