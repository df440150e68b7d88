package service

import (
	"slices"
	"strings"
	"unique"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// cachedSlice is what the EndpointSlice cache keeps of one slice: what the
// controller reads and nothing else. At W4's 10,000 Services the slice
// cache held 100,000 endpoints at ~380 bytes each as slim
// discoveryv1.EndpointSlices (an Endpoint struct of nine fields, a
// separate allocation per address, pointer and pod reference, and a label
// map per slice). An endpoint here is one 24-byte struct and its share of
// one string per slice that holds every endpoint's address, pod name and
// pod UID (a UID as the API server generates it in 16 bytes instead of 36
// characters; the pod's namespace only when it is not the slice's); the
// slice's metadata is the five fields the informer reads (sliceMeta, 72
// bytes instead of a 248-byte metav1.ObjectMeta). Nothing is shared with
// the decoded slice it was made from, so that one is freed whole.
//
// BenchmarkSliceCacheBytes (5,000 W4-shaped slices of 10 endpoints)
// measures 96 bytes per endpoint, the slice's own share included, against
// 154 when each endpoint was a 40-byte struct with a string of its own
// (~66 bytes in an 80-byte size class) and each slice a whole ObjectMeta:
// one text per slice with binary UIDs took it to 123, the trimmed
// metadata to 104, the pod namespace taken from the slice (24-byte
// endpoints instead of 32) to 96. At W4's 100,000 endpoints that is ~5.8
// MB less live heap, ~8.7 MB less peak at GOGC 50.
//
// A field added to what the controller reads from a slice is added here
// and in compactSlice; the readers cannot see anything else.
type cachedSlice struct {
	// sliceMeta is the name, namespace, UID, resourceVersion and
	// deletionTimestamp: the informer keys and versions by them.
	sliceMeta
	// service is the kubernetes.io/service-name label ("": none).
	service     string
	addressType discoveryv1.AddressType
	ports       []slicePort
	endpoints   []sliceEndpoint
	// text is every endpoint's address, pod name, pod UID and (when not
	// the slice's) pod namespace, in one allocation; sliceEndpoint.off and
	// its lengths split it.
	text string
}

// slicePort is a port of a slice: its name ("" when unnamed) and number
// (0 when unset).
type slicePort struct {
	name string
	port int32
}

// sliceEndpoint is one endpoint: its first address (the only one with
// defined semantics: "No semantics are defined for additional addresses
// beyond the first, and kube-proxy does not look at them", k8s.io/api
// discovery/v1 Endpoint.Addresses), its Node, the pod its targetRef names
// (Kind Pod only) and its ready and terminating conditions. Its strings
// are in its slice's text (cachedSlice.text): read them through the
// slice (cachedSlice.address, cachedSlice.pod).
type sliceEndpoint struct {
	// node is the Node name, interned: every endpoint on a Node shares it.
	node unique.Handle[string]
	// off is where the endpoint's text starts in the slice's text: the
	// address, the pod's name, the pod's UID (16 bytes when epUUID) and
	// the targetRef's namespace (empty when epPodNSSlice: the slice's),
	// addrLen, nameLen, uidLen and nsLen bytes long.
	off                             uint32
	addrLen, nameLen, uidLen, nsLen uint16
	flags                           endpointFlags
}

type endpointFlags uint8

const (
	epAddress     endpointFlags = 1 << iota // it has an address
	epNode                                  // nodeName is set
	epPod                                   // targetRef names a Pod
	epNotReady                              // conditions.ready is false (unset counts as ready)
	epTerminating                           // conditions.terminating is true
	epUUID                                  // the pod's UID is a canonical UUID, kept as its 16 bytes
	epPodNSSlice                            // the targetRef's namespace is the slice's (and not empty)
)

// maxField is the longest address, pod name, pod UID or pod namespace
// kept. Neither a valid IP nor an FQDN nor an object name nor a UID the
// API server generates comes near it; an endpoint whose address is longer
// is kept without one (no reader uses an endpoint without an address), a
// pod reference whose name, UID or namespace is longer is dropped (it
// cannot name a pod).
const maxField = 1<<16 - 1

// slicePod is the pod an endpoint's targetRef names.
type slicePod struct {
	namespace, name string
	uid             types.UID
}

// address is endpoint e's first address; false when it has none.
func (s *cachedSlice) address(e *sliceEndpoint) (string, bool) {
	return s.text[e.off : e.off+uint32(e.addrLen)], e.flags&epAddress != 0
}

// ready is the endpoint's ready condition, unset counting as ready.
func (e *sliceEndpoint) ready() bool { return e.flags&epNotReady == 0 }

// terminating is the endpoint's terminating condition, unset as false.
func (e *sliceEndpoint) terminating() bool { return e.flags&epTerminating != 0 }

// nodeName is the endpoint's Node; false when nodeName is unset.
func (e *sliceEndpoint) nodeName() (string, bool) {
	if e.flags&epNode == 0 {
		return "", false
	}
	return e.node.Value(), true
}

// pod is the pod endpoint e's targetRef names; false when it names none or
// something else. A UID kept as 16 bytes is formatted again, at the cost
// of an allocation: callers that can skip the endpoint on its flags do so
// before asking.
func (s *cachedSlice) pod(e *sliceEndpoint) (slicePod, bool) {
	if e.flags&epPod == 0 {
		return slicePod{}, false
	}
	n := e.off + uint32(e.addrLen)
	u := n + uint32(e.nameLen)
	ns := u + uint32(e.uidLen)
	uid := s.text[u:ns]
	if e.flags&epUUID != 0 {
		var u uuid.UUID
		copy(u[:], uid)
		uid = u.String()
	}
	p := slicePod{namespace: s.text[ns : ns+uint32(e.nsLen)], name: s.text[n:u], uid: types.UID(uid)}
	if e.flags&epPodNSSlice != 0 {
		p.namespace = s.Namespace
	}
	return p, true
}

// textOf is endpoint e's part of the slice's text, as stored: two
// endpoints with the same flags, lengths and text read the same (with
// epPodNSSlice, if their slices' namespaces are the same).
func (s *cachedSlice) textOf(e *sliceEndpoint) string {
	return s.text[e.off : e.off+uint32(e.addrLen)+uint32(e.nameLen)+uint32(e.uidLen)+uint32(e.nsLen)]
}

// uuidLen is the length of a UUID's canonical text form
// (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, RFC 9562 section 4), the form
// the API server generates object UIDs in (k8s.io/apimachinery
// pkg/util/uuid NewUUID, github.com/google/uuid String).
const uuidLen = 36

// canonicalUUID returns the UUID s is when s is in canonical form with
// lowercase hex digits, the only text uuid.UUID.String gives back
// unchanged; false for any other string (uuid.Parse also takes
// uppercase, braces and the urn: prefix, which would not round-trip).
func canonicalUUID(s string) (uuid.UUID, bool) {
	if len(s) != uuidLen || strings.ToLower(s) != s {
		return uuid.UUID{}, false
	}
	u, err := uuid.Parse(s)
	return u, err == nil
}

// GetObjectKind makes cachedSlice a runtime.Object for generic cache code.
func (s *cachedSlice) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the slice (the strings are immutable and shared).
func (s *cachedSlice) DeepCopyObject() runtime.Object { return s.deepCopy() }

func (s *cachedSlice) deepCopy() *cachedSlice {
	out := *s
	if t := s.DeletionTimestamp; t != nil {
		out.DeletionTimestamp = t.DeepCopy()
	}
	out.ports = slices.Clone(s.ports)
	out.endpoints = slices.Clone(s.endpoints)
	return &out
}

// sameBackendsAs reports whether o and s have the same ports and
// endpoints, as far as the controller reads them. Endpoints are compared by
// what they read (their offsets into their slice's text may differ).
func (s *cachedSlice) sameBackendsAs(o *cachedSlice) bool {
	if !slices.Equal(s.ports, o.ports) || len(s.endpoints) != len(o.endpoints) {
		return false
	}
	for i := range s.endpoints {
		a, b := &s.endpoints[i], &o.endpoints[i]
		if a.flags != b.flags || a.node != b.node ||
			a.addrLen != b.addrLen || a.nameLen != b.nameLen || a.uidLen != b.uidLen || a.nsLen != b.nsLen ||
			a.flags&epPodNSSlice != 0 && s.Namespace != o.Namespace ||
			s.textOf(a) != o.textOf(b) {
			return false
		}
	}
	return true
}

// compactSliceTransform is the EndpointSlice informer's transform.
func compactSliceTransform(obj any) (any, error) {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
		return compactSlice(s), nil
	}
	// Its own output (a transform may see it again), tombstones and other
	// types pass unchanged.
	return obj, nil
}

