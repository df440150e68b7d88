package service

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// Sharing: several Services, of one namespace or several, may borrow one
// load balancer through the id annotation. Its own settings (name, spec,
// bandwidth, billing, tags, protections, zones, cross-zone, security
// groups) have one owner, the administrator who granted it; a borrower's
// annotations configure them only while that Service is its only borrower,
// as the existing CCM does for a specified load balancer. While several
// Services borrow it, none of them writes a load-balancer-level setting:
// a mismatch is a Warning (EventSharedSettingIgnored) and the cloud keeps
// its value, so two teams cannot rewrite each other's load balancer on
// every sync.
//
// Who shares is decided once per sync, here, from the cluster: the other
// Services whose id annotation or loadbalancer-id label names the load
// balancer (an index of the Service informer, no API call). Both are
// writable by a namespace, so a forged claim can only make a load balancer
// look shared: it freezes its settings, and never lets anyone write them.
// Borrowers in other clusters are not seen (see docs/service-controller.md).

// Event reasons of shared load balancers.
const (
	// EventSharedSettingIgnored reports an annotation asking for a load
	// balancer setting that is not applied because other Services borrow
	// the same load balancer.
	EventSharedSettingIgnored = "SharedLoadBalancerSettingIgnored"
	// EventSharedPortsSkipped reports Service ports that get no server
	// group on a shared borrowed load balancer: they have no listener of
	// the Service and no vgroup-port binding, or they are above
	// MaxGroupsPerSharedLB.
	EventSharedPortsSkipped = "SharedLoadBalancerPortsSkipped"
	// EventDuplicateLoadBalancers reports several load balancers tagged
	// for one Service (a create whose answer was lost, then a crash): the
	// oldest is used, and Delete deletes them all.
	EventDuplicateLoadBalancers = "DuplicateLoadBalancers"
)

// MaxGroupsPerSharedLB is how many server groups of its own one Service
// may have on a borrowed load balancer that other Services borrow too, CLB
// and NLB alike. It keeps one borrower from filling the load balancer's
// quotas for its co-tenants: a CLB holds 200 backend servers by default
// (10 groups on 20 Nodes; past it the next sync fails with
// InstanceBackendServerNumberOverLimit) and 50 listeners; an NLB 50
// listeners and 400 servers (one group per listener port, so 10 groups
// leave 40 listeners to the others). Ports above it get no group and a
// Warning.
const MaxGroupsPerSharedLB = 10

// SharedGroup is one Service port's own server group on a shared borrowed
// load balancer, as LimitShared sees it.
type SharedGroup struct {
	// Ports name the Service ports it serves (port/protocol), for the
	// Warning.
	Ports []string
	// Bound is a port bound by vgroup-port to a user's group: it has no
	// group of its own and is never limited.
	Bound bool
	// Used is an existing group some listener forwards to: never taken
	// away, and it counts against the limit.
	Used bool
	// Servable is a group that exists already (made while the Service was
	// the only borrower, perhaps for a listener its owner added in the
	// console) or that a listener of the Service may serve: one of its
	// ports is free, held by a listener of the Service's, or by a user's
	// that force-override-listeners takes over.
	Servable bool
}

// SharedVerdict is what becomes of one port's group on a shared load
// balancer.
type SharedVerdict int

const (
	// SharedKeep keeps (or makes) the group and its listener.
	SharedKeep SharedVerdict = iota
	// SharedNoListener makes no group: no listener of the Service may
	// serve it. Its listener stays planned, so a conflict with the
	// listener holding the port is still reported.
	SharedNoListener
	// SharedOverCap makes no group and no listener: the Service has
	// MaxGroupsPerSharedLB groups already; one of its that exists is
	// deleted.
	SharedOverCap
)

