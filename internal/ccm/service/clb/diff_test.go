package clb_test

import (
	"reflect"
	"sort"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
)

var ref = naming.Ref{ClusterID: "c1", Namespace: "default", Name: "web"}

func tcp(port int32, set map[string]string) clb.Listener {
	return clb.Listener{Port: port, Protocol: "tcp", Description: ref.CLBListener(port), ServicePort: port, Set: set}
}

func cur(port int32, proto, desc, status, group string, params map[string]string) clb.CurrentListener {
	return clb.CurrentListener{Port: port, Protocol: proto, Description: desc, Status: status, VServerGroupID: group, Params: params}
}

func ports(ls []clb.Listener) []int32 {
	var out []int32
	for _, l := range ls {
		out = append(out, l.Port)
	}
	return out
}

func curPorts(ls []clb.CurrentListener) []int32 {
	var out []int32
	for _, l := range ls {
		out = append(out, l.Port)
	}
	return out
}

func TestPlanListeners(t *testing.T) {
	groups := map[clb.PortKey]string{80: "rsp-80", 81: "rsp-81", 443: "rsp-443"}
	ours := func(p int32) string { return ref.CLBListener(p) }
	other := naming.Ref{ClusterID: "c1", Namespace: "default", Name: "api"}
	for _, tc := range []struct {
		name      string
		desired   []clb.Listener
		current   []clb.CurrentListener
		force     bool
		create    []int32
		del       []int32
		update    map[int32]map[string]string
		start     []int32
		conflicts int
	}{
		{name: "nothing exists", desired: []clb.Listener{tcp(80, nil), tcp(443, nil)}, create: []int32{80, 443}},
		{name: "converged", desired: []clb.Listener{tcp(80, map[string]string{"Scheduler": "wrr"})},
			current: []clb.CurrentListener{cur(80, "tcp", ours(80), "running", "rsp-80", map[string]string{"Scheduler": "wrr"})}},
		{name: "unset settings are not compared (adoption)", desired: []clb.Listener{tcp(80, nil)},
			current: []clb.CurrentListener{cur(80, "tcp", ours(80), "running", "rsp-80", map[string]string{"Scheduler": "sch", "HealthyThreshold": "7"})}},
		{name: "changed setting", desired: []clb.Listener{tcp(80, map[string]string{"Scheduler": "wrr", "EstablishedTimeout": "600"})},
			current: []clb.CurrentListener{cur(80, "tcp", ours(80), "running", "rsp-80", map[string]string{"Scheduler": "WRR", "EstablishedTimeout": "900"})},
			update:  map[int32]map[string]string{80: {"EstablishedTimeout": "600"}}},
		{name: "wrong group is rebound", desired: []clb.Listener{tcp(80, nil)},
			current: []clb.CurrentListener{cur(80, "tcp", ours(80), "running", "rsp-old", nil)},
			update:  map[int32]map[string]string{80: {"VServerGroup": "on", "VServerGroupId": "rsp-80"}}},
		{name: "stopped listener is started", desired: []clb.Listener{tcp(80, nil)},
			current: []clb.CurrentListener{cur(80, "tcp", ours(80), "stopped", "rsp-80", nil)}, start: []int32{80}},
		{name: "protocol change recreates", desired: []clb.Listener{{Port: 80, Protocol: "http", Description: ours(80), ServicePort: 80}},
			current: []clb.CurrentListener{cur(80, "tcp", ours(80), "running", "rsp-80", nil)}, del: []int32{80}, create: []int32{80}},
		{name: "removed port is deleted", desired: []clb.Listener{tcp(80, nil)},
			current: []clb.CurrentListener{cur(80, "tcp", ours(80), "running", "rsp-80", nil), cur(81, "tcp", ours(81), "running", "rsp-81", nil)}, del: []int32{81}},
		{name: "user listener on our port without force is a conflict", desired: []clb.Listener{tcp(80, map[string]string{"Scheduler": "wrr"})},
			current: []clb.CurrentListener{cur(80, "tcp", "user", "running", "", nil)}, conflicts: 1},
		{name: "user listener with force is taken over with our description in the same update; other ports untouched", desired: []clb.Listener{tcp(80, map[string]string{"Scheduler": "rr"})}, force: true,
			current: []clb.CurrentListener{cur(80, "tcp", "user", "running", "", map[string]string{"Scheduler": "wrr"}), cur(90, "tcp", "user-90", "stopped", "", nil)},
			update:  map[int32]map[string]string{80: {"Scheduler": "rr", "VServerGroup": "on", "VServerGroupId": "rsp-80", "Description": ours(80)}}},
		{name: "taken over earlier without our description: only the description is sent", desired: []clb.Listener{tcp(80, map[string]string{"Scheduler": "rr"})}, force: true,
			current: []clb.CurrentListener{cur(80, "tcp", "user", "running", "rsp-80", map[string]string{"Scheduler": "rr"})},
			update:  map[int32]map[string]string{80: {"Description": ours(80)}}},
		{name: "another Service's listener is never taken over, even with force", desired: []clb.Listener{tcp(81, nil)}, force: true,
			current:   []clb.CurrentListener{cur(81, "tcp", other.CLBListener(81), "running", "rsp-81", nil)},
			conflicts: 1},
		{name: "another cluster's listener is never taken over, even with force", desired: []clb.Listener{tcp(81, nil)}, force: true,
			current:   []clb.CurrentListener{cur(81, "tcp", "k8s/81/web/default/c2", "running", "rsp-81", nil)},
			conflicts: 1},
		{name: "our listener with its description is left alone", desired: []clb.Listener{tcp(80, nil)}, force: true,
			current: []clb.CurrentListener{cur(80, "tcp", ours(80), "running", "rsp-80", nil)}},
		{name: "user listener of another protocol with force is recreated as ours", desired: []clb.Listener{{Port: 80, Protocol: "http", Description: ours(80), ServicePort: 80}}, force: true,
			current: []clb.CurrentListener{cur(80, "tcp", "user", "running", "", nil)}, del: []int32{80}, create: []int32{80}},
		{name: "another Service's listener is never deleted", desired: nil,
			current: []clb.CurrentListener{cur(81, "tcp", other.CLBListener(81), "running", "", nil)}},
		{name: "another cluster's listener is never deleted", desired: nil,
			current: []clb.CurrentListener{cur(81, "tcp", "k8s/81/web/default/c2", "running", "", nil)}},
		{name: "udp shares a port number with tcp", desired: []clb.Listener{{Port: 53, Protocol: "udp", Description: ours(53), ServicePort: 53}},
			current: []clb.CurrentListener{cur(53, "tcp", "user", "running", "", nil)}, create: []int32{53}},
		{name: "forwarding http deleted before https", desired: nil,
			current: []clb.CurrentListener{cur(443, "https", ours(443), "running", "", nil), cur(80, "http", ours(80), "running", "", nil)}, del: []int32{80, 443}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := clb.PlanListeners(tc.desired, tc.current, ref, tc.force, groups)
			if got := ports(p.Create); !reflect.DeepEqual(got, tc.create) {
				t.Errorf("create %v, want %v", got, tc.create)
			}
			if got := curPorts(p.Delete); !reflect.DeepEqual(got, tc.del) {
				t.Errorf("delete %v, want %v", got, tc.del)
			}
			if got := curPorts(p.Start); !reflect.DeepEqual(got, tc.start) {
				t.Errorf("start %v, want %v", got, tc.start)
			}
			upd := map[int32]map[string]string{}
			for _, u := range p.Update {
				upd[u.Listener.Port] = u.Params
			}
			if len(upd) == 0 {
				upd = nil
			}
			if !reflect.DeepEqual(upd, tc.update) {
				t.Errorf("update %v, want %v", upd, tc.update)
			}
			if len(p.Conflicts) != tc.conflicts {
				t.Errorf("conflicts %v, want %d", p.Conflicts, tc.conflicts)
			}
			if p.Empty() != (tc.create == nil && tc.del == nil && tc.update == nil && tc.start == nil) {
				t.Errorf("Empty() = %v", p.Empty())
			}
		})
	}
}

