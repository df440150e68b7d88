package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/providerid"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/ecs"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/nlb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/slb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

// Invariants the checker holds the cluster and the cloud to.
const (
	InvOneLB        = "one load balancer per Service"
	InvListeners    = "listeners = Service ports"
	InvBackends     = "backends = eligible Nodes or endpoints"
	InvNoLeak       = "nothing left for deleted Services"
	InvRoutes       = "routes = Nodes' pod CIDRs"
	InvFinalizer    = "no stuck finalizer"
	InvNoPanic      = "no panic in CCM logs"
	InvSentinels    = "sentinels unchanged"
	InvTenantBorder = "no backend outside the cluster"
	InvSourceRanges = "source ranges admit exactly their addresses"
	InvOnlyLeader   = "only the leader writes"
)

// Violation is one broken invariant with the evidence that shows it.
type Violation struct {
	// Invariant is one of the Inv* names.
	Invariant string `json:"invariant"`
	// Object names the Service, resource or log concerned.
	Object string `json:"object"`
	// Evidence says what was found against what was expected.
	Evidence string `json:"evidence"`
}

func (v Violation) String() string {
	return fmt.Sprintf("[%s] %s: %s", v.Invariant, v.Object, v.Evidence)
}

// cloudState is the emulated cloud read from its store: checking spends
// no API call, so it never meets an injected fault nor a quota.
type cloudState struct {
	SLB slb.State
	NLB nlb.State
	VPC vpc.State
	ECS ecs.State
}

func readCloud(e *emulator.Emulator) (*cloudState, error) {
	dump, err := e.Store.Dump()
	if err != nil {
		return nil, fmt.Errorf("dump the emulator's store: %w", err)
	}
	st := &cloudState{}
	parts := map[string]any{"slb": &st.SLB, "nlb": &st.NLB, "vpc": &st.VPC, "ecs": &st.ECS}
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		raw, ok := dump[name]
		if !ok {
			return nil, fmt.Errorf("the emulator's store has no %s part", name)
		}
		if err := json.Unmarshal(raw, parts[name]); err != nil {
			return nil, fmt.Errorf("decode the %s state: %w", name, err)
		}
	}
	return st, nil
}

func tag(tags []api.Tag, key string) (string, bool) {
	for _, t := range tags {
		if t.Key == key {
			return t.Value, true
		}
	}
	return "", false
}

// ours is the default-name tag of a resource the cluster's CCM created.
func ours(tags []api.Tag) (string, bool) {
	if c, _ := tag(tags, naming.TagKeyCluster); c != clusterID {
		return "", false
	}
	return tag(tags, naming.TagKeyDefaultName)
}

// checker evaluates every invariant once.
type checker struct {
	e     *env
	s     *sentinels
	cloud *cloudState
	// owners maps the default LB name of every Service the workload
	// created to the Service, so a leak names what it was left by.
	owners map[string]string
	out    []Violation
	// checked counts what was compared, so a report shows the checks
	// were not vacuous.
	checked Counts
}

func (c *checker) fail(inv, obj, format string, args ...any) {
	c.out = append(c.out, Violation{Invariant: inv, Object: obj, Evidence: fmt.Sprintf(format, args...)})
}

