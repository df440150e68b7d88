package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func register(t *testing.T, prefix string, in instance, kwok bool) string {
	t.Helper()
	name := nodeName(prefix)
	if _, err := localcluster.RegisterKubeletNode(context.Background(), kube(t), localcluster.KubeletNode{Name: name, InternalIP: in.ip, Kwok: kwok}); err != nil {
		t.Fatal(err)
	}
	return name
}

func waitInitialized(t *testing.T, name string, in instance) time.Duration {
	t.Helper()
	cs := kube(t)
	return poll(t, 20*time.Second, "node "+name+" initialized", func(ctx context.Context) (bool, error) {
		n, err := getNode(ctx, cs, name)
		if err != nil {
			return false, err
		}
		if hasTaint(n, cloudapi.TaintExternalCloudProvider) {
			return false, fmt.Errorf("still tainted")
		}
		if want := cloud.Region() + "." + in.id; n.Spec.ProviderID != want {
			return false, fmt.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
		}
		for k, want := range map[string]string{
			corev1.LabelTopologyRegion:     cloud.Region(),
			corev1.LabelTopologyZone:       in.zone,
			corev1.LabelInstanceTypeStable: "ecs.g7.large",
			nodes.LabelChargeType:          "PostPaid",
			nodes.LabelSpotStrategy:        "NoSpot",
		} {
			if n.Labels[k] != want {
				return false, fmt.Errorf("label %s=%q, want %q", k, n.Labels[k], want)
			}
		}
		internal := false
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && a.Address == in.ip {
				internal = true
			}
		}
		if !internal {
			return false, fmt.Errorf("addresses %v lack InternalIP %s", n.Status.Addresses, in.ip)
		}
		return true, nil
	})
}

// TestNodesInitializedFromTheirInstances registers three Nodes as kubelets
// with --cloud-provider=external do (no providerID: looked up by InternalIP)
// and expects them initialized within 10 seconds (they take well under
// one) at a cost of one instance listing, not one call per Node. On a
// failure it prints the CCM's log lines about them.
func TestNodesInitializedFromTheirInstances(t *testing.T) {
	insts := addInstances(t, 3)
	before := cloud.Calls("ecs", "DescribeInstances")
	offset := logSize(t)
	start := time.Now()
	var names []string
	defer func() {
		if t.Failed() {
			t.Logf("CCM log about %v:\n%s", names, explain(logFrom(t, offset), names, 60))
		}
	}()
	for _, in := range insts {
		names = append(names, register(t, "init", in, true))
	}
	for i, name := range names {
		waitInitialized(t, name, insts[i])
	}
	took := time.Since(start)
	calls := cloud.Calls("ecs", "DescribeInstances") - before
	t.Logf("3 nodes initialized in %v with %d DescribeInstances calls", took.Round(10*time.Millisecond), calls)
	if took > 10*time.Second {
		t.Errorf("initialization took %v, want under 10s", took)
	}
	if calls > 3 {
		t.Errorf("%d DescribeInstances calls for 3 nodes; lookups are not batched", calls)
	}
}

// TestNodeWithProviderIDInitialized covers lookup by providerID, with the
// alicloud:// prefix some clusters use.
func TestNodeWithProviderIDInitialized(t *testing.T) {
	in := addInstances(t, 1)[0]
	cs := kube(t)
	name := nodeName("pid")
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{localcluster.KwokNodeAnnotation: localcluster.KwokNodeValue}},
		Spec: corev1.NodeSpec{
			ProviderID: "alicloud://" + cloud.Region() + "." + in.id,
			Taints:     []corev1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 20*time.Second, "node initialized by providerID", func(ctx context.Context) (bool, error) {
		n, err := getNode(ctx, cs, name)
		if err != nil {
			return false, err
		}
		return !hasTaint(n, cloudapi.TaintExternalCloudProvider) && n.Labels[corev1.LabelTopologyZone] == in.zone, nil
	})
}

// TestExcludedNodeIsLeftAlone: a Node labelled exclude-node keeps its
// taint and is never deleted.
func TestExcludedNodeIsLeftAlone(t *testing.T) {
	cs := kube(t)
	name := nodeName("excluded")
	if _, err := localcluster.RegisterKubeletNode(context.Background(), cs, localcluster.KubeletNode{
		Name: name, InternalIP: "192.168.250.250", Kwok: false, Labels: map[string]string{nodes.LabelExcludeNode: "true"},
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(15 * time.Second) // NotReady (no kwok) and past several lifecycle passes
	n, err := getNode(context.Background(), cs, name)
	if err != nil {
		t.Fatalf("excluded node must not be deleted: %v", err)
	}
	if !hasTaint(n, cloudapi.TaintExternalCloudProvider) || n.Spec.ProviderID != "" {
		t.Fatalf("excluded node was modified: taints %v providerID %q", n.Spec.Taints, n.Spec.ProviderID)
	}
}

func stopKwok(t *testing.T, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"` + localcluster.KwokNodeAnnotation + `":null}}}`)
	if _, err := kube(t).CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func startKwok(t *testing.T, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"` + localcluster.KwokNodeAnnotation + `":"` + localcluster.KwokNodeValue + `"}}}`)
	if _, err := kube(t).CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestNodeDeletedWhenItsInstanceIsGone: an instance deleted through the ECS
