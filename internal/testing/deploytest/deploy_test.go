package deploytest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/app"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

func kube(t *testing.T) kubernetes.Interface {
	t.Helper()
	return ccmtest.Kube(t, cluster)
}

func ecsClient(t *testing.T) *ecs.Client {
	return emulatortest.For(cloud, accessKeyID, accessKeySecret).ECS(t)
}

func vpcClient(t *testing.T) *vpc.Client {
	return emulatortest.For(cloud, accessKeyID, accessKeySecret).VPC(t)
}

func slbClient(t *testing.T) *slb.Client {
	return emulatortest.For(cloud, accessKeyID, accessKeySecret).SLB(t)
}

func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ccm.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			if ctx.Err() == nil { // not the poll's own deadline cutting a call short
				last = err
			}
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		if crash := ccm.Crashed(); crash != nil {
			t.Fatalf("%s: %v", what, crash)
		}
		if ccm.Exited() {
			t.Fatalf("%s: the CCM exited; log tail:\n%s", what, tailLines(ccm.Log(), 30))
		}
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

// instanceIP returns the primary private IP and zone of a seeded instance.
func instanceIP(t *testing.T, id string) string {
	t.Helper()
	req := ecs.CreateDescribeInstancesRequest()
	req.InstanceIds = `["` + id + `"]`
	resp, err := ecsClient(t).DescribeInstances(req)
	if err != nil || len(resp.Instances.Instance) != 1 {
		t.Fatalf("describe %s: %v", id, err)
	}
	return resp.Instances.Instance[0].VpcAttributes.PrivateIpAddress.IpAddress[0]
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, tn := range n.Spec.Taints {
		if tn.Key == key {
			return true
		}
	}
	return false
}

// waitInitialized waits until the cloud-node controller has set the Node's
// providerID and removed the uninitialized taint.
func waitInitialized(t *testing.T, name, instance string) {
	t.Helper()
	cs := kube(t)
	poll(t, 60*time.Second, "node "+name+" initialized", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if hasTaint(n, cloudapi.TaintExternalCloudProvider) {
			return false, fmt.Errorf("still tainted")
		}
		if want := cloud.Region() + "." + instance; n.Spec.ProviderID != want {
			return false, fmt.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
		}
		return n.Labels[corev1.LabelTopologyZone] != "", nil
	})
}

// TestNodesInitializedAndRouted: the node controller (node-controller
// identity) initializes the Nodes; the route controller (route-controller
// identity) routes their pod CIDRs and clears NetworkUnavailable.
func TestNodesInitializedAndRouted(t *testing.T) {
	ctx := context.Background()
	cs := kube(t)
	names := map[string]string{}
	for i, id := range instances[:2] {
		name := fmt.Sprintf("deploy-node-%d", i)
		if _, err := localcluster.RegisterKubeletNode(ctx, cs, localcluster.KubeletNode{Name: name, InternalIP: instanceIP(t, id), Kwok: true}); err != nil {
			t.Fatal(err)
		}
		names[name] = id
	}
	for name, id := range names {
		waitInitialized(t, name, id)
		poll(t, 60*time.Second, "route of "+name, func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if n.Spec.PodCIDR == "" {
				return false, fmt.Errorf("no podCIDR yet")
			}
			req := vpc.CreateDescribeRouteEntryListRequest()
			req.RouteTableId = routeTable(t)
			req.DestinationCidrBlock = n.Spec.PodCIDR
			resp, err := vpcClient(t).DescribeRouteEntryList(req)
			if err != nil {
				return false, err
			}
			routed := false
			for _, e := range resp.RouteEntrys.RouteEntry {
				for _, h := range e.NextHops.NextHop {
					routed = routed || h.NextHopId == id
				}
			}
			if !routed {
				return false, fmt.Errorf("no route %s → %s", n.Spec.PodCIDR, id)
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeNetworkUnavailable {
					if c.Status != corev1.ConditionFalse {
						return false, fmt.Errorf("NetworkUnavailable %s", c.Status)
					}
					return true, nil
				}
			}
			return false, fmt.Errorf("no NetworkUnavailable condition")
		})
	}
}

var routeTableID string

func routeTable(t *testing.T) string {
	t.Helper()
	if routeTableID != "" {
		return routeTableID
	}
	resp, err := vpcClient(t).DescribeRouteTableList(vpc.CreateDescribeRouteTableListRequest())
	if err != nil || len(resp.RouterTableList.RouterTableListType) != 1 {
		t.Fatalf("route tables: %v", err)
	}
	routeTableID = resp.RouterTableList.RouterTableListType[0].RouteTableId
	return routeTableID
}