// check returns every violation, sorted; an error means the state could
// not be read at all.
func check(ctx context.Context, e *env, s *sentinels, owners map[string]string) ([]Violation, Counts, error) {
	st, err := readCloud(e.cloud)
	if err != nil {
		return nil, nil, err
	}
	c := &checker{e: e, s: s, cloud: st, owners: owners, checked: Counts{}}
	svcs, err := e.kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list Services: %w", err)
	}
	nodeList, err := e.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list Nodes: %w", err)
	}
	eps, err := e.kube.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list EndpointSlices: %w", err)
	}
	var nodes []*corev1.Node
	for i := range nodeList.Items {
		nodes = append(nodes, &nodeList.Items[i])
	}
	live := map[string]string{} // default LB name → Service
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		live[naming.DefaultLBName(svc)] = key
		if svc.DeletionTimestamp != nil {
			c.fail(InvFinalizer, key, "deleted at %s and still present with finalizers %v", svc.DeletionTimestamp.UTC().Format("15:04:05"), svc.Finalizers)
			continue
		}
		if svc.Labels[labelRole] == roleGood {
			c.checked["Services"]++
			c.service(svc, nodes, slicesOf(eps.Items, svc))
		}
	}
	c.leaks(live)
	c.routes(nodes)
	c.tenantBorder()
	if s != nil {
		after, err := s.snapshot()
		if err != nil {
			return nil, nil, fmt.Errorf("read the sentinels: %w", err)
		}
		for _, d := range diffSnapshots(s.before, after) {
			c.fail(InvSentinels, "sentinel", "%s", d)
		}
		c.checked["sentinel reads"] = len(after)
	}
	c.panics(e.logPaths())
	c.onlyLeader(e.writes())
	sort.SliceStable(c.out, func(i, j int) bool {
		if c.out[i].Invariant != c.out[j].Invariant {
			return c.out[i].Invariant < c.out[j].Invariant
		}
		return c.out[i].Object < c.out[j].Object
	})
	return c.out, c.checked, nil
}

func slicesOf(all []discoveryv1.EndpointSlice, svc *corev1.Service) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for i := range all {
		sl := &all[i]
		if sl.Namespace == svc.Namespace && sl.Labels[discoveryv1.LabelServiceName] == svc.Name {
			out = append(out, sl)
		}
	}
	return out
}

// lbView is one load balancer, CLB or NLB, as the checker compares it.
type lbView struct {
	id string
	// listeners maps a listener port to its protocol (lower case) and the
	// members of its group as "instance:port".
	listeners map[int32]listenerView
}

type listenerView struct {
	protocol string
	members  []string
	// admits tells whether the listener lets a client address through,
	// and why, from the cloud's own access control: the CLB listener's
	// access control list, the NLB's security groups.
	admits func(netip.Addr) (bool, string)
}

// probes are client addresses the source-range check sends "through"
// each listener: one inside each range the workload uses, one outside
// every range.
var probes = []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("172.16.5.6"), netip.MustParseAddr("203.0.113.9")}

// service checks one Service that must have converged.
func (c *checker) service(svc *corev1.Service, nodes []*corev1.Node, eps []*discoveryv1.EndpointSlice) {
	key := svc.Namespace + "/" + svc.Name
	isNLB := svc.Spec.LoadBalancerClass != nil && *svc.Spec.LoadBalancerClass == annotations.NLBClass
	name := naming.DefaultLBName(svc)
	var mine, wrongKind []lbView
	for kindNLB, lbs := range map[bool][]taggedLB{false: c.clbs(), true: c.nlbs()} {
		for _, lb := range lbs {
			switch {
			case lb.tag != name:
			case kindNLB == isNLB:
				mine = append(mine, lb.view)
			default:
				wrongKind = append(wrongKind, lb.view)
			}
		}
	}
	if len(wrongKind) > 0 {
		c.fail(InvOneLB, key, "load balancers of the other kind tagged for it: %v", ids(wrongKind))
	}
	if len(mine) != 1 {
		c.fail(InvOneLB, key, "%d load balancers tagged %s=%s: %v", len(mine), naming.TagKeyDefaultName, name, ids(mine))
		return
	}
	lb := mine[0]
	if got := svc.Labels[naming.LabelLoadBalancerID]; got != lb.id {
		c.fail(InvOneLB, key, "label %s=%q, the load balancer is %s", naming.LabelLoadBalancerID, got, lb.id)
	}
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		c.fail(InvOneLB, key, "no address in status (load balancer %s)", lb.id)
	}
	settings, err := annotations.Parse(svc, annotations.Defaults{})
	if err != nil {
		c.fail(InvListeners, key, "annotations do not parse: %v", err)
		return
	}
	want := map[int32]string{}
	for _, p := range svc.Spec.Ports {
		want[p.Port] = strings.ToLower(string(p.Protocol))
	}
	for port, l := range lb.listeners {
		if _, ok := want[port]; !ok {
			c.fail(InvListeners, key, "load balancer %s has a %s listener on %d, which is no Service port", lb.id, l.protocol, port)
		}
	}
	backends := service.ComputeBackends(svc, settings, nodes, eps)
	for _, p := range svc.Spec.Ports {
		l, ok := lb.listeners[p.Port]
		if !ok {
			c.fail(InvListeners, key, "load balancer %s has no listener on port %d", lb.id, p.Port)
			continue
		}
		c.checked["listeners"]++
		c.checked["backends"] += len(l.members)
		if l.protocol != want[p.Port] {
			c.fail(InvListeners, key, "listener %d of %s is %s, want %s", p.Port, lb.id, l.protocol, want[p.Port])
		}
		c.sourceRanges(key, lb.id, p.Port, svc.Spec.LoadBalancerSourceRanges, l)
		var exp []string
		for _, t := range backends[p.Port] {
			exp = append(exp, fmt.Sprintf("%s:%d", t.InstanceID, t.Port))
		}
		sort.Strings(exp)
		if strings.Join(exp, ",") != strings.Join(l.members, ",") {
			c.fail(InvBackends, key, "port %d on %s: backends %v, want %v", p.Port, lb.id, l.members, exp)
		}
	}
}

