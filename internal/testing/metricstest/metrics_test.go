package metricstest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccmmetrics"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestPlainListenerServesMetrics: the --metrics-bind-address listener
// answers without credentials, with the existing CCM's metric families
// typed as it types them, and the conventional ones.
func TestPlainListenerServesMetrics(t *testing.T) {
	// The listener serves before the controllers have made their first
	// call or registered their gauges: wait (bounded) for both, then check.
	var s *scrape
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		s = getMetrics(t)
		_, called := s.sum("alicloud_api_requests_total", l("product", "ecs", "action", "DescribeInstances", "code", "OK"))
		if called && s.types["alicloud_service_pending"] != "" || time.Now().After(deadline) {
			break
		}
	}
	if _, ok := s.sum("alicloud_api_requests_total", l("product", "ecs", "action", "DescribeInstances", "code", "OK")); !ok {
		t.Error("no alicloud_api_requests_total for the start-up DescribeInstances")
	}
	// Histograms and counters appear once observed; their types are in
	// every scrape that has a sample, checked after the other tests.
	for _, g := range []string{"alicloud_service_pending", "alicloud_service_failing", "alicloud_service_invalid"} {
		if s.types[g] != "gauge" {
			t.Errorf("%s: type %q, want gauge", g, s.types[g])
		}
		for _, typ := range []string{"clb", "nlb"} {
			if _, ok := s.sum(g, l("type", typ)); !ok {
				t.Errorf("%s{type=%q} missing", g, typ)
			}
		}
	}
}

func instanceIPs(t *testing.T, ids []string) []string {
	t.Helper()
	byID, err := emulatortest.For(cloud, accessKeyID, accessKeySecret).PrivateIPs(ids)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, id := range ids {
		out = append(out, byID[id])
	}
	return out
}

// TestNodeAndRouteMetricsMove: two Nodes initialized and routed move the
// existing CCM's ccm_node_latencies_duration_milliseconds{verb=remove_taint}
// and ccm_route_latencies_duration_milliseconds{verb=create|reconcile},
// and the conventional seconds histograms, by as many as there were Nodes.
func TestNodeAndRouteMetricsMove(t *testing.T) {
	before := getMetrics(t)
	count := func(s *scrape, name string, want map[string]string) float64 { v, _ := s.sum(name, want); return v }
	nodeInit0 := count(before, "ccm_node_latencies_duration_milliseconds_count", l("verb", "remove_taint"))
	initSec0 := count(before, "alicloud_node_initialization_duration_seconds_count", nil)
	create0 := count(before, "ccm_route_latencies_duration_milliseconds_count", l("verb", "create"))
	reconcile0 := count(before, "ccm_route_latencies_duration_milliseconds_count", l("verb", "reconcile"))
	creates0 := cloud.Calls("vpc", "CreateRouteEntries") + cloud.Calls("vpc", "CreateRouteEntry")

	ips := instanceIPs(t, instances)
	cs := kube(t)
	var names []string
	for i, ip := range ips {
		name := fmt.Sprintf("metrics-node-%d", i)
		if _, err := localcluster.RegisterKubeletNode(context.Background(), cs, localcluster.KubeletNode{Name: name, InternalIP: ip, Kwok: true}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	n := float64(len(names))
	poll(t, 60*time.Second, "nodes initialized", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			nd, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, taint := range nd.Spec.Taints {
				if taint.Key == cloudapi.TaintExternalCloudProvider {
					return false, nil
				}
			}
		}
		return true, nil
	})
	s := waitMetric(t, 30*time.Second, "ccm_node_latencies_duration_milliseconds_count", l("verb", "remove_taint"),
		func(v float64) bool { return v >= nodeInit0+n }, "node initializations observed")
	if v := count(s, "alicloud_node_initialization_duration_seconds_count", nil); v < initSec0+n {
		t.Errorf("alicloud_node_initialization_duration_seconds_count %g, want ≥ %g", v, initSec0+n)
	}
	if v := count(s, "ccm_node_latencies_duration_milliseconds_sum", l("verb", "remove_taint")); v <= 0 {
		t.Errorf("node initialization latency sum %g ms, want > 0", v)
	}
	if v := count(s, "ccm_node_latencies_duration_milliseconds_bucket", l("verb", "remove_taint", "le", "500")); v > count(s, "ccm_node_latencies_duration_milliseconds_count", l("verb", "remove_taint")) {
		t.Errorf("bucket le=500 holds %g, more than the count", v)
	}
	if v := count(s, "alicloud_node_lookups_total", l("op", "metadata", "result", "found")); v < n {
		t.Errorf("alicloud_node_lookups_total{op=metadata,result=found} %g, want ≥ %g", v, n)
	}

	s = waitMetric(t, 60*time.Second, "ccm_route_latencies_duration_milliseconds_count", l("verb", "create"),
		func(v float64) bool { return v >= create0+n }, "route creations observed")
	if calls := cloud.Calls("vpc", "CreateRouteEntries") + cloud.Calls("vpc", "CreateRouteEntry") - creates0; calls < 1 {
		t.Errorf("%d route create calls reached the cloud, yet the metric moved", calls)
	}
	// A pass observes its creates as it makes them and itself when it
	// ends (after the Nodes' conditions), so the scrape above may come
	// between the two.
	s = waitMetric(t, 30*time.Second, "ccm_route_latencies_duration_milliseconds_count", l("verb", "reconcile"),
		func(v float64) bool { return v > reconcile0 }, "route reconciles observed")
	if v := count(s, "alicloud_route_entries_created_total", nil); v < n {
		t.Errorf("alicloud_route_entries_created_total %g, want ≥ %g", v, n)
	}
}