// TestNodeLifecycle: a NotReady Node whose instance is stopped gets the
// shutdown taint; once the instance is deleted the Node is deleted (both by
// the node-controller identity).
func TestNodeLifecycle(t *testing.T) {
	ctx := context.Background()
	cs := kube(t)
	id := instances[2]
	const name = "deploy-node-dying"
	// No kwok: the Node never turns Ready, as when its kubelet is gone.
	if _, err := localcluster.RegisterKubeletNode(ctx, cs, localcluster.KubeletNode{Name: name, InternalIP: instanceIP(t, id)}); err != nil {
		t.Fatal(err)
	}
	waitInitialized(t, name, id)
	stop := ecs.CreateStopInstancesRequest()
	stop.InstanceId = &[]string{id}
	if _, err := ecsClient(t).StopInstances(stop); err != nil {
		t.Fatal(err)
	}
	// What kube-controller-manager's node lifecycle controller does once
	// the kubelet is silent past its grace period. It cannot here: this
	// binary strips the bootstrap bindings of the ServiceAccounts our
	// controllers share names with (node-controller among them), so only
	// deploy/rbac.yaml's rules are tested, and kube-controller-manager,
	// which runs as that same node-controller, may no longer update Node
	// status.
	markNodeUnknown(t, name)
	poll(t, 60*time.Second, "shutdown taint on "+name, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && hasTaint(n, cloudapi.TaintNodeShutdown), err
	})
	del := ecs.CreateDeleteInstanceRequest()
	del.InstanceId = id
	del.Force = "true"
	if _, err := ecsClient(t).DeleteInstance(del); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "deletion of "+name, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// markNodeUnknown sets the Node's Ready condition Unknown, as
// kube-controller-manager does when the kubelet stops posting status.
func markNodeUnknown(t *testing.T, name string) {
	t.Helper()
	now := metav1.Now()
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		Message: "Kubelet stopped posting node status.", LastHeartbeatTime: now, LastTransitionTime: now,
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube(t).CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("mark Node %s NotReady: %v", name, err)
	}
}

// TestLoadBalancerService: the service controller (service-controller
// identity) gives a LoadBalancer Service a CLB and its address, and deletes
// the CLB before releasing the Service's finalizer.
func TestLoadBalancerService(t *testing.T) {
	ctx := context.Background()
	cs := kube(t)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	poll(t, 60*time.Second, "address of Service web", func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, fmt.Errorf("no ingress yet")
		}
		ip = s.Status.LoadBalancer.Ingress[0].IP
		return ip != "", nil
	})
	lbs := func() []slb.LoadBalancer {
		resp, err := slbClient(t).DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
		if err != nil {
			t.Fatal(err)
		}
		return resp.LoadBalancers.LoadBalancer
	}
	found := false
	for _, lb := range lbs() {
		found = found || lb.Address == ip
	}
	if !found {
		t.Fatalf("no CLB has the Service's address %s", ip)
	}
	if err := cs.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "Service web gone", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	for _, lb := range lbs() {
		if lb.Address == ip {
			t.Fatalf("CLB %s still exists after its Service was deleted", lb.LoadBalancerId)
		}
	}
}

// TestSecurePortDelegatesAuth: /healthz is open (the liveness probe);
// /metrics authenticates a bearer token with a TokenReview and authorizes
// it with a SubjectAccessReview, both made by the CCM's own identity.
func TestSecurePortDelegatesAuth(t *testing.T) {
	ctx := context.Background()
	cs := kube(t)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // in-memory self-signed serving cert
	}}
	base := fmt.Sprintf("https://127.0.0.1:%d", ccm.Port)
	get := func(path, token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	poll(t, 30*time.Second, "/healthz ok without credentials", func(context.Context) (bool, error) {
		code, body, err := get("/healthz", "")
		return err == nil && code == http.StatusOK && body == "ok", err
	})

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "metrics-scraper", Namespace: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "deploytest-metrics-reader"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "/metrics with a scraper's token", func(context.Context) (bool, error) {
		code, body, err := get("/metrics", tok.Status.Token)
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("HTTP %d: %s", code, tailLines(body, 3))
		}
		return strings.Contains(body, "alicloud_api_requests_total"), nil
	})
}

// TestControllersActAsTheirOwnServiceAccounts: with
// --use-service-account-credentials the CCM created (or found) one
// ServiceAccount per controller, and holds the Lease kube-system/ccm.
func TestControllersActAsTheirOwnServiceAccounts(t *testing.T) {
	ctx := context.Background()
	cs := kube(t)
	for _, name := range controllerIdentities {
		if _, err := cs.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ServiceAccount %s/%s: %v", namespace, name, err)
		}
	}
	lease, err := cs.CoordinationV1().Leases(namespace).Get(ctx, app.LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Lease %s/%s: %v", namespace, app.LeaseName, err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatal("the Lease has no holder")
	}
	t.Logf("Lease %s/%s held by %s; bindings stripped before the run: %v", namespace, app.LeaseName, *lease.Spec.HolderIdentity, stripped)
}

