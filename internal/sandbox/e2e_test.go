package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/sandbox"
)

// The tests share one sandbox directory: the first test makes the first
// run (nothing built, empty cloud), the second restarts it as users do.
var (
	sandboxBin string
	repoRoot   string
	dir        string

	firstOnce   sync.Once
	firstOut    string
	firstErr    error
	firstTook   time.Duration
	firstResult *sandbox.Summary
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "sandbox: end-to-end tests skipped in -short mode")
		return 0
	}
	var err error
	if repoRoot, err = localcluster.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "sandbox-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sandboxBin = filepath.Join(tmp, "sandbox")
	build := exec.Command("go", "build", "-o", sandboxBin, "./cmd/sandbox")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build sandbox: %v\n%s", err, out)
		return 1
	}
	dir = filepath.Join(tmp, "dir")
	code := m.Run()
	if code == 0 {
		os.RemoveAll(tmp)
	} else {
		fmt.Fprintf(os.Stderr, "sandbox directory kept for inspection: %s (logs in %s/logs)\n", dir, dir)
	}
	return code
}

// firstRun runs `sandbox up --exit-after-ready` once on the empty directory.
func firstRun(t *testing.T) {
	t.Helper()
	firstOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		cmd := exec.CommandContext(ctx, sandboxBin, "up", "--exit-after-ready", "--dir", dir, "--nodes", "2")
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		firstOut, firstErr, firstTook = string(out), err, time.Since(start)
		if err == nil {
			firstResult, firstErr = readSummary(dir)
		}
	})
	if firstErr != nil {
		t.Fatalf("first run: %v\n%s", firstErr, firstOut)
	}
}

func readSummary(dir string) (*sandbox.Summary, error) {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	var s sandbox.Summary
	return &s, json.Unmarshal(data, &s)
}

// TestUpExitAfterReady runs the first `up --exit-after-ready`, checks that
// it printed the facts of its summary, stopped everything, and that those
// facts are what the cloud it leaves behind holds.
func TestUpExitAfterReady(t *testing.T) {
	firstRun(t)
	s := firstResult
	t.Logf("first run ready in %.1fs (process %.1fs)", s.ReadySeconds, firstTook.Seconds())
	if len(s.Nodes) != 2 {
		t.Fatalf("summary has %d nodes, want 2:\n%s", len(s.Nodes), firstOut)
	}
	for _, want := range []string{"Sandbox ready in", "--exit-after-ready: stopping.", s.VpcID, s.RouteTableID, "Web console (read-only): " + s.ConsoleURL} {
		if !strings.Contains(firstOut, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, n := range s.Nodes {
		for _, want := range []string{n.Name, n.Zone, n.ProviderID, n.PodCIDR} {
			if want == "" || !strings.Contains(firstOut, want) {
				t.Errorf("node %s: output lacks %q", n.Name, want)
			}
		}
	}
	for _, f := range []string{sandbox.ReadyFile, sandbox.PIDsFile, sandbox.LockFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s left behind after --exit-after-ready (stat: %v)", f, err)
		}
	}
	env, err := sandbox.ReadEnv(dir)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"KUBECONFIG": env.Kubeconfig, "ALICLOUD_EMULATOR_ENDPOINT": env.EmulatorEndpoint,
		"ALIBABA_CLOUD_ACCESS_KEY_ID": env.AccessKeyID, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": env.AccessKeySecret,
		"ALIBABA_CLOUD_REGION_ID": env.RegionID, "CLUSTER_ID": env.ClusterID, "VPC_ID": env.VpcID} {
		if v == "" {
			t.Errorf("sandbox.env lacks %s", k)
		}
	}
	if env.VpcID != s.VpcID || env.Kubeconfig != filepath.Join(dir, "kubeconfig") {
		t.Errorf("sandbox.env %+v disagrees with the summary (vpc %s)", env, s.VpcID)
	}
	assertNoSecretInLogs(t, env.AccessKeySecret)

	// The emulator is stopped; open the state it kept and read the facts
	// back through the SDK.
	e, err := emulator.New(emulator.Config{StatePath: filepath.Join(dir, "cloud.db"),
		AccessKeys: []emulator.AccessKey{{ID: env.AccessKeyID, Secret: env.AccessKeySecret, AccountID: "1234567890123456"}}})
	if err != nil {
		t.Fatalf("open the kept cloud: %v", err)
	}
	defer e.Close()
	addr, err := e.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	checkCloud(t, newSDK(t, addr, env), s)
	checkConsole(t, addr, s)
}

