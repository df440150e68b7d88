// Package service is the CCM's controller for Services of type
// LoadBalancer. It owns the generic machinery — informers on Services,
// Nodes and EndpointSlices, a per-Service work queue with backoff, the
// finalizer, hash and load-balancer-id labels, status, events and metrics —
// and hands the cloud work to a Provider: one per load balancer kind (CLB
// and NLB), each with its own cloud model, reader, diff and applier.
package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// Target is one backend server the Service's traffic should reach on one
// Service port.
type Target struct {
	// NodeName is the Node the target runs on ("" when unknown).
	NodeName string
	// InstanceID is the ECS instance of the Node (ecs backends).
	InstanceID string
	// IP is the pod IP (eni backends).
	IP string
	// Port is the backend port: the nodePort (ecs) or the pod port (eni).
	Port int32
	// Weight is 0–100.
	Weight int
	// Pod is the pod an eni target's EndpointSlice names (nil when the
	// slice names none): the backends resolver checks it.
	Pod *corev1.ObjectReference
	// ENI is the ENI the backends resolver proved holds IP: every pod
	// address a provider is handed has one.
	ENI string
}

// Request is everything a Provider needs to reconcile one Service.
type Request struct {
	// Service is the Service as read from the informer cache (read-only).
	Service *corev1.Service
	// Settings are its parsed annotations.
	Settings *annotations.Settings
	// Backends maps each Service port to its targets, already proven by
	// the backends resolver (backendsResolver) and weighted: a provider
	// registers them as they are.
	Backends map[int32][]Target
	// LoadBalancerID is the id recorded in the Service's label: a hint for
	// Bind, never proof. Once bound it is the proven load balancer's id.
	LoadBalancerID string
	// Binding is the load balancer the Service is proven to use (Bind); for
	// Delete, its own load balancer (a borrowed one is released through the
	// id annotation).
	Binding *Binding
	// ClusterID names our listeners and groups.
	ClusterID string
	// Identity is the Service's cloud identity, computed once per sync by
	// the controller (IdentityOf); a Request built by hand sets it too.
	Identity Identity
	// Immutable are the annotations asking the bound load balancer for a
	// value it cannot change to, found by the controller once it is bound;
	// the provider reports them and never applies them.
	Immutable []annotations.Change
	// Unregistered are pod IPs the resolver kept out of Backends because no
	// ENI holds them yet; their readiness gates wait.
	Unregistered []string

	// gated are the pods among the eni targets whose readiness gate waits
	// for this sync (admitGated).
	gated []gatedPod
	// foreign are the not-ready endpoints naming pods of other namespaces
	// (foreignPods): never read, admitted nor marked, and reported.
	foreign []string
	// pods are the pods this sync read (podView); nil: none read yet.
	pods *podView
}

// Warning is a problem the Provider wants the user to see as a Warning
// event without failing the sync (e.g. an immutable attribute mismatch).
type Warning struct {
	// Reason is the event reason.
	Reason string
	// Message is the event message.
	Message string
}

// Result is what a successful Ensure or SyncBackends reports.
type Result struct {
	// LoadBalancerID is the load balancer serving the Service.
	LoadBalancerID string
	// Ingress is the status to publish; from SyncBackends nil keeps the
	// current one (set it only for a status that changes without the
	// Service, such as the EIPs bound to the load balancer).
	Ingress []corev1.LoadBalancerIngress
	// Warnings are reported as events.
	Warnings []Warning
	// Labels are further labels the provider owns on the Service (from
	// Ensure): each is set to its value, "" removes it, an absent key is
	// left alone. They must be listed in OwnedLabels.
	Labels map[string]string
}

// OwnedLabels are the Service labels the controller and its providers
// write: their changes are not a user's touch, and cleanup removes them.
var OwnedLabels = []string{naming.LabelHash, naming.LabelLoadBalancerID, naming.LabelBackendsHash, naming.LabelSecurityGroupID}

// ErrFullSyncNeeded is returned by SyncBackends when it finds that the load
// balancer or its listeners drifted (deleted out of band, say), so the
// controller runs a full Ensure even though the Service did not change.
var ErrFullSyncNeeded = errors.New("load balancer drifted from the Service: full sync needed")