// compactSlice is what the cache keeps of s. It copies every string it
// keeps, so s can be freed whole.
func compactSlice(s *discoveryv1.EndpointSlice) *cachedSlice {
	if s == nil {
		return nil
	}
	out := &cachedSlice{
		sliceMeta: sliceMeta{
			// Namespaces are few: one interned copy each.
			Name: strings.Clone(s.Name), Namespace: unique.Make(s.Namespace).Value(),
			UID: types.UID(strings.Clone(string(s.UID))), ResourceVersion: strings.Clone(s.ResourceVersion),
		},
		service:     strings.Clone(s.Labels[discoveryv1.LabelServiceName]),
		addressType: addressType(s.AddressType),
	}
	if t := s.DeletionTimestamp; t != nil {
		out.DeletionTimestamp = t.DeepCopy()
	}
	if len(s.Ports) > 0 {
		out.ports = make([]slicePort, len(s.Ports))
		for i, p := range s.Ports {
			out.ports[i] = slicePort{name: strings.Clone(ptrName(p.Name))}
			if p.Port != nil {
				out.ports[i].port = *p.Port
			}
		}
	}
	if len(s.Endpoints) > 0 {
		compactEndpoints(out, s.Endpoints)
	}
	return out
}

// compactEndpoints fills out's endpoints and text from eps: their strings
// in one exact allocation, never one of eps' strings. The first pass
// decides what is kept and how long it is, the second writes it.
func compactEndpoints(out *cachedSlice, eps []discoveryv1.Endpoint) {
	out.endpoints = make([]sliceEndpoint, len(eps))
	n := 0
	for i := range eps {
		e, o := &eps[i], &out.endpoints[i]
		if len(e.Addresses) > 0 && len(e.Addresses[0]) <= maxField {
			o.addrLen = uint16(len(e.Addresses[0]))
			o.flags |= epAddress
		}
		if r := e.TargetRef; r != nil && r.Kind == "Pod" && len(r.Name) <= maxField && len(r.UID) <= maxField && len(r.Namespace) <= maxField {
			o.flags |= epPod
			o.nameLen, o.uidLen, o.nsLen = uint16(len(r.Name)), uint16(len(r.UID)), uint16(len(r.Namespace))
			if _, ok := canonicalUUID(string(r.UID)); ok {
				o.uidLen = 16
				o.flags |= epUUID
			}
			if r.Namespace != "" && r.Namespace == out.Namespace {
				o.nsLen = 0
				o.flags |= epPodNSSlice
			}
		}
		if e.NodeName != nil {
			o.node = unique.Make(*e.NodeName)
			o.flags |= epNode
		}
		if c := e.Conditions; c.Ready != nil && !*c.Ready {
			o.flags |= epNotReady
		}
		if c := e.Conditions; c.Terminating != nil && *c.Terminating {
			o.flags |= epTerminating
		}
		o.off = uint32(n)
		n += int(o.addrLen) + int(o.nameLen) + int(o.uidLen) + int(o.nsLen)
	}
	if n == 0 {
		return
	}
	var b strings.Builder
	b.Grow(n)
	for i := range eps {
		e, o := &eps[i], &out.endpoints[i]
		if o.flags&epAddress != 0 {
			b.WriteString(e.Addresses[0])
		}
		if o.flags&epPod == 0 {
			continue
		}
		b.WriteString(e.TargetRef.Name)
		if o.flags&epUUID != 0 {
			u, _ := canonicalUUID(string(e.TargetRef.UID))
			b.Write(u[:])
		} else {
			b.WriteString(string(e.TargetRef.UID))
		}
		if o.nsLen > 0 {
			b.WriteString(e.TargetRef.Namespace)
		}
	}
	out.text = b.String()
}

