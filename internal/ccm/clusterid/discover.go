// Package clusterid finds the cluster id the existing CCM (or an earlier
// run of ours) used, from what it left in the cloud, for a cloud-config
// without clusterID: the ack.aliyun.com tag of the load balancers the
// cluster's Services are bound to, the k8s/<port>/<svc>/<ns>/<cluster>
// descriptions of their listeners, and the k8s/<cluster>/<node> descriptions
// of the route entries of the cluster's Nodes.
//
// Discovery is cheap on purpose: it runs at every start of a CCM whose
// cloud-config lacks clusterID, so it reads one page of Services and Nodes
// and a bounded number of cloud listings (maxCalls), never the account.
package clusterid

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

const (
	// kubePage is the one page of Services and of Nodes read: enough
	// evidence for any cluster, and bounded for a large one.
	kubePage = 500
	// lbsPerCall is how many load balancer ids one listing names (the
	// CLB API's limit for LoadBalancerId; NLB takes 20).
	lbsPerCall = 10
	// maxLBs bounds the load balancers read: a few agreeing ones decide.
	maxLBs = 20
	// maxTables bounds the route tables read.
	maxTables = 2
	// maxEntries is the one page of route entries read per table.
	maxEntries = 100
)

// maxCalls is the most cloud calls Discover makes: CLB load balancers and
// their listeners, NLB load balancers and their listeners, the VPC's route
// tables and one page of entries of each.
const maxCalls = 2*(maxLBs/lbsPerCall) + 2 + 1 + maxTables

// Input is where Discover looks.
type Input struct {
	// Cloud makes the calls.
	Cloud *cloud.Client
	// Kube lists the Services and Nodes; nil skips the evidence that
	// needs them (all of it).
	Kube kubernetes.Interface
	// VpcID is the cluster's VPC, whose route tables are read.
	VpcID string
	// RouteTables are cloud-config routeTableIDs; empty reads the VPC's.
	RouteTables []string
}

// Finding is one piece of evidence for a cluster id.
type Finding struct {
	// ID is the cluster id found.
	ID string
	// Source says where, e.g. "tag ack.aliyun.com of CLB lb-1 (Service default/web)".
	Source string
}

// Result is what Discover read and found.
type Result struct {
	// ID is the one cluster id every finding agrees on; empty when there
	// is none or several.
	ID string
	// Findings are the evidence, in a stable order.
	Findings []Finding
	// Tried says what was read, for logs and for the refusal to start.
	Tried []string
	// Calls is the number of cloud calls made (at most maxCalls).
	Calls int
}

// IDs returns the distinct cluster ids found, sorted.
func (r *Result) IDs() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range r.Findings {
		if !seen[f.ID] {
			seen[f.ID] = true
			out = append(out, f.ID)
		}
	}
	sort.Strings(out)
	return out
}

// Explain says why Result has no ID: the ids found with their evidence,
// or what was read without finding one.
func (r *Result) Explain() string {
	ids := r.IDs()
	if len(ids) == 0 {
		return "discovery found no cluster id in " + strings.Join(r.Tried, "; ")
	}
	var parts []string
	for _, id := range ids {
		var src []string
		for _, f := range r.Findings {
			if f.ID == id {
				src = append(src, f.Source)
			}
		}
		parts = append(parts, fmt.Sprintf("%q (%s)", id, strings.Join(src, ", ")))
	}
	return "discovery found several cluster ids, set the right one: " + strings.Join(parts, "; ")
}

// discovery is one run's state.
type discovery struct {
	in  Input
	res *Result
	// services are the Services bound to each load balancer id (label
	// service.k8s.alibaba/loadbalancer-id), "namespace/name".
	services map[string][]string
}

// Discover reads the evidence and returns it; Result.ID is set only when
// it names exactly one cluster id. Errors of single listings do not stop
// it (they are reported in Tried): what the others show still counts.
func Discover(ctx context.Context, in Input) *Result {
	d := &discovery{in: in, res: &Result{}, services: map[string][]string{}}
	if in.Kube == nil {
		d.tried("no Kubernetes client: the cluster's load balancers and Nodes are unknown")
		return d.res
	}
	d.listServices(ctx)
	var clbs, nlbs []string
	for id := range d.services {
		switch {
		case strings.HasPrefix(id, "nlb-"):
			nlbs = append(nlbs, id)
		default:
			clbs = append(clbs, id)
		}
	}
	sort.Strings(clbs)
	sort.Strings(nlbs)
	d.clb(ctx, bounded(clbs))
	d.nlb(ctx, bounded(nlbs))
	d.routes(ctx)
	sort.SliceStable(d.res.Findings, func(i, j int) bool { return d.res.Findings[i].Source < d.res.Findings[j].Source })
	if ids := d.res.IDs(); len(ids) == 1 {
		d.res.ID = ids[0]
	}
	return d.res
}

