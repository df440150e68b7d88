package service

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

func parsed(t *testing.T, svc *corev1.Service, ann map[string]string) *annotations.Settings {
	t.Helper()
	svc.Annotations = map[string]string{}
	for k, v := range ann {
		svc.Annotations[annotations.Key(k)] = v
	}
	s, err := annotations.Parse(svc, annotations.Defaults{Owner: annotations.OwnerCLB})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReleaseSet: Delete releases what the Service is bound to, whatever
// its annotations say now: the own LB by tags, the id annotation's and the
// label's borrowed LBs, never twice, nothing borrowed with preserve.
func TestReleaseSet(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "1111-2222"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	mine := naming.DefaultLBName(svc)
	cloud := fakeFinder{
		"lb-own":  {ID: "lb-own", Tags: map[string]string{naming.TagKeyDefaultName: mine, naming.TagKeyCluster: "c1"}},
		"lb-a":    {ID: "lb-a", Tags: map[string]string{naming.TagKeyReused: "true"}},
		"lb-b":    {ID: "lb-b", Tags: map[string]string{}},
		"lb-else": {ID: "lb-else", Tags: map[string]string{naming.TagKeyDefaultName: "aother"}},
	}
	noOwn := fakeFinder{"lb-a": cloud["lb-a"], "lb-b": cloud["lb-b"], "lb-else": cloud["lb-else"]}
	for _, tc := range []struct {
		name    string
		cloud   fakeFinder
		label   string
		ann     map[string]string
		own     string
		release []string
	}{
		{"own LB only", cloud, "lb-own", nil, "lb-own", nil},
		{"borrowed", noOwn, "lb-a", map[string]string{"id": "lb-a"}, "", []string{"lb-a"}},
		{"id edited after binding: both", noOwn, "lb-a", map[string]string{"id": "lb-b"}, "", []string{"lb-b", "lb-a"}},
		{"id removed: the label's", noOwn, "lb-a", nil, "", []string{"lb-a"}},
		{"id to a missing LB: released already, the label's is", noOwn, "lb-a", map[string]string{"id": "lb-missing"}, "", []string{"lb-a"}},
		{"borrowed LB deleted in the console: nothing to release", fakeFinder{}, "lb-a", map[string]string{"id": "lb-a"}, "", nil},
		{"forged label: only this Service's names on it", noOwn, "lb-else", nil, "", []string{"lb-else"}},
		{"preserve: nothing borrowed", noOwn, "lb-a", map[string]string{"id": "lb-a", "preserve-lb-on-delete": "true"}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := svc.DeepCopy()
			req := &Request{Service: s, Settings: parsed(t, s, tc.ann), ClusterID: "c1", Identity: IdentityOf(s, "c1"), LoadBalancerID: tc.label}
			b, _, err := ReleaseSet(context.Background(), tc.cloud, req)
			if err != nil {
				t.Fatal(err)
			}
			if b.ID() != tc.own || !reflect.DeepEqual(b.Release, tc.release) {
				t.Fatalf("own %q release %v; want %q %v", b.ID(), b.Release, tc.own, tc.release)
			}
		})
	}
}

// TestReusePolicy: loadBalancerReuse none refuses every id, tagged only
// load balancers an administrator tagged reusable.
func TestReusePolicy(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	cloud := fakeFinder{
		"lb-plain":  {ID: "lb-plain", Tags: map[string]string{}},
		"lb-tagged": {ID: "lb-tagged", Tags: map[string]string{TagReusable: "true"}},
	}
	for _, tc := range []struct {
		policy, id string
		refused    bool
	}{
		{"", "lb-plain", false}, {ReuseAny, "lb-plain", false},
		{ReuseTagged, "lb-plain", true}, {ReuseTagged, "lb-tagged", false},
		{ReuseNone, "lb-tagged", true},
	} {
		s := svc.DeepCopy()
		req := &Request{Service: s, Settings: parsed(t, s, map[string]string{"id": tc.id}), ClusterID: "c1", Identity: IdentityOf(s, "c1")}
		_, _, err := Bind(context.Background(), cloud, ReuseRules{Policy: tc.policy}, req)
		if IsRefused(err) != tc.refused {
			t.Errorf("policy %q, %s: err %v, refused want %v", tc.policy, tc.id, err, tc.refused)
		}
	}
}

