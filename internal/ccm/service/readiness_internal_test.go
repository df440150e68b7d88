package service

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// gatePod is a pod of the "web" Service for the admission table.
func gatePod(name string, gated bool, conds map[corev1.PodConditionType]corev1.ConditionStatus) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
	if gated {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "other/gate"}, {ConditionType: ReadinessGate("web")}}
	}
	for typ, st := range conds {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: typ, Status: st})
	}
	return p
}

// TestAdmitGated: which not-ready endpoints become backends, which pods
// wait for their gate, and what is read: one listing of the Service's
// namespace per sync, never another namespace's pods.
func TestAdmitGated(t *testing.T) {
	tr, fa := corev1.ConditionTrue, corev1.ConditionFalse
	deleting := gatePod("deleting", true, nil)
	deleting.DeletionTimestamp = &metav1.Time{}
	replaced := gatePod("replaced", true, nil)
	replaced.UID = "uid-new"
	pods := []runtime.Object{
		gatePod("ready", true, map[corev1.PodConditionType]corev1.ConditionStatus{ReadinessGate("web"): tr}),
		gatePod("plain", false, nil),
		gatePod("waiting", true, map[corev1.PodConditionType]corev1.ConditionStatus{corev1.ContainersReady: fa}),
		gatePod("settling", true, map[corev1.PodConditionType]corev1.ConditionStatus{ReadinessGate("web"): tr, corev1.ContainersReady: tr}),
		gatePod("failing", true, map[corev1.PodConditionType]corev1.ConditionStatus{ReadinessGate("web"): tr, corev1.ContainersReady: fa}),
		gatePod("falsegate", true, map[corev1.PodConditionType]corev1.ConditionStatus{ReadinessGate("web"): fa, corev1.ContainersReady: tr}),
		gatePod("terminating", true, nil),
		gatePod("other-svc-gate", false, nil),
		deleting, replaced,
	}
	pods[7].(*corev1.Pod).Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: ReadinessGate("api")}}
	ep := func(ip, pod string, ready bool) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
		if pod != "" {
			e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: pod, UID: types.UID("uid-" + pod)}
		}
		return e
	}
	// Each pod holds its endpoint's address, but for "claimed", whose
	// endpoint names it with another address (a hand-written slice).
	ips := map[string]string{"ready": "10.0.0.1", "plain": "10.0.0.2", "waiting": "10.0.0.3", "settling": "10.0.0.4",
		"failing": "10.0.0.5", "falsegate": "10.0.0.6", "terminating": "10.0.0.7", "other-svc-gate": "10.0.0.8",
		"deleting": "10.0.0.9", "replaced": "10.0.0.10", "claimed": "10.0.0.99"}
	claimed := gatePod("claimed", true, nil)
	victim := gatePod("victim", true, nil)
	victim.Namespace = "other"
	pods = append(pods, claimed, victim)
	for _, o := range pods {
		p := o.(*corev1.Pod)
		if ip := ips[p.Name]; ip != "" {
			p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		}
	}
	cross := ep("10.0.0.14", "victim", false)
	cross.TargetRef.Namespace = "other"
	term := ep("10.0.0.7", "terminating", false)
	term.Conditions.Terminating = ptr.To(true)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns"},
		Ports:      []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{
			ep("10.0.0.1", "ready", true),
			ep("10.0.0.2", "plain", false),
			ep("10.0.0.3", "waiting", false),
			ep("10.0.0.4", "settling", false),
			ep("10.0.0.5", "failing", false),
			ep("10.0.0.6", "falsegate", false),
			term,
			ep("10.0.0.8", "other-svc-gate", false),
			ep("10.0.0.9", "deleting", false),
			ep("10.0.0.10", "replaced", false),
			ep("10.0.0.11", "gone", false),
			ep("10.0.0.12", "", false),
			ep("10.0.0.13", "claimed", false),
			cross,
		},
	}
	// The slice as the informer's cache holds it.
	cached := compactSlice(slice)
	orig := cached.deepCopy()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	eni := &annotations.Settings{}
	eni.Backend.Type = annotations.BackendENI

	cs := fake.NewClientset(pods...)
	c := &Controller{kube: cs}
	// reads are the namespaces listed (and the pods read one by one).
	reads := func() []string {
		var out []string
		for _, a := range cs.Actions() {
			switch a.GetVerb() {
			case "list":
				out = append(out, "list "+a.GetNamespace())
			case "get":
				out = append(out, "get "+a.(k8stesting.GetAction).GetName())
			}
		}
		cs.ClearActions()
		return out
	}
	admitted := func(slices []*cachedSlice) []string {
		var out []string
		for _, e := range slices[0].endpoints {
			if e.ready() {
				addr, _ := slices[0].address(&e)
				out = append(out, addr)
			}
		}
		return out
	}

	out, pending := c.backends.admitGated(context.Background(), svc, eni, []*cachedSlice{cached}, newPodView(cs, "ns"))
	if want := []string{"10.0.0.1", "10.0.0.3", "10.0.0.4", "10.0.0.6"}; !reflect.DeepEqual(admitted(out), want) {
		t.Errorf("backends %v, want %v", admitted(out), want)
	}
	want := []gatedPod{{"ns", "waiting", "uid-waiting", "10.0.0.3"}, {"ns", "falsegate", "uid-falsegate", "10.0.0.6"}}
	sort.Slice(want, func(i, j int) bool { return want[i].ip < want[j].ip })
	if !reflect.DeepEqual(pending, want) {
		t.Errorf("pending %+v, want %+v", pending, want)
	}
	if !reflect.DeepEqual(cached, orig) {
		t.Error("the informer's EndpointSlice was modified")
	}
	// One listing of the Service's namespace; the pod of another
	// namespace is never read.
	if got, want := reads(), []string{"list ns"}; !reflect.DeepEqual(got, want) {
		t.Errorf("first sync read %v, want %v", got, want)
	}
	// Each sync reads afresh: nothing of a pod is remembered but that it
	// has no gate.
	c.backends.admitGated(context.Background(), svc, eni, []*cachedSlice{cached}, newPodView(cs, "ns"))
	if got, want := reads(), []string{"list ns"}; !reflect.DeepEqual(got, want) {
		t.Errorf("second sync read %v, want %v", got, want)
	}
	// Only endpoints of pods known without the gate: nothing is read.
	quiet := &discoveryv1.EndpointSlice{ObjectMeta: slice.ObjectMeta, Ports: slice.Ports,
		Endpoints: []discoveryv1.Endpoint{ep("10.0.0.1", "ready", true), ep("10.0.0.2", "plain", false)}}
	c.backends.admitGated(context.Background(), svc, eni, []*cachedSlice{compactSlice(quiet)}, newPodView(cs, "ns"))
	if got := reads(); len(got) > 0 {
		t.Errorf("a sync with only ungated not-ready pods read %v", got)
	}
	// ecs backends: nothing is read or admitted.
	out, pending = c.backends.admitGated(context.Background(), svc, &annotations.Settings{}, []*cachedSlice{cached}, newPodView(cs, "ns"))
	if len(pending) > 0 || len(reads()) > 0 || !reflect.DeepEqual(admitted(out), []string{"10.0.0.1"}) {
		t.Errorf("ecs backends: pending %v, backends %v", pending, admitted(out))
	}
}

