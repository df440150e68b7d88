package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/console"
)

// The example Service whose load balancer the sandbox waits for and shows.
const (
	ExampleNamespace = "default"
	ExampleService   = "web"
)

// LabelLoadBalancerID is the label the CCM puts on a Service with the id of
// its CLB (the existing CCM's label).
const LabelLoadBalancerID = "service.k8s.alibaba/loadbalancer-id"

// Summary is what a ready sandbox shows, also written to DIR/summary.json.
type Summary struct {
	// Dir is the sandbox's state directory (logs, kubeconfig, emulator
	// state).
	Dir string `json:"dir"`
	// Kubeconfig is the path of the admin kubeconfig of the sandbox cluster.
	Kubeconfig string `json:"kubeconfig"`
	// EmulatorEndpoint is the emulator's host:port (every product and the
	// metadata service).
	EmulatorEndpoint string `json:"emulatorEndpoint"`
	// ConsoleURL is the emulator's read-only web console.
	ConsoleURL string `json:"consoleUrl,omitempty"`
	// Region is the emulated region id, e.g. cn-hangzhou.
	Region string `json:"region"`
	// ClusterID is the cloud-config clusterID the CCM runs with.
	ClusterID string `json:"clusterId"`
	// VpcID is the sandbox VPC (vpc-...).
	VpcID string `json:"vpcId"`
	// RouteTableID is the VPC's route table (vtb-...) that carries the pod
	// routes.
	RouteTableID string `json:"routeTableId"`
	// ReadySeconds is how long `up` took to reach ready.
	ReadySeconds float64 `json:"readySeconds"`
	// Nodes are the cluster's Nodes, as the API server reports them.
	Nodes []NodeInfo `json:"nodes"`
	// RoutesManaged is false when the CCM has no route controller.
	RoutesManaged bool `json:"routesManaged"`
	// Routes are the custom entries of the route table (pod CIDR routes).
	Routes []RouteInfo `json:"routes"`
	// Service is namespace/name of the example LoadBalancer Service.
	Service string `json:"service"`
	// ServicesManaged is false when the CCM has no service controller.
	ServicesManaged bool `json:"servicesManaged"`
	// LoadBalancer is the example Service's CLB; nil until it exists.
	LoadBalancer *LoadBalancerInfo `json:"loadBalancer,omitempty"`
}

// NodeInfo is one Node as the API server reports it.
type NodeInfo struct {
	// Name is the Node name (the instance's host name).
	Name string `json:"name"`
	// Zone is the Node's topology.kubernetes.io/zone label, set by the CCM.
	Zone string `json:"zone"`
	// ProviderID is spec.providerID, <region>.<instance-id> once the CCM
	// initialized the Node.
	ProviderID string `json:"providerId"`
	// InternalIP is the Node's InternalIP address.
	InternalIP string `json:"internalIp"`
	// PodCIDR is spec.podCIDR, allocated by the controller manager's
	// nodeipam.
	PodCIDR string `json:"podCidr"`
	// Ready is whether the Node's Ready condition is True.
	Ready bool `json:"ready"`
}

// RouteInfo is one custom entry of the cluster's route table.
type RouteInfo struct {
	// Destination is the entry's destination CIDR (a Node's pod CIDR).
	Destination string `json:"destination"`
	// NextHopType is the VPC next-hop type, Instance for node routes.
	NextHopType string `json:"nextHopType"`
	// NextHop is the next hop's id (an instance id i-...).
	NextHop string `json:"nextHop"`
	// Status is the entry's VPC status: Pending, then Available.
	Status string `json:"status"`
	// Node is the Node whose instance is the next hop, if any.
	Node string `json:"node,omitempty"`
}