// fakeProvider is a Provider of one kind for decide.
type fakeProvider struct {
	Provider
	owner annotations.Owner
}

func (f fakeProvider) Owner() annotations.Owner { return f.owner }
func (f fakeProvider) Kind() string             { return f.owner.String() }
func (f fakeProvider) Finalizer() string {
	if f.owner == annotations.OwnerNLB {
		return naming.FinalizerNLB
	}
	return naming.FinalizerCLB
}
func (f fakeProvider) Descriptor() Descriptor {
	return Descriptor{Kind: f.Kind(), Owner: f.Owner(), Finalizer: f.Finalizer()}
}

// TestDecide: a bound Service stays with its provider unless its spec asks
// for another kind; a kind we do not serve, or an opt-out while bound, is
// ambiguous.
func TestDecide(t *testing.T) {
	clbP, nlbP := fakeProvider{owner: annotations.OwnerCLB}, fakeProvider{owner: annotations.OwnerNLB}
	svc := func(fin string, ann map[string]string, class *string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n", Annotations: ann}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class}}
		if fin != "" {
			s.Finalizers = []string{fin}
		}
		return s
	}
	typ := func(v string) map[string]string { return map[string]string{annotations.LoadBalancerTypeKey: v} }
	for _, tc := range []struct {
		name      string
		gate      bool
		svc       *corev1.Service
		want      string // Kind or ""
		ambiguous bool
	}{
		{"new plain", false, svc("", nil, nil), "CLB", false},
		{"new nlb class", false, svc("", nil, ptr.To(annotations.NLBClass)), "NLB", false},
		{"new type nlb, gate off: not served, said", false, svc("", typ("nlb"), nil), "", true},
		{"new type alb: another controller's", false, svc("", typ("alb"), nil), "", false},
		{"bound NLB, type nlb, gate turned off: stays NLB", false, svc(naming.FinalizerNLB, typ("nlb"), nil), "NLB", false},
		{"bound NLB, no annotation, gate off: the default does not move it", false, svc(naming.FinalizerNLB, nil, nil), "NLB", false},
		{"bound NLB, annotation removed, gate on: back to CLB", true, svc(naming.FinalizerNLB, nil, nil), "CLB", false},
		{"bound CLB, type nlb, gate on: to NLB", true, svc(naming.FinalizerCLB, typ("nlb"), nil), "NLB", false},
		{"bound CLB, type alb: ambiguous", true, svc(naming.FinalizerCLB, typ("alb"), nil), "", true},
		{"bound CLB, class annotation: ambiguous", false, svc(naming.FinalizerCLB, map[string]string{annotations.ClassKey: "x"}, nil), "", true},
		{"bound CLB, tunnel-type: ambiguous", false, svc(naming.FinalizerCLB, map[string]string{annotations.TunnelTypeKey: ""}, nil), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{providers: []Provider{clbP, nlbP}}
			c.opts.Defaults.LoadBalancerTypeAnnotation = tc.gate
			p, amb := c.decide(tc.svc)
			got := ""
			if p != nil {
				got = p.Descriptor().Kind
			}
			if got != tc.want || (amb != "") != tc.ambiguous {
				t.Fatalf("decide = %q, ambiguous %q; want %q, ambiguous %v", got, amb, tc.want, tc.ambiguous)
			}
		})
	}
	// Deleted: whatever it carries is released by its provider.
	del := svc(naming.FinalizerCLB, typ("alb"), nil)
	del.DeletionTimestamp = &metav1.Time{}
	c := &Controller{providers: []Provider{clbP, nlbP}}
	if p, amb := c.decide(del); p != nil || amb != "" || len(c.stale(del, nil)) != 1 {
		t.Fatalf("deleted Service: %v %q", p, amb)
	}
}