// TestMarkRegistered: only pods whose IP the sync registered get the
// condition; a failed patch is a Warning and an error.
func TestMarkRegistered(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	pods := []runtime.Object{gatePod("a", true, nil), gatePod("b", true, nil), gatePod("c", true, nil), gatePod("d", true, nil)}
	req := &Request{
		// The resolver took 10.0.0.2 out of the backends: no ENI holds it.
		Backends:     map[int32][]Target{80: {{IP: "10.0.0.1"}, {IP: "10.0.0.4"}}},
		Unregistered: []string{"10.0.0.2"},
		gated: []gatedPod{
			{"ns", "a", "uid-a", "10.0.0.1"}, // registered
			{"ns", "b", "uid-b", "10.0.0.2"}, // no ENI holds it
			{"ns", "c", "uid-c", "10.0.0.3"}, // not a backend (another port's slice)
			{"ns", "d", "uid-d", "10.0.0.4"}, // registered, patch refused
		},
	}
	cs := fake.NewClientset(pods...)
	cs.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() == "d" {
			return true, nil, errors.New("refused")
		}
		return false, nil, nil
	})
	rec := record.NewFakeRecorder(10)
	c := &Controller{kube: cs, recorder: rec}
	err := c.markRegistered(context.Background(), svc, req)
	if err == nil || !strings.Contains(err.Error(), "ns/d") {
		t.Fatalf("err = %v, want the refused patch of ns/d", err)
	}
	var patched []string
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" {
			if a.GetSubresource() != "status" {
				t.Errorf("patch of %s subresource %q", a.(k8stesting.PatchAction).GetName(), a.GetSubresource())
			}
			patched = append(patched, a.(k8stesting.PatchAction).GetName())
		}
	}
	if !reflect.DeepEqual(patched, []string{"a", "d"}) {
		t.Errorf("patched %v, want [a d]", patched)
	}
	p, _ := cs.CoreV1().Pods("ns").Get(context.Background(), "a", metav1.GetOptions{})
	if len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Type != ReadinessGate("web") || p.Status.Conditions[0].Status != corev1.ConditionTrue ||
		p.Status.Conditions[0].Reason != ReasonServerRegistered {
		t.Errorf("pod a conditions %+v", p.Status.Conditions)
	}
	if ev := <-rec.Events; !strings.HasPrefix(ev, "Warning "+EventReadinessGateFailed) {
		t.Errorf("event %q", ev)
	}
}
