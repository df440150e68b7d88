package routes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

var cluster *localcluster.Cluster

// The controller-manager is not needed: tests create Nodes with their
// podCIDR and providerID, as nodeipam and node initialization would.
func TestMain(m *testing.M) {
	// The SDK fills each product's endpoint map lazily without a lock;
	// fill them before parallel tests build clients (the CCM builds its
	// clients under one mutex, so only tests race here).
	ecs.GetEndpointMap()
	vpc.GetEndpointMap()
	slb.GetEndpointMap()
	nlb.GetEndpointMap()
	ccmtest.Main(m, &cluster, localcluster.Options{}, nil)
}

const (
	clusterID   = "routes-test"
	clusterCIDR = "10.244.0.0/16"
	// routeDelay is how long the emulator keeps a new entry Pending and the
	// VPC busy for route writes (TaskConflict).
	routeDelay = 100 * time.Millisecond
)

// harness is one emulated VPC, a set of Nodes labelled for one test, and
// a route controller watching only those Nodes.
type harness struct {
	t         *testing.T
	env       *emulatortest.Env
	kube      kubernetes.Interface
	label     string
	vpcID     string
	tables    []string
	instances []string
	vpc       *vpc.Client
	ctrl      *routes.Controller
}

// newHarness seeds a VPC with its system route table plus extraTables
// custom ones and n instances.
func newHarness(t *testing.T, label string, n, extraTables int) *harness {
	t.Helper()
	return newHarnessVPC(t, label, n, extraTables, nil)
}

// newHarnessVPC is newHarness with a change to the seeded VPC (e.g. IPv6).
func newHarnessVPC(t *testing.T, label string, n, extraTables int, mutate func(v *api.SeedVPC)) *harness {
	t.Helper()
	if cluster == nil {
		t.Skip("no local control plane (LOCALCLUSTER_SKIP)")
	}
	env := emulatortest.Start(t)
	if err := env.Emulator.Store.Settings().SetDelay(store.DelayRouteEntry, routeDelay); err != nil {
		t.Fatal(err)
	}
	seedVPC := api.SeedVPC{CIDRBlock: "192.168.0.0/16", VSwitches: []api.SeedVSwitch{{ZoneID: "cn-hangzhou-h", CIDRBlock: "192.168.0.0/20"}}}
	for i := 0; i < extraTables; i++ {
		seedVPC.RouteTables = append(seedVPC.RouteTables, api.SeedRouteTable{Name: fmt.Sprintf("custom-%d", i)})
	}
	if mutate != nil {
		mutate(&seedVPC)
	}
	ids := env.Seed(t, &api.Seed{VPCs: []api.SeedVPC{seedVPC}})
	seed := &api.Seed{}
	for i := 0; i < n; i++ {
		seed.Instances = append(seed.Instances, api.SeedInstance{VSwitchID: ids["vswitch"][0], Name: fmt.Sprintf("%s-%d", label, i)})
	}
	h := &harness{t: t, env: env, label: label, vpcID: ids["vpc"][0], tables: ids["routeTable"], vpc: env.VPC(t)}
	if n > 0 {
		h.instances = env.Seed(t, seed)["instance"]
	}
	cs, err := cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	h.kube = cs
	return h
}

// cloudClient reaches the emulator through the CCM's cloud layer, with
// short backoffs so retried throttling and TaskConflict stay fast.
func (h *harness) cloudClient() *cloud.Client {
	c, err := cloud.New(cloud.Options{
		Region:      h.env.Region,
		Endpoints:   cloud.Endpoints{ECS: h.env.Endpoint, VPC: h.env.Endpoint, SLB: h.env.Endpoint, NLB: h.env.Endpoint, Scheme: "HTTP"},
		Credentials: cloud.StaticProvider{Creds: cloud.NewCredentials(emulatortest.AccessKeyID, emulatortest.AccessKeySecret, "", time.Time{})},
		BaseBackoff: 20 * time.Millisecond,
		MaxBackoff:  300 * time.Millisecond,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// start runs a route controller until the test ends or stop is called;
// tweak adjusts its options (tables default to every table of the VPC).
func (h *harness) start(tweak func(o *routes.Options)) (stop func()) {
	t := h.t
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(h.kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = "routes-test=" + h.label
	}))
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: h.kube.CoreV1().Events("")})
	opts := routes.Options{
		KubeClient: h.kube, NodeInformer: factory.Core().V1().Nodes(),
		Recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "cloud-controller-manager"}),
		Cloud:    cloud.VPCRoutes{Client: h.cloudClient()}, VpcID: h.vpcID, RouteTableIDs: h.tables, ClusterCIDR: clusterCIDR, ClusterID: clusterID,
		ResyncPeriod: time.Second, EventAggregation: 300 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&opts)
	}
	ctrl, err := routes.New(opts)
	if err != nil {
		t.Fatalf("routes.New: %v", err)
	}
	h.ctrl = ctrl
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ctrl.Run(ctx, 2) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			factory.Shutdown()
			broadcaster.Shutdown()
		})
	}
	t.Cleanup(stop)
	return stop
}