// LimitShared decides, for a Service whose borrowed load balancer b other
// Services share too, which of its groups (in port order) are made or
// kept: groups only for ports a listener of the Service serves, at most
// MaxGroupsPerSharedLB of them, never taking away one a listener uses
// (those are counted first). It returns one verdict per group and the
// Warning naming the ports skipped (nil when none was); on a load balancer
// that is not shared every verdict is SharedKeep.
func LimitShared(b *Binding, groups []SharedGroup) ([]SharedVerdict, *Warning) {
	out := make([]SharedVerdict, len(groups))
	if !b.Shared() {
		return out, nil
	}
	own := 0
	for _, g := range groups {
		if !g.Bound && g.Used {
			own++
		}
	}
	var noListener, overCap []string
	for i, g := range groups {
		switch {
		case g.Bound || g.Used:
		case !g.Servable:
			out[i] = SharedNoListener
			noListener = append(noListener, g.Ports...)
		case own >= MaxGroupsPerSharedLB:
			out[i] = SharedOverCap
			overCap = append(overCap, g.Ports...)
		default:
			own++
		}
	}
	if len(noListener)+len(overCap) == 0 {
		return out, nil
	}
	w := SharedPortsSkipped(b, noListener, overCap)
	return out, &w
}

// KeepShared applies LimitShared's verdicts to the groups they were given
// for, in the same order (port is a group's Service port): the groups made
// or kept, and the Service ports whose listeners stay in the model. Those
// are all but the ports over the cap: a port without a listener of the
// Service keeps its listener planned, so the conflict with the listener
// holding the port is still reported.
func KeepShared[G any](groups []G, verdicts []SharedVerdict, port func(G) PortKey) (kept []G, listeners map[PortKey]bool) {
	listeners = map[PortKey]bool{}
	for i, g := range groups {
		if verdicts[i] != SharedOverCap {
			listeners[port(g)] = true
		}
		if verdicts[i] == SharedKeep {
			kept = append(kept, g)
		}
	}
	return kept, listeners
}

// Shared reports whether other Services borrow the bound load balancer
// too, so none of them may change its own settings.
func (b *Binding) Shared() bool { return b != nil && b.Reused && len(b.SharedWith) > 0 }

// SharedSettingIgnored is the Warning for an annotation asking a shared
// load balancer for want while it has have.
func SharedSettingIgnored(b *Binding, key, have, want string) Warning {
	if have == "" {
		have = `""`
	}
	return Warning{Reason: EventSharedSettingIgnored, Message: fmt.Sprintf(
		"%s=%s is not applied: load balancer %s has %s and is shared with %s; while several Services borrow one load balancer none of them changes its settings (its administrator does)",
		key, want, b.ID(), have, strings.Join(b.SharedWith, ", "))}
}

// SharedPortsSkipped is the Warning for the Service ports that get no
// server group of the Service on a shared load balancer: without a
// listener (listeners the Service does not manage, or a port held by
// another listener) and above MaxGroupsPerSharedLB.
func SharedPortsSkipped(b *Binding, noListener, overCap []string) Warning {
	var parts []string
	if len(noListener) > 0 {
		parts = append(parts, fmt.Sprintf("port(s) %s, which have no listener of this Service (on a borrowed load balancer it manages listeners only with force-override-listeners, and never takes over another Service's; or bind a group with vgroup-port)", portList(noListener)))
	}
	if len(overCap) > 0 {
		parts = append(parts, fmt.Sprintf("port(s) %s, which are above the limit of %d server groups per Service on a shared load balancer", portList(overCap), MaxGroupsPerSharedLB))
	}
	return Warning{Reason: EventSharedPortsSkipped, Message: fmt.Sprintf(
		"No server group is made for %s: load balancer %s is shared with %s",
		strings.Join(parts, "; "), b.ID(), strings.Join(b.SharedWith, ", "))}
}

// SplitSharedTags splits the tags a sync would set on a shared load
// balancer into the reused marker, which records the binding and is still
// set, and the additional tags, which are the load balancer's settings and
// are not.
func SplitSharedTags(set []naming.Tag) (keep, ignored []naming.Tag) {
	for _, t := range set {
		if t.Key == naming.TagKeyReused {
			keep = append(keep, t)
		} else {
			ignored = append(ignored, t)
		}
	}
	return keep, ignored
}

// TagsWant spells tags as the additional-resource-tags annotation does.
func TagsWant(tags []naming.Tag) string {
	parts := make([]string, 0, len(tags))
	for _, t := range tags {
		parts = append(parts, t.Key+"="+t.Value)
	}
	return strings.Join(parts, ",")
}

// TagsHave spells the current values of the keys of tags ("" for a key
// the load balancer does not carry).
func TagsHave(current map[string]string, tags []naming.Tag) string {
	parts := make([]string, 0, len(tags))
	for _, t := range tags {
		parts = append(parts, t.Key+"="+current[t.Key])
	}
	return strings.Join(parts, ",")
}

