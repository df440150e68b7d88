package service_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

const (
	accessKeyID     = "LTAI5tSvcTestKey"
	accessKeySecret = "svc-test-secret-Zm9vYmFyYmF6cXV4"
	clusterID       = "c-svc"
	clusterCIDR     = "10.244.0.0/16"
	nodeCount       = 10
	ns              = "default"
)

// One control plane, one emulated cloud and one CCM serve every test of
// this binary; the cluster has nodeCount initialized kwok Nodes, each
// backed by an ECS instance. Tests use their own Services.
var (
	cluster   *localcluster.Cluster
	cloud     *emulator.Emulator
	ccm       *ccmtest.CCM
	logDir    string
	nodeNames []string
	instances = map[string]string{} // node name → instance id
	ccmSeq    atomic.Int32
)

func TestMain(m *testing.M) {
	ccmtest.MainWithWhiteBox(m, &cluster, localcluster.Options{
		ControllerManager: true,
		Scheduler:         true,
		Kwok:              true,
		ClusterCIDR:       clusterCIDR,
	}, setup)
}

func setup() error {
	var err error
	cloud, err = ccmtest.StartEmulator(accessKeyID, accessKeySecret)
	if err != nil {
		return err
	}
	if err := cloud.Store.Settings().SetQuota(store.QuotaSLBInstances, 500); err != nil {
		return err
	}
	seed := ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: nodeCount + 1, NamePrefix: "svc-", IPv6: true})
	ids, err := cloud.Seed(seed)
	if err != nil {
		return err
	}
	logDir = filepath.Join(cluster.Dir, "logs")
	if err := startCCM(); err != nil {
		return err
	}
	cs, err := cluster.Clientset()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The first instance is the CCM's own machine (metadata); the others are Nodes.
	names, err := ccmtest.RegisterNodes(ctx, cs, cloud, accessKeyID, accessKeySecret, "node-", ids["instance"][1:])
	if err != nil {
		return err
	}
	for i, name := range names {
		nodeNames = append(nodeNames, name)
		instances[name] = ids["instance"][1+i]
	}
	if err := seedPodHost(ctx, cs); err != nil {
		return err
	}
	// The CCM's node controller initializes them (providerID, taint removed).
	if err := ccmtest.WaitNodesInitialized(ctx, cs, append([]string{podHost}, nodeNames...), 50*time.Second); err != nil {
		return err
	}
	// Cordoned, so that the scheduler puts the tests' pods on the other
	// Nodes only (Local traffic policy weights count them); only now,
	// since initialization updates the Node from the controller's copy.
	_, err = cs.CoreV1().Nodes().Patch(ctx, podHost, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	return err
}

// The pod host is a Node whose instance has a secondary ENI holding pod
// addresses, as a Terway Node has: eni backends are registrable only on
// the ENIs of the cluster's Nodes. It is excluded from load balancers, so
// it is never an ecs backend and nodeCount stays the backends' count.
const podHost = "pods-host"

var (
	// podHostENI is the pod host's secondary ENI.
	podHostENI string
	// podHostIPs are the addresses podHostENI holds, sorted; tests take
	// disjoint ranges of them.
	podHostIPs []string
)

func seedPodHost(ctx context.Context, cs kubernetes.Interface) error {
	c := emulatortest.For(cloud, accessKeyID, accessKeySecret)
	node, err := c.Instance(instances[nodeNames[0]])
	if err != nil {
		return err
	}
	ids, err := cloud.Seed(&api.Seed{Instances: []api.SeedInstance{{
		Name: "svc-pods-host", InstanceType: "ecs.g7.large", VSwitchID: node.VpcAttributes.VSwitchId,
		SecondaryENIs: []api.SeedENI{{PrivateIPs: make([]string, 10)}},
	}}})
	if err != nil {
		return fmt.Errorf("seed the pod host: %w", err)
	}
	podHostENI = ids["eni"][len(ids["eni"])-1]
	if podHostIPs, err = c.ENIAddresses(podHostENI); err != nil {
		return err
	}
	ips, err := c.PrivateIPs(ids["instance"])
	if err != nil {
		return err
	}
	_, err = localcluster.RegisterKubeletNode(ctx, cs, localcluster.KubeletNode{Name: podHost, InternalIP: ips[ids["instance"][0]], Kwok: true,
		Labels: map[string]string{"node.kubernetes.io/exclude-from-external-load-balancers": "true"}})
	return err
}

