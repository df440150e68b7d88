package migratetest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// Facts of the existing CCM's v2 manifest (deploy/v2/cloud-controller-
// manager.yaml of kubernetes/cloud-provider-alibaba-cloud): its container
// command, its cloud-config ConfigMap and its liveness probe.
var (
	// v2Command is the container's command after the binary. The two file
	// paths are replaced by this test's (--kubeconfig and --cloud-config
	// are upstream's flags, taken with the same meaning).
	v2Command = []string{
		"--kubeconfig=/etc/kubernetes/cloud-controller-manager.conf",
		"--cloud-config=/etc/kubernetes/config/cloud-config.conf",
		"--metrics-bind-addr=0",
		"--configure-cloud-routes=false",
	}
	// v2CloudConfig is the ConfigMap's cloud-config.conf: JSON, no clusterID.
	v2CloudConfig = "{\n    \"Global\": {\n        \"routeTableIDs\": \"\"\n    }\n}"
)

// v2Probe is the manifest's livenessProbe: httpGet 127.0.0.1:10258/healthz,
// scheme HTTP, timeoutSeconds 15, failureThreshold 8, periodSeconds 10.
const (
	v2ProbePath    = "/healthz"
	v2ProbePort    = 10258
	v2ProbeTimeout = 15 * time.Second
)

// legacyClusterID is the id the existing CCM tagged the cluster's load
// balancer with; the cloud-config does not carry it.
const legacyClusterID = "c-legacy123"

func kube(t *testing.T) kubernetes.Interface {
	t.Helper()
	return ccmtest.Kube(t, cluster)
}