func ids(lbs []lbView) []string {
	var out []string
	for _, l := range lbs {
		out = append(out, l.id)
	}
	return out
}

// taggedLB is a load balancer with its default-name tag ("" if not ours).
type taggedLB struct {
	tag  string
	view lbView
}

func (c *checker) clbs() []taggedLB {
	var out []taggedLB
	for _, id := range slices.Sorted(maps.Keys(c.cloud.SLB.LoadBalancers)) {
		lb := c.cloud.SLB.LoadBalancers[id]
		name, _ := ours(lb.Tags)
		v := lbView{id: id, listeners: map[int32]listenerView{}}
		for _, l := range lb.Listeners {
			lv := listenerView{protocol: strings.ToLower(l.Protocol), admits: c.clbACL(l.Config)}
			if g := c.cloud.SLB.VServerGroups[l.VServerGroupID]; g != nil {
				for _, b := range g.Backends {
					lv.members = append(lv.members, fmt.Sprintf("%s:%d", b.ServerID, b.Port))
				}
			}
			sort.Strings(lv.members)
			v.listeners[int32(l.Port)] = lv
		}
		out = append(out, taggedLB{tag: name, view: v})
	}
	return out
}

func (c *checker) nlbs() []taggedLB {
	byLB := map[string]map[int32]listenerView{}
	for _, l := range c.cloud.NLB.Listeners {
		lv := listenerView{protocol: strings.ToLower(l.Protocol)}
		if g := c.cloud.NLB.ServerGroups[l.ServerGroupID]; g != nil {
			for _, s := range g.Servers {
				lv.members = append(lv.members, fmt.Sprintf("%s:%d", s.ID, s.Port))
			}
		}
		sort.Strings(lv.members)
		if byLB[l.LoadBalancerID] == nil {
			byLB[l.LoadBalancerID] = map[int32]listenerView{}
		}
		byLB[l.LoadBalancerID][int32(l.Port)] = lv
	}
	var out []taggedLB
	for _, id := range slices.Sorted(maps.Keys(c.cloud.NLB.LoadBalancers)) {
		lb := c.cloud.NLB.LoadBalancers[id]
		name, _ := ours(lb.Tags)
		ls := byLB[id]
		if ls == nil {
			ls = map[int32]listenerView{}
		}
		admits := c.securityGroups(lb.SecurityGroupIDs)
		for port, lv := range ls {
			lv.admits = admits
			ls[port] = lv
		}
		out = append(out, taggedLB{tag: name, view: lbView{id: id, listeners: ls}})
	}
	return out
}