// startCCM starts a CCM process (a new one after stopCCM: a restart).
func startCCM() error {
	// The type annotation gate lets a test move a Service between CLB
	// and NLB (spec.loadBalancerClass is immutable).
	return startCCMWith("Global:\n  clusterID: " + clusterID + "\n  featureGates: LoadBalancerTypeAnnotation=true\n")
}

// startCCMWith starts a CCM process reading cloudConfig.
func startCCMWith(cloudConfig string) error {
	var err error
	ccm, err = ccmtest.StartCCM(context.Background(), ccmtest.CCMOptions{
		Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(),
		AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		CloudConfig: cloudConfig,
		Args:        []string{"--leader-elect=false", "--cluster-cidr=" + clusterCIDR, "--configure-cloud-routes=false", "--v=4"},
		LogPath:     filepath.Join(logDir, fmt.Sprintf("cloud-controller-manager-%d.log", ccmSeq.Add(1))),
	})
	return err
}

func kube(t *testing.T) kubernetes.Interface {
	t.Helper()
	return ccmtest.Kube(t, cluster)
}

func slbClient(t *testing.T) *slb.Client {
	return emulatortest.For(cloud, accessKeyID, accessKeySecret).SLB(t)
}

func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) time.Duration {
	t.Helper()
	return ccmtest.PollCCM(t, ccm, timeout, 100*time.Millisecond, what, cond)
}

// svcSpec describes a test Service.
type svcSpec struct {
	name        string
	ports       []int32
	protocols   []corev1.Protocol
	annotations map[string]string
	local       bool
	selector    map[string]string
}

func newService(s svcSpec) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: ns, Annotations: s.annotations},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: s.selector,
		},
	}
	if svc.Spec.Selector == nil {
		svc.Spec.Selector = map[string]string{"app": s.name}
	}
	if s.local {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	for i, p := range s.ports {
		proto := corev1.ProtocolTCP
		if i < len(s.protocols) {
			proto = s.protocols[i]
		}
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: fmt.Sprintf("p%d", p), Port: p, Protocol: proto, TargetPort: intstr.FromInt32(8080 + int32(i)),
		})
	}
	return svc
}

