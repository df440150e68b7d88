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
	if l, ok := r.list("backend-label"); ok {
		empty := r.emptyList(l, "no k=v given")
		pairs, ok := uniqueElements(r, l, "key", func(e element) (string, [2]string, string) {
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
			}
			return k, [2]string{k, val}, why
		})
		if ok && !empty {
			b.Labels = make(map[string]string, len(pairs))
			for _, p := range pairs {
				b.Labels[p[0]] = p[1]
			}
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
