package annotations

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	corev1 "k8s.io/api/core/v1"
)

// Parse reads every annotation of svc once into typed settings.
//
// On invalid values it returns the settings it could build together with
// an *InvalidError listing every problem. In those settings an invalid
// annotation counts as absent: its field is nil, zero or the default, and a
// comma-separated one is not applied at all, never in part; every other
// field holds what it would hold if the invalid annotations were removed
// (a cross-field problem keeps the values involved, which are each valid).
// So when InvalidError.BackendsUsable reports true, everything the backend
// pass reads (Owner, Backend, Ports, LoadBalancer.ID and the methods built
// on them) is exactly what the Service asks for, and callers may compute
// and sync its backends; they must not apply load balancer or listener
// settings, which are incomplete. Callers may also use them to clean up.
func Parse(svc *corev1.Service, defaults Defaults) (*Settings, error) {
	if svc == nil {
		return nil, fmt.Errorf("parse annotations: nil Service")
	}
	owner := defaults.Owner
	if owner == OwnerNone {
		owner = Class(svc, defaults.LoadBalancerTypeAnnotation)
	}
	if owner == OwnerNone {
		owner = OwnerCLB
		for _, f := range svc.Finalizers {
			if f == naming.FinalizerNLB {
				owner = OwnerNLB
			}
		}
	}
	r := &reader{ann: svc.Annotations, owner: owner, keys: map[string]string{}, forwardAt: map[int32]element{}}
	s := &Settings{Owner: owner, Keys: r.keys, defaults: defaults}
	r.loadBalancer(s)
	r.listener(s)
	r.backend(s, defaults)
	r.ports(s, svc)
	r.kubeProxyHealth(s, svc)
	r.crossField(s)
	s.notApplied = r.notApplied()
	if len(r.problems) > 0 {
		return s, &InvalidError{Problems: r.problems}
	}
	return s, nil
}

// reader looks annotations up through the registry and collects problems
// instead of stopping at the first one.
type reader struct {
	ann      map[string]string
	owner    Owner
	keys     map[string]string
	problems []Problem
	// forwardAt is the forward-port element of each forwarding port, so the
	// cross-field check can point at the element it rejects.
	forwardAt map[int32]element
}

// notApplied describes each annotation present with a value the
// controllers do not apply (registry NotApplied), in registry order.
func (r *reader) notApplied() []string {
	var out []string
	for i := range Registry {
		a := &Registry[i]
		if a.NotApplied == "" || !a.Scope.has(r.owner) {
			continue
		}
		key, v, ok := lookup(r.ann, a)
		if v = strings.TrimSpace(v); !ok || v == "" || strings.EqualFold(v, a.Default) {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s is not applied: %s", key, quote(v), a.NotApplied))
	}
	return out
}

func (r *reader) entry(suffix string) *Annotation {
	a, ok := Find(suffix, r.owner)
	if !ok {
		// A parser asking for an annotation the registry lacks is a bug in
		// this package, caught by the tests, never by user input.
		panic(fmt.Sprintf("annotations: %q is not registered for %s", suffix, r.owner))
	}
	return a
}

// raw returns the trimmed value of a present annotation. Empty values count
// as absent unless the registry says emptiness is meaningful.
func (r *reader) raw(suffix string) (a *Annotation, key, val string, ok bool) {
	a = r.entry(suffix)
	key, val, ok = lookup(r.ann, a)
	if !ok {
		return a, "", "", false
	}
	val = strings.TrimSpace(val)
	if val == "" && !a.EmptyIsValue {
		return a, "", "", false
	}
	r.keys[suffix] = key
	return a, key, val, true
}

// fail records a problem outside one annotation's own syntax (cross-field
// checks, spec fields); backends says whether it leaves a setting the
// backend pass reads unknown.
func (r *reader) fail(key, value, accepted string, backends bool) {
	r.problems = append(r.problems, Problem{Key: key, Value: value, Accepted: accepted, AffectsBackends: backends})
}

func (r *reader) failA(a *Annotation, key, value string) { r.failWhy(a, key, value, "") }

// failWhy records an invalid value of a, with a reason when its accepted
// text alone would not tell which rule the value breaks.
func (r *reader) failWhy(a *Annotation, key, value, reason string) {
	r.problems = append(r.problems, Problem{Key: key, Value: value, Reason: reason, Accepted: a.Accepted(), AffectsBackends: a.Backends})
}

// failElem records one bad element of a comma-separated value, so the
// user is pointed at it instead of at the whole (possibly long) value.
func (r *reader) failElem(a *Annotation, key, value string, e element, reason string) {
	r.problems = append(r.problems, Problem{Key: key, Value: value, Index: e.n, Element: e.text, Reason: reason, Accepted: a.Accepted(), AffectsBackends: a.Backends})
}

// keyOf is the key to quote for a suffix: as written, else the current one.
func (r *reader) keyOf(suffix string) string {
	if k, ok := r.keys[suffix]; ok {
		return k
	}
	return r.entry(suffix).Key
}

func (r *reader) str(suffix string) *string {
	_, _, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	return &v
}

func (r *reader) present(suffix string) bool {
	_, _, _, ok := r.raw(suffix)
	return ok
}

func (r *reader) onOff(suffix string) *bool {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	switch strings.ToLower(v) {
	case "on":
		b := true
		return &b
	case "off":
		b := false
		return &b
	}
	r.failA(a, key, v)
	return nil
}

func (r *reader) trueFalse(suffix string) bool {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil || (!strings.EqualFold(v, "true") && !strings.EqualFold(v, "false")) {
		r.failA(a, key, v)
		return false
	}
	return b
}

func (r *reader) intv(suffix string) *int {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < a.Min || n > a.Max {
		r.failA(a, key, v)
		return nil
	}
	return &n
}

func (r *reader) enum(suffix string) *string {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	for _, allowed := range a.Values {
		if strings.EqualFold(v, allowed) {
			return &allowed
		}
	}
	r.failA(a, key, v)
	return nil
}

// idWithPrefix validates a cloud resource id such as vsw-xxx.
func (r *reader) idWithPrefix(suffix, prefix string) *string {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	if why := idProblem(v, prefix); why != "" {
		if strings.Contains(v, ",") {
			why = "one id is accepted, not a list"
		} else {
			why = "the id " + why
		}
		r.failWhy(a, key, v, why)
		return nil
	}
	return &v
}

// idProblem says what is wrong with a cloud resource id, as a predicate
// for the caller to name its subject ("" = valid).
func idProblem(v, prefix string) string {
	switch {
	case !strings.HasPrefix(v, prefix):
		return "does not start with " + prefix
	case len(v) == len(prefix):
		return "is empty after " + prefix
	case len(v) > 128:
		return "is longer than 128 characters"
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "has characters other than letters, digits, '-' and '_'"
		}
	}
	return ""
}