func createService(t *testing.T, s svcSpec) *corev1.Service {
	t.Helper()
	out, err := kube(t).CoreV1().Services(ns).Create(context.Background(), newService(s), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func getService(t *testing.T, name string) *corev1.Service {
	t.Helper()
	svc, err := kube(t).CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func updateService(t *testing.T, name string, mutate func(*corev1.Service)) {
	t.Helper()
	updateServiceIn(t, ns, name, mutate)
}

// updateServiceIn applies mutate to the Service namespace/name, retrying
// on conflicts.
func updateServiceIn(t *testing.T, namespace, name string, mutate func(*corev1.Service)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		svc, err := kube(t).CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mutate(svc)
		_, err = kube(t).CoreV1().Services(namespace).Update(ctx, svc, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitIngress waits for an address in status and returns the Service.
func waitIngress(t *testing.T, name string, timeout time.Duration) *corev1.Service {
	t.Helper()
	return waitIngressIn(t, ns, name, timeout)
}

// waitIngressIn is waitIngress in namespace namespace.
func waitIngressIn(t *testing.T, namespace, name string, timeout time.Duration) *corev1.Service {
	t.Helper()
	var svc *corev1.Service
	poll(t, timeout, "ingress of "+namespace+"/"+name, func(ctx context.Context) (bool, error) {
		s, err := kube(t).CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		svc = s
		return len(s.Status.LoadBalancer.Ingress) > 0 && s.Labels[naming.LabelHash] == naming.Hash(s), nil
	})
	return svc
}

// deleteService deletes a Service and waits until it is gone (finalizer removed).
func deleteService(t *testing.T, name string) {
	t.Helper()
	deleteServiceIn(t, ns, name, 30*time.Second)
}

// deleteServiceIn deletes a Service of namespace and waits, at most
// within, until it is gone; it returns how long that took.
func deleteServiceIn(t *testing.T, namespace, name string, within time.Duration) time.Duration {
	t.Helper()
	err := kube(t).CoreV1().Services(namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return poll(t, within, "deletion of "+namespace+"/"+name, func(ctx context.Context) (bool, error) {
		_, err := kube(t).CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func lbID(svc *corev1.Service) string { return svc.Labels[naming.LabelLoadBalancerID] }

func describeLB(t *testing.T, id string) (*slb.LoadBalancer, bool) {
	t.Helper()
	req := slb.CreateDescribeLoadBalancersRequest()
	req.LoadBalancerId = id
	resp, err := slbClient(t).DescribeLoadBalancers(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, lb := range resp.LoadBalancers.LoadBalancer {
		if lb.LoadBalancerId == id {
			return &lb, true
		}
	}
	return nil, false
}

func listeners(t *testing.T, id string) []slb.ListenerInDescribeLoadBalancerListeners {
	t.Helper()
	req := slb.CreateDescribeLoadBalancerListenersRequest()
	req.LoadBalancerId = &[]string{id}
	req.MaxResults = requests.NewInteger(100)
	resp, err := slbClient(t).DescribeLoadBalancerListeners(req)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(resp.Listeners, func(i, j int) bool { return resp.Listeners[i].ListenerPort < resp.Listeners[j].ListenerPort })
	return resp.Listeners
}

// groupMembers returns vServer group name → members (serverId → weight).
func groupMembers(t *testing.T, id string) map[string]map[string]int {
	t.Helper()
	req := slb.CreateDescribeVServerGroupsRequest()
	req.LoadBalancerId = id
	resp, err := slbClient(t).DescribeVServerGroups(req)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int{}
	for _, g := range resp.VServerGroups.VServerGroup {
		areq := slb.CreateDescribeVServerGroupAttributeRequest()
		areq.VServerGroupId = g.VServerGroupId
		a, err := slbClient(t).DescribeVServerGroupAttribute(areq)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, b := range a.BackendServers.BackendServer {
			m[b.ServerId] = b.Weight
		}
		out[g.VServerGroupName] = m
	}
	return out
}

// events returns the reasons and messages of the Service's events.
func events(t *testing.T, name string) []corev1.Event {
	t.Helper()
	return eventsIn(t, ns, name)
}

// eventsIn is events in namespace namespace.
func eventsIn(t *testing.T, namespace, name string) []corev1.Event {
	t.Helper()
	sel := fields.Set{"involvedObject.name": name, "involvedObject.kind": "Service"}.AsSelector().String()
	list, err := kube(t).CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func waitEvent(t *testing.T, name, reason, contains string) corev1.Event {
	t.Helper()
	return waitEventIn(t, ns, name, reason, contains)
}

// waitEventIn waits for an event of the Service namespace/name with reason
// whose message contains contains.
func waitEventIn(t *testing.T, namespace, name, reason, contains string) corev1.Event {
	t.Helper()
	var found corev1.Event
	poll(t, 20*time.Second, "event "+reason+" on "+namespace+"/"+name, func(ctx context.Context) (bool, error) {
		for _, e := range eventsIn(t, namespace, name) {
			if e.Reason == reason && strings.Contains(e.Message, contains) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// isWrite reports whether an action changes state: anything but Describe* and List*.
func isWrite(action string) bool {
	return !strings.HasPrefix(action, "Describe") && !strings.HasPrefix(action, "List") && !strings.HasPrefix(action, "Get")
}

// writesSince returns the SLB write calls after seq.
func writesSince(seq uint64) []gateway.RequestRecord {
	var out []gateway.RequestRecord
	for _, r := range cloud.Requests(gateway.RequestFilter{Product: "slb", AfterSeq: seq}) {
		if isWrite(r.Action) {
			out = append(out, r)
		}
	}
	return out
}

func lastSeq() uint64 {
	rs := cloud.Requests()
	if len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1].Seq
}

func actions(rs []gateway.RequestRecord) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Action)
	}
	return out
}

// nodeInstances returns the instance ids of the named Nodes.
func nodeInstances(names ...string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[instances[n]] = true
	}
	return out
}