// checkConsole reads the web console's page of the sandbox's region and
// looks for the resources of the summary.
func checkConsole(t *testing.T, addr string, s *sandbox.Summary) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/_emulator/ui/region/" + s.Region)
	if err != nil {
		t.Fatalf("console: %v", err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("console region page: %d %v", resp.StatusCode, err)
	}
	want := []string{s.VpcID, s.RouteTableID}
	if s.LoadBalancer != nil {
		want = append(want, s.LoadBalancer.ID)
		for _, b := range s.LoadBalancer.Backends {
			want = append(want, b.ServerID)
		}
	}
	for _, r := range s.Routes {
		want = append(want, r.Destination)
	}
	for _, w := range want {
		if !strings.Contains(string(page), w) {
			t.Errorf("the console's region page lacks %s", w)
		}
	}
	t.Logf("the console's region page shows the summary's %d resources", len(want))
}

// TestRestartAndSIGTERM restarts the sandbox on the kept directory, which
// must be ready in under 60 s, checks the summary against the API server
// and the running emulator, then sends SIGTERM and checks that no process
// it started is left and that DIR/ready is gone.
func TestRestartAndSIGTERM(t *testing.T) {
	firstRun(t)
	var out bytes.Buffer
	cmd := exec.Command(sandboxBin, "up", "--dir", dir)
	cmd.Dir = repoRoot
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-done
		}
	}()
	for {
		if _, err := os.Stat(filepath.Join(dir, sandbox.ReadyFile)); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("sandbox exited before ready (%v):\n%s", err, out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("second run not ready in 60s:\n%s", out.String())
		}
	}
	t.Logf("second run ready in %.1fs", time.Since(start).Seconds())
	pids := readPIDs(t)
	if len(pids) < 8 {
		t.Errorf("pids file lists %d processes, want sandbox, emulator, CCM and 5 control-plane processes: %v", len(pids), pids)
	}
	for name, pid := range pids {
		if !alive(pid) {
			t.Errorf("%s (pid %d) listed but not running", name, pid)
		}
	}
	s, err := readSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	env, err := sandbox.ReadEnv(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The kept cloud and cluster are the first run's.
	if s.VpcID != firstResult.VpcID || len(s.Nodes) != len(firstResult.Nodes) {
		t.Errorf("second run: vpc %s with %d nodes, first run: %s with %d", s.VpcID, len(s.Nodes), firstResult.VpcID, len(firstResult.Nodes))
	}
	if firstResult.LoadBalancer != nil && (s.LoadBalancer == nil || s.LoadBalancer.ID != firstResult.LoadBalancer.ID) {
		t.Errorf("second run's load balancer %+v, first run's %s", s.LoadBalancer, firstResult.LoadBalancer.ID)
	}
	checkKube(t, env.Kubeconfig, s)
	checkCloud(t, newSDK(t, env.EmulatorEndpoint, env), s)
	checkPlan(t, env)
	checkAdmission(t, env)
	checkNLBExample(t, env)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("sandbox exited with %v after SIGTERM:\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("sandbox still running 60s after SIGTERM")
	}
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after the sandbox stopped", name, pid)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, sandbox.ReadyFile)); !os.IsNotExist(err) {
		t.Errorf("ready file left behind after SIGTERM (stat: %v)", err)
	}
}