func lbService(name string, ann map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func createService(t *testing.T, svc *corev1.Service) {
	t.Helper()
	if _, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deleteService(t *testing.T, name string) {
	t.Helper()
	if err := kube(t).CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "Service "+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := kube(t).CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func waitAddress(t *testing.T, name string) {
	t.Helper()
	poll(t, 60*time.Second, "address of "+name, func(ctx context.Context) (bool, error) {
		svc, err := kube(t).CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(svc.Status.LoadBalancer.Ingress) > 0, err
	})
}

// gauges reads the three Service gauges of the clb type.
func gauges(s *scrape) (pending, failing, invalid float64) {
	pending, _ = s.sum("alicloud_service_pending", l("type", "clb"))
	failing, _ = s.sum("alicloud_service_failing", l("type", "clb"))
	invalid, _ = s.sum("alicloud_service_invalid", l("type", "clb"))
	return
}

func waitGauges(t *testing.T, what string, pending, failing, invalid float64) *scrape {
	t.Helper()
	var s *scrape
	var p, f, i float64
	poll(t, 60*time.Second, what, func(context.Context) (bool, error) {
		s = getMetrics(t)
		p, f, i = gauges(s)
		if p == pending && f == failing && i == invalid {
			return true, nil
		}
		return false, fmt.Errorf("pending %g failing %g invalid %g, want %g %g %g", p, f, i, pending, failing, invalid)
	})
	t.Logf("%s: pending %g failing %g invalid %g", what, p, f, i)
	return s
}

// TestServiceMetricsMove: a create the cloud refuses counts a Fail and
// makes the Service pending and failing; a Service deleted while failing
// drops out of the gauges; once the cloud accepts, Success counts and the
// gauges return to zero; an update counts an Update; invalid annotations
// count as invalid until the Service goes; a delete counts a Deletion.
// Every series is checked under both the existing CCM's names and the
// conventional ones.
func TestServiceMetricsMove(t *testing.T) {
	start := getMetrics(t)
	result := func(s *scrape, verb, status string) float64 {
		v, _ := s.sum("ccm_slb_operation_result", l("type", "CLBType", "verb", verb, "status", status))
		return v
	}
	syncs := func(s *scrape, verb, res string) float64 {
		v, _ := s.sum("alicloud_service_syncs_total", l("type", "clb", "verb", verb, "result", res))
		return v
	}
	p0, f0, i0 := gauges(start)
	if p0 != 0 || f0 != 0 || i0 != 0 {
		t.Fatalf("gauges at start: pending %g failing %g invalid %g, want 0", p0, f0, i0)
	}

	// The cloud refuses every CLB creation for now.
	rule, err := cloud.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "CreateLoadBalancer",
		Error: &gateway.FaultError{Code: "QuotaExceeded.LoadBalancersNum", Status: 400, Message: "The quota of LoadBalancersNum is exceeded."}})
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	defer func() {
		if !removed {
			cloud.Gateway.RemoveFault(rule.ID)
		}
	}()
	createService(t, lbService("doomed", nil))
	createService(t, lbService("web", nil))
	s := waitGauges(t, "two Services failing", 2, 2, 0)
	if v := result(s, "Creation", "Fail"); v < 2 {
		t.Errorf("ccm_slb_operation_result{verb=Creation,status=Fail} %g, want ≥ 2", v)
	}
	if v := syncs(s, "create", "error"); v < 2 {
		t.Errorf("alicloud_service_syncs_total{verb=create,result=error} %g, want ≥ 2", v)
	}
	deleteService(t, "doomed")
	waitGauges(t, "the deleted Service drops out", 1, 1, 0)

	cloud.Gateway.RemoveFault(rule.ID)
	removed = true
	waitAddress(t, "web")
	s = waitGauges(t, "the Service served", 0, 0, 0)
	if v := result(s, "Creation", "Success"); v < 1 {
		t.Errorf("ccm_slb_operation_result{verb=Creation,status=Success} %g, want ≥ 1", v)
	}
	if v, _ := s.sum("ccm_slb_latencies_duration_milliseconds_count", l("type", "CLBType", "verb", "Creation")); v < 3 {
		t.Errorf("ccm_slb_latencies_duration_milliseconds_count{Creation} %g, want ≥ 3 (two failures, one success)", v)
	}
	if v, _ := s.sum("alicloud_service_sync_duration_seconds_count", l("type", "clb", "verb", "create")); v < 3 {
		t.Errorf("alicloud_service_sync_duration_seconds_count{create} %g, want ≥ 3", v)
	}

	// An update of the Service's spec: a second port.
	update0 := result(s, "Update", "Success")
	poll(t, 10*time.Second, "add a port to web", func(ctx context.Context) (bool, error) {
		svc, err := kube(t).CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8443)})
		_, err = kube(t).CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
		return err == nil, err
	})
	s = waitMetric(t, 60*time.Second, "ccm_slb_operation_result", l("type", "CLBType", "verb", "Update", "status", "Success"),
		func(v float64) bool { return v > update0 }, "update counted")
	if v := syncs(s, "update", "success"); v < 1 {
		t.Errorf("alicloud_service_syncs_total{verb=update,result=success} %g, want ≥ 1", v)
	}

	// Invalid annotations: never synced, so pending too, until deleted.
	createService(t, lbService("invalid", map[string]string{annotations.Key("scheduler"): "fastest"}))
	waitGauges(t, "an invalid Service", 1, 0, 1)
	deleteService(t, "invalid")
	waitGauges(t, "the invalid Service gone", 0, 0, 0)

	del0 := result(s, "Deletion", "Success")
	deleteService(t, "web")
	s = waitMetric(t, 30*time.Second, "ccm_slb_operation_result", l("type", "CLBType", "verb", "Deletion", "status", "Success"),
		func(v float64) bool { return v > del0 }, "deletion counted")
	if v := syncs(s, "delete", "success"); v < 1 {
		t.Errorf("alicloud_service_syncs_total{verb=delete,result=success} %g, want ≥ 1", v)
	}
}