// LoadBalancerInfo is the example Service's CLB as the SLB API reports it.
type LoadBalancerInfo struct {
	// ID is the CLB id (lb-...).
	ID string `json:"id"`
	// Name is the CLB's LoadBalancerName.
	Name string `json:"name"`
	// Address is the CLB's service IP address.
	Address string `json:"address"`
	// AddressType is internet or intranet.
	AddressType string `json:"addressType"`
	// Spec is the LoadBalancerSpec (e.g. slb.s1.small; empty for pay-by-LCU).
	Spec string `json:"spec"`
	// Status is the LoadBalancerStatus: active, inactive or locked.
	Status string `json:"status"`
	// Listeners are the CLB's listeners, by port.
	Listeners []ListenerInfo `json:"listeners"`
	// Backends are the members of the CLB's vServer groups.
	Backends []BackendInfo `json:"backends"`
}

// ListenerInfo is one listener of the CLB.
type ListenerInfo struct {
	// Port is the listener's frontend port.
	Port int `json:"port"`
	// Protocol is TCP, UDP, HTTP or HTTPS.
	Protocol string `json:"protocol"`
	// Status is running, stopped, starting, configuring or stopping.
	Status string `json:"status"`
	// BackendPort is the listener's default backend port, when it has one.
	BackendPort int `json:"backendPort,omitempty"`
	// VServerGroupID is the vServer group (rsp-...) the listener forwards to.
	VServerGroupID string `json:"vServerGroupId,omitempty"`
}

// BackendInfo is one member of a vServer group of the CLB.
type BackendInfo struct {
	// VServerGroupID is the group (rsp-...) the backend belongs to.
	VServerGroupID string `json:"vServerGroupId"`
	// VServerGroupName is that group's name.
	VServerGroupName string `json:"vServerGroupName"`
	// ServerID is the backend's instance (i-...) or ENI (eni-...).
	ServerID string `json:"serverId"`
	// Node is the Node whose instance is ServerID, if any.
	Node string `json:"node,omitempty"`
	// Port is the backend port (the Service's NodePort for ecs backends).
	Port int `json:"port"`
	// Weight is the backend's weight, 0-100.
	Weight int `json:"weight"`
}

// observer reads the sandbox's state from the API server and the cloud.
type observer struct {
	kube      kubernetes.Interface
	cloud     *clients
	facts     *cloudFacts
	routes    bool
	services  bool
	instances []Instance
	// since is when this run started: a Node counts as Ready only once
	// its lease was renewed after it, since a restarted sandbox finds the
	// Ready condition its previous run left.
	since time.Time
}

// nodeInfos lists the Nodes, sorted by name.
func (o *observer) nodeInfos(ctx context.Context) ([]NodeInfo, map[string]*corev1.Node, error) {
	list, err := o.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	byName := map[string]*corev1.Node{}
	var out []NodeInfo
	for i := range list.Items {
		n := &list.Items[i]
		byName[n.Name] = n
		info := NodeInfo{Name: n.Name, Zone: n.Labels[corev1.LabelTopologyZone], ProviderID: n.Spec.ProviderID, InternalIP: nodeInternalIP(n), PodCIDR: n.Spec.PodCIDR}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				info.Ready = c.Status == corev1.ConditionTrue
			}
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return hostLess(out[i].Name, out[j].Name) })
	return out, byName, nil
}

// routeInfos lists the custom entries of the route table.
func (o *observer) routeInfos() ([]RouteInfo, error) {
	nodeOf := map[string]string{}
	for _, in := range o.instances {
		nodeOf[in.ID] = in.HostName
	}
	var out []RouteInfo
	token := ""
	for {
		req := vpc.CreateDescribeRouteEntryListRequest()
		req.RouteTableId = o.facts.RouteTableID
		req.RouteEntryType = "Custom"
		req.MaxResult = "100"
		req.NextToken = token
		resp, err := o.cloud.vpc.DescribeRouteEntryList(req)
		if err != nil {
			return nil, fmt.Errorf("DescribeRouteEntryList %s: %w", o.facts.RouteTableID, err)
		}
		for _, e := range resp.RouteEntrys.RouteEntry {
			r := RouteInfo{Destination: e.DestinationCidrBlock, Status: e.Status}
			if hops := e.NextHops.NextHop; len(hops) > 0 {
				r.NextHopType, r.NextHop = hops[0].NextHopType, hops[0].NextHopId
			}
			r.Node = nodeOf[r.NextHop]
			out = append(out, r)
		}
		if resp.NextToken == "" {
			break
		}
		token = resp.NextToken
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Destination < out[j].Destination })
	return out, nil
}