// addressType returns t as one of the API's constants where it is one,
// so the cache holds no copy of it.
func addressType(t discoveryv1.AddressType) discoveryv1.AddressType {
	for _, c := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN} {
		if t == c {
			return c
		}
	}
	return discoveryv1.AddressType(strings.Clone(string(t)))
}

// compactSlices converts whole slices (ComputeBackends' callers outside
// the cache).
func compactSlices(in []*discoveryv1.EndpointSlice) []*cachedSlice {
	out := make([]*cachedSlice, 0, len(in))
	for _, s := range in {
		if s != nil {
			out = append(out, compactSlice(s))
		}
	}
	return out
}

// sliceOf is the slice an informer event or cache entry holds: a
// cachedSlice, or a whole EndpointSlice when the informer was started by
// someone else before the transform could be set (converted here, at the
// cost of an allocation per read). Tombstones are unwrapped; anything else
// is nil.
func sliceOf(obj any) *cachedSlice {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch s := obj.(type) {
	case *cachedSlice:
		return s
	case *discoveryv1.EndpointSlice:
		return compactSlice(s)
	}
	return nil
}

// podObjectRef is the ObjectReference a target carries for pod p of a
// slice in namespace ns (a targetRef without a namespace names the
// slice's).
func podObjectRef(p slicePod, ns string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{Kind: "Pod", Namespace: p.namespace, Name: p.name, UID: p.uid}
	if ref.Namespace == "" {
		ref.Namespace = ns
	}
	return ref
}