// fakeENIs is the cloud's view of ENIs for the resolver.
type fakeENIs []ENI

func (f fakeENIs) ENIsOf(_ context.Context, ips []string) ([]ENI, error) {
	var out []ENI
	for _, e := range f {
		for _, ip := range e.IPs {
			for _, want := range ips {
				if ip == want {
					out = append(out, e)
				}
			}
		}
	}
	return out, nil
}

// TestResolveENIs: which eni targets are registrable.
func TestResolveENIs(t *testing.T) {
	cl := &Cluster{Instances: map[string]bool{"i-node": true}, Virtual: map[string]bool{"vk": true},
		NodeAddrs: map[string]string{"10.0.1.1": "n1", "10.0.1.2": "n2"}}
	enis := fakeENIs{
		{ID: "eni-node", InstanceID: "i-node", IPs: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"}},
		{ID: "eni-n1", InstanceID: "i-node", IPs: []string{"10.0.1.1", "10.0.1.2"}},
		{ID: "eni-db", InstanceID: "i-db", IPs: []string{"10.0.9.9", "10.0.9.8"}},
		{ID: "eni-eci", InstanceID: "eci-1", IPs: []string{"10.0.5.5"}},
		{ID: "eni-eci2", InstanceID: "eci-2", IPs: []string{"10.0.5.6"}},
		{ID: "eni-loose", IPs: []string{"10.0.6.6"}},
	}
	pod := podRef
	run := corev1.PodRunning
	pods := map[string]podFact{
		"app/ok":        {ips: []string{"10.0.0.2"}, node: "n1", phase: run},
		"app/eci":       {ips: []string{"10.0.5.5"}, node: "vk", phase: run, eci: "eci-1"},
		"app/liar":      {ips: []string{"10.0.7.7"}, node: "n1", phase: run},
		"app/done":      {ips: []string{"10.0.0.4"}, node: "n1", phase: corev1.PodSucceeded},
		"app/going":     {ips: []string{"10.0.0.5"}, node: "n1", phase: run, deleting: true},
		"app/hostnet":   {ips: []string{"10.0.1.1"}, node: "n1", phase: run, hostNetwork: true},
		"app/elsewhere": {ips: []string{"10.0.1.2"}, node: "n1", phase: run, hostNetwork: true},
		"app/eci-vm":    {ips: []string{"10.0.9.8"}, node: "vk", phase: run, eci: "eci-1"},
		"app/eci-other": {ips: []string{"10.0.5.6"}, node: "vk", phase: run, eci: "eci-1"},
		"app/eci-vmid":  {ips: []string{"10.0.9.9"}, node: "vk", phase: run, eci: "i-db"},
	}
	req := &Request{Service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}}, Backends: map[int32][]Target{80: {
		{IP: "10.0.0.1"},                               // Node ENI, no pod named: ok
		{IP: "10.0.0.2", Pod: pod("app", "ok")},        // Node ENI, pod holds it: ok
		{IP: "10.0.0.3", Pod: pod("other", "v")},       // another namespace
		{IP: "10.0.9.9"},                               // a VM that is no Node
		{IP: "10.0.5.5", Pod: pod("app", "eci")},       // ECI pod on a virtual Node
		{IP: "10.0.6.6"},                               // an ENI attached to nothing
		{IP: "10.0.0.1", Pod: pod("app", "liar")},      // duplicate IP: first wins
		{IP: "10.0.8.8"},                               // no ENI holds it yet
		{IP: "10.0.0.4", Pod: pod("app", "done")},      // a completed pod's old address
		{IP: "10.0.0.5", Pod: pod("app", "going")},     // a pod being deleted
		{IP: "10.0.1.1", Pod: pod("app", "hostnet")},   // a Node's address through its host-network pod: ok
		{IP: "10.0.1.2", Pod: pod("app", "elsewhere")}, // another Node's address
		{IP: "10.0.1.2"},                               // (duplicate)
		{IP: "10.0.9.8", Pod: pod("app", "eci-vm")},    // ECI pod whose address a VM holds now
		{IP: "10.0.5.6", Pod: pod("app", "eci-other")}, // held by another ECI group
		{IP: "10.0.9.9", Pod: pod("app", "eci-vmid")},  // (duplicate)
	}}}
	got, rejected, unresolved, err := ResolveENIs(context.Background(), enis, cl, pods, req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"10.0.0.1": "eni-node", "10.0.0.2": "eni-node", "10.0.5.5": "eni-eci", "10.0.1.1": "eni-n1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("registrable %v, want %v", got, want)
	}
	if !reflect.DeepEqual(unresolved, []string{"10.0.8.8"}) {
		t.Errorf("unresolved %v", unresolved)
	}
	text := strings.Join(rejected, "\n")
	for _, w := range []string{"10.0.0.3 names pod other/v", "10.0.9.9 is held by eni-db of instance i-db", "10.0.6.6 is held by eni-loose, which is attached to no Node",
		"10.0.0.4 was the address of pod app/done, which is Succeeded, not Running", "10.0.0.5 is the address of pod app/going, which is being deleted",
		"10.0.1.2 is an address of Node n2, and pod app/elsewhere is not a host-network pod on that Node",
		"10.0.9.8 is held by eni-db of i-db, not by ECI container group eci-1 of pod app/eci-vm",
		"10.0.5.6 is held by eni-eci2 of eci-2, not by ECI container group eci-1 of pod app/eci-other"} {
		if !strings.Contains(text, w) {
			t.Errorf("rejected %q lacks %q", text, w)
		}
	}
	if len(rejected) != 8 {
		t.Errorf("rejected %d: %v", len(rejected), rejected)
	}
}