// API whose Node then goes NotReady → the Node is deleted; a Ready Node
// whose instance is gone is kept.
func TestNodeDeletedWhenItsInstanceIsGone(t *testing.T) {
	insts := addInstances(t, 2)
	dying := register(t, "gone", insts[0], true)
	ready := register(t, "gone-ready", insts[1], true)
	waitInitialized(t, dying, insts[0])
	waitInitialized(t, ready, insts[1])
	for _, in := range insts {
		req := ecs.CreateDeleteInstanceRequest()
		req.InstanceId = in.id
		req.Force = "true"
		if _, err := ecsClient(t).DeleteInstance(req); err != nil {
			t.Fatal(err)
		}
	}
	stopKwok(t, dying)
	cs := kube(t)
	took := poll(t, 60*time.Second, "node deleted after its instance is gone", func(ctx context.Context) (bool, error) {
		_, err := getNode(ctx, cs, dying)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	t.Logf("node deleted %v after its heartbeat stopped", took.Round(100*time.Millisecond))
	if _, err := getNode(context.Background(), cs, ready); err != nil {
		t.Fatalf("a Ready node must never be deleted: %v", err)
	}
}

// TestShutdownTaintFollowsInstanceState: a stopped instance whose Node is
// NotReady gets the shutdown taint; started and Ready again, it is removed.
func TestShutdownTaintFollowsInstanceState(t *testing.T) {
	in := addInstances(t, 1)[0]
	name := register(t, "stopped", in, true)
	waitInitialized(t, name, in)
	stop := ecs.CreateStopInstancesRequest()
	stop.InstanceId = &[]string{in.id}
	if _, err := ecsClient(t).StopInstances(stop); err != nil {
		t.Fatal(err)
	}
	stopKwok(t, name)
	cs := kube(t)
	poll(t, 60*time.Second, "shutdown taint", func(ctx context.Context) (bool, error) {
		n, err := getNode(ctx, cs, name)
		return err == nil && hasTaint(n, cloudapi.TaintNodeShutdown), err
	})
	start := ecs.CreateStartInstancesRequest()
	start.InstanceId = &[]string{in.id}
	if _, err := ecsClient(t).StartInstances(start); err != nil {
		t.Fatal(err)
	}
	startKwok(t, name)
	poll(t, 60*time.Second, "shutdown taint removed once Ready", func(ctx context.Context) (bool, error) {
		n, err := getNode(ctx, cs, name)
		return err == nil && !hasTaint(n, cloudapi.TaintNodeShutdown), err
	})
	if _, err := getNode(context.Background(), cs, name); err != nil {
		t.Fatalf("a stopped instance's node must not be deleted: %v", err)
	}
}

// TestNodesConvergeUnderThrottling: with 30% of DescribeInstances calls
// refused with Throttling.User, Nodes are still initialized.
func TestNodesConvergeUnderThrottling(t *testing.T) {
	insts := addInstances(t, 3)
	throttled := &gateway.FaultError{Code: "Throttling.User", Status: 400, Message: "Request was denied due to user flow control."}
	// The first three calls are refused for sure, so the retry path is
	// exercised whatever the random draws; then 30% of the rest.
	first, err := cloud.Gateway.AddFault(gateway.FaultRule{Product: "ecs", Action: "DescribeInstances", Count: 3, Error: throttled})
	if err != nil {
		t.Fatal(err)
	}
	rule, err := cloud.Gateway.AddFault(gateway.FaultRule{Product: "ecs", Action: "DescribeInstances", Probability: 0.3, Error: throttled})
	if err != nil {
		t.Fatal(err)
	}
	defer cloud.Gateway.RemoveFault(rule.ID)
	defer cloud.Gateway.RemoveFault(first.ID)
	before := cloud.Calls("ecs", "DescribeInstances")
	var names []string
	for _, in := range insts {
		names = append(names, register(t, "throttled", in, true))
	}
	for i, name := range names {
		waitInitialized(t, name, insts[i])
	}
	fired := 3
	for _, f := range cloud.Gateway.Faults() {
		if f.ID == rule.ID {
			fired += f.Fired
		}
		if f.ID == first.ID {
			t.Fatalf("the first %d throttling faults did not all fire (%d left)", 3, f.Count)
		}
	}
	t.Logf("converged with %d of %d DescribeInstances calls throttled", fired, cloud.Calls("ecs", "DescribeInstances")-before)
}

// TestBadCloudConfigStopsAtStart: the process exits non-zero naming the field.
func TestBadCloudConfigStopsAtStart(t *testing.T) {
	// A VPC without the suite's routes: discovery finds no cluster id there.
	empty := emptyVPC(t)
	for _, tc := range []struct{ name, config, field string }{
		{"bad route table", "Global:\n  clusterID: " + clusterID + "\n  routeTableIDs: rt-123\n", "Global.routeTableIDs"},
		{"bad scheme type", `{"Global":{"clusterID":"` + clusterID + `","serviceMaxConcurrentReconciles":"many"}}`, "serviceMaxConcurrentReconciles"},
		{"secret not base64", "Global:\n  clusterID: " + clusterID + "\n  accessKeyID: QUs=\n  accessKeySecret: '!!!not-base64-secret!!!'\n", "Global.accessKeySecret"},
		{"no clusterID", "Global:\n  region: cn-hangzhou\n  vpcid: " + empty + "\n", "Global.clusterID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ccmtest.StartCCM(context.Background(), ccmtest.CCMOptions{
				Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(), AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
				CloudConfig: tc.config, Args: []string{"--leader-elect=false"},
				LogPath: filepath.Join(t.TempDir(), "ccm.log"),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Stop()
			code := c.Wait(30 * time.Second)
			if code == 0 || code == -1 {
				t.Fatalf("exit code %d, want a non-zero exit at start; log:\n%s", code, ccmtest.Tail(c.Log(), 20))
			}
			if !strings.Contains(c.Log(), tc.field) {
				t.Fatalf("the log does not name %s:\n%s", tc.field, ccmtest.Tail(c.Log(), 20))
			}
			if strings.Contains(c.Log(), "!!!not-base64-secret!!!") {
				t.Fatal("the secret was logged")
			}
		})
	}
}

// TestSecretsNeverLogged greps every captured CCM log line for the
// AccessKey secret (run last: the logs then hold every other test's work).
func TestSecretsNeverLogged(t *testing.T) {
	var data []byte
	poll(t, 10*time.Second, "the CCM has logged", func(context.Context) (bool, error) {
		var err error
		data, err = os.ReadFile(ccm.LogPath)
		return len(data) > 0, err
	})
	for i, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, accessKeySecret) {
			t.Fatalf("log line %d contains the AccessKey secret", i+1)
		}
	}
	for _, rec := range cloud.Requests() {
		for k, v := range rec.Params {
			if strings.Contains(v, accessKeySecret) {
				t.Fatalf("request %s parameter %s carries the secret", rec.Action, k)
			}
		}
	}
}