// TestLeastPrivilege asks the API server what each identity may do under
// deploy/rbac.yaml: what the code needs is allowed, neighbouring powers are
// not.
func TestLeastPrivilege(t *testing.T) {
	cs := kube(t)
	type check struct {
		identity                             string
		verb, group, resource, sub, ns, name string
		allowed                              bool
	}
	for _, c := range []check{
		{rootSA, "watch", "", "nodes", "", "", "", true},
		{rootSA, "list", "discovery.k8s.io", "endpointslices", "", "", "", true},
		{rootSA, "create", "authentication.k8s.io", "tokenreviews", "", "", "", true},
		{rootSA, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", "", true},
		{rootSA, "update", "coordination.k8s.io", "leases", "", namespace, app.LeaseName, true},
		{rootSA, "create", "", "serviceaccounts", "token", namespace, "service-controller", true},
		{rootSA, "get", "", "configmaps", "", namespace, "extension-apiserver-authentication", true},
		// The process itself writes no Node or Service: its controllers do.
		{rootSA, "patch", "", "nodes", "", "", "", false},
		{rootSA, "patch", "", "services", "", "default", "", false},
		{rootSA, "update", "coordination.k8s.io", "leases", "", namespace, "kube-controller-manager", false},
		{rootSA, "create", "", "serviceaccounts", "token", namespace, "clusterrole-aggregation-controller", false},
		{rootSA, "get", "", "secrets", "", namespace, "", false},
		{rootSA, "get", "", "configmaps", "", namespace, "kube-proxy", false},
		{rootSA, "list", "", "pods", "", "", "", false},
		{"node-controller", "update", "", "nodes", "", "", "", true},
		{"node-controller", "delete", "", "nodes", "", "", "", true},
		{"node-controller", "patch", "", "nodes", "status", "", "", true},
		{"node-controller", "delete", "", "pods", "", "default", "", false},
		{"node-controller", "patch", "", "services", "", "default", "", false},
		{"service-controller", "patch", "", "services", "", "default", "", true},
		{"service-controller", "patch", "", "services", "status", "default", "", true},
		{"service-controller", "create", "", "events", "", "default", "", true},
		{"service-controller", "delete", "", "services", "", "default", "", false},
		// Readiness gates: a pod's status is patched; pods are listed per
		// sync (eni backends) but never read one by one, watched or changed
		// otherwise.
		{"service-controller", "get", "", "pods", "", "default", "", false},
		{"service-controller", "patch", "", "pods", "status", "default", "", true},
		{"service-controller", "list", "", "pods", "", "", "", true}, // the Service's namespace, and the cluster's for untargeted eni endpoints (one each per sync)
		{"service-controller", "watch", "", "pods", "", "", "", false},
		{"service-controller", "patch", "", "pods", "", "default", "", false},
		{"service-controller", "update", "", "pods", "status", "default", "", false},
		{"service-controller", "update", "", "nodes", "", "", "", false},
		{"route-controller", "patch", "", "nodes", "status", "", "", true},
		{"route-controller", "patch", "", "nodes", "", "", "", false},
		{"cloud-node-controller", "create", "", "events", "", "default", "", true},
		{"cloud-node-controller", "patch", "", "nodes", "", "", "", false},
	} {
		what := fmt.Sprintf("%s %s %s/%s", c.identity, c.verb, c.resource, c.sub)
		if c.name != "" {
			what += " " + c.name
		}
		t.Run(what, func(t *testing.T) {
			user := "system:serviceaccount:" + namespace + ":" + c.identity
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: c.verb, Group: c.group, Resource: c.resource, Subresource: c.sub, Namespace: c.ns, Name: c.name,
				},
			}}
			out, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status.Allowed != c.allowed {
				t.Fatalf("allowed=%v, want %v (%s)", out.Status.Allowed, c.allowed, out.Status.Reason)
			}
		})
	}
}

// forbidden matches an API server refusal in the CCM's log.
var forbidden = regexp.MustCompile(`(?i)forbidden`)

// TestNoForbiddenRequests runs last: after every controller has worked,
// the CCM's log holds no request the API server refused.
func TestNoForbiddenRequests(t *testing.T) {
	if ccm.Exited() {
		t.Fatalf("the CCM exited; log tail:\n%s", tailLines(ccm.Log(), 30))
	}
	data, err := os.ReadFile(ccm.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, line := range strings.Split(string(data), "\n") {
		if forbidden.MatchString(line) {
			bad = append(bad, line)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d forbidden lines in the CCM log, e.g.:\n%s", len(bad), strings.Join(bad[:min(len(bad), 10)], "\n"))
	}
	if !regexp.MustCompile(`(?i)successfully acquired lease.*` + regexp.QuoteMeta(namespace+"/"+app.LeaseName)).Match(data) {
		t.Fatalf("the log does not show the Lease %s/%s acquired", namespace, app.LeaseName)
	}
}
