package routes

import (
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/providerid"
)

// nextHopInstance is the only next hop type this controller writes.
const nextHopInstance = "Instance"

// maxDescription is the cloud's limit on a route entry's Description.
const maxDescription = 256

// target is one route the cluster needs: a Node's podCIDR via its instance.
type target struct {
	Node     string
	Instance string
	CIDR     netip.Prefix
}

// routeKey names one destination in one route table; destinations are
// unique per table, so it identifies an entry.
type routeKey struct {
	Table string
	Dst   string
}

// creation is an entry to add for a target.
type creation struct {
	Table  string
	Target target
}

// deletion is an entry to remove; Node is the Node it served, when known,
// so that events land on it.
type deletion struct {
	Entry entry
	Node  string
	// Why says, for logs and plans, which rule found the entry stale.
	Why string
	// Departed is the key of the deleted Node's memory (departed.key) the
	// entry was found by: it is kept until this deletion succeeds.
	Departed string
}

// Reasons of deletions.
const (
	whyStale    = "marked as this cluster's, no Node wants it"
	whyDeparted = "unmarked route of a deleted Node"
	whyVanished = "unmarked route to an instance that no longer exists"
)

// adoption is an unmarked entry (the existing CCM's) that is a Node's route
// as it is: used without a write.
type adoption struct {
	Entry entry
	Node  string
}

// marking is a Description to write onto an entry: the marker of the Node
// that adopts it, or, when Release is set, the hand-off of an excluded
// Node's entry (releasedDescription), after which it is never deleted.
type marking struct {
	Entry       entry
	Node        string
	Description string
	Release     bool
}

// Entry statuses in which the cloud refuses writes to the entry
// (IncorrectRouteEntryStatus); the entry settles by itself.
var busyStatuses = map[string]bool{"Pending": true, "Modifying": true}

// conflict is an entry inside the cluster CIDR that this cluster did not
// create and will not delete; Nodes are those whose podCIDR it overlaps.
type conflict struct {
	Entry entry
	Nodes []string
}

// plan is what one pass must do to make the tables match the Nodes.
type plan struct {
	Deletes   []deletion
	Creates   []creation
	Conflicts []conflict
	// Present are the wanted routes that already exist (Pending or Available).
	Present map[routeKey]bool
	// Blocked are wanted routes whose destination is held by a conflict.
	Blocked map[routeKey]bool
	// Marks are Description writes: adopted entries with an empty
	// Description (or a hand-off of this cluster) marked as ours, so that
	// they can still be proven ours once their Node is gone; and excluded
	// Nodes' entries handed off, so that they outlive their Node.
	Marks []marking
	// Deferred are marks to write once their entry leaves a busy status.
	Deferred []marking
	// Adopted are the unmarked entries that are a Node's route as they
	// are (the existing CCM's): present, never written.
	Adopted []adoption
	// Unverified are next-hop instances, sorted, of unmarked entries that
	// are deleted if the instance no longer exists (nodeSet.Vanished) and
	// whose existence nodeSet does not know.
	Unverified []string
}

// nodeSet is what the route controller needs to know about the Nodes.
type nodeSet struct {
	// Targets are the wanted routes, one per eligible Node podCIDR.
	Targets []target
	// ExcludedNodes and ExcludedInstances are left alone: their routes are
	// neither created nor deleted (excluded, uninitialized, being deleted,
	// or Ready=Unknown Nodes).
	ExcludedNodes     map[string]bool
	ExcludedInstances map[string]bool
	// Released are the Nodes excluded by label or providerID, alive or
	// deleted since: entries carrying our marker for them are handed off
	// (releasedDescription), so that no later pass, of this process or
	// another, deletes them once the Node is gone.
	Released map[string]bool
	// Instances are the instances of every listed Node (by providerID),
	// managed or not: an unmarked entry via one of them is never deleted
	// for want of its instance.
	Instances map[string]bool
	// Departed are deleted Nodes, as their delete event left them, whose
	// unmarked entries (the existing CCM's) go like marked ones.
	Departed []departed
	// Vanished are instances known not to exist in ECS any more (instance
	// ids are never reused): unmarked entries via them route to nothing.
	Vanished map[string]bool
}

// departed is a deleted Node's last state: an unmarked entry to one of its
// podCIDRs via its instance is its route.
type departed struct {
	Node     string
	Instance string
	CIDRs    []netip.Prefix
}

// key tells apart two Nodes of one name deleted before a pass.
func (d departed) key() string { return d.Node + "/" + d.Instance }

