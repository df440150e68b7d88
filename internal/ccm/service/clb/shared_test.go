package clb

import (
	"strconv"
	"strings"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// TestLimitShared: on a shared borrowed CLB, an unbound port keeps its
// group only with a listener of the Service (free port, ours, or a user's
// taken over with force) or a group of ours a listener already uses, at
// most MaxGroupsPerSharedLB; bound groups always stay. Not shared: nothing
// changes.
func TestLimitShared(t *testing.T) {
	ref := naming.Ref{ClusterID: "c1", Namespace: "team-a", Name: "web"}
	other := naming.Ref{ClusterID: "c1", Namespace: "team-b", Name: "web"}
	model := func(n int) *Model {
		m := &Model{Ref: ref}
		for i := 0; i < n; i++ {
			port := int32(8000 + i)
			name := ref.CLBVGroup(strconv.Itoa(30000 + i))
			m.Groups = append(m.Groups, Group{ServicePort: port, Name: name})
			m.Listeners = append(m.Listeners, Listener{Port: port, Protocol: "tcp", ServicePort: port, Description: ref.CLBListener(port)})
		}
		return m
	}
	shared := &service.Binding{LB: &service.LoadBalancer{ID: "lb-x"}, Reused: true, SharedWith: []string{"team-b/web"}}
	alone := &service.Binding{LB: &service.LoadBalancer{ID: "lb-x"}, Reused: true}

	if w := limitShared(alone, model(3), nil, nil, false, false, false); w != nil {
		t.Errorf("not shared: %+v", w)
	}
	// No listener managed: only the group a listener already uses stays.
	m := model(3)
	m.Groups[2].BoundID = "rsp-user"
	used := []CurrentGroup{{ID: "rsp-1", Name: m.Groups[1].Name, Listeners: 1}}
	w := limitShared(shared, m, used, nil, false, false, false)
	if w == nil || w.Reason != service.EventSharedPortsSkipped || !strings.Contains(w.Message, "8000/tcp") || !strings.Contains(w.Message, "team-b/web") {
		t.Fatalf("warning %+v", w)
	}
	if len(m.Groups) != 2 || m.Groups[0].ServicePort != 8001 || m.Groups[1].BoundID != "rsp-user" {
		t.Errorf("groups %+v", m.Groups)
	}
	// Managed listeners: a port held by another Service gets no group (its
	// listener stays planned, so the conflict is reported); a user's is
	// taken over only with force.
	m = model(3)
	current := []CurrentListener{
		{Port: 8000, Protocol: "tcp", Description: other.CLBListener(8000)},
		{Port: 8001, Protocol: "tcp", Description: "user-8001"},
	}
	limitShared(shared, m, nil, current, true, false, false)
	if len(m.Groups) != 1 || m.Groups[0].ServicePort != 8002 || len(m.Listeners) != 3 {
		t.Errorf("without force: groups %+v listeners %d", m.Groups, len(m.Listeners))
	}
	m = model(3)
	limitShared(shared, m, nil, current, true, true, false)
	if len(m.Groups) != 2 {
		t.Errorf("with force: groups %+v", m.Groups)
	}
	// The cap.
	m = model(service.MaxGroupsPerSharedLB + 5)
	w = limitShared(shared, m, nil, nil, true, false, false)
	if len(m.Groups) != service.MaxGroupsPerSharedLB || len(m.Listeners) != service.MaxGroupsPerSharedLB || w == nil || !strings.Contains(w.Message, "limit") {
		t.Errorf("cap: %d groups, %d listeners, %+v", len(m.Groups), len(m.Listeners), w)
	}
	// The backend pass keeps only the groups that exist.
	m = model(2)
	if w := limitShared(shared, m, []CurrentGroup{{ID: "rsp-0", Name: m.Groups[0].Name}}, nil, false, false, true); w != nil || len(m.Groups) != 1 {
		t.Errorf("backend pass: %+v, groups %+v", w, m.Groups)
	}
}
