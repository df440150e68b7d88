package nlb

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// sharedRequest is a Service of n TCP ports (8000, 8001, ...) borrowing
// nlb-x, shared with team-b/web when shared is set.
func sharedRequest(t *testing.T, n int, force, shared bool) *service.Request {
	t.Helper()
	ann := map[string]string{annotations.Key("id"): "nlb-x"}
	if force {
		ann[annotations.Key("force-override-listeners")] = "true"
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Annotations: ann},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	for i := 0; i < n; i++ {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprint(i), Port: int32(8000 + i), NodePort: int32(30000 + i), Protocol: corev1.ProtocolTCP})
	}
	s, err := annotations.Parse(svc, annotations.Defaults{Owner: annotations.OwnerNLB})
	if err != nil {
		t.Fatal(err)
	}
	b := &service.Binding{LB: &service.LoadBalancer{ID: "nlb-x"}, Reused: true}
	if shared {
		b.SharedWith = []string{"team-b/web"}
	}
	return &service.Request{Service: svc, Settings: s, ClusterID: ref.ClusterID, Identity: service.IdentityOf(svc, ref.ClusterID), Binding: b}
}

// groupsPlan plans m against the given existing groups of ours, as
// planGroups does.
func groupsPlan(m *Model, owned ...CurrentGroup) GroupPlan {
	p := PlanGroups(m.Groups, owned, nil, m.Ref)
	p.current = map[string]CurrentGroup{}
	for _, g := range owned {
		p.current[g.ID] = g
	}
	return p
}

// existing is the current group of ours for m's port i, used by nlb-x's
// listeners when used.
func existing(m *Model, i int, used bool) CurrentGroup {
	g := m.Groups[i]
	c := CurrentGroup{ID: fmt.Sprintf("sgp-%d", i), Name: g.Name, Protocol: g.Protocol, Type: g.Type, AddressIPVersion: g.AddressIPVersion, Params: groupWants(g, nil)}
	if used {
		c.RelatedLBs = []string{"nlb-x"}
	}
	return c
}

// TestLimitShared: on a shared borrowed NLB, a port keeps (or gets) its
// group only when a listener of the Service may serve it, or its group
// exists; at most MaxGroupsPerSharedLB groups, those a listener uses
// counted first; the ports above the limit lose their listener and their
// existing group. Not shared, nothing changes.
func TestLimitShared(t *testing.T) {
	t.Run("not shared", func(t *testing.T) {
		req := sharedRequest(t, 30, true, false)
		m := BuildModel(req, Addresses{})
		plan, w := limitShared(req, m, groupsPlan(m), "nlb-x", nil, false)
		if w != nil || len(plan.Create) != 30 || len(m.Listeners) != 30 {
			t.Errorf("warning %v, %d creates, %d listeners", w, len(plan.Create), len(m.Listeners))
		}
	})
	t.Run("listeners not managed: only the groups that exist", func(t *testing.T) {
		req := sharedRequest(t, 3, false, true)
		m := BuildModel(req, Addresses{})
		plan, w := limitShared(req, m, groupsPlan(m, existing(m, 1, true), existing(m, 2, false)), "nlb-x", []CurrentListener{}, false)
		if len(plan.Create) != 0 || len(m.Groups) != 2 || plan.IDs[KeyOf(8000, false)] != "" {
			t.Errorf("creates %v, groups %v, ids %v", plan.Create, m.Groups, plan.IDs)
		}
		if w == nil || w.Reason != service.EventSharedPortsSkipped || !strings.Contains(w.Message, "8000/TCP") || strings.Contains(w.Message, "8001") || !strings.Contains(w.Message, "team-b/web") {
			t.Errorf("warning %+v", w)
		}
	})
	t.Run("managed: a port another Service or a user holds gets no group", func(t *testing.T) {
		other := ref
		other.Name = "api"
		current := []CurrentListener{
			{ID: "lsn-other", Port: 8000, Protocol: "TCP", Description: other.NLBListener(8000, "TCP")},
			{ID: "lsn-user", Port: 8001, Protocol: "TCP", Description: "user's"},
			{ID: "lsn-ours", Port: 8002, Protocol: "TCP", Description: ref.NLBListener(8002, "TCP")},
		}
		for _, tc := range []struct {
			force bool
			want  []int32
		}{{false, []int32{8002, 8003}}, {true, []int32{8001, 8002, 8003}}} {
			req := sharedRequest(t, 4, true, true)
			req.Settings.LoadBalancer.ForceOverrideListeners = tc.force
			if !tc.force {
				// Without force a borrower manages no listener at all:
				// test the port rule itself.
				m := BuildModel(req, Addresses{})
				for i, port := range []int32{8000, 8001, 8002, 8003} {
					if got, want := listenerFree(m, KeyOf(port, false), current, false), i >= 2; got != want {
						t.Errorf("listenerFree(%d) without force = %v", port, got)
					}
				}
				continue
			}
			m := BuildModel(req, Addresses{})
			plan, w := limitShared(req, m, groupsPlan(m), "nlb-x", current, false)
			var got []int32
			for _, g := range plan.Create {
				got = append(got, g.ServicePort)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(m.Listeners) != 4 {
				t.Errorf("force %v: creates for %v, want %v; %d listeners (the blocked one stays planned)", tc.force, got, tc.want, len(m.Listeners))
			}
			if w == nil || !strings.Contains(w.Message, "8000/TCP") || strings.Contains(w.Message, "8001/TCP") {
				t.Errorf("warning %+v", w)
			}
		}
	})
	t.Run("the cap", func(t *testing.T) {
		n := service.MaxGroupsPerSharedLB + 5
		req := sharedRequest(t, n, true, true)
		m := BuildModel(req, Addresses{})
		// The last port's group exists and a listener uses it: counted
		// first, never taken away; the 11th port's exists unused: deleted.
		last, eleventh := existing(m, n-1, true), existing(m, 10, false)
		plan, w := limitShared(req, m, groupsPlan(m, last, eleventh), "nlb-x", nil, false)
		if len(m.Groups) != service.MaxGroupsPerSharedLB || len(m.Listeners) != service.MaxGroupsPerSharedLB {
			t.Fatalf("%d groups, %d listeners, want %d", len(m.Groups), len(m.Listeners), service.MaxGroupsPerSharedLB)
		}
		if len(plan.Create) != service.MaxGroupsPerSharedLB-1 || plan.IDs[KeyOf(int32(8000+n-1), false)] != last.ID {
			t.Errorf("creates %d, ids %v", len(plan.Create), plan.IDs)
		}
		if len(plan.Delete) != 1 || plan.Delete[0].ID != eleventh.ID {
			t.Errorf("deletes %v, want %s", plan.Delete, eleventh.ID)
		}
		if w == nil || !strings.Contains(w.Message, fmt.Sprintf("limit of %d server groups", service.MaxGroupsPerSharedLB)) || !strings.Contains(w.Message, "8009/TCP") {
			t.Errorf("warning %+v", w)
		}
	})
	t.Run("backend pass: the groups that exist, no warning", func(t *testing.T) {
		req := sharedRequest(t, 3, true, true)
		m := BuildModel(req, Addresses{})
		plan, w := limitShared(req, m, groupsPlan(m, existing(m, 0, true)), "nlb-x", nil, true)
		if w != nil || len(plan.Create) != 0 || len(m.Groups) != 1 || len(plan.Delete) != 0 {
			t.Errorf("warning %v, creates %v, groups %v, deletes %v", w, plan.Create, m.Groups, plan.Delete)
		}
	})
}