// TestExposedNamesMatchTheCatalog (after the others, so every family has
// samples): each metric the CCM registered is exposed under its name with
// its type and the labels docs/metrics.md lists, and the existing CCM's
// four families keep its label names.
func TestExposedNamesMatchTheCatalog(t *testing.T) {
	s := getMetrics(t)
	legacy := map[string][]string{
		"ccm_node_latencies_duration_milliseconds":  {"verb"},
		"ccm_route_latencies_duration_milliseconds": {"verb"},
		"ccm_slb_latencies_duration_milliseconds":   {"type", "verb"},
		"ccm_slb_operation_result":                  {"status", "type", "verb"},
	}
	for name, want := range legacy {
		series := name
		if !strings.HasSuffix(name, "_result") {
			series = name + "_count"
			if s.types[name] != "histogram" {
				t.Errorf("%s: type %q, want histogram", name, s.types[name])
			}
		} else if s.types[name] != "counter" {
			t.Errorf("%s: type %q, want counter", name, s.types[name])
		}
		got := s.labelNames(series)
		if len(got) != len(want) {
			t.Errorf("%s labels %v, want %v", name, got, want)
		}
		for _, k := range want {
			if !got[k] {
				t.Errorf("%s lacks label %s", name, k)
			}
		}
	}
	for _, e := range ccmmetrics.Catalog() {
		typ, ok := s.types[e.Name]
		if !ok {
			// Families without a sample yet (a retry budget never spent)
			// are not exposed; those the tests above moved must be.
			if strings.HasPrefix(e.Name, "ccm_") || strings.HasPrefix(e.Name, "alicloud_service_") {
				t.Errorf("%s not exposed", e.Name)
			}
			continue
		}
		if typ != string(e.Kind) {
			t.Errorf("%s: exposed as %s, registered as %s", e.Name, typ, e.Kind)
		}
	}
}