// TestPlanListenersSamePortTwoProtocols: 53/TCP and 53/UDP are two
// listeners, each pointed at the group of its own PortKey.
func TestPlanListenersSamePortTwoProtocols(t *testing.T) {
	tcpKey, udpKey := clb.KeyOf(53, false), clb.KeyOf(53, true)
	desired := []clb.Listener{
		{Port: 53, Protocol: "tcp", Description: ref.CLBListener(53), ServicePort: tcpKey},
		{Port: 53, Protocol: "udp", Description: ref.CLBListener(53), ServicePort: udpKey},
	}
	groups := map[clb.PortKey]string{tcpKey: "rsp-t", udpKey: "rsp-u"}
	for _, tc := range []struct {
		name    string
		current []clb.CurrentListener
		create  []string
		update  map[string]string // protocol → group sent
	}{
		{name: "both created", create: []string{"tcp", "udp"}},
		{name: "converged", current: []clb.CurrentListener{cur(53, "udp", ref.CLBListener(53), "running", "rsp-u", nil), cur(53, "tcp", ref.CLBListener(53), "running", "rsp-t", nil)}},
		{name: "both on one group (as before PortKeys): udp moves", current: []clb.CurrentListener{cur(53, "tcp", ref.CLBListener(53), "running", "rsp-t", nil), cur(53, "udp", ref.CLBListener(53), "running", "rsp-t", nil)},
			update: map[string]string{"udp": "rsp-u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := clb.PlanListeners(desired, tc.current, ref, false, groups)
			var create []string
			for _, l := range p.Create {
				create = append(create, l.Protocol)
			}
			update := map[string]string{}
			for _, u := range p.Update {
				update[u.Listener.Protocol] = u.Params["VServerGroupId"]
			}
			if len(update) == 0 {
				update = nil
			}
			if !reflect.DeepEqual(create, tc.create) || !reflect.DeepEqual(update, tc.update) || len(p.Delete) != 0 || len(p.Conflicts) != 0 {
				t.Errorf("create %v update %v delete %v conflicts %v; want create %v update %v", create, update, p.Delete, p.Conflicts, tc.create, tc.update)
			}
		})
	}
}