// service returns the example Service, nil when it does not exist.
func (o *observer) service(ctx context.Context) (*corev1.Service, error) {
	svc, err := o.kube.CoreV1().Services(ExampleNamespace).Get(ctx, ExampleService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get service %s/%s: %w", ExampleNamespace, ExampleService, err)
	}
	return svc, nil
}

// ingressIP is the first address of the Service's status.
func ingressIP(svc *corev1.Service) string {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
		if in.Hostname != "" {
			return in.Hostname
		}
	}
	return ""
}

// loadBalancer reads the Service's CLB: by the CCM's id label, else by the
// Service's address. Nil when there is none (yet).
func (o *observer) loadBalancer(svc *corev1.Service) (*LoadBalancerInfo, error) {
	req := slb.CreateDescribeLoadBalancersRequest()
	switch {
	case svc.Labels[LabelLoadBalancerID] != "":
		req.LoadBalancerId = svc.Labels[LabelLoadBalancerID]
	case ingressIP(svc) != "":
		req.Address = ingressIP(svc)
	default:
		return nil, nil
	}
	resp, err := o.cloud.slb.DescribeLoadBalancers(req)
	if err != nil {
		return nil, fmt.Errorf("DescribeLoadBalancers: %w", err)
	}
	if len(resp.LoadBalancers.LoadBalancer) == 0 {
		return nil, nil
	}
	lb := resp.LoadBalancers.LoadBalancer[0]
	info := &LoadBalancerInfo{ID: lb.LoadBalancerId, Name: lb.LoadBalancerName, Address: lb.Address, AddressType: lb.AddressType, Spec: lb.LoadBalancerSpec, Status: lb.LoadBalancerStatus}

	lreq := slb.CreateDescribeLoadBalancerListenersRequest()
	lreq.LoadBalancerId = &[]string{lb.LoadBalancerId}
	lreq.MaxResults = "100"
	lresp, err := o.cloud.slb.DescribeLoadBalancerListeners(lreq)
	if err != nil {
		return nil, fmt.Errorf("DescribeLoadBalancerListeners %s: %w", lb.LoadBalancerId, err)
	}
	for _, l := range lresp.Listeners {
		info.Listeners = append(info.Listeners, ListenerInfo{Port: l.ListenerPort, Protocol: strings.ToUpper(l.ListenerProtocol), Status: l.Status, BackendPort: l.BackendServerPort, VServerGroupID: l.VServerGroupId})
	}
	sort.Slice(info.Listeners, func(i, j int) bool { return info.Listeners[i].Port < info.Listeners[j].Port })

	nodeOf := map[string]string{}
	for _, in := range o.instances {
		nodeOf[in.ID] = in.HostName
	}
	greq := slb.CreateDescribeVServerGroupsRequest()
	greq.LoadBalancerId = lb.LoadBalancerId
	gresp, err := o.cloud.slb.DescribeVServerGroups(greq)
	if err != nil {
		return nil, fmt.Errorf("DescribeVServerGroups %s: %w", lb.LoadBalancerId, err)
	}
	for _, g := range gresp.VServerGroups.VServerGroup {
		areq := slb.CreateDescribeVServerGroupAttributeRequest()
		areq.VServerGroupId = g.VServerGroupId
		aresp, err := o.cloud.slb.DescribeVServerGroupAttribute(areq)
		if err != nil {
			return nil, fmt.Errorf("DescribeVServerGroupAttribute %s: %w", g.VServerGroupId, err)
		}
		for _, b := range aresp.BackendServers.BackendServer {
			info.Backends = append(info.Backends, BackendInfo{VServerGroupID: g.VServerGroupId, VServerGroupName: g.VServerGroupName, ServerID: b.ServerId, Node: nodeOf[b.ServerId], Port: b.Port, Weight: b.Weight})
		}
	}
	sort.Slice(info.Backends, func(i, j int) bool {
		a, b := info.Backends[i], info.Backends[j]
		if a.VServerGroupID != b.VServerGroupID {
			return a.VServerGroupID < b.VServerGroupID
		}
		return hostLess(a.Node, b.Node)
	})
	return info, nil
}