// readPIDs reads DIR/pids as "name#n" → pid.
func readPIDs(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, sandbox.PIDsFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("pids line %q", line)
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("pids line %q: %v", line, err)
		}
		out[fmt.Sprintf("%s#%d", f[0], i)] = pid
	}
	return out
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

func assertNoSecretInLogs(t *testing.T, secret string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	if len(logs) < 7 {
		t.Errorf("DIR/logs has %d logs, want one per component: %v", len(logs), logs)
	}
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("read %s: %v", p, err)
			continue
		}
		if strings.Contains(string(data), secret) {
			t.Errorf("%s contains the emulator's secret", p)
		}
	}
}

// checkKube compares the summary with the API server.
func checkKube(t *testing.T, kubeconfig string, s *sandbox.Summary) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, want := range s.Nodes {
		n, err := cs.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("node %s: %v", want.Name, err)
			continue
		}
		if n.Spec.ProviderID != want.ProviderID || n.Labels[corev1.LabelTopologyZone] != want.Zone || n.Spec.PodCIDR != want.PodCIDR {
			t.Errorf("node %s: providerID %q zone %q podCIDR %q; summary says %+v", n.Name, n.Spec.ProviderID, n.Labels[corev1.LabelTopologyZone], n.Spec.PodCIDR, want)
		}
		if !strings.HasPrefix(want.ProviderID, sandbox.Region+".i-") {
			t.Errorf("node %s: providerID %q is not <region>.<instance>", n.Name, want.ProviderID)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == cloudapi.TaintExternalCloudProvider {
				t.Errorf("node %s still has the uninitialized taint", n.Name)
			}
		}
	}
	if !s.ServicesManaged {
		t.Logf("the CCM has no service controller: Service checks skipped")
		return
	}
	svc, err := cs.CoreV1().Services(sandbox.ExampleNamespace).Get(ctx, sandbox.ExampleService, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.LoadBalancer == nil || len(svc.Status.LoadBalancer.Ingress) == 0 || svc.Status.LoadBalancer.Ingress[0].IP != s.LoadBalancer.Address {
		t.Errorf("Service ingress %+v, summary's load balancer %+v", svc.Status.LoadBalancer.Ingress, s.LoadBalancer)
	}
}

type sdkClients struct {
	ecs *ecs.Client
	vpc *vpc.Client
	slb *slb.Client
}

func newSDK(t *testing.T, addr string, env *sandbox.Env) *sdkClients {
	t.Helper()
	cfg := sdk.NewConfig()
	cfg.Scheme = "HTTP"
	cred := credentials.NewAccessKeyCredential(env.AccessKeyID, env.AccessKeySecret)
	e, err := ecs.NewClientWithOptions(env.RegionID, cfg, cred)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vpc.NewClientWithOptions(env.RegionID, cfg, cred)
	if err != nil {
		t.Fatal(err)
	}
	l, err := slb.NewClientWithOptions(env.RegionID, cfg, cred)
	if err != nil {
		t.Fatal(err)
	}
	e.Domain, v.Domain, l.Domain = addr, addr, addr
	return &sdkClients{ecs: e, vpc: v, slb: l}
}

