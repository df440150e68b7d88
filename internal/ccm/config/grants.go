package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// AllNamespaces in a certificate grant grants every namespace.
const AllNamespaces = "*"

// certificateIDPattern is what a certificate id may look like: CLB server
// and CA certificate ids (digits and underscores) and SSL Certificates
// Service ids (digits, "-" and the region) both fit; anything else is a
// typo, reported rather than granted.
var certificateIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// parseCertificateGrants validates Global.certificateGrants: each key a
// certificate id, each value a comma-separated string or a list of
// namespace names (or "*"), none empty. An error names the field and the
// entry.
func parseCertificateGrants(raw map[string]json.RawMessage) (map[string][]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	const field = "Global.certificateGrants"
	ids := make([]string, 0, len(raw))
	for id := range raw {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make(map[string][]string, len(raw))
	for _, key := range ids {
		id := strings.TrimSpace(key)
		if !certificateIDPattern.MatchString(id) {
			return nil, &FieldError{Field: field, Reason: fmt.Sprintf("key %s is not a certificate id (letters, digits, '.', '_' and '-', at most 128)", quoteValue(key))}
		}
		if _, dup := out[id]; dup {
			return nil, &FieldError{Field: field, Reason: fmt.Sprintf("certificate %s is listed twice", id)}
		}
		entry := fmt.Sprintf("%s[%s]", field, id)
		items, err := namespaceItems(raw[key])
		if err != nil {
			return nil, &FieldError{Field: entry, Reason: err.Error()}
		}
		var nss []string
		for _, item := range items {
			ns := strings.TrimSpace(item)
			switch {
			case ns == "":
				continue
			case ns == AllNamespaces:
			case strings.EqualFold(ns, "true"):
				// The tag's "true" means every namespace; here it would be
				// read as a namespace of that name, so it is refused.
				return nil, &FieldError{Field: entry, Reason: `"true" is not a namespace here; write "*" to grant every namespace`}
			default:
				if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
					return nil, &FieldError{Field: entry, Reason: fmt.Sprintf("%s is not a namespace name: %s", quoteValue(ns), errs[0])}
				}
			}
			if !slices.Contains(nss, ns) {
				nss = append(nss, ns)
			}
		}
		if len(nss) == 0 {
			return nil, &FieldError{Field: entry, Reason: `lists no namespace; give namespace names ("team-a,team-b" or a list) or "*" for every namespace`}
		}
		out[id] = nss
	}
	return out, nil
}

// namespaceItems reads one grant's value: a JSON string (split on ",") or
// a JSON list of strings.
func namespaceItems(v json.RawMessage) ([]string, error) {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return strings.Split(s, ","), nil
	}
	var list []string
	if err := json.Unmarshal(v, &list); err == nil {
		return list, nil
	}
	kind := "value"
	switch t := strings.TrimSpace(string(v)); {
	case t == "true" || t == "false":
		kind = "boolean"
	case strings.HasPrefix(t, "{"):
		kind = "mapping"
	case strings.HasPrefix(t, "["):
		kind = "list with a non-string item"
	case t == "null":
		kind = "null"
	default:
		kind = "number"
	}
	return nil, fmt.Errorf(`must be namespace names, as "team-a,team-b" or a list, or "*"; got a %s`, kind)
}