// pending lists what the sandbox still waits for; empty means ready.
func (o *observer) pending(ctx context.Context) ([]string, error) {
	var out []string
	_, nodes, err := o.nodeInfos(ctx)
	if err != nil {
		return nil, err
	}
	var routes map[string]RouteInfo
	if o.routes {
		list, err := o.routeInfos()
		if err != nil {
			return nil, err
		}
		routes = map[string]RouteInfo{}
		for _, r := range list {
			routes[r.Destination] = r
		}
	}
	for _, in := range o.instances {
		n := nodes[in.HostName]
		switch {
		case n == nil:
			out = append(out, fmt.Sprintf("Node %s to be registered", in.HostName))
			continue
		case n.Spec.ProviderID == "" || hasTaint(n, cloudapi.TaintExternalCloudProvider):
			out = append(out, fmt.Sprintf("Node %s to be initialized by the CCM (providerID, zone, uninitialized taint removed)", n.Name))
		case !nodeReady(n) || !o.heartbeat(ctx, n.Name):
			out = append(out, fmt.Sprintf("Node %s to be Ready with a fresh heartbeat (kwok)", n.Name))
		}
		if !o.routes {
			continue
		}
		if n.Spec.PodCIDR == "" {
			out = append(out, fmt.Sprintf("Node %s to get a podCIDR from kube-controller-manager", n.Name))
			continue
		}
		r, ok := routes[n.Spec.PodCIDR]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("route %s -> %s (Node %s) in %s", n.Spec.PodCIDR, in.ID, n.Name, o.facts.RouteTableID))
		case r.NextHop != in.ID || r.Status != "Available":
			out = append(out, fmt.Sprintf("route %s to point at %s and be Available (now %s, %s)", n.Spec.PodCIDR, in.ID, r.NextHop, r.Status))
		}
	}
	if o.services {
		svc, err := o.service(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case svc == nil:
			out = append(out, fmt.Sprintf("Service %s/%s to exist", ExampleNamespace, ExampleService))
		case ingressIP(svc) == "":
			out = append(out, fmt.Sprintf("Service %s/%s to get an external IP from the CCM", ExampleNamespace, ExampleService))
		default:
			lb, err := o.loadBalancer(svc)
			if err != nil {
				return nil, err
			}
			if lb == nil {
				out = append(out, fmt.Sprintf("the CLB of Service %s/%s (address %s) to be found", ExampleNamespace, ExampleService, ingressIP(svc)))
			}
		}
	}
	return out, nil
}