func (h *harness) nodeName(i int) string { return fmt.Sprintf("%s-%02d", h.label, i) }

func podCIDR(i int) string { return fmt.Sprintf("10.244.%d.0/24", i) }

// addNode registers a Node as kubelet plus nodeipam plus node
// initialization would leave it: podCIDR, providerID and a Ready status.
func (h *harness) addNode(name, instance, cidr string) {
	h.t.Helper()
	h.addNodeWith(name, instance, cidr, nil)
}

// addNodeWith is addNode with a change to the Node before it is created
// (its status conditions included).
func (h *harness) addNodeWith(name, instance, cidr string, mutate func(n *corev1.Node)) {
	h.t.Helper()
	ctx := context.Background()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"routes-test": h.label}},
		Spec:       corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
	}
	if instance != "" {
		n.Spec.ProviderID = h.env.Region + "." + instance
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	if mutate != nil {
		mutate(n)
	}
	// The status is sent with the Node too, as kubelet registers it, so
	// that no pass sees the Node without its Ready condition.
	conditions := n.Status.Conditions
	created, err := h.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create Node %s: %v", name, err)
	}
	created.Status.Conditions = conditions
	created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}}
	if _, err := h.kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		h.t.Fatalf("set the status of Node %s: %v", name, err)
	}
	h.t.Cleanup(func() { _ = h.kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func (h *harness) deleteNode(name string) {
	h.t.Helper()
	if err := h.kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		h.t.Fatalf("delete Node %s: %v", name, err)
	}
}

// entries lists a table's custom entries through the VPC SDK, by destination.
func (h *harness) entries(table string) (map[string]vpc.RouteEntry, error) {
	out := map[string]vpc.RouteEntry{}
	token := ""
	for {
		req := vpc.CreateDescribeRouteEntryListRequest()
		req.RouteTableId = table
		req.RouteEntryType = "Custom"
		req.MaxResult = requests.NewInteger(100)
		req.NextToken = token
		resp, err := h.vpc.DescribeRouteEntryList(req)
		if err != nil {
			return nil, err
		}
		for _, e := range resp.RouteEntrys.RouteEntry {
			out[e.DestinationCidrBlock] = e
		}
		if resp.NextToken == "" {
			return out, nil
		}
		token = resp.NextToken
	}
}

func nextHop(e vpc.RouteEntry) string {
	if len(e.NextHops.NextHop) == 1 {
		return e.NextHops.NextHop[0].NextHopId
	}
	return e.InstanceId
}

// want maps a destination to the instance it must route to.
type want map[string]string

// expectRoutes polls until every table's entries inside the cluster CIDR
// are exactly w (other entries are checked by the caller).
func (h *harness) expectRoutes(timeout time.Duration, tables []string, w want) {
	h.t.Helper()
	poll(h.t, timeout, fmt.Sprintf("routes %v in %v", w, tables), func() error {
		for _, table := range tables {
			got, err := h.entries(table)
			if err != nil {
				return err
			}
			n := 0
			for dst, e := range got {
				if !strings.HasPrefix(dst, "10.244.") {
					continue
				}
				n++
				if inst, ok := w[dst]; !ok || nextHop(e) != inst {
					return fmt.Errorf("table %s: unexpected entry %s via %s (%s)", table, dst, nextHop(e), e.Description)
				}
			}
			if n != len(w) {
				return fmt.Errorf("table %s has %d of %d routes", table, n, len(w))
			}
		}
		return nil
	})
}

// condition returns the Node's NetworkUnavailable status and reason.
func (h *harness) condition(name string) (corev1.ConditionStatus, string, error) {
	n, err := h.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable {
			return c.Status, c.Reason, nil
		}
	}
	return "", "", nil
}