func bounded(ids []string) []string {
	if len(ids) > maxLBs {
		return ids[:maxLBs]
	}
	return ids
}

func (d *discovery) tried(format string, args ...any) {
	d.res.Tried = append(d.res.Tried, fmt.Sprintf(format, args...))
}

func (d *discovery) found(id, format string, args ...any) {
	if id == "" {
		return
	}
	d.res.Findings = append(d.res.Findings, Finding{ID: id, Source: fmt.Sprintf(format, args...)})
}

func (d *discovery) listServices(ctx context.Context) {
	list, err := d.in.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: naming.LabelLoadBalancerID, Limit: kubePage})
	if err != nil {
		d.tried("Services labelled %s: listing failed: %v", naming.LabelLoadBalancerID, err)
		return
	}
	for _, s := range list.Items {
		if id := strings.TrimSpace(s.Labels[naming.LabelLoadBalancerID]); id != "" {
			d.services[id] = append(d.services[id], s.Namespace+"/"+s.Name)
		}
	}
	d.tried("%d Services labelled %s (bound to %d load balancers)", len(list.Items), naming.LabelLoadBalancerID, len(d.services))
}

// boundTo reports whether the Service ns/name is bound to the load balancer.
func (d *discovery) boundTo(lbID, ns, name string) bool {
	for _, s := range d.services[lbID] {
		if s == ns+"/"+name {
			return true
		}
	}
	return false
}

// lbFacts is what the listings of one load balancer kind show.
type lbFacts struct {
	// kind is CLB or NLB.
	kind string
	// parse reads the kind's listener descriptions.
	parse func(string) (naming.Parsed, bool)
	// lbs are the load balancer ids read, in order, and tags their
	// ack.aliyun.com tag ("" when untagged).
	lbs  []string
	tags map[string]string
	// listeners are the listeners read: load balancer id and description.
	listeners [][2]string
}

// weigh turns one kind's listings into findings.
func (d *discovery) weigh(f *lbFacts) {
	for _, id := range f.lbs {
		d.found(f.tags[id], "tag %s of %s %s (Service %s)", naming.TagKeyCluster, f.kind, id, strings.Join(d.services[id], ","))
	}
	for _, l := range f.listeners {
		// Only a description naming a Service bound to this load balancer
		// counts: a borrowed LB may carry other clusters' listeners.
		if p, ok := f.parse(l[1]); ok && d.boundTo(l[0], p.Namespace, p.Name) {
			d.found(p.ClusterID, "description %q of a listener of %s %s", l[1], f.kind, l[0])
		}
	}
	d.tried("%d %ss and their %d listeners", len(f.lbs), f.kind, len(f.listeners))
}

func (d *discovery) clb(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	f := &lbFacts{kind: "CLB", parse: naming.ParseCLB, tags: map[string]string{}}
	defer d.weigh(f)
	for _, part := range cloud.Chunks(ids, lbsPerCall) {
		d.res.Calls++
		resp, err := cloud.Do(ctx, d.in.Cloud, cloud.SLB, "DescribeLoadBalancers", func(c *cloud.Clients) (*slb.DescribeLoadBalancersResponse, error) {
			req := slb.CreateDescribeLoadBalancersRequest()
			req.LoadBalancerId = strings.Join(part, ",")
			req.PageSize = requests.NewInteger(100)
			return c.SLB.DescribeLoadBalancers(req)
		})
		if err != nil {
			d.tried("CLBs %s: %v", strings.Join(part, ","), err)
			continue
		}
		for _, lb := range resp.LoadBalancers.LoadBalancer {
			f.lbs = append(f.lbs, lb.LoadBalancerId)
			for _, t := range lb.Tags.Tag {
				if t.TagKey == naming.TagKeyCluster {
					f.tags[lb.LoadBalancerId] = t.TagValue
				}
			}
		}
		d.res.Calls++
		lresp, err := cloud.Do(ctx, d.in.Cloud, cloud.SLB, "DescribeLoadBalancerListeners", func(c *cloud.Clients) (*slb.DescribeLoadBalancerListenersResponse, error) {
			req := slb.CreateDescribeLoadBalancerListenersRequest()
			req.LoadBalancerId = &part
			req.MaxResults = requests.NewInteger(100)
			return c.SLB.DescribeLoadBalancerListeners(req)
		})
		if err != nil {
			d.tried("listeners of CLBs %s: %v", strings.Join(part, ","), err)
			continue
		}
		for _, l := range lresp.Listeners {
			f.listeners = append(f.listeners, [2]string{l.LoadBalancerId, l.Description})
		}
	}
}

