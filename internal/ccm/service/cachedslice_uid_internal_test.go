package service

import (
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestSliceEndpointSize: the point of the layout is one 24-byte struct per
// endpoint, its strings in its slice's one text allocation.
func TestSliceEndpointSize(t *testing.T) {
	if n := unsafe.Sizeof(sliceEndpoint{}); n > 24 {
		t.Errorf("a cached endpoint is %d bytes, want at most 24", n)
	}
}

// TestPodNamespaceRoundTrip: a targetRef's namespace reads back as
// written, whether it is the slice's (not stored), empty or another.
func TestPodNamespaceRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, sliceNS, podNS string
		flagged              bool
	}{
		{"the slice's", "web", "web", true},
		{"empty", "web", "", false},
		{"another", "web", "other", false},
		{"both empty", "", "", false},
		{"slice's empty", "", "other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: tc.podNS, Name: "p", UID: "3f2b8c1e-9d4a-4c6b-8e21-0a7f5d9c4b12"}},
				{Addresses: []string{"10.0.0.2"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "third", Name: "q", UID: "u"}},
			}}
			in.Namespace = tc.sliceNS
			sl := compactSlice(in)
			e := &sl.endpoints[0]
			if got := e.flags&epPodNSSlice != 0; got != tc.flagged {
				t.Errorf("namespace taken from the slice: %v, want %v", got, tc.flagged)
			}
			if p, _ := sl.pod(e); p.namespace != tc.podNS || p.name != "p" || p.uid != "3f2b8c1e-9d4a-4c6b-8e21-0a7f5d9c4b12" {
				t.Errorf("pod %+v, want namespace %q", p, tc.podNS)
			}
			if p, _ := sl.pod(&sl.endpoints[1]); p.namespace != "third" || p.name != "q" || p.uid != "u" {
				t.Errorf("next endpoint's pod %+v", p)
			}
			if a, _ := sl.address(&sl.endpoints[1]); a != "10.0.0.2" {
				t.Errorf("next endpoint's address %q", a)
			}
		})
	}
}

// TestPodUIDRoundTrip: a pod UID reads back exactly as written, whether it
// is kept as 16 bytes (a canonical lowercase UUID) or verbatim (anything
// else).
func TestPodUIDRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, uid string
		binary    bool
	}{
		{"canonical UUID", "3f2b8c1e-9d4a-4c6b-8e21-0a7f5d9c4b12", true},
		{"all zeros", "00000000-0000-0000-0000-000000000000", true},
		{"all f", "ffffffff-ffff-ffff-ffff-ffffffffffff", true},
		{"uppercase", "3F2B8C1E-9D4A-4C6B-8E21-0A7F5D9C4B12", false},
		{"one uppercase digit", "3f2b8c1e-9d4a-4c6b-8e21-0a7f5d9c4b1A", false},
		{"braced", "{3f2b8c1e-9d4a-4c6b-8e21-0a7f5d9c4b12}", false},
		{"no hyphens", "3f2b8c1e9d4a4c6b8e210a7f5d9c4b12", false},
		{"hyphen misplaced", "3f2b8c1e9-d4a-4c6b-8e21-0a7f5d9c4b12", false},
		{"36 chars, not hex", "3f2b8c1e-9d4a-4c6b-8e21-0a7f5d9c4bzz", false},
		{"not a UUID", "uid-10.0.0.4", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sl := compactSlice(&discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "before", UID: "11111111-2222-4333-8444-555555555555"}},
				{Addresses: []string{"10.0.0.2"}, NodeName: ptr.To("n1"), TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: types.UID(tc.uid)}},
				{Addresses: []string{"10.0.0.3"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "after", UID: "x"}},
			}})
			e := &sl.endpoints[1]
			if got := e.flags&epUUID != 0; got != tc.binary {
				t.Errorf("kept as 16 bytes: %v, want %v", got, tc.binary)
			}
			if tc.binary && e.uidLen != 16 {
				t.Errorf("binary UID takes %d bytes", e.uidLen)
			}
			p, ok := sl.pod(e)
			if !ok || p.uid != types.UID(tc.uid) || p.name != "p" || p.namespace != "ns" {
				t.Errorf("pod %+v (%v), want ns/p uid %q", p, ok, tc.uid)
			}
			if a, _ := sl.address(e); a != "10.0.0.2" {
				t.Errorf("address %q", a)
			}
			// Its neighbours in the slice's text read back whole too.
			if p, _ := sl.pod(&sl.endpoints[0]); p.name != "before" || p.uid != "11111111-2222-4333-8444-555555555555" {
				t.Errorf("endpoint before: %+v", p)
			}
			if p, _ := sl.pod(&sl.endpoints[2]); p.name != "after" || p.uid != "x" || p.namespace != "" {
				t.Errorf("endpoint after: %+v", p)
			}
			if a, _ := sl.address(&sl.endpoints[2]); a != "10.0.0.3" {
				t.Errorf("endpoint after: address %q", a)
			}
		})
	}
}