// Provider is one kind of load balancer: what it does, and a plain
// Descriptor. The controller binds the Service first (the ownership rules,
// which read the cloud through the provider's Finder), then calls Ensure
// when the Service changed since its last successful sync (or has never
// been synced), SyncBackends when only Nodes or endpoints may have
// changed, and Delete when the Service no longer wants a load balancer.
// Every call carries a Request whose Binding is set.
type Provider interface {
	// Finder reads the provider's load balancers for the ownership rules.
	Finder
	// Descriptor says which kind the provider is.
	Descriptor() Descriptor
	// Ensure makes the cloud match the Service: load balancer (created when
	// req.Binding has none), listeners, server groups and backends.
	Ensure(ctx context.Context, req *Request) (*Result, error)
	// SyncBackends reconciles only backend servers, trusting that the load
	// balancer and listeners are as the last Ensure left them.
	SyncBackends(ctx context.Context, req *Request) (*Result, error)
	// Delete releases what req.Binding says the Service holds (ReleaseSet):
	// its own load balancers (deleted, or kept with preserve-lb-on-delete),
	// and on each borrowed one only listeners, groups and members named
	// after the Service. It reports what it did.
	Delete(ctx context.Context, req *Request) (string, error)
}

// Descriptor is what the controller knows of a provider besides what it
// does.
type Descriptor struct {
	// Kind names the load balancer kind in metrics and logs (CLB, NLB).
	Kind string
	// Owner is the annotations owner the provider serves.
	Owner annotations.Owner
	// Finalizer guards the provider's cleanup on the Service.
	Finalizer string
	// Reuse are the provider's parts of the reuse rules.
	Reuse ReuseRules
}

// RetryError asks for a requeue after a fixed delay rather than an
// exponential backoff: the cloud is still configuring something.
type RetryError struct {
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *RetryError) Error() string { return fmt.Sprintf("cloud still configuring: %v", e.Err) }

// Unwrap returns the cause.
func (e *RetryError) Unwrap() error { return e.Err }

// PortKey identifies a Service port by number and protocol: the number,
// marked for UDP. The number alone is ambiguous because Kubernetes allows
// one number once per protocol (53/TCP and 53/UDP), and each may need its
// own group and listener. It stays an int32 so that every map keyed by
// Service port takes it unchanged.
type PortKey = int32

// udpPortKey is a bit above the 16 bits a port number uses.
const udpPortKey PortKey = 1 << 16

// KeyOf returns the PortKey of a Service port: its number, marked when the
// port is UDP (Kubernetes protocol; HTTP, HTTPS and TCPSSL listeners carry
// TCP).
func KeyOf(port int32, udp bool) PortKey {
	if udp {
		return port | udpPortKey
	}
	return port
}

// CreateToken is the ClientToken of a create made for svc: derived from its
// UID (so a create retried after a lost response or a crash replays the
// first, with nothing kept in memory), from the load balancer it had before
// (so recreating one deleted out of band is a new create), and from the
// create's parameters (so changed annotations never hit
// IdempotentParameterMismatch).
func CreateToken(svc *corev1.Service, previous, params string) string {
	sum := sha256.Sum256([]byte(string(svc.UID) + "|" + previous + "|" + params))
	return "ccm-" + hex.EncodeToString(sum[:16])
}

// createAttempts bounds the creates one CreateIdempotent makes: each
// further one follows a token that replayed a deleted load balancer.
const createAttempts = 3

// CreateIdempotent creates the Service's load balancer with a token from
// CreateToken and hands it to use, the rest of the sync, without reading
// it back: the create's answer and request describe it. A token can replay
// a create whose load balancer has been deleted since (out of band, before
// the Service's label recorded it, so the ownership rules could not name
// it as gone); the cloud then answers with that id, and use's first call on
// it fails. When gone says use's error is that, the next create takes a
// token derived from the vanished id, so it is a new create rather than
// the same replay, a bounded number of times.
func CreateIdempotent[T any](ctx context.Context, svc *corev1.Service, previous, params string,
	create func(token string) (T, string, error), use func(T) (*Result, error), gone func(error) bool) (*Result, error) {
	for i := 0; i < createAttempts; i++ {
		lb, id, err := create(CreateToken(svc, previous, params))
		if err != nil {
			return nil, err
		}
		res, err := use(lb)
		if err == nil || !gone(err) {
			return res, err
		}
		klog.FromContext(ctx).Info("The created load balancer no longer exists (a replayed create token, or deleted since); creating anew", "loadBalancer", id, "err", err)
		previous = id
	}
	return nil, &RetryError{Err: fmt.Errorf("created load balancer %s does not exist", previous)}
}
