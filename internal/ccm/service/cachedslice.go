package service

import (
	"slices"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// map per slice); an endpoint here is one 40-byte struct and one string
// (~120 bytes). It shares no memory with the decoded slice it was made
// from, so that one is freed whole.
//
// A field added to what the controller reads from a slice is added here
// and in compactSlice; the readers cannot see anything else.
type cachedSlice struct {
	// ObjectMeta holds the name, namespace, UID, resourceVersion and
	// deletionTimestamp only: the informer keys and versions by them.
	metav1.ObjectMeta
	// service is the kubernetes.io/service-name label ("": none).
	service     string
	addressType discoveryv1.AddressType
	ports       []slicePort
	endpoints   []sliceEndpoint
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
// (Kind Pod only) and its ready and terminating conditions.
type sliceEndpoint struct {
	// text is the address, the pod's name and the pod's UID, in one
	// allocation; addrLen and nameLen split it.
	text string
	// node is the Node name, interned: every endpoint on a Node shares it.
	node unique.Handle[string]
	// podNS is the targetRef's namespace ("" as written), interned.
	podNS   unique.Handle[string]
	addrLen uint16
	nameLen uint16
	flags   endpointFlags
}

type endpointFlags uint8

const (
	epAddress     endpointFlags = 1 << iota // it has an address
	epNode                                  // nodeName is set
	epPod                                   // targetRef names a Pod
	epNotReady                              // conditions.ready is false (unset counts as ready)
	epTerminating                           // conditions.terminating is true
)

// maxField is the longest address or pod name kept. Neither a valid IP
// nor an FQDN nor a pod name comes near it; an endpoint whose address is
// longer is kept without one (no reader uses an endpoint without an
// address), a pod reference whose name is longer is dropped (it cannot
// name a pod).
const maxField = 1<<16 - 1

// slicePod is the pod an endpoint's targetRef names.
type slicePod struct {
	namespace, name string
	uid             types.UID
}

// address is the endpoint's first address; false when it has none.
func (e *sliceEndpoint) address() (string, bool) {
	return e.text[:e.addrLen], e.flags&epAddress != 0
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

// pod is the pod the endpoint's targetRef names; false when it names none
// or something else.
func (e *sliceEndpoint) pod() (slicePod, bool) {
	if e.flags&epPod == 0 {
		return slicePod{}, false
	}
	a, n := int(e.addrLen), int(e.addrLen)+int(e.nameLen)
	return slicePod{namespace: e.podNS.Value(), name: e.text[a:n], uid: types.UID(e.text[n:])}, true
}

// GetObjectKind makes cachedSlice a runtime.Object for generic cache code.
func (s *cachedSlice) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the slice (the strings are immutable and shared).
func (s *cachedSlice) DeepCopyObject() runtime.Object { return s.deepCopy() }

func (s *cachedSlice) deepCopy() *cachedSlice {
	out := *s
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.ports = slices.Clone(s.ports)
	out.endpoints = slices.Clone(s.endpoints)
	return &out
}

// sameBackendsAs reports whether o and s have the same ports and
// endpoints, as far as the controller reads them.
func (s *cachedSlice) sameBackendsAs(o *cachedSlice) bool {
	return slices.Equal(s.ports, o.ports) && slices.Equal(s.endpoints, o.endpoints)
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
		ObjectMeta: metav1.ObjectMeta{
			Name: strings.Clone(s.Name), Namespace: strings.Clone(s.Namespace),
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
		out.endpoints = make([]sliceEndpoint, len(s.Endpoints))
		for i := range s.Endpoints {
			out.endpoints[i] = compactEndpoint(&s.Endpoints[i])
		}
	}
	return out
}

func compactEndpoint(e *discoveryv1.Endpoint) sliceEndpoint {
	var out sliceEndpoint
	var addr, name, uid string
	if len(e.Addresses) > 0 && len(e.Addresses[0]) <= maxField {
		addr = e.Addresses[0]
		out.flags |= epAddress
	}
	if r := e.TargetRef; r != nil && r.Kind == "Pod" && len(r.Name) <= maxField {
		name, uid = r.Name, string(r.UID)
		out.podNS = unique.Make(r.Namespace)
		out.flags |= epPod
	}
	if e.NodeName != nil {
		out.node = unique.Make(*e.NodeName)
		out.flags |= epNode
	}
	if c := e.Conditions; c.Ready != nil && !*c.Ready {
		out.flags |= epNotReady
	}
	if c := e.Conditions; c.Terminating != nil && *c.Terminating {
		out.flags |= epTerminating
	}
	if n := len(addr) + len(name) + len(uid); n > 0 {
		// One exact allocation, never one of e's strings.
		var b strings.Builder
		b.Grow(n)
		b.WriteString(addr)
		b.WriteString(name)
		b.WriteString(uid)
		out.text = b.String()
	}
	out.addrLen, out.nameLen = uint16(len(addr)), uint16(len(name))
	return out
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