// checkCloud compares the summary with the emulated cloud.
func checkCloud(t *testing.T, c *sdkClients, s *sandbox.Summary) {
	t.Helper()
	req := ecs.CreateDescribeInstancesRequest()
	req.VpcId = s.VpcID
	req.PageSize = "100"
	resp, err := c.ecs.DescribeInstances(req)
	if err != nil {
		t.Fatalf("DescribeInstances: %v", err)
	}
	byID := map[string]ecs.Instance{}
	for _, in := range resp.Instances.Instance {
		byID[in.InstanceId] = in
	}
	instanceOf := map[string]string{}
	for _, n := range s.Nodes {
		id := strings.TrimPrefix(n.ProviderID, sandbox.Region+".")
		in, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("node %s: instance %s not in the cloud", n.Name, id)
		case in.ZoneId != n.Zone || in.HostName != n.Name || len(in.VpcAttributes.PrivateIpAddress.IpAddress) == 0 || in.VpcAttributes.PrivateIpAddress.IpAddress[0] != n.InternalIP:
			t.Errorf("node %s: instance %s is %s/%s/%v; summary says %+v", n.Name, id, in.HostName, in.ZoneId, in.VpcAttributes.PrivateIpAddress.IpAddress, n)
		}
		instanceOf[n.PodCIDR] = id
	}

	if s.RoutesManaged {
		rreq := vpc.CreateDescribeRouteEntryListRequest()
		rreq.RouteTableId = s.RouteTableID
		rreq.RouteEntryType = "Custom"
		rreq.MaxResult = "100"
		rresp, err := c.vpc.DescribeRouteEntryList(rreq)
		if err != nil {
			t.Fatalf("DescribeRouteEntryList: %v", err)
		}
		got := map[string]string{}
		for _, e := range rresp.RouteEntrys.RouteEntry {
			if len(e.NextHops.NextHop) > 0 {
				got[e.DestinationCidrBlock] = e.NextHops.NextHop[0].NextHopId
			}
		}
		if len(s.Routes) != len(s.Nodes) {
			t.Errorf("summary has %d routes for %d nodes: %+v", len(s.Routes), len(s.Nodes), s.Routes)
		}
		for _, r := range s.Routes {
			if got[r.Destination] != r.NextHop || instanceOf[r.Destination] != r.NextHop {
				t.Errorf("route %s -> %s: cloud has next hop %q, node's instance %q", r.Destination, r.NextHop, got[r.Destination], instanceOf[r.Destination])
			}
		}
	} else {
		t.Logf("the CCM has no route controller: route checks skipped")
	}

	if !s.ServicesManaged {
		return
	}
	lb := s.LoadBalancer
	if lb == nil {
		t.Fatalf("summary has no load balancer")
	}
	areq := slb.CreateDescribeLoadBalancerAttributeRequest()
	areq.LoadBalancerId = lb.ID
	aresp, err := c.slb.DescribeLoadBalancerAttribute(areq)
	if err != nil {
		t.Fatalf("DescribeLoadBalancerAttribute %s: %v", lb.ID, err)
	}
	if aresp.Address != lb.Address {
		t.Errorf("load balancer %s address %s, summary says %s", lb.ID, aresp.Address, lb.Address)
	}
	var ports []int
	for _, p := range aresp.ListenerPortsAndProtocol.ListenerPortAndProtocol {
		ports = append(ports, p.ListenerPort)
	}
	var want []int
	for _, l := range lb.Listeners {
		want = append(want, l.Port)
	}
	if !slicesEqualSorted(ports, want) || len(want) != 2 {
		t.Errorf("listeners: cloud %v, summary %v (the example has ports 80 and 443)", ports, want)
	}
	members := 0
	for _, l := range lb.Listeners {
		greq := slb.CreateDescribeVServerGroupAttributeRequest()
		greq.VServerGroupId = l.VServerGroupID
		gresp, err := c.slb.DescribeVServerGroupAttribute(greq)
		if err != nil {
			t.Fatalf("DescribeVServerGroupAttribute %s: %v", l.VServerGroupID, err)
		}
		for _, b := range gresp.BackendServers.BackendServer {
			members++
			found := false
			for _, sb := range lb.Backends {
				if sb.VServerGroupID == l.VServerGroupID && sb.ServerID == b.ServerId && sb.Port == b.Port {
					found = true
				}
			}
			if !found {
				t.Errorf("backend %s:%d of %s missing from the summary", b.ServerId, b.Port, l.VServerGroupID)
			}
		}
	}
	if members != len(lb.Backends) || members != len(s.Nodes)*len(lb.Listeners) {
		t.Errorf("cloud has %d backends, summary %d, want one per node per listener (%d)", members, len(lb.Backends), len(s.Nodes)*len(lb.Listeners))
	}
}