// departedNode returns the departed Node whose route an unmarked entry to
// dst via hop is.
func departedNode(ds []departed, dst netip.Prefix, hop string) (departed, bool) {
	for _, d := range ds {
		if d.Instance != hop {
			continue
		}
		for _, p := range d.CIDRs {
			if p == dst {
				return d, true
			}
		}
	}
	return departed{}, false
}

// newDeparted is what a deleted Node leaves for the pass to clean up, or
// false when it could have no route (no instance or podCIDR).
func newDeparted(n *corev1.Node) (departed, bool) {
	_, id, err := providerid.Parse(n.Spec.ProviderID)
	if err != nil {
		return departed{}, false
	}
	d := departed{Node: n.Name, Instance: id}
	for _, s := range podCIDRs(n) {
		if p, err := netip.ParsePrefix(s); err == nil {
			d.CIDRs = append(d.CIDRs, p.Masked())
		}
	}
	return d, len(d.CIDRs) > 0
}

// marker is the Description prefix that proves an entry belongs to the cluster.
func marker(clusterID string) string { return "k8s/" + clusterID + "/" }

// description is the Description given to a Node's entries.
func description(clusterID, node string) string { return prefixed(marker(clusterID), node) }

// prefixed is prefix+node within the cloud's Description limit.
func prefixed(prefix, node string) string {
	d := prefix + node
	if len(d) > maxDescription {
		d = d[:maxDescription]
	}
	return d
}

// markedNode returns the Node named in an entry's Description when the
// entry carries this cluster's marker.
func markedNode(clusterID, desc string) (string, bool) {
	if n, ok := strings.CutPrefix(desc, marker(clusterID)); ok {
		return n, true
	}
	return "", false
}

// ParseMarker returns the cluster id and Node named by a Description of
// the form this controller gives its entries (k8s/<cluster>/<node>), for
// finding the cluster id of a cloud-config without one.
func ParseMarker(desc string) (clusterID, node string, ok bool) {
	rest, ok := strings.CutPrefix(desc, "k8s/")
	if !ok {
		return "", "", false
	}
	clusterID, _, _ = strings.Cut(rest, "/")
	node, ok = markedNode(clusterID, desc)
	if !ok || clusterID == "" || node == "" {
		return "", "", false
	}
	return clusterID, node, true
}

// releasedMarker is the Description prefix of the entries this cluster
// created for a Node that was then excluded. It must not start with
// marker(clusterID): an entry carrying it is not ours to delete, for this
// version and for older ones, which know only marker.
func releasedMarker(clusterID string) string { return "k8s-excluded/" + clusterID + "/" }

// releasedDescription is the Description an excluded Node's entry is
// handed off with.
func releasedDescription(clusterID, node string) string {
	return prefixed(releasedMarker(clusterID), node)
}

// released reports whether an entry was handed off by this cluster.
func released(clusterID, desc string) bool {
	return strings.HasPrefix(desc, releasedMarker(clusterID))
}

// uninitialized reports whether the cloud-node controller has yet to
// initialize the Node (it still carries the uninitialized taint).
func uninitialized(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == cloudapi.TaintExternalCloudProvider {
			return true
		}
	}
	return false
}

// readyUnknown reports whether the Node's Ready condition is Unknown: its
// kubelet stopped reporting (the node lifecycle controller's
// NodeStatusUnknown) or never did. A Node without a Ready condition yet is
// not Unknown, as for the existing CCM, which skips only the Unknown one.
func readyUnknown(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionUnknown
		}
	}
	return false
}

