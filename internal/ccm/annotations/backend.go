package annotations

import (
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
)

// validLabelKey applies the selector's own key rules, so a key we accept
// can never make BackendSelector fail.
func validLabelKey(k string) bool {
	_, err := labels.NewRequirement(k, selection.Exists, nil)
	return err == nil
}

func (r *reader) backend(s *Settings, d Defaults) {
	b := &s.Backend
	b.Type = d.BackendType
	if b.Type == "" {
		b.Type = BackendECS
	}
	if t := r.enum(BackendTypeKey); t != nil {
		b.Type, b.TypeFromAnnotation = BackendType(*t), true
	}
	b.Weight = r.intv("weight")
	b.DefaultWeight = r.intv("default-weight")
	if v := r.onOff("ignore-weight-update"); v != nil {
		b.IgnoreWeightUpdate = *v
	}
	if a, key, v, ok := r.raw("backend-label"); ok {
		set := map[string]string{}
		at := map[string]int{}
		es := elements(v)
		bad := len(es) == 0
		if bad {
			r.failWhy(a, key, v, "no k=v given")
		}
		if !r.allElements(a, key, v, func(e element) string {
			k, val, found := strings.Cut(e.text, "=")
			k, val = strings.TrimSpace(k), strings.TrimSpace(val)
			why := ""
			switch {
			case !found:
				why = "a value is required: k=v"
			case !validLabelKey(k):
				why = "the key is not a label key (an optional DNS prefix and '/', then 1–63 letters, digits, '-', '_' or '.')"
			case len(validation.IsValidLabelValue(val)) > 0:
				why = "the value is not a label value (up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"
			case at[k] > 0:
				why = repeats("key", at[k])
			}
			if why != "" {
				return why
			}
			at[k] = e.n
			set[k] = val
			return ""
		}) {
			bad = true
		}
		if !bad {
			b.Labels = set
		}
	}
	if v := r.onOff("remove-unscheduled-backend"); v != nil {
		b.RemoveUnscheduled = *v
	}
	b.IPVersion = r.enum("backend-ip-version")
	if r.owner == OwnerNLB {
		b.ServerGroupType = r.enum("server-group-type")
		b.PreserveClientIP = r.onOff("preserve-client-ip")
	}
}
