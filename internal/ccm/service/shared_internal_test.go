package service

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// allTagged is a fakeFinder that returns every tagged load balancer, as the
// providers do.
type allTagged struct{ fakeFinder }

func (f allTagged) FindAllTagged(_ context.Context, name string) ([]*LoadBalancer, error) {
	var out []*LoadBalancer
	for _, lb := range f.fakeFinder {
		if lb.Tags[naming.TagKeyDefaultName] == name {
			out = append(out, lb)
		}
	}
	return out, nil
}

// clbOwner is a provider that serves CLB Services; only its identity is read.
type clbOwner struct{ Provider }

func (clbOwner) Owner() annotations.Owner { return annotations.OwnerCLB }
func (clbOwner) Finalizer() string        { return naming.FinalizerCLB }
func (clbOwner) Kind() string             { return "CLB" }
func (o clbOwner) Descriptor() Descriptor {
	return Descriptor{Kind: o.Kind(), Owner: o.Owner(), Finalizer: o.Finalizer()}
}

// TestDuplicateTagged: of several load balancers tagged for a Service, Bind
// keeps the oldest whatever the listing order and warns about the others;
// ReleaseSet hands them all to Delete, the labelled one first.
func TestDuplicateTagged(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "1111-3333"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	tags := map[string]string{naming.TagKeyDefaultName: naming.DefaultLBName(svc), naming.TagKeyCluster: "c1"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := allTagged{fakeFinder{
		"lb-b":     {ID: "lb-b", Tags: tags, Created: t0.Add(time.Minute)},
		"lb-a":     {ID: "lb-a", Tags: tags, Created: t0},
		"lb-c":     {ID: "lb-c", Tags: tags},
		"lb-other": {ID: "lb-other", Tags: map[string]string{naming.TagKeyDefaultName: naming.DefaultLBName(svc), naming.TagKeyCluster: "c2"}},
	}}
	s, err := annotations.Parse(svc, annotations.Defaults{Owner: annotations.OwnerCLB})
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{Service: svc, Settings: s, ClusterID: "c1", Identity: IdentityOf(svc, "c1")}
	for i := 0; i < 5; i++ {
		b, warnings, err := Bind(context.Background(), f, ReuseRules{}, req)
		if err != nil || b.ID() != "lb-a" {
			t.Fatalf("Bind = %v, %v; want lb-a, the oldest", b.ID(), err)
		}
		if len(warnings) != 1 || warnings[0].Reason != EventDuplicateLoadBalancers || !strings.Contains(warnings[0].Message, "lb-b, lb-c") {
			t.Fatalf("warnings %+v", warnings)
		}
	}
	req.LoadBalancerID = "lb-b"
	b, warnings, err := ReleaseSet(context.Background(), f, req)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, lb := range b.OwnAll(req) {
		ids = append(ids, lb.ID)
	}
	if strings.Join(ids, ",") != "lb-b,lb-a,lb-c" {
		t.Errorf("Delete would delete %v, want lb-b (labelled), lb-a, lb-c", ids)
	}
	if len(warnings) != 1 || warnings[0].Reason != EventNotOwned || !strings.Contains(warnings[0].Message, "lb-other") {
		t.Errorf("warnings %+v, want the other cluster's lb-other reported", warnings)
	}
}

// TestSharers: the Services claiming a load balancer through their id
// annotation or label are its co-borrowers; a Service of another type
// without a finalizer claims nothing; a change of claims queues the other
// borrowers for a full sync.
func TestSharers(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{borrowIndex: borrowClaims})
	mk := func(ns, name, uid, id, label string, typ corev1.ServiceType) *corev1.Service {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Annotations: map[string]string{}, Labels: map[string]string{}}, Spec: corev1.ServiceSpec{Type: typ}}
		if id != "" {
			svc.Annotations[annotations.Key("id")] = id
		}
		if label != "" {
			svc.Labels[naming.LabelLoadBalancerID] = label
		}
		return svc
	}
	a := mk("team-a", "web", "a", "lb-x", "lb-x", corev1.ServiceTypeLoadBalancer)
	b := mk("team-b", "web", "b", " lb-x ", "", corev1.ServiceTypeLoadBalancer)
	c := mk("team-c", "api", "c", "", "lb-x", corev1.ServiceTypeLoadBalancer)
	d := mk("team-d", "off", "d", "lb-x", "", corev1.ServiceTypeClusterIP)
	e := mk("team-e", "own", "e", "", "lb-e", corev1.ServiceTypeLoadBalancer)
	for _, s := range []*corev1.Service{a, b, c, d, e} {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	ctrl := &Controller{borrowers: idx, queue: q, synced: []cache.InformerSynced{func() bool { return true }}, providers: []Provider{clbOwner{}}}
	if got := strings.Join(ctrl.sharers(a, "lb-x"), ","); got != "team-b/web,team-c/api" {
		t.Errorf("sharers of lb-x for team-a: %q", got)
	}
	if got := ctrl.sharers(e, "lb-e"); len(got) != 0 {
		t.Errorf("sharers of an own load balancer: %v", got)
	}
	bd := &Binding{LB: &LoadBalancer{ID: "lb-x"}, Reused: true}
	ctrl.share(a, bd)
	if !bd.Shared() {
		t.Error("lb-x not shared")
	}
	w := SharedSettingIgnored(bd, annotations.Key("spec"), "slb.s1.small", "slb.s3.large")
	for _, want := range []string{annotations.Key("spec") + "=slb.s3.large", "slb.s1.small", "team-b/web, team-c/api", "lb-x"} {
		if !strings.Contains(w.Message, want) {
			t.Errorf("Warning %q lacks %q", w.Message, want)
		}
	}
	if (&Binding{LB: &LoadBalancer{ID: "lb-x"}, SharedWith: []string{"x/y"}}).Shared() {
		t.Error("an own load balancer counts as shared")
	}
	// team-b leaves: team-a and team-c are queued for a full sync.
	if err := idx.Delete(b); err != nil {
		t.Fatal(err)
	}
	ctrl.borrowersChanged(b, nil)
	if q.Len() != 2 {
		t.Fatalf("%d Services queued, want team-a and team-c", q.Len())
	}
	for _, uid := range []types.UID{"a", "c"} {
		if v, ok := ctrl.verified.Load(uid); !ok || !v.(time.Time).IsZero() {
			t.Errorf("Service %s not marked for a full sync", uid)
		}
	}
	// A label write that changes no claim queues nobody.
	a2 := a.DeepCopy()
	a2.Labels[naming.LabelHash] = "h"
	ctrl.borrowersChanged(a, a2)
	if q.Len() != 2 {
		t.Errorf("a change of no claim queued Services: %d", q.Len())
	}
}