// listening returns the TCP ports the process listens on, from /proc.
func listening(t *testing.T, pid int) map[int]bool {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fs := strings.Fields(line)
			// local_address is fs[1] (hex ip:port), st fs[3] (0A = LISTEN), inode fs[9].
			if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] {
				continue
			}
			port, err := strconv.ParseUint(fs[1][strings.LastIndex(fs[1], ":")+1:], 16, 16)
			if err == nil {
				ports[int(port)] = true
			}
		}
	}
	return ports
}

func startBare(t *testing.T, args ...string) *ccmtest.CCM {
	t.Helper()
	c, err := ccmtest.StartCCM(context.Background(), ccmtest.CCMOptions{
		Kubeconfig: cluster.KubeconfigPath, Emulator: cloud.Addr(), AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		CloudConfig: "Global:\n  clusterID: " + clusterID + "\n",
		// Naming one controller disabled and none enabled runs none.
		Args:    append([]string{"--leader-elect=false", "--controllers=-cloud-node-controller"}, args...),
		LogPath: filepath.Join(t.TempDir(), "ccm.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// TestPlainListenerOffByDefault: without the flag the process listens on
// its secure port only; the suite's CCM, with it, on both (so the probe
// can tell).
func TestPlainListenerOffByDefault(t *testing.T) {
	port, _ := strconv.Atoi(metricsAddr[strings.LastIndex(metricsAddr, ":")+1:])
	if got := listening(t, ccm.PID()); !got[ccm.Port] || !got[port] {
		t.Fatalf("the suite's CCM listens on %v, want its secure port %d and the metrics port %d", got, ccm.Port, port)
	}
	c := startBare(t)
	var got map[int]bool
	poll(t, 30*time.Second, "the bare CCM's secure port", func(context.Context) (bool, error) {
		if c.Exited() {
			return false, fmt.Errorf("exited: %s", ccmtest.Tail(c.Log(), 10))
		}
		got = listening(t, c.PID())
		return got[c.Port], nil
	})
	time.Sleep(2 * time.Second) // past the start-up, where the listener would open
	got = listening(t, c.PID())
	if len(got) != 1 {
		t.Fatalf("without --metrics-bind-address the CCM listens on %v, want only its secure port %d", got, c.Port)
	}
	if strings.Contains(c.Log(), "Serving metrics over plain HTTP") {
		t.Fatal("the plain listener was started without the flag")
	}
}

// TestBadMetricsAddressStopsAtStart: the process exits non-zero naming
// the flag, before it loads the cloud configuration.
func TestBadMetricsAddressStopsAtStart(t *testing.T) {
	busy := metricsAddr // the suite's CCM holds it
	for _, tc := range []struct{ name, addr, want string }{
		{"no port", "127.0.0.1", "want host:port"},
		{"port not a number", "127.0.0.1:http", "is not a number"},
		{"port out of range", "127.0.0.1:70000", "is not a number"},
		{"host not an IP", "metrics.example:8080", "is not an IP address"},
		{"address in use", busy, "address already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startBare(t, "--metrics-bind-address="+tc.addr)
			code := c.Wait(30 * time.Second)
			if code == 0 || code == -1 {
				t.Fatalf("exit code %d, want a non-zero exit at start; log:\n%s", code, ccmtest.Tail(c.Log(), 20))
			}
			log := c.Log()
			if !strings.Contains(log, "--metrics-bind-address") || !strings.Contains(log, tc.want) {
				t.Fatalf("the log does not name the flag and %q:\n%s", tc.want, ccmtest.Tail(log, 20))
			}
			if strings.Contains(log, "Cloud configuration loaded") {
				t.Fatal("the cloud configuration was loaded anyway")
			}
		})
	}
}