// TestResolveENIsUntargetedNodeAddress: an endpoint without a targetRef
// never registers a Node's address, on any port.
func TestResolveENIsUntargetedNodeAddress(t *testing.T) {
	cl := &Cluster{Instances: map[string]bool{"i-node": true}, NodeAddrs: map[string]string{"10.0.1.1": "n1"}}
	enis := fakeENIs{{ID: "eni-n1", InstanceID: "i-node", IPs: []string{"10.0.1.1", "10.0.1.5"}}}
	req := &Request{Service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}},
		Backends: map[int32][]Target{22: {{IP: "10.0.1.1", Port: 22}, {IP: "10.0.1.5", Port: 22}}}}
	got, rejected, _, err := ResolveENIs(context.Background(), enis, cl, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"10.0.1.5": "eni-n1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("registrable %v, want %v", got, want)
	}
	if len(rejected) != 1 || !strings.Contains(rejected[0], "10.0.1.1 has no targetRef and is an address of Node n1") {
		t.Errorf("rejected %v", rejected)
	}
}

// TestCapUntargeted: the first MaxUntargetedEndpoints distinct untargeted
// addresses in address order stay, on every port; targeted ones all stay.
func TestCapUntargeted(t *testing.T) {
	req := &Request{Backends: map[int32][]Target{
		80:  {{IP: "10.0.0.3"}, {IP: "10.0.0.1"}, {IP: "10.0.0.2"}, {IP: "10.0.0.9", Pod: podRef("app", "p")}},
		443: {{IP: "10.0.0.3"}, {IP: "10.0.0.4"}},
	}}
	if n := capUntargeted(req, 2); n != 4 {
		t.Fatalf("counted %d untargeted addresses, want 4", n)
	}
	want := map[int32][]Target{80: {{IP: "10.0.0.1"}, {IP: "10.0.0.2"}, {IP: "10.0.0.9", Pod: podRef("app", "p")}}, 443: {}}
	if !reflect.DeepEqual(req.Backends, want) {
		t.Errorf("backends %+v, want %+v", req.Backends, want)
	}
	if n := capUntargeted(req, 2); n != 2 {
		t.Errorf("counted %d, want 2", n)
	}
}