// summary gathers the facts shown to the user.
func (o *observer) summary(ctx context.Context) (*Summary, error) {
	s := &Summary{Region: Region, ClusterID: ClusterID, VpcID: o.facts.VpcID, RouteTableID: o.facts.RouteTableID,
		RoutesManaged: o.routes, ServicesManaged: o.services, Service: ExampleNamespace + "/" + ExampleService}
	var err error
	if s.Nodes, _, err = o.nodeInfos(ctx); err != nil {
		return nil, err
	}
	if s.Routes, err = o.routeInfos(); err != nil {
		return nil, err
	}
	svc, err := o.service(ctx)
	if err != nil {
		return nil, err
	}
	if svc != nil {
		if s.LoadBalancer, err = o.loadBalancer(svc); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// heartbeat reports whether the Node's lease was renewed since o.since.
func (o *observer) heartbeat(ctx context.Context, name string) bool {
	l, err := o.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		return false
	}
	return !l.Spec.RenewTime.Time.Before(o.since.Add(-time.Second))
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// writeJSON writes the summary to DIR/summary.json for scripts and tests.
func (s *Summary) writeJSON(dir string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), data, 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// ConsoleURL returns the address of the web console of the emulator at
// endpoint (host:port).
func ConsoleURL(endpoint string) string {
	return "http://" + endpoint + console.Prefix
}

// Print writes the human summary.
func (s *Summary) Print(w io.Writer) {
	if s.ConsoleURL != "" {
		fmt.Fprintf(w, "\nWeb console (read-only): %s\n", s.ConsoleURL)
	}
	fmt.Fprintf(w, "\nNodes (%d), initialized by the CCM from their ECS instances:\n", len(s.Nodes))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tZONE\tPROVIDER ID\tINTERNAL IP\tPOD CIDR\tREADY")
	for _, n := range s.Nodes {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%v\n", n.Name, dash(n.Zone), dash(n.ProviderID), dash(n.InternalIP), dash(n.PodCIDR), n.Ready)
	}
	tw.Flush()

	fmt.Fprintf(w, "\nRoutes in route table %s of %s:\n", s.RouteTableID, s.VpcID)
	if !s.RoutesManaged {
		fmt.Fprintln(w, "  (this CCM build has no route controller: pod routes are not programmed)")
	}
	if len(s.Routes) == 0 {
		fmt.Fprintln(w, "  (no custom route entries)")
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range s.Routes {
		node := ""
		if r.Node != "" {
			node = "(" + r.Node + ")"
		}
		fmt.Fprintf(tw, "  %s\t-> %s %s\t%s\t%s\n", r.Destination, r.NextHopType, r.NextHop, node, r.Status)
	}
	tw.Flush()

	fmt.Fprintf(w, "\nLoadBalancer Service %s:\n", s.Service)
	switch {
	case !s.ServicesManaged:
		fmt.Fprintln(w, "  (this CCM build has no service controller: the Service gets no load balancer)")
	case s.LoadBalancer == nil:
		fmt.Fprintln(w, "  (no load balancer)")
	default:
		lb := s.LoadBalancer
		fmt.Fprintf(w, "  CLB %s (%s) address %s (%s, %s, %s)\n", lb.ID, lb.Name, lb.Address, lb.AddressType, dash(lb.Spec), lb.Status)
		byGroup := map[string][]BackendInfo{}
		for _, b := range lb.Backends {
			byGroup[b.VServerGroupID] = append(byGroup[b.VServerGroupID], b)
		}
		for _, l := range lb.Listeners {
			target := fmt.Sprintf("backend port %d", l.BackendPort)
			if l.VServerGroupID != "" {
				target = "vServer group " + l.VServerGroupID
			}
			fmt.Fprintf(w, "  listener %s:%d -> %s (%s)\n", l.Protocol, l.Port, target, l.Status)
			printBackends(w, byGroup[l.VServerGroupID])
			delete(byGroup, l.VServerGroupID)
		}
		for _, g := range slices.Sorted(maps.Keys(byGroup)) {
			fmt.Fprintf(w, "  vServer group %s (no listener)\n", g)
			printBackends(w, byGroup[g])
		}
		if len(lb.Backends) == 0 {
			fmt.Fprintln(w, "  (no backends)")
		}
	}
}

func printBackends(w io.Writer, bs []BackendInfo) {
	for _, b := range bs {
		fmt.Fprintf(w, "      backend %s %s:%d weight %d\n", dash(b.Node), b.ServerID, b.Port, b.Weight)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