func (d *discovery) nlb(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	f := &lbFacts{kind: "NLB", parse: naming.ParseNLB, tags: map[string]string{}}
	defer d.weigh(f)
	// NLB listings take 20 ids: with at most maxLBs, one call each.
	d.res.Calls++
	resp, err := cloud.Do(ctx, d.in.Cloud, cloud.NLB, "ListLoadBalancers", func(c *cloud.Clients) (*nlb.ListLoadBalancersResponse, error) {
		req := nlb.CreateListLoadBalancersRequest()
		req.LoadBalancerIds = &ids
		req.MaxResults = requests.NewInteger(100)
		return c.NLB.ListLoadBalancers(req)
	})
	if err != nil {
		d.tried("NLBs %s: %v", strings.Join(ids, ","), err)
	} else {
		for _, lb := range resp.LoadBalancers {
			f.lbs = append(f.lbs, lb.LoadBalancerId)
			for _, t := range lb.Tags {
				if t.Key == naming.TagKeyCluster {
					f.tags[lb.LoadBalancerId] = t.Value
				}
			}
		}
	}
	d.res.Calls++
	lresp, err := cloud.Do(ctx, d.in.Cloud, cloud.NLB, "ListListeners", func(c *cloud.Clients) (*nlb.ListListenersResponse, error) {
		req := nlb.CreateListListenersRequest()
		req.LoadBalancerIds = &ids
		req.MaxResults = requests.NewInteger(100)
		return c.NLB.ListListeners(req)
	})
	if err != nil {
		d.tried("listeners of NLBs %s: %v", strings.Join(ids, ","), err)
		return
	}
	for _, l := range lresp.Listeners {
		f.listeners = append(f.listeners, [2]string{l.LoadBalancerId, l.ListenerDescription})
	}
}

// routes reads the route entries of the VPC's tables whose description
// carries a cluster's marker for a Node of this cluster. The existing CCM
// leaves descriptions empty; ours marks k8s/<cluster>/<node>.
func (d *discovery) routes(ctx context.Context) {
	nodes, err := d.in.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: kubePage})
	if err != nil {
		d.tried("Nodes: listing failed: %v", err)
		return
	}
	names := map[string]bool{}
	for _, n := range nodes.Items {
		names[n.Name] = true
	}
	if len(names) == 0 {
		d.tried("route entries: no Nodes to match them with")
		return
	}
	tables := d.in.RouteTables
	if len(tables) == 0 {
		d.res.Calls++
		resp, err := cloud.Do(ctx, d.in.Cloud, cloud.VPC, "DescribeRouteTableList", func(c *cloud.Clients) (*vpc.DescribeRouteTableListResponse, error) {
			req := vpc.CreateDescribeRouteTableListRequest()
			req.VpcId = d.in.VpcID
			req.PageSize = requests.NewInteger(50)
			return c.VPC.DescribeRouteTableList(req)
		})
		if err != nil {
			d.tried("route tables of VPC %s: %v", d.in.VpcID, err)
			return
		}
		for _, t := range resp.RouterTableList.RouterTableListType {
			tables = append(tables, t.RouteTableId)
		}
	}
	if len(tables) > maxTables {
		tables = tables[:maxTables]
	}
	entries := 0
	for _, table := range tables {
		d.res.Calls++
		resp, err := cloud.Do(ctx, d.in.Cloud, cloud.VPC, "DescribeRouteEntryList", func(c *cloud.Clients) (*vpc.DescribeRouteEntryListResponse, error) {
			req := vpc.CreateDescribeRouteEntryListRequest()
			req.RouteTableId = table
			req.RouteEntryType = "Custom"
			req.MaxResult = requests.NewInteger(maxEntries)
			return c.VPC.DescribeRouteEntryList(req)
		})
		if err != nil {
			d.tried("route entries of %s: %v", table, err)
			continue
		}
		for _, e := range resp.RouteEntrys.RouteEntry {
			entries++
			if id, node, ok := routes.ParseMarker(e.Description); ok && names[node] {
				d.found(id, "description %q of route entry %s in %s", e.Description, e.DestinationCidrBlock, table)
			}
		}
	}
	d.tried("%d custom route entries of %s matched with %d Nodes", entries, strings.Join(tables, ","), len(names))
}