// leaks reports every resource the CCM tagged for a Service that no
// longer exists.
func (c *checker) leaks(live map[string]string) {
	check := func(kind, id string, tags []api.Tag) {
		name, ok := ours(tags)
		if !ok {
			return
		}
		c.checked["tagged resources"]++
		if live[name] != "" {
			return
		}
		owner := "a Service the soak did not create"
		if o := c.owners[name]; o != "" {
			owner = "Service " + o + ", deleted"
		}
		c.fail(InvNoLeak, kind+" "+id, "tagged %s=%s (cluster %s): left by %s", naming.TagKeyDefaultName, name, clusterID, owner)
	}
	for _, id := range slices.Sorted(maps.Keys(c.cloud.SLB.LoadBalancers)) {
		check("CLB", id, c.cloud.SLB.LoadBalancers[id].Tags)
	}
	for _, id := range slices.Sorted(maps.Keys(c.cloud.SLB.ACLs)) {
		check("access control list", id, c.cloud.SLB.ACLs[id].Tags)
	}
	for _, id := range slices.Sorted(maps.Keys(c.cloud.NLB.LoadBalancers)) {
		check("NLB", id, c.cloud.NLB.LoadBalancers[id].Tags)
	}
	for _, id := range slices.Sorted(maps.Keys(c.cloud.NLB.ServerGroups)) {
		check("NLB server group", id, c.cloud.NLB.ServerGroups[id].Tags)
	}
	for _, id := range slices.Sorted(maps.Keys(c.cloud.ECS.SecurityGroups)) {
		check("security group", id, c.cloud.ECS.SecurityGroups[id].Tags)
	}
}

// routes checks the route table against the Nodes: one entry per Node
// podCIDR to its instance, none for a CIDR of the cluster no Node holds.
func (c *checker) routes(nodes []*corev1.Node) {
	cluster := netip.MustParsePrefix(clusterCIDR)
	want := map[string]string{}
	for _, n := range nodes {
		_, inst, err := providerid.Parse(n.Spec.ProviderID)
		if n.Spec.PodCIDR == "" || err != nil {
			c.fail(InvRoutes, "Node "+n.Name, "not initialized (providerID %q, podCIDR %q)", n.Spec.ProviderID, n.Spec.PodCIDR)
			continue
		}
		want[n.Spec.PodCIDR] = inst
	}
	got := map[string][]string{}
	for _, r := range c.cloud.VPC.RouteEntries {
		p, err := netip.ParsePrefix(r.DestCIDR)
		if r.TableID != c.e.table || err != nil || !cluster.Overlaps(p) {
			continue
		}
		got[r.DestCIDR] = append(got[r.DestCIDR], r.NextHopID)
	}
	c.checked["routes"] = len(want)
	for _, cidr := range slices.Sorted(maps.Keys(want)) {
		if hops := got[cidr]; len(hops) != 1 || hops[0] != want[cidr] {
			c.fail(InvRoutes, cidr, "next hops %v, want [%s]", hops, want[cidr])
		}
	}
	for _, cidr := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[cidr]; !ok {
			c.fail(InvRoutes, cidr, "route to %v, but no Node has this podCIDR", got[cidr])
		}
	}
}

// tenantBorder reports a VM that is no Node registered anywhere but in
// its owner's sentinel groups.
func (c *checker) tenantBorder() {
	if c.s == nil {
		return
	}
	vm, ip := c.s.ids.vm, c.s.vmIP
	var enis []string
	for id, n := range c.cloud.ECS.ENIs {
		if n.InstanceID == vm {
			enis = append(enis, id)
		}
	}
	named := func(server, addr string) bool {
		return server == vm || addr == ip || slices.Contains(enis, server)
	}
	for id, g := range c.cloud.SLB.VServerGroups {
		for _, b := range g.Backends {
			if id != c.s.ids.clbGroup && named(b.ServerID, b.ServerIP) {
				c.fail(InvTenantBorder, "vServer group "+id, "has the VM %s (%s) that is no Node as a backend: %+v", vm, ip, b)
			}
		}
	}
	for id, g := range c.cloud.NLB.ServerGroups {
		for _, s := range g.Servers {
			if id != c.s.ids.nlbGroup && named(s.ID, s.IP) {
				c.fail(InvTenantBorder, "server group "+id, "has the VM %s (%s) that is no Node as a server: %+v", vm, ip, *s)
			}
		}
	}
}