func TestPlanGroups(t *testing.T) {
	g80 := clb.Group{ServicePort: 80, Name: ref.CLBVGroup("30080")}
	g443 := clb.Group{ServicePort: 443, Name: ref.CLBVGroup("30443")}
	bound := clb.Group{ServicePort: 443, Name: ref.CLBVGroup("30443"), BoundID: "rsp-user"}
	for _, tc := range []struct {
		name    string
		desired []clb.Group
		current []clb.CurrentGroup
		create  []string
		ids     map[int32]string
		del     []string
		missing []string
	}{
		{name: "nothing exists", desired: []clb.Group{g80, g443}, create: []string{g80.Name, g443.Name}, ids: map[int32]string{}},
		{name: "found by name", desired: []clb.Group{g80}, current: []clb.CurrentGroup{{ID: "rsp-1", Name: g80.Name}}, ids: map[int32]string{80: "rsp-1"}},
		{name: "nodePort changed: new group, old deleted", desired: []clb.Group{g80},
			current: []clb.CurrentGroup{{ID: "rsp-1", Name: ref.CLBVGroup("31000")}}, create: []string{g80.Name}, ids: map[int32]string{}, del: []string{"rsp-1"}},
		{name: "bound by id", desired: []clb.Group{g80, bound}, current: []clb.CurrentGroup{{ID: "rsp-1", Name: g80.Name}, {ID: "rsp-user", Name: "mine"}},
			ids: map[int32]string{80: "rsp-1", 443: "rsp-user"}},
		{name: "bound group missing", desired: []clb.Group{bound}, ids: map[int32]string{}, missing: []string{"rsp-user"}},
		{name: "foreign groups untouched", desired: nil,
			current: []clb.CurrentGroup{{ID: "rsp-u", Name: "user"}, {ID: "rsp-o", Name: "k8s/30080/api/default/c1"}}, ids: map[int32]string{}},
		{name: "duplicate of a wanted group: the one in use is kept", desired: []clb.Group{g80},
			current: []clb.CurrentGroup{{ID: "rsp-1", Name: g80.Name}, {ID: "rsp-2", Name: g80.Name, Listeners: 2}, {ID: "rsp-3", Name: g80.Name}},
			ids:     map[int32]string{80: "rsp-2"}, del: []string{"rsp-1", "rsp-3"}},
		{name: "duplicates no listener uses: the first is kept", desired: []clb.Group{g80},
			current: []clb.CurrentGroup{{ID: "rsp-1", Name: g80.Name}, {ID: "rsp-2", Name: g80.Name}}, ids: map[int32]string{80: "rsp-1"}, del: []string{"rsp-2"}},
		{name: "duplicates of an unwanted group all go", desired: nil,
			current: []clb.CurrentGroup{{ID: "rsp-1", Name: g80.Name}, {ID: "rsp-2", Name: g80.Name}}, ids: map[int32]string{}, del: []string{"rsp-1", "rsp-2"}},
		{name: "53/UDP has its own key", desired: []clb.Group{{ServicePort: clb.KeyOf(53, false), Name: ref.CLBVGroup("30053")}, {ServicePort: clb.KeyOf(53, true), Name: ref.CLBVGroup("30054")}},
			current: []clb.CurrentGroup{{ID: "rsp-t", Name: ref.CLBVGroup("30053")}, {ID: "rsp-u", Name: ref.CLBVGroup("30054")}},
			ids:     map[int32]string{clb.KeyOf(53, false): "rsp-t", clb.KeyOf(53, true): "rsp-u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := clb.PlanGroups(tc.desired, tc.current, ref)
			var create, del []string
			for _, g := range p.Create {
				create = append(create, g.Name)
			}
			for _, g := range p.Delete {
				del = append(del, g.ID)
			}
			if !reflect.DeepEqual(create, tc.create) || !reflect.DeepEqual(p.IDs, tc.ids) || !reflect.DeepEqual(del, tc.del) || !reflect.DeepEqual(p.MissingBound, tc.missing) {
				t.Errorf("create %v ids %v delete %v missing %v; want %v %v %v %v", create, p.IDs, del, p.MissingBound, tc.create, tc.ids, tc.del, tc.missing)
			}
		})
	}
}