func (h *harness) expectCondition(timeout time.Duration, name string, status corev1.ConditionStatus, reason string) {
	h.t.Helper()
	poll(h.t, timeout, fmt.Sprintf("Node %s NetworkUnavailable=%s/%s", name, status, reason), func() error {
		s, r, err := h.condition(name)
		if err != nil {
			return err
		}
		if s != status || r != reason {
			return fmt.Errorf("NetworkUnavailable=%q/%q", s, r)
		}
		return nil
	})
}

// events returns the messages of a Node's events with reason.
func (h *harness) events(node, reason string) ([]string, error) {
	list, err := h.kube.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node + ",reason=" + reason,
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Type+": "+e.Message)
	}
	return out, nil
}

func (h *harness) expectEvent(timeout time.Duration, node, reason, contains string) {
	h.t.Helper()
	poll(h.t, timeout, fmt.Sprintf("event %s on Node %s containing %q", reason, node, contains), func() error {
		msgs, err := h.events(node, reason)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if strings.Contains(m, contains) {
				return nil
			}
		}
		return fmt.Errorf("events: %v", msgs)
	})
}

// createEntry adds a route out of band through the VPC SDK, waiting out
// the VPC's busy window.
func (h *harness) createEntry(table, dst, hop, desc string) string {
	h.t.Helper()
	var id string
	poll(h.t, 10*time.Second, "create route "+dst+" out of band", func() error {
		req := vpc.CreateCreateRouteEntryRequest()
		req.RouteTableId, req.DestinationCidrBlock, req.NextHopType, req.NextHopId, req.Description = table, dst, "Instance", hop, desc
		resp, err := h.vpc.CreateRouteEntry(req)
		if err != nil {
			return err
		}
		id = resp.RouteEntryId
		return nil
	})
	return id
}

// deleteEntry removes a route out of band, retrying while it is Pending or
// the VPC is busy.
func (h *harness) deleteEntry(id string) {
	h.t.Helper()
	poll(h.t, 10*time.Second, "delete route "+id+" out of band", func() error {
		req := vpc.CreateDeleteRouteEntryRequest()
		req.RouteEntryId = id
		_, err := h.vpc.DeleteRouteEntry(req)
		return err
	})
}

// writes counts the successful and failed route write calls since seq,
// per route table.
func (h *harness) writes(action string, afterSeq uint64) (ok, failed map[string]int, codes []string) {
	ok, failed = map[string]int{}, map[string]int{}
	for _, r := range h.env.Emulator.Requests(gateway.RequestFilter{Product: "vpc", Action: action, AfterSeq: afterSeq}) {
		table := r.Params["RouteEntries.1.RouteTableId"]
		if r.Code == gateway.CodeOK {
			ok[table]++
		} else {
			failed[table]++
			codes = append(codes, r.Code)
		}
	}
	return ok, failed, codes
}

func (h *harness) lastSeq() uint64 {
	recs := h.env.Emulator.Requests()
	if len(recs) == 0 {
		return 0
	}
	return recs[len(recs)-1].Seq
}

// metric returns the value of a counter or gauge from the legacy registry.
func metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok, err := ccmmetrics.Value(name, labels)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return 0
	}
	return v
}

func poll(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = cond()
		return last == nil, nil
	})
	if err != nil {
		if aerr := cluster.CheckAlive(); aerr != nil {
			t.Fatalf("%s: %v; %v", what, err, aerr)
		}
		t.Fatalf("%s: not within %s: %v", what, timeout, last)
	}
}

// serverError asserts err is the cloud's error with code and status.
func serverError(t *testing.T, err error, code string, status int) {
	t.Helper()
	var se *sdkerrors.ServerError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a ServerError", err)
	}
	if se.ErrorCode() != code || se.HttpStatus() != status {
		t.Fatalf("error = %s (HTTP %d), want %s (HTTP %d)", se.ErrorCode(), se.HttpStatus(), code, status)
	}
}
