package annotations

import (
	"fmt"
	"strings"
)

// Problem is one invalid annotation: the key as the user wrote it, the
// offending value, and what would be accepted.
type Problem struct {
	// Key is the annotation key (current or legacy prefix, as written), or
	// a spec field path such as spec.ports[0].protocol.
	Key string
	// Value is the rejected value.
	Value string
	// Accepted says what is accepted (values, range, format or requirement).
	Accepted string
}

// String renders the problem for events and logs.
func (p Problem) String() string {
	return fmt.Sprintf("%s: invalid value %q: accepted: %s", p.Key, p.Value, p.Accepted)
}

// InvalidError lists every invalid annotation of a Service, so a single
// event can tell the user everything to fix.
type InvalidError struct {
	// Problems are in registry order, then cross-field checks.
	Problems []Problem
}

// Error implements error.
func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	noun := "annotation"
	if len(parts) > 1 {
		noun = "annotations"
	}
	return fmt.Sprintf("invalid Service %s: %s", noun, strings.Join(parts, "; "))
}