func slicesEqualSorted(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestComponentFailsToStart: a component that cannot start (here the
// emulator, on a corrupt state file) makes `up` exit non-zero with a
// message naming it and the tail of its log, leaving nothing running.
func TestComponentFailsToStart(t *testing.T) {
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "cloud.db"), []byte("not a bbolt file"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sandboxBin, "up", "--exit-after-ready", "--dir", bad)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err == nil || cmd.ProcessState.ExitCode() == 0 {
		t.Fatalf("up succeeded on a corrupt state file:\n%s", out)
	}
	for _, want := range []string{"sandbox: alicloud-emulator exited at start", "alicloud-emulator.log", "invalid database"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{sandbox.ReadyFile, sandbox.PIDsFile, sandbox.LockFile} {
		if _, err := os.Stat(filepath.Join(bad, f)); !os.IsNotExist(err) {
			t.Errorf("%s left behind (stat: %v)", f, err)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), bad) {
			t.Errorf("process %s still runs with the sandbox directory: %q", p, strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
}

// checkNLBExample applies examples/nlb-service.yaml as the README says (the
// sandbox.env's ZONE_MAPS substituted): the Service gets an NLB with a TCP
// and a UDP listener, and deleting it removes the NLB.
func checkNLBExample(t *testing.T, env *sandbox.Env) {
	t.Helper()
	if env.ZoneMaps == "" {
		t.Fatal("sandbox.env has no ZONE_MAPS")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "examples", "nlb-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := os.Expand(string(raw), func(k string) string {
		if k == sandbox.EnvZoneMaps {
			return env.ZoneMaps
		}
		return "$" + k
	})
	var svc corev1.Service
	if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096).Decode(&svc); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().Services(svc.Namespace).Create(ctx, &svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var host string
	deadline := time.Now().Add(90 * time.Second)
	for host == "" {
		got, err := cs.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if in := got.Status.LoadBalancer.Ingress; len(in) > 0 {
			host = in[0].Hostname
		}
		if host == "" && time.Now().After(deadline) {
			t.Fatalf("Service %s from examples/nlb-service.yaml has no address after 90s", svc.Name)
		}
		time.Sleep(500 * time.Millisecond)
	}
	c := newNLB(t, env)
	lreq := nlb.CreateListLoadBalancersRequest()
	lreq.DNSName = host
	lbs, err := c.ListLoadBalancers(lreq)
	if err != nil || len(lbs.LoadBalancers) != 1 {
		t.Fatalf("NLB with DNS name %s: %v, %d found", host, err, len(lbs.LoadBalancers))
	}
	id := lbs.LoadBalancers[0].LoadBalancerId
	req := nlb.CreateListListenersRequest()
	req.LoadBalancerIds = &[]string{id}
	ls, err := c.ListListeners(req)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls.Listeners {
		got = append(got, fmt.Sprintf("%s:%d", l.ListenerProtocol, l.ListenerPort))
	}
	slices.Sort(got)
	if want := []string{"TCP:80", "UDP:53"}; !slices.Equal(got, want) {
		t.Errorf("NLB %s listeners %v, want %v", id, got, want)
	}
	if err := cs.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		greq := nlb.CreateGetLoadBalancerAttributeRequest()
		greq.LoadBalancerId = id
		if _, err := c.GetLoadBalancerAttribute(greq); err != nil && strings.Contains(err.Error(), "ResourceNotFound") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("NLB %s still there 90s after its Service was deleted", id)
		}
	}
}

func newNLB(t *testing.T, env *sandbox.Env) *nlb.Client {
	t.Helper()
	cfg := sdk.NewConfig()
	cfg.Scheme = "HTTP"
	c, err := nlb.NewClientWithOptions(env.RegionID, cfg, credentials.NewAccessKeyCredential(env.AccessKeyID, env.AccessKeySecret))
	if err != nil {
		t.Fatal(err)
	}
	c.Domain = env.EmulatorEndpoint
	return c
}
