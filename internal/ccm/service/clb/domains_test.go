package clb_test

import (
	"reflect"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
)

func TestPlanDomains(t *testing.T) {
	de := func(domain, cert string) annotations.DomainExtension {
		return annotations.DomainExtension{Domain: domain, CertID: cert}
	}
	cd := func(id, domain, cert string) clb.CurrentDomain {
		return clb.CurrentDomain{ID: id, Domain: domain, CertID: cert}
	}
	for _, tc := range []struct {
		name    string
		desired []annotations.DomainExtension
		current []clb.CurrentDomain
		want    clb.DomainPlan
	}{
		{name: "nothing", want: clb.DomainPlan{}},
		{
			name:    "create all",
			desired: []annotations.DomainExtension{de("a.example.com", "c1"), de("*.b.example.com", "c2")},
			want:    clb.DomainPlan{Create: []annotations.DomainExtension{de("a.example.com", "c1"), de("*.b.example.com", "c2")}},
		},
		{
			name:    "converged, domains compared case-insensitively",
			desired: []annotations.DomainExtension{de("A.example.com", "c1")},
			current: []clb.CurrentDomain{cd("de-1", "a.example.com", "c1")},
			want:    clb.DomainPlan{},
		},
		{
			name:    "certificate changed",
			desired: []annotations.DomainExtension{de("a.example.com", "c9")},
			current: []clb.CurrentDomain{cd("de-1", "a.example.com", "c1")},
			want:    clb.DomainPlan{Update: []clb.DomainUpdate{{ID: "de-1", Domain: "a.example.com", CertID: "c9"}}},
		},
		{
			name:    "domain dropped from the annotation, another added",
			desired: []annotations.DomainExtension{de("a.example.com", "c1"), de("new.example.com", "c3")},
			current: []clb.CurrentDomain{cd("de-2", "z.example.com", "c2"), cd("de-1", "a.example.com", "c1"), cd("de-3", "old.example.com", "c2")},
			want: clb.DomainPlan{
				Delete: []clb.CurrentDomain{cd("de-3", "old.example.com", "c2"), cd("de-2", "z.example.com", "c2")},
				Create: []annotations.DomainExtension{de("new.example.com", "c3")},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clb.PlanDomains(tc.desired, tc.current)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan:\n got %+v\nwant %+v", got, tc.want)
			}
			if got.Empty() != tc.want.Empty() {
				t.Errorf("Empty() = %v", got.Empty())
			}
		})
	}
}