func validID(v, prefix string) bool { return idProblem(v, prefix) == "" }

// element is one item of a comma-separated value.
type element struct {
	// n is the 1-based position as written, empty items counted, so a
	// message points where the user looks.
	n int
	// text is the item, trimmed.
	text string
}

// elements splits a comma list, dropping empty items so a trailing comma
// is harmless.
func elements(v string) []element {
	var out []element
	for i, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, element{n: i + 1, text: item})
		}
	}
	return out
}

// repeats is the reason for an element that repeats what element n set.
func repeats(what string, n int) string {
	return fmt.Sprintf("repeats the %s of element %d", what, n)
}

// idList validates a comma list of ids that all carry prefix ("" = any
// token without blanks, ':' or '='); ok is false when absent or invalid.
func (r *reader) idList(suffix, prefix string) (ids []string, ok bool) {
	ids, _, ok = uniqueList(r, suffix, "id", func(e element) (string, string, string) {
		why := ""
		switch {
		case prefix != "":
			if why = idProblem(e.text, prefix); why != "" {
				why = "the id " + why
			}
		case strings.ContainsAny(e.text, " \t:="):
			why = "ids are separated by commas and contain no blanks, ':' or '='"
		}
		return e.text, e.text, why
	})
	return ids, ok
}

// listValue is a set comma-list annotation, kept whole so that its
// problems quote what the user wrote.
type listValue struct {
	a      *Annotation
	key, v string
}

// list returns the comma-list annotation suffix when it is set.
func (r *reader) list(suffix string) (listValue, bool) {
	a, key, v, ok := r.raw(suffix)
	return listValue{a: a, key: key, v: v}, ok
}

// emptyList reports a list that names no element as a problem of the
// whole value (reason says what was expected); true when it is empty.
func (r *reader) emptyList(l listValue, reason string) bool {
	if len(elements(l.v)) > 0 {
		return false
	}
	r.failWhy(l.a, l.key, l.v, reason)
	return true
}

// uniqueElements reads a list element by element: parse returns an
// element's key and value, or why it refuses the element; an accepted key
// given again is refused as a repeat of what ("" = parse checks repeats
// itself, before its other rules). ok is false when any element was
// refused, so that the caller applies the list whole or not at all.
func uniqueElements[T any](r *reader, l listValue, what string, parse func(e element) (k string, t T, why string)) (out []T, ok bool) {
	seen := map[string]int{}
	ok = r.allElements(l.a, l.key, l.v, func(e element) string {
		k, t, why := parse(e)
		if n := seen[k]; why == "" && n > 0 && what != "" {
			why = repeats(what, n)
		}
		if why != "" {
			return why
		}
		seen[k] = e.n
		out = append(out, t)
		return ""
	})
	return out, ok
}

// uniqueList reads the comma-list annotation suffix with uniqueElements:
// ok is false and out nil when the list is absent or refused; l is the
// list as written, for the caller's checks of the whole.
func uniqueList[T any](r *reader, suffix, what string, parse func(e element) (k string, t T, why string)) (out []T, l listValue, ok bool) {
	if l, ok = r.list(suffix); ok {
		out, ok = uniqueElements(r, l, what, parse)
	}
	if !ok {
		return nil, l, false
	}
	return out, l, true
}

// checked reads the single-value annotation suffix with parse, which takes
// or refuses the value whole: nil when it is absent or refused (then a
// problem naming the annotation).
func checked[T any](r *reader, suffix string, parse func(v string) (T, bool)) *T {
	a, key, v, ok := r.raw(suffix)
	if !ok {
		return nil
	}
	t, ok := parse(v)
	if !ok {
		r.failA(a, key, v)
		return nil
	}
	return &t
}

// strIf reads a string annotation that valid must accept (checked).
func (r *reader) strIf(suffix string, valid func(string) bool) *string {
	return checked(r, suffix, func(v string) (string, bool) { return v, valid(v) })
}

// allElements runs check on each element of an annotation's comma list
// and reports every element it refuses (check returns why) at that
// element; false when any was refused, so that the caller applies the
// annotation whole or not at all.
func (r *reader) allElements(a *Annotation, key, v string, check func(e element) (why string)) bool {
	valid := true
	for _, e := range elements(v) {
		if why := check(e); why != "" {
			r.failElem(a, key, v, e, why)
			valid = false
		}
	}
	return valid
}