func poll(t *testing.T, c *ccmtest.CCM, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := c.Until(timeout, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// existing is what the existing CCM left for the Service default/web.
type existing struct {
	svc  *corev1.Service
	lbID string
	addr string
}

// existingCCMState returns the state the existing CCM leaves for a
// LoadBalancer Service, creating it the first time: the Service with its
// finalizer and load balancer id label, and through the SLB SDK a CLB
// named and tagged after the Service's UID with
// ack.aliyun.com=legacyClusterID, its vServer group
// k8s/<nodePort>/web/default/<cluster> and a started TCP:80 listener on it
// described k8s/80/web/default/<cluster>.
func existingCCMState(t *testing.T) existing {
	t.Helper()
	ctx := context.Background()
	cs := kube(t)
	c := emulatortest.For(cloud, accessKeyID, accessKeySecret).SLB(t)
	if svc, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
		req := slb.CreateDescribeLoadBalancersRequest()
		req.LoadBalancerId = svc.Labels[naming.LabelLoadBalancerID]
		resp, err := c.DescribeLoadBalancers(req)
		if err != nil || len(resp.LoadBalancers.LoadBalancer) != 1 {
			t.Fatalf("the existing load balancer %s: %v", req.LoadBalancerId, err)
		}
		return existing{svc: svc, lbID: req.LoadBalancerId, addr: resp.LoadBalancers.LoadBalancer[0].Address}
	}
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Finalizers: []string{naming.FinalizerCLB}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := naming.DefaultLBName(svc)
	cr := slb.CreateCreateLoadBalancerRequest()
	cr.LoadBalancerName, cr.AddressType, cr.LoadBalancerSpec = name, "internet", "slb.s1.small"
	cr.Tag = &[]slb.CreateLoadBalancerTag{{Key: naming.TagKeyDefaultName, Value: name}, {Key: naming.TagKeyCluster, Value: legacyClusterID}}
	lb, err := c.CreateLoadBalancer(cr)
	if err != nil {
		t.Fatal(err)
	}
	// Its vServer group holds the eligible Nodes of the time (none yet in
	// the first test) on the nodePort; the listener forwards to it.
	nodePort := svc.Spec.Ports[0].NodePort
	var members []map[string]any
	for _, id := range eligibleInstances(t) {
		members = append(members, map[string]any{"ServerId": id, "Port": nodePort, "Weight": 100, "Type": "ecs"})
	}
	gr := slb.CreateCreateVServerGroupRequest()
	gr.LoadBalancerId, gr.VServerGroupName = lb.LoadBalancerId, naming.For(svc, legacyClusterID).CLBVGroup(strconv.Itoa(int(nodePort)))
	if len(members) > 0 {
		body, _ := json.Marshal(members)
		gr.BackendServers = string(body)
	}
	g, err := c.CreateVServerGroup(gr)
	if err != nil {
		t.Fatal(err)
	}
	lr := slb.CreateCreateLoadBalancerTCPListenerRequest()
	lr.LoadBalancerId, lr.ListenerPort, lr.VServerGroupId = lb.LoadBalancerId, requests.NewInteger(80), g.VServerGroupId
	lr.Bandwidth, lr.Scheduler = requests.NewInteger(-1), "rr"
	lr.Description = naming.For(svc, legacyClusterID).CLBListener(80)
	if _, err := c.CreateLoadBalancerTCPListener(lr); err != nil {
		t.Fatal(err)
	}
	start := slb.CreateStartLoadBalancerListenerRequest()
	start.LoadBalancerId, start.ListenerPort = lb.LoadBalancerId, requests.NewInteger(80)
	if _, err := c.StartLoadBalancerListener(start); err != nil {
		t.Fatal(err)
	}
	svc.Labels = map[string]string{naming.LabelLoadBalancerID: lb.LoadBalancerId}
	if svc, err = cs.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return existing{svc: svc, lbID: lb.LoadBalancerId, addr: lb.Address}
}

// startCCM runs the binary with args and the v2 cloud-config. The
// harness's own flags (kubeconfig and cloud-config paths, a free secure
// port on 127.0.0.1, fast node monitoring) come first; args are the
// existing CCM's.
func startCCM(t *testing.T, name string, args []string) *ccmtest.CCM {
	t.Helper()
	var rest []string
	for _, a := range args {
		if strings.HasPrefix(a, "--kubeconfig=") || strings.HasPrefix(a, "--cloud-config=") {
			continue // this test's paths, passed by the harness
		}
		rest = append(rest, a)
	}
	c, err := ccmtest.StartCCM(context.Background(), ccmtest.CCMOptions{
		Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(), AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		CloudConfig: v2CloudConfig,
		Args:        rest,
		LogPath:     filepath.Join(cluster.LogDir, name+".log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// probe GETs the liveness probe's path over plain HTTP, as the kubelet
// does with scheme HTTP.
func probe(ctx context.Context, port int) (int, string, error) {
	hc := &http.Client{Timeout: v2ProbeTimeout}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, v2ProbePath), nil)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// registerNode registers a kwok Node for a seeded instance, as a kubelet
// with --cloud-provider=external does, and waits until it is initialized.
func registerNode(t *testing.T, c *ccmtest.CCM, prefix, instance string) string {
	t.Helper()
	cs := kube(t)
	names, err := ccmtest.RegisterNodes(context.Background(), cs, cloud, accessKeyID, accessKeySecret, prefix, []string{instance})
	if err != nil {
		t.Fatal(err)
	}
	if err := ccmtest.WaitNodesInitialized(context.Background(), cs, names, 60*time.Second); err != nil {
		t.Fatalf("node %s not initialized: %v; log tail:\n%s", names[0], err, c.Tail(30))
	}
	n, err := cs.CoreV1().Nodes().Get(context.Background(), names[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := cloud.Region() + "." + instance; n.Spec.ProviderID != want {
		t.Fatalf("providerID %q, want %q", n.Spec.ProviderID, want)
	}
	return names[0]
}

// logLine returns the first log line containing every part.
func logLine(log string, parts ...string) string {
	for _, line := range strings.Split(log, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return line
		}
	}
	return ""
}

// waitServiceAdopted waits until the Service shows the existing load
// balancer's address, and checks no second load balancer was created:
// binding it proves the discovered cluster id is the one used (the
// load balancer is ours only if its ack.aliyun.com tag is our cluster id).
func waitServiceAdopted(t *testing.T, c *ccmtest.CCM, ex existing) {
	t.Helper()
	poll(t, c, 60*time.Second, "Service default/web bound to "+ex.lbID, func(ctx context.Context) (bool, error) {
		s, err := kube(t).CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ing := s.Status.LoadBalancer.Ingress
		if len(ing) != 1 || ing[0].IP != ex.addr {
			return false, fmt.Errorf("ingress %v, want %s", ing, ex.addr)
		}
		return true, nil
	})
	resp, err := emulatortest.For(cloud, accessKeyID, accessKeySecret).SLB(t).DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.TotalCount != 1 {
		t.Fatalf("%d load balancers, want only the existing CCM's", resp.TotalCount)
	}
}

// TestExistingCCMManifestStartsOurs: the v2 manifest's exact flags and
// cloud-config start the binary; it stays up, its plain-HTTP liveness
// probe answers 200 on the secure port (which keeps answering HTTPS), the
// cluster id is discovered from the existing load balancer, logged and
// used, and a Node is initialized.
func TestExistingCCMManifestStartsOurs(t *testing.T) {
	ex := existingCCMState(t)
	c := startCCM(t, "ccm-v2-manifest", v2Command)
	start := time.Now() // the process has started (the binary is built)
	// The probe's port is the secure port: in the manifest both are 10258
	// (our default --secure-port); the harness moves the secure port to a
	// free one so that test binaries can run side by side.
	t.Logf("the manifest probes port %d; the secure port here is %d", v2ProbePort, c.Port)
	poll(t, c, 60*time.Second, "plain-HTTP liveness probe", func(ctx context.Context) (bool, error) {
		code, body, err := probe(ctx, c.Port)
		if err != nil {
			return false, err
		}
		if code != http.StatusOK || body != "ok" {
			return false, fmt.Errorf("HTTP %d %q", code, body)
		}
		return true, nil
	})
	t.Logf("plain-HTTP probe answered 200 %v after the process started", time.Since(start).Round(time.Millisecond))
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // self-signed in-memory serving cert
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Port))
	if err != nil {
		t.Fatalf("the secure port no longer answers HTTPS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTPS /healthz: %d", resp.StatusCode)
	}

	log := c.Log()
	l := logLine(log, "Discovered the cluster id", `clusterID="`+legacyClusterID+`"`, ex.lbID)
	if l == "" {
		t.Fatalf("no log line of the discovered cluster id %s from %s:\n%s", legacyClusterID, ex.lbID, c.Tail(30))
	}
	t.Log(l)
	if l := logLine(log, "Cloud configuration loaded", `clusterID="`+legacyClusterID+`"`, `network="vpc"`); l == "" {
		t.Fatalf("the configuration was not loaded with the discovered id and VPC endpoints:\n%s", c.Tail(30))
	}
	registerNode(t, c, "v2-node-", instances[0])
	waitServiceAdopted(t, c, ex)
	if c.Exited() {
		t.Fatalf("the CCM exited; log tail:\n%s", c.Tail(30))
	}
	if code, _, err := probe(context.Background(), c.Port); err != nil || code != http.StatusOK {
		t.Fatalf("the probe failed at the end: %d %v", code, err)
	}
}

// TestExistingCCMUsersFlags: the flags the existing CCM's users and docs
// pass are accepted: --network=vpc, --controllers=node,route,service,nlb
// (mapped onto ours), routes with --cluster-cidr and
// --route-reconciliation-period, and its tuning flags, ignored with one
// log line each. The discovered id is used for the routes too.
func TestExistingCCMUsersFlags(t *testing.T) {
	ex := existingCCMState(t)
	args := []string{
		"--kubeconfig=/etc/kubernetes/cloud-controller-manager.conf",
		"--cloud-config=/etc/kubernetes/config/cloud-config.conf",
		"--network=vpc",
		"--controllers=node,route,service,nlb",
		"--metrics-bind-addr=0",
		"--route-reconciliation-period=3m",
		"--configure-cloud-routes=true",
		"--cluster-cidr=" + clusterCIDR,
		"--sg-batch-size=40",
		"--max-concurrent-actions=10",
		"--dry-run=false",
	}
	c := startCCM(t, "ccm-users-flags", args)
	name := registerNode(t, c, "users-node-", instances[1])
	waitServiceAdopted(t, c, ex)
	log := c.Log()
	for _, want := range [][]string{
		{"Ignoring the existing CCM's flag", `flag="--sg-batch-size"`},
		{"Ignoring the existing CCM's flag", `flag="--max-concurrent-actions"`},
		{"Service controller load balancer kinds", "clb=true", "nlb=true"},
		{"Cloud configuration loaded", `clusterID="` + legacyClusterID + `"`, `network="vpc"`, `slbEndpoint="` + cloud.Addr() + `"`},
	} {
		if logLine(log, want...) == "" {
			t.Errorf("no log line with %q", want)
		}
	}
	if n := strings.Count(log, `flag="--sg-batch-size"`); n != 1 {
		t.Errorf("%d log lines about --sg-batch-size, want exactly one", n)
	}
	poll(t, c, 60*time.Second, "route of "+name+" described with the discovered id", func(ctx context.Context) (bool, error) {
		entries, err := customRoutes(t)
		for _, e := range entries {
			if e.Description == "k8s/"+legacyClusterID+"/"+name {
				return true, nil
			}
		}
		return false, err
	})
}

// customRoutes lists the custom entries of every route table of the
// cluster VPC.
func customRoutes(t *testing.T) ([]vpc.RouteEntry, error) {
	t.Helper()
	vc := emulatortest.For(cloud, accessKeyID, accessKeySecret).VPC(t)
	tables := vpc.CreateDescribeRouteTableListRequest()
	tables.VpcId = cloudVPC(t)
	tr, err := vc.DescribeRouteTableList(tables)
	if err != nil {
		return nil, err
	}
	var out []vpc.RouteEntry
	for _, rt := range tr.RouterTableList.RouterTableListType {
		req := vpc.CreateDescribeRouteEntryListRequest()
		req.RouteTableId, req.RouteEntryType = rt.RouteTableId, "Custom"
		resp, err := vc.DescribeRouteEntryList(req)
		if err != nil {
			return nil, err
		}
		out = append(out, resp.RouteEntrys.RouteEntry...)
	}
	return out, nil
}

// cloudVPC is the seeded cluster VPC.
func cloudVPC(t *testing.T) string {
	t.Helper()
	resp, err := emulatortest.For(cloud, accessKeyID, accessKeySecret).VPC(t).DescribeVpcs(vpc.CreateDescribeVpcsRequest())
	if err != nil || len(resp.Vpcs.Vpc) == 0 {
		t.Fatalf("describe VPCs: %v", err)
	}
	return resp.Vpcs.Vpc[0].VpcId
}