// portList spells at most 10 ports and how many more there are, to keep
// the event short.
func portList(ports []string) string {
	const shown = 10
	if len(ports) <= shown {
		return strings.Join(ports, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ports[:shown], ", "), len(ports)-shown)
}

// borrowIndex indexes Services by the load balancer ids they claim.
const borrowIndex = "borrowedLoadBalancer"

// claims are the load balancer ids a Service holds or asks for: its id
// annotation and its loadbalancer-id label, while it wants a load balancer
// or still holds one (a finalizer).
func claims(svc *corev1.Service) []string {
	if svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer && len(svc.Finalizers) == 0 {
		return nil
	}
	var out []string
	if id := strings.TrimSpace(svc.Annotations[annotations.Key("id")]); id != "" {
		out = append(out, id)
	}
	if id := svc.Labels[naming.LabelLoadBalancerID]; id != "" && !slices.Contains(out, id) {
		out = append(out, id)
	}
	return out
}

func borrowClaims(obj any) ([]string, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, nil
	}
	return claims(svc), nil
}

// sharers are the other Services (namespace/name) claiming lbID.
func (c *Controller) sharers(svc *corev1.Service, lbID string) []string {
	if c.borrowers == nil || lbID == "" {
		return nil
	}
	objs, err := c.borrowers.ByIndex(borrowIndex, lbID)
	if err != nil {
		return nil
	}
	var out []string
	for _, o := range objs {
		other, ok := o.(*corev1.Service)
		if !ok || other.UID == svc.UID {
			continue
		}
		out = append(out, other.Namespace+"/"+other.Name)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// share fills in the Services b's borrowed load balancer is shared with.
func (c *Controller) share(svc *corev1.Service, b *Binding) {
	if b == nil || !b.Reused {
		return
	}
	b.SharedWith = c.sharers(svc, b.ID())
}

// borrowersChanged queues, for a full sync, the other Services claiming a
// load balancer whose set of borrowers the change of o into n (nil for an
// add or a delete) moves: one that becomes the only borrower applies its
// settings, one that gains a co-borrower stops making groups for ports
// without a listener.
func (c *Controller) borrowersChanged(o, n any) {
	if c.borrowers == nil || len(c.synced) == 0 || !c.synced[0]() {
		// The first listing is no change: every Service syncs anyway.
		return
	}
	was, is := asService(o), asService(n)
	before, after := claims(was), claims(is)
	if slices.Equal(before, after) && (was == nil) == (is == nil) {
		return
	}
	self := is
	if self == nil {
		self = was
	}
	if self == nil {
		return
	}
	for _, id := range append(before, after...) {
		objs, err := c.borrowers.ByIndex(borrowIndex, id)
		if err != nil {
			continue
		}
		for _, obj := range objs {
			other, ok := obj.(*corev1.Service)
			if !ok || other.UID == self.UID {
				continue
			}
			// A zero time makes verifyDue run a full sync, not a backend pass.
			c.verified.Store(other.UID, time.Time{})
			if key, ok := c.keyOf(other, "co-borrower of "+id+" changed"); ok {
				c.queue.Add(key)
			}
		}
	}
	klog.V(4).InfoS("Borrowers of a load balancer changed", "service", self.Namespace+"/"+self.Name, "before", before, "after", after)
}

func asService(obj any) *corev1.Service {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	svc, _ := obj.(*corev1.Service)
	return svc
}

// PlanLBTags plans the tags of a load balancer from s: the additional
// tags (and, on a borrowed one, the mark of the borrowing) to set, and the
// ones dropped from the annotation to remove (PlanTags). On a shared load
// balancer (shared) only the mark is set: frozen reports the tags the
// annotation asks for that are not written.
func PlanLBTags(current map[string]string, s *annotations.Settings, shared bool, frozen func(suffix, have, want string) bool) (set []naming.Tag, remove []string) {
	want := append([]naming.Tag(nil), s.LoadBalancer.AdditionalTags...)
	if s.Reused() {
		want = append(want, naming.ReusedTag())
	}
	set, remove = naming.PlanTags(current, want, !s.Reused())
	if shared {
		var ignored []naming.Tag
		set, ignored = SplitSharedTags(set)
		if len(ignored) > 0 {
			frozen("additional-resource-tags", TagsHave(current, ignored), TagsWant(ignored))
		}
	}
	return set, remove
}