// podCIDRs returns a Node's podCIDRs, from spec.podCIDRs or the older
// single field.
func podCIDRs(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

// skipped explains why a Node gets no route, for logs.
type skipped struct {
	Node   string
	Reason string
}

// leaveAlone records a Node whose routes are neither created nor deleted.
func (ns *nodeSet) leaveAlone(name, providerID string) {
	ns.ExcludedNodes[name] = true
	if _, id, err := providerid.Parse(providerID); err == nil {
		ns.ExcludedInstances[id] = true
	}
}

// frozen says why a Node's routes are left as they are for now (no route
// created, none deleted, NetworkUnavailable untouched), or "" when they are
// managed. The routes of such a Node may still carry traffic of pods
// running there, so they are kept; only new ones wait.
func frozen(n *corev1.Node) string {
	switch {
	case uninitialized(n):
		// A providerID kubelet set (--provider-id) is not yet confirmed by
		// the cloud-node controller: routing a podCIDR to it could send pod
		// traffic to whatever instance it names.
		return "not initialized yet (uninitialized taint)"
	case n.DeletionTimestamp != nil:
		// Its pods run until the Node object is gone (finalizers may hold
		// it for long); its routes go then, with the Node.
		return "being deleted"
	case readyUnknown(n):
		// A kubelet that stopped reporting is not a stopped instance:
		// deleting the route would cut pods still running there, and
		// recreating it on every flap would churn the VPC.
		return "Ready condition is Unknown"
	}
	return ""
}

// within reports whether p lies inside one of the cluster CIDRs.
func within(p netip.Prefix, cidrs []netip.Prefix) bool {
	for _, c := range cidrs {
		if c.Bits() <= p.Bits() && c.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// nodesToTargets decides which routes the Nodes need: those of Nodes whose
// instance is known, i.e. initialized (no uninitialized taint) with a
// providerID in the VPC's region, not excluded, not being deleted and whose
// Ready condition is not Unknown. Only podCIDRs inside the cluster CIDRs
// count (IPv6 ones only with an IPv6 cluster CIDR); a podCIDR claimed by two
// Nodes goes to the first by name. An address is not needed: the next hop is
// the instance.
func nodesToTargets(all []*corev1.Node, clusterCIDRs []netip.Prefix, region string) (nodeSet, []skipped) {
	ns := nodeSet{ExcludedNodes: map[string]bool{}, ExcludedInstances: map[string]bool{}, Released: map[string]bool{}, Instances: map[string]bool{}}
	var skips []skipped
	sorted := append([]*corev1.Node(nil), all...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	claimed := map[string]string{}
	for _, n := range sorted {
		if _, id, err := providerid.Parse(n.Spec.ProviderID); err == nil {
			ns.Instances[id] = true
		}
		if nodes.Excluded(n) {
			ns.leaveAlone(n.Name, n.Spec.ProviderID)
			ns.Released[n.Name] = true
			continue
		}
		if n.Spec.ProviderID == "" {
			skips = append(skips, skipped{n.Name, "no providerID yet"})
			continue
		}
		if why := frozen(n); why != "" {
			ns.leaveAlone(n.Name, n.Spec.ProviderID)
			skips = append(skips, skipped{n.Name, why})
			continue
		}
		r, id, err := providerid.Parse(n.Spec.ProviderID)
		if err != nil {
			skips = append(skips, skipped{n.Name, err.Error()})
			continue
		}
		if region != "" && r != region {
			skips = append(skips, skipped{n.Name, "instance is in region " + r + ", the VPC in " + region})
			continue
		}
		for _, s := range podCIDRs(n) {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				skips = append(skips, skipped{n.Name, "podCIDR " + s + " does not parse"})
				continue
			}
			p = p.Masked()
			if !p.Addr().Is4() && !hasIPv6(clusterCIDRs) {
				// An IPv4 cluster: its Nodes' IPv6 podCIDRs are not ours to route.
				continue
			}
			if !within(p, clusterCIDRs) {
				skips = append(skips, skipped{n.Name, "podCIDR " + p.String() + " is outside the cluster CIDR"})
				continue
			}
			if other, dup := claimed[p.String()]; dup {
				skips = append(skips, skipped{n.Name, "podCIDR " + p.String() + " is also Node " + other + "'s"})
				continue
			}
			claimed[p.String()] = n.Name
			ns.Targets = append(ns.Targets, target{Node: n.Name, Instance: id, CIDR: p})
		}
	}
	return ns, skips
}

// diff compares the wanted routes with the tables' custom entries.
//
// An entry is kept when a Node wants its destination with its next hop,
// whoever made it. One with an empty Description, as the existing CCM
// leaves them, is used as it is (Adopted, no write: a migration costs
// nothing); one this cluster handed off (its Node was excluded, now it is
// not) is marked as the Node's again; any other Description (ours, another
// cluster's, the user's) is never rewritten. Entries of Nodes left alone
// (ExcludedNodes, ExcludedInstances) and handed-off ones are neither
// deleted nor reported; an excluded Node's entry still carrying our marker
// is handed off. It is deleted when it carries this cluster's marker but is
// not wanted (deleted Node, changed podCIDR, wrong next hop); when it is
// unmarked, only if it is a Departed Node's route (its podCIDR via its
// instance), or if it is via an instance of no listed Node that is known to
// be gone (Vanished): it routes to nothing and would block the next Node
// given its podCIDR. An unmarked entry via an instance of no Node whose
// existence is unknown is reported in Unverified, for the caller to check
// and plan again. Anything else inside the cluster CIDR, including
// unmarked entries via a Node's instance to another destination, may be the
// user's: a conflict, reported and left in place. An entry left in place on
// the destination a Node wants, with another next hop, is a conflict too:
// it blocks the Node's create, which would only come back Duplicate.
// Entries outside the cluster CIDR are never looked at.
func diff(clusterID string, clusterCIDRs []netip.Prefix, tables []string, ns nodeSet, entries map[string][]entry) plan {
	pl := plan{Present: map[routeKey]bool{}, Blocked: map[routeKey]bool{}}
	unverified := map[string]bool{}
	want := map[string]target{}
	for _, t := range ns.Targets {
		want[t.CIDR.String()] = t
	}
	for _, table := range tables {
		for _, e := range entries[table] {
			p, err := netip.ParsePrefix(e.Dst)
			if err != nil {
				continue
			}
			p = p.Masked()
			if !within(p, clusterCIDRs) {
				continue
			}
			key := routeKey{table, p.String()}
			t, wanted := want[key.Dst]
			if wanted && e.HopType == nextHopInstance && e.HopID == t.Instance {
				pl.Present[key] = true
				switch {
				case e.Description == "":
					pl.Adopted = append(pl.Adopted, adoption{Entry: e, Node: t.Node})
				case released(clusterID, e.Description):
					pl.mark(marking{Entry: e, Node: t.Node, Description: description(clusterID, t.Node)})
				}
				continue
			}
			owner, marked := markedNode(clusterID, e.Description)
			if (marked && ns.ExcludedNodes[owner]) || released(clusterID, e.Description) ||
				(e.HopType == nextHopInstance && ns.ExcludedInstances[e.HopID]) {
				if marked && ns.Released[owner] {
					pl.mark(marking{Entry: e, Node: owner, Description: releasedDescription(clusterID, owner), Release: true})
				}
				if wanted {
					pl.conflict(e, p, key, true, ns.Targets)
				}
				continue
			}
			// The event of a deletion belongs to the Node whose route
			// replaces the entry, if any.
			replacing := ""
			if wanted {
				replacing = t.Node
			}
			if marked {
				pl.Deletes = append(pl.Deletes, deletion{Entry: e, Node: or(replacing, owner), Why: whyStale})
				continue
			}
			if e.Description == "" && e.HopType == nextHopInstance {
				if d, ok := departedNode(ns.Departed, p, e.HopID); ok {
					pl.Deletes = append(pl.Deletes, deletion{Entry: e, Node: or(replacing, d.Node), Why: whyDeparted, Departed: d.key()})
					continue
				}
				if !ns.Instances[e.HopID] {
					if ns.Vanished[e.HopID] {
						pl.Deletes = append(pl.Deletes, deletion{Entry: e, Node: replacing, Why: whyVanished})
						continue
					}
					unverified[e.HopID] = true
				}
			}
			pl.conflict(e, p, key, wanted, ns.Targets)
		}
		for _, t := range ns.Targets {
			key := routeKey{table, t.CIDR.String()}
			if !pl.Present[key] && !pl.Blocked[key] {
				pl.Creates = append(pl.Creates, creation{Table: table, Target: t})
			}
		}
	}
	for id := range unverified {
		pl.Unverified = append(pl.Unverified, id)
	}
	sort.Strings(pl.Unverified)
	return pl
}

// or returns a, or b when a is empty.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// mark queues a Description write, for later when the entry is busy.
func (pl *plan) mark(m marking) {
	if busyStatuses[m.Entry.Status] {
		pl.Deferred = append(pl.Deferred, m)
		return
	}
	pl.Marks = append(pl.Marks, m)
}

// conflict records an entry on p that the pass leaves in place, naming the
// Nodes whose podCIDR it overlaps; when a Node wants exactly its
// destination, key is blocked.
func (pl *plan) conflict(e entry, p netip.Prefix, key routeKey, wanted bool, targets []target) {
	c := conflict{Entry: e}
	for _, t := range targets {
		if t.CIDR.Overlaps(p) {
			c.Nodes = append(c.Nodes, t.Node)
		}
	}
	if wanted {
		pl.Blocked[key] = true
	}
	pl.Conflicts = append(pl.Conflicts, c)
}

// normalize returns a CIDR in canonical form, as the cloud echoes it.
func normalize(cidr string) string {
	if p, err := netip.ParsePrefix(cidr); err == nil {
		return p.Masked().String()
	}
	return cidr
}