func be(id string, port int32, w int, desc string) clb.Backend {
	return clb.Backend{ServerID: id, Type: "ecs", Port: port, Weight: w, Description: desc}
}

func ids(bs []clb.Backend) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.ServerID)
	}
	sort.Strings(out)
	return out
}

func TestPlanBackends(t *testing.T) {
	const mine = "k8s/30080/web/default/c1"
	for _, tc := range []struct {
		name         string
		desired      []clb.Backend
		current      []clb.Backend
		shared       bool
		ignoreWeight bool
		add, remove  []string
		update       []string
	}{
		{name: "empty group", desired: []clb.Backend{be("i-1", 30080, 100, mine), be("i-2", 30080, 100, mine)}, add: []string{"i-1", "i-2"}},
		{name: "converged", desired: []clb.Backend{be("i-1", 30080, 100, mine)}, current: []clb.Backend{be("i-1", 30080, 100, "")}},
		{name: "node gone, node added", desired: []clb.Backend{be("i-1", 30080, 100, mine), be("i-3", 30080, 100, mine)},
			current: []clb.Backend{be("i-1", 30080, 100, mine), be("i-2", 30080, 100, mine)}, add: []string{"i-3"}, remove: []string{"i-2"}},
		{name: "weight change", desired: []clb.Backend{be("i-1", 30080, 3, mine)}, current: []clb.Backend{be("i-1", 30080, 1, mine)}, update: []string{"i-1"}},
		{name: "weight change ignored", desired: []clb.Backend{be("i-1", 30080, 3, mine)}, current: []clb.Backend{be("i-1", 30080, 1, mine)}, ignoreWeight: true},
		{name: "nodePort change replaces members", desired: []clb.Backend{be("i-1", 31000, 100, mine)}, current: []clb.Backend{be("i-1", 30080, 100, mine)},
			add: []string{"i-1"}, remove: []string{"i-1"}},
		{name: "shared group: others' members are left alone", shared: true,
			desired: []clb.Backend{be("i-1", 30080, 50, mine)},
			current: []clb.Backend{be("i-1", 30080, 50, mine), be("i-2", 30080, 100, mine), be("i-9", 80, 100, "user"), be("i-8", 30080, 7, "k8s/30080/api/default/c1")},
			remove:  []string{"i-2"}},
		{name: "own group: every stranger is removed",
			desired: []clb.Backend{be("i-1", 30080, 100, mine)}, current: []clb.Backend{be("i-1", 30080, 100, mine), be("i-9", 80, 100, "user")}, remove: []string{"i-9"}},
		{name: "eni members are keyed by ip", desired: []clb.Backend{{ServerID: "eni-1", IP: "10.0.0.2", Type: "eni", Port: 8080, Weight: 100}},
			current: []clb.Backend{{ServerID: "eni-1", IP: "10.0.0.3", Type: "eni", Port: 8080, Weight: 100}}, add: []string{"eni-1"}, remove: []string{"eni-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := clb.PlanBackends(tc.desired, tc.current, tc.shared, mine, tc.ignoreWeight)
			if !reflect.DeepEqual(ids(p.Add), tc.add) || !reflect.DeepEqual(ids(p.Remove), tc.remove) || !reflect.DeepEqual(ids(p.Update), tc.update) {
				t.Errorf("add %v remove %v update %v; want %v %v %v", ids(p.Add), ids(p.Remove), ids(p.Update), tc.add, tc.remove, tc.update)
			}
			if p.Empty() != (tc.add == nil && tc.remove == nil && tc.update == nil) {
				t.Errorf("Empty() = %v", p.Empty())
			}
		})
	}
}
