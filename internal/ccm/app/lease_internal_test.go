package app

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// TestLeaseRelease: the identity comes from the election's "became
// leader" event on our Lease only; the Lease is emptied only while that
// identity holds it.
func TestLeaseRelease(t *testing.T) {
	const me, other = "host_1111", "host_2222"
	for _, tc := range []struct {
		name string
		// events are recorded as the lock records them: on a Lease,
		// reason LeaderElection, "<identity> <what>".
		events  []struct{ ns, name, msg string }
		holder  string
		release bool
	}{
		{"became leader, still holds it", []struct{ ns, name, msg string }{{"kube-system", "ccm", me + " became leader"}}, me, true},
		{"never led", nil, other, false},
		{"another took it meanwhile", []struct{ ns, name, msg string }{{"kube-system", "ccm", me + " became leader"}}, other, false},
		{"an event on another Lease", []struct{ ns, name, msg string }{{"kube-system", "other", me + " became leader"}}, me, false},
		{"stopped leading is not leading", []struct{ ns, name, msg string }{{"kube-system", "ccm", me + " stopped leading"}}, me, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			now := metav1.NewMicroTime(time.Now())
			cs := fake.NewClientset(&coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ccm"},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(tc.holder), LeaseDurationSeconds: ptr.To[int32](15),
					RenewTime: &now, LeaseTransitions: ptr.To[int32](3)},
			})
			r := &leaseRelease{client: cs, namespace: "kube-system", name: "ccm"}
			rec := &leaderRecorder{EventRecorder: record.NewFakeRecorder(10), r: r}
			for _, e := range tc.events {
				rec.Eventf(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: e.name}}, corev1.EventTypeNormal, "LeaderElection", "%s", e.msg)
			}
			if err := r.release(ctx); err != nil {
				t.Fatal(err)
			}
			l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "ccm", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			released := ptr.Deref(l.Spec.HolderIdentity, "") == ""
			if released != tc.release {
				t.Fatalf("released %v, want %v (holder %q)", released, tc.release, ptr.Deref(l.Spec.HolderIdentity, ""))
			}
			if released && (ptr.Deref(l.Spec.LeaseTransitions, 0) != 3 || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 1) {
				t.Errorf("released Lease %+v: transitions kept and a 1 s duration wanted", l.Spec)
			}
		})
	}
}

// TestLeadStopsControllers: the contexts lead hands out end when the
// process stops, and one handed out after that is already done.
func TestLeadStopsControllers(t *testing.T) {
	r := &leaseRelease{client: fake.NewClientset()}
	first := r.lead(context.Background())
	r.stop()
	if first.Err() == nil {
		t.Error("a controller's context outlived the stop")
	}
	if late := r.lead(context.Background()); late.Err() == nil {
		t.Error("a controller started after the stop got a live context")
	}
	// Without leader election nothing is wrapped.
	none := &leaseRelease{}
	ctx := context.Background()
	if none.lead(ctx) != ctx {
		t.Error("without leader election the context was replaced")
	}
}
