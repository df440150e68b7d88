package localcluster_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

var cluster *localcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(localcluster.RunTests(m, localcluster.Options{
		ControllerManager:      true,
		Scheduler:              true,
		Kwok:                   true,
		NodeMonitorGracePeriod: 12 * time.Second,
	}, func(c *localcluster.Cluster) { cluster = c }))
}

func clientset(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	cs, err := cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func kwokNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{localcluster.KwokNodeAnnotation: localcluster.KwokNodeValue},
		Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": name},
	}}
}

func namespace(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		if aerr := cluster.CheckAlive(); aerr != nil {
			t.Fatalf("%s: %v; %v", what, err, aerr)
		}
		t.Fatalf("%s: %v (last error: %v)", what, err, lastErr)
	}
}

// TestClusterRunsWorkloads proves the control plane is real: nodeipam gives
// Nodes podCIDRs, the scheduler places pods, kwok runs them with IPs from
// those CIDRs, the EndpointSlice controller publishes them, and the
// apiserver allocates NodePorts.
func TestClusterRunsWorkloads(t *testing.T) {
	t.Parallel()
	cs := clientset(t)
	ctx := context.Background()
	ns := namespace(t, cs, "workloads")
	nodes := []string{"workload-node-a", "workload-node-b", "workload-node-c"}
	for _, n := range nodes {
		node := kwokNode(n)
		if node.Spec.PodCIDR != "" {
			t.Fatal("test nodes must start without a podCIDR")
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cidrs := map[string]*net.IPNet{}
	poll(t, 60*time.Second, "every node gets a podCIDR and turns Ready", func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if node.Spec.PodCIDR == "" || !nodeReady(node) {
				return false, fmt.Errorf("node %s: podCIDR %q ready %v", n, node.Spec.PodCIDR, nodeReady(node))
			}
			_, ipnet, err := net.ParseCIDR(node.Spec.PodCIDR)
			if err != nil {
				return false, err
			}
			cidrs[n] = ipnet
		}
		return true, nil
	})

	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"type": "kwok"},
					Containers: []corev1.Container{{
						Name: "web", Image: "nginx",
						Ports: []corev1.ContainerPort{{ContainerPort: 8080, Name: "http"}},
					}},
				},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: corev1.ServiceSpec{Selector: labels, Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-nodeport", Namespace: ns}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: labels, Ports: port}},
	} {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	poll(t, 90*time.Second, "3 pods scheduled and Running with IPs in their node's podCIDR", func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
				continue
			}
			cidr, ok := cidrs[p.Spec.NodeName]
			if !ok {
				return false, fmt.Errorf("pod %s on unexpected node %s", p.Name, p.Spec.NodeName)
			}
			if !cidr.Contains(net.ParseIP(p.Status.PodIP)) {
				return false, fmt.Errorf("pod %s IP %s not in node %s podCIDR %s", p.Name, p.Status.PodIP, p.Spec.NodeName, cidr)
			}
			running++
		}
		if running != 3 {
			return false, fmt.Errorf("%d of %d pods running", running, len(pods.Items))
		}
		return true, nil
	})

	poll(t, 60*time.Second, "EndpointSlice lists 3 ready endpoints", func(ctx context.Context) (bool, error) {
		slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, s := range slices.Items {
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					ready++
				}
			}
		}
		if ready != 3 {
			return false, fmt.Errorf("%d ready endpoints", ready)
		}
		return true, nil
	})

	np, err := cs.CoreV1().Services(ns).Get(ctx, "web-nodeport", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := np.Spec.Ports[0].NodePort; p < 30000 || p > 32767 {
		t.Fatalf("NodePort %d not allocated from the default range", p)
	}
	ci, err := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ci.Spec.ClusterIP == "" || ci.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Fatalf("ClusterIP not allocated: %q", ci.Spec.ClusterIP)
	}
}

// TestRBACIsEnforced proves authorization is real: a ServiceAccount with no
// role binding is refused.
func TestRBACIsEnforced(t *testing.T) {
	t.Parallel()
	cs := clientset(t)
	ctx := context.Background()
	ns := namespace(t, cs, "rbac")
	sa, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(cluster.RESTConfig)
	cfg.BearerToken = tok.Status.Token
	saClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = saClient.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("listing nodes as %s/%s: want Forbidden, got %v", ns, sa.Name, err)
	}
	// The same token is authenticated: who-am-i answers with the
	// ServiceAccount, so the refusal above is authorization, not authentication.
	review, err := saClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + ns + ":nobody"; review.Status.UserInfo.Username != want {
		t.Fatalf("token authenticated as %q, want %q", review.Status.UserInfo.Username, want)
	}
}

// TestNodeWithoutKwokTurnsNotReady proves a Node whose kwok annotation is
// removed stops heartbeating and is marked NotReady, as when its kubelet dies.
func TestNodeWithoutKwokTurnsNotReady(t *testing.T) {
	t.Parallel()
	cs := clientset(t)
	ctx := context.Background()
	const name = "dying-node"
	node := kwokNode(name)
	node.Labels["type"] = "dying"
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "node Ready", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && nodeReady(n), err
	})
	patch := []byte(`{"metadata":{"annotations":{"` + localcluster.KwokNodeAnnotation + `":null}}}`)
	if _, err := cs.CoreV1().Nodes().Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 90*time.Second, "node NotReady after its heartbeat stops", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionUnknown || c.Status == corev1.ConditionFalse, nil
			}
		}
		return false, nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// apiserverStartupNoise are error lines every kube-apiserver v1.36 logs on
// its first start with an empty etcd, from its own bootstrap races (its
// identity Lease and token-tracking ConfigMap written before its bootstrap
// controller has created kube-system) and from the "none" endpoint
// reconciler that a loopback-only cluster needs (the kubernetes Service
// cannot have a loopback endpoint), and, on a loaded machine, the
// "Post-timeout activity" of a /readyz probe of waitReady that the
// starting apiserver answered after the probe's timeout. Anything else is
// a configuration error.
var apiserverStartupNoise = []string{
	`Found stale data, removed previous endpoints on kubernetes service`,
	`namespaces \"kube-system\" not found`,
	`method="GET" path="/readyz"`,
}

// TestControlPlaneLogsNoConfigurationErrors: the apiserver serves the
// request-header CA that delegated authentication (the CCM's 10258) needs,
// and no component logs an error line beyond the apiserver's bootstrap races.
func TestControlPlaneLogsNoConfigurationErrors(t *testing.T) {
	cs := clientset(t)
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["requestheader-client-ca-file"] == "" {
		t.Error("extension-apiserver-authentication has no requestheader-client-ca-file: delegated authenticators log errors")
	}
	for _, component := range []string{"kube-apiserver", "kube-scheduler"} {
		data, err := os.ReadFile(filepath.Join(cluster.LogDir, component+".log"))
		if err != nil {
			t.Fatal(err)
		}
	lines:
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(line, "E") {
				continue
			}
			for _, known := range apiserverStartupNoise {
				if strings.Contains(line, known) {
					continue lines
				}
			}
			t.Errorf("%s logged an error: %s", component, line)
		}
	}
}