// TestSameBackendsAsComparesContent: endpoints are equal by what they
// read, not by where their text sits in their slice's text.
func TestSameBackendsAsComparesContent(t *testing.T) {
	ep := func(ip, pod, uid string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To("n1"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: pod, UID: types.UID(uid)}}
	}
	const u1, u2 = "3f2b8c1e-9d4a-4c6b-8e21-0a7f5d9c4b12", "3f2b8c1e-9d4a-4c6b-8e21-0a7f5d9c4b13"
	base := compactSlice(&discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{ep("10.0.0.1", "a", u1), ep("10.0.0.2", "b", u2)}})
	same := compactSlice(&discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{ep("10.0.0.1", "a", u1), ep("10.0.0.2", "b", u2)}})
	if !base.sameBackendsAs(same) {
		t.Error("equal slices compare different")
	}
	// The second endpoint alone, at offset 0 in its own text, against the
	// second of base's (offset 18): same content.
	alone := compactSlice(&discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{ep("10.0.0.2", "b", u2)}})
	tail := *base
	tail.endpoints = base.endpoints[1:]
	if !alone.sameBackendsAs(&tail) || alone.endpoints[0].off == tail.endpoints[0].off {
		t.Errorf("same endpoint at another offset: same %v, offsets %d %d", alone.sameBackendsAs(&tail), alone.endpoints[0].off, tail.endpoints[0].off)
	}
	for name, other := range map[string]discoveryv1.Endpoint{
		"address":           ep("10.0.0.3", "b", u2),
		"pod name":          ep("10.0.0.2", "c", u2),
		"pod UID":           ep("10.0.0.2", "b", u1),
		"UID's letter case": ep("10.0.0.2", "b", "3F2B8C1E-9D4A-4C6B-8E21-0A7F5D9C4B13"),
		// Same bytes in the text, split differently.
		"address and name split": ep("10.0.0.2b", "", u2),
	} {
		diff := compactSlice(&discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{ep("10.0.0.1", "a", u1), other}})
		if base.sameBackendsAs(diff) || diff.sameBackendsAs(base) {
			t.Errorf("%s differs, compared same", name)
		}
	}
	// The pod's namespace is the slice's in both: slices of different
	// namespaces differ.
	inNS := func(ns string) *cachedSlice {
		in := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{ep("10.0.0.1", "a", u1)}}
		in.Namespace = ns
		in.Endpoints[0].TargetRef.Namespace = ns
		return compactSlice(in)
	}
	if !inNS("a").sameBackendsAs(inNS("a")) || inNS("a").sameBackendsAs(inNS("b")) {
		t.Error("pods in their slice's namespace compared wrong")
	}
	notReady := base.deepCopy()
	notReady.endpoints[1].flags |= epNotReady
	if base.sameBackendsAs(notReady) || base.endpoints[1].flags&epNotReady != 0 {
		t.Error("a deep copy's flag change reads as no change, or reached the original")
	}
}