// panicLine matches what a Go panic or a recovered one leaves in a log.
var panicLine = regexp.MustCompile(`^panic: |Observed a panic|goroutine \d+ \[running\]:|fatal error: `)

// panics reports every panic line of the CCM logs.
func (c *checker) panics(paths []string) {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			c.fail(InvNoPanic, p, "cannot read the log: %v", err)
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; sc.Scan(); line++ {
			if panicLine.MatchString(sc.Text()) {
				c.fail(InvNoPanic, fmt.Sprintf("%s:%d", p, line), "%s", sc.Text())
			}
		}
		f.Close()
	}
}

// sourceRanges checks that the listener admits a probe exactly when the
// Service's loadBalancerSourceRanges contain it (every probe when there
// are none).
func (c *checker) sourceRanges(key, lbID string, port int32, ranges []string, l listenerView) {
	if l.admits == nil {
		return
	}
	var prefixes []netip.Prefix
	for _, r := range ranges {
		p, err := netip.ParsePrefix(r)
		if err != nil {
			// The workload writes valid ranges only; an invalid one
			// freezes the cloud side, which this check cannot judge.
			return
		}
		prefixes = append(prefixes, p.Masked())
	}
	for _, a := range probes {
		want := len(prefixes) == 0 || slices.ContainsFunc(prefixes, func(p netip.Prefix) bool { return p.Contains(a) })
		c.checked["source-range probes"]++
		if got, why := l.admits(a); got != want {
			c.fail(InvSourceRanges, key, "listener %d of %s admits %s: %v (%s), want %v for source ranges %v", port, lbID, a, got, why, want, ranges)
		}
	}
}

// clbACL is a CLB listener's access control: with AclStatus on, a white
// list admits its entries only and a black list all but its entries.
func (c *checker) clbACL(cfg map[string]string) func(netip.Addr) (bool, string) {
	return func(a netip.Addr) (bool, string) {
		if cfg["AclStatus"] != "on" {
			return true, "access control off"
		}
		id := cfg["AclId"]
		acl := c.cloud.SLB.ACLs[id]
		if acl == nil {
			return false, "access control on with the missing list " + id
		}
		in := slices.ContainsFunc(acl.Entries, func(e slb.ACLEntry) bool {
			p, err := netip.ParsePrefix(e.Entry)
			return err == nil && p.Contains(a)
		})
		if cfg["AclType"] == "black" {
			return !in, fmt.Sprintf("black list %s, listed: %v", id, in)
		}
		return in, fmt.Sprintf("white list %s, listed: %v", id, in)
	}
}

// securityGroups is an NLB's access control by its security groups'
// ingress rules: the matching rule of highest priority (lowest number)
// decides, drop before accept at the same priority; no group admits
// everything, groups without a matching rule nothing.
func (c *checker) securityGroups(ids []string) func(netip.Addr) (bool, string) {
	return func(a netip.Addr) (bool, string) {
		if len(ids) == 0 {
			return true, "no security group"
		}
		var best *ecs.Rule
		bestGroup := ""
		for _, id := range ids {
			g := c.cloud.ECS.SecurityGroups[id]
			if g == nil {
				continue
			}
			for _, r := range g.Rules {
				if r.Direction != "ingress" {
					continue
				}
				src := r.SourceCidrIP
				if a.Is6() {
					src = r.Ipv6SourceCidrIP
				}
				p, err := netip.ParsePrefix(src)
				if err != nil || !p.Contains(a) {
					continue
				}
				if best == nil || priority(r) < priority(best) || (priority(r) == priority(best) && strings.EqualFold(r.Policy, "drop")) {
					best, bestGroup = r, id
				}
			}
		}
		if best == nil {
			return false, fmt.Sprintf("no rule of %v matches", ids)
		}
		return strings.EqualFold(best.Policy, "accept"), fmt.Sprintf("%s rule %s of %s at priority %s", best.Policy, best.SourceCidrIP, bestGroup, best.Priority)
	}
}

