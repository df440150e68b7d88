package annotations_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// TestSettingsKeyNamesTheRegistryKey: for an absent annotation Key names
// the key the Registry gives it under the Service's owner, by suffix or by
// full key; for a present one, the key the user wrote (a legacy key stays
// legacy in messages).
func TestSettingsKeyNamesTheRegistryKey(t *testing.T) {
	for _, owner := range []annotations.Owner{annotations.OwnerCLB, annotations.OwnerNLB} {
		s := &annotations.Settings{Owner: owner}
		for i := range annotations.Registry {
			a := &annotations.Registry[i]
			found, ok := annotations.Find(a.Suffix(), owner)
			if !ok {
				continue // another kind's annotation: Key is not asked for it
			}
			if got := s.Key(a.Suffix()); got != found.Key {
				t.Errorf("%s: Key(%q) = %q, want the registry's %q", owner, a.Suffix(), got, found.Key)
			}
			if got := s.Key(a.Key); got != a.Key {
				t.Errorf("%s: Key(%q) = %q, want the full key itself", owner, a.Key, got)
			}
		}
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default",
			Annotations: map[string]string{annotations.LegacyKey("acl-status"): "on", annotations.LegacyKey("acl-id"): "acl-1"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	s, err := annotations.Parse(svc, annotations.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Key("acl-status"), annotations.LegacyKey("acl-status"); got != want {
		t.Errorf("Key(acl-status) = %q, want the legacy key the user wrote %q", got, want)
	}
	if got, want := s.Key("acl-type"), annotations.Key("acl-type"); got != want {
		t.Errorf("Key(acl-type) = %q, want the current key %q", got, want)
	}
}