func nodeEvents(ctx context.Context, t *testing.T, name string) []corev1.Event {
	t.Helper()
	list, err := kube(t).CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestNodeEventsReportLookups: an initialized Node gets InitializedNode;
// a Node whose IP matches no instance gets a Warning AddNodeFailed and
// keeps its taint.
func TestNodeEventsReportLookups(t *testing.T) {
	in := addInstances(t, 1)[0]
	good := register(t, "events", in, true)
	waitInitialized(t, good, in)
	// Ready from its registration: the lifecycle controller deletes a
	// NotReady Node without instance, which this one would be until kwok
	// reports it.
	orphan := nodeName("events-orphan")
	registered, err := localcluster.RegisterKubeletNode(context.Background(), kube(t), localcluster.KubeletNode{
		Name: orphan, InternalIP: "192.168.1.250", Kwok: true, Ready: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(registered.Status.Conditions) == 0 {
		t.Fatal("the orphan was registered without its Ready condition")
	}
	cs := kube(t)
	for _, want := range []struct{ node, reason, typ, text string }{
		{good, nodes.ReasonInitialized, corev1.EventTypeNormal, in.id},
		{orphan, nodes.ReasonAddFailed, corev1.EventTypeWarning, "192.168.1.250"},
	} {
		poll(t, 30*time.Second, want.reason+" event on "+want.node, func(ctx context.Context) (bool, error) {
			for _, e := range nodeEvents(ctx, t, want.node) {
				if e.Reason == want.reason && e.Type == want.typ && strings.Contains(e.Message, want.text) {
					return true, nil
				}
			}
			return false, nil
		})
	}
	n, err := getNode(context.Background(), cs, orphan)
	if err != nil || !hasTaint(n, cloudapi.TaintExternalCloudProvider) {
		t.Fatalf("a node without instance must stay uninitialized: %v", err)
	}
}

// TestHealthzAndMetricsServed: /healthz answers on the secure port, and
// /metrics (which needs RBAC) counts the cloud calls the CCM has made.
func TestHealthzAndMetricsServed(t *testing.T) {
	ctx := context.Background()
	cs := kube(t)
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // self-signed in-memory serving cert
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	base := fmt.Sprintf("https://127.0.0.1:%d", ccm.Port)
	poll(t, 20*time.Second, "/healthz ok", func(context.Context) (bool, error) {
		resp, err := hc.Get(base + "/healthz")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != "ok" {
			return false, fmt.Errorf("HTTP %d %s", resp.StatusCode, body)
		}
		return true, nil
	})

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader", Namespace: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ccm-metrics-reader"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ccm-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var body string
	poll(t, 20*time.Second, "/metrics with the cloud call counters", func(context.Context) (bool, error) {
		req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
		resp, err := hc.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		body = string(data)
		if resp.StatusCode != 200 {
			return false, fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return strings.Contains(body, `alicloud_api_requests_total{action="DescribeInstances",code="OK",product="ecs"}`), nil
	})
	if !strings.Contains(body, "alicloud_api_request_duration_seconds_bucket") {
		t.Fatal("no latency histogram")
	}
}