// priority is a rule's priority number; unset means 1, as in the API.
func priority(r *ecs.Rule) int {
	n, err := strconv.Atoi(r.Priority)
	if err != nil {
		return 1
	}
	return n
}

// write is one cloud write a replica made.
type write struct {
	seq     uint64
	at      time.Time
	replica string
	action  string
}

// replicaWrites is what the only-the-leader check reads: every write of
// the replicas in arrival order, when each replica's processes ended, and
// whether the request log kept every call.
type replicaWrites struct {
	writes []write
	ends   map[string][]time.Time
	// overflowed is set when the request log dropped calls.
	overflowed bool
}

// writes collects the replicas' cloud writes from the emulator's request
// log and their processes' ends.
func (e *env) writes() replicaWrites {
	out := replicaWrites{ends: map[string][]time.Time{}}
	byKey := map[string]string{}
	for _, r := range e.replicas {
		byKey[r.keyID] = r.name
		r.mu.Lock()
		for _, p := range r.procs {
			if at := p.ExitedAt(); !at.IsZero() {
				out.ends[r.name] = append(out.ends[r.name], at)
			}
		}
		r.mu.Unlock()
	}
	recs := e.cloud.Requests()
	out.overflowed = len(recs) > 0 && recs[0].Seq > 1
	for _, rec := range recs {
		name, ok := byKey[rec.AccessKeyID]
		if !ok || api.IsReadOnlyAction(rec.Action) {
			continue
		}
		out.writes = append(out.writes, write{seq: rec.Seq, at: rec.Time, replica: name, action: rec.Product + " " + rec.Action})
	}
	sort.Slice(out.writes, func(i, j int) bool { return out.writes[i].seq < out.writes[j].seq })
	return out
}

// handoverSlack is how far a process's recorded end may lie from the
// writes around a handover: a call sent just before a SIGKILL arrives
// just after it, and the end is recorded when the parent's Wait returns.
const handoverSlack = time.Second

// onlyLeader reports a write by one replica after another replica wrote
// while that other one's process lived on: writers may change only when
// the previous writer's process has ended, as the Lease allows one leader
// and a leader that loses it exits.
func (c *checker) onlyLeader(w replicaWrites) {
	if w.overflowed {
		c.fail(InvOnlyLeader, "request log", "the emulator's request log dropped calls; raise its size so that every write can be checked")
		return
	}
	c.checked["writes by replica"] = len(w.writes)
	for i := 1; i < len(w.writes); i++ {
		prev, cur := w.writes[i-1], w.writes[i]
		if prev.replica == cur.replica {
			continue
		}
		c.checked["writer handovers"]++
		ended := slices.ContainsFunc(w.ends[prev.replica], func(e time.Time) bool {
			return !e.Before(prev.at.Add(-handoverSlack)) && !e.After(cur.at.Add(handoverSlack))
		})
		if !ended {
			c.fail(InvOnlyLeader, "replica "+cur.replica, "wrote %s at %s (call %d) after replica %s wrote %s at %s (call %d), and no process of %s ended in between (ends %v)",
				cur.action, cur.at.Format("15:04:05.000"), cur.seq, prev.replica, prev.action, prev.at.Format("15:04:05.000"), prev.seq, prev.replica, fmtTimes(w.ends[prev.replica]))
		}
	}
}

func fmtTimes(ts []time.Time) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Format("15:04:05.000"))
	}
	return out
}
