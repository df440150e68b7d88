package verifytest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

var cluster *localcluster.Cluster

// Only the API server and etcd: the test writes its Node itself and runs
// the one controller it tests.
func TestMain(m *testing.M) {
	ccmtest.Main(m, &cluster, localcluster.Options{}, nil)
}

const (
	resync = time.Second
	verify = 4 * time.Second
)

// TestConsoleDriftRepairedByPeriodicVerification: with nothing changing in
// Kubernetes, a load balancer name, its deletion protection and a
// listener's health check changed in the console are put back by the
// periodic verification within one VerifyPeriod; between verifications the
// periodic re-check stays the backend-only pass, so the load balancer is
// read about once per VerifyPeriod, not once per resync.
func TestConsoleDriftRepairedByPeriodicVerification(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := emulatortest.Start(t)
	seed := ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: 1, NamePrefix: "verify-"})
	ids := env.Seed(t, seed)
	cs, err := kubernetes.NewForConfig(cluster.RESTConfig)
	emulatortest.NoError(t, err)

	// One initialized, Ready Node backed by the seeded instance.
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-0", Labels: map[string]string{"kubernetes.io/hostname": "node-0"}},
		Spec:       corev1.NodeSpec{ProviderID: env.Region + "." + ids["instance"][0]},
	}
	node, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	emulatortest.NoError(t, err)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	emulatortest.NoError(t, err)

	client, err := cloud.New(cloud.Options{
		Region:      env.Region,
		Credentials: cloud.StaticProvider{Creds: cloud.NewCredentials(emulatortest.AccessKeyID, emulatortest.AccessKeySecret, "", time.Time{})},
		Endpoints:   cloud.Endpoints{ECS: env.Endpoint, VPC: env.Endpoint, SLB: env.Endpoint, NLB: env.Endpoint, Scheme: "HTTP"},
	})
	emulatortest.NoError(t, err)
	provider, err := clb.New(clb.Options{Cloud: client, VpcID: ids["vpc"][0]})
	emulatortest.NoError(t, err)
	// A default resync, as the CCM's factory has (--min-resync-period), lets
	// the controller's shorter per-handler resync take effect.
	factory := informers.NewSharedInformerFactory(cs, time.Hour)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	c, err := service.New(service.Options{
		KubeClient: cs, Informers: factory, ClusterID: "c-verify", Providers: []service.Provider{provider},
		Recorder:     broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "service-controller"}),
		ResyncPeriod: resync, VerifyPeriod: verify,
	})
	emulatortest.NoError(t, err)
	factory.Start(ctx.Done())
	go c.Run(ctx)

	const name = "drift"
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{
			annotations.Key("name"):              "drift-web",
			annotations.Key("delete-protection"): "on",
			annotations.Key("health-check-type"): "http",
			annotations.Key("health-check-uri"):  "/healthz",
		}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
		}},
	}
	_, err = cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	emulatortest.NoError(t, err)
	var id string
	poll(t, 30*time.Second, "the load balancer", func() (bool, error) {
		s, err := cs.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		id = s.Labels[naming.LabelLoadBalancerID]
		return id != "" && len(s.Status.LoadBalancer.Ingress) > 0 && s.Labels[naming.LabelHash] == naming.Hash(s), nil
	})
	sdk := env.SLB(t)
	state := func() (lbName, protection, uri string) {
		a := slb.CreateDescribeLoadBalancerAttributeRequest()
		a.LoadBalancerId = id
		lb, err := sdk.DescribeLoadBalancerAttribute(a)
		emulatortest.NoError(t, err)
		l := slb.CreateDescribeLoadBalancerTCPListenerAttributeRequest()
		l.LoadBalancerId, l.ListenerPort = id, "80"
		lsn, err := sdk.DescribeLoadBalancerTCPListenerAttribute(l)
		emulatortest.NoError(t, err)
		return lb.LoadBalancerName, lb.DeleteProtection, lsn.HealthCheckURI
	}
	if n, p, u := state(); n != "drift-web" || p != "on" || u != "/healthz" {
		t.Fatalf("created with name %q, delete protection %q, health check URI %q", n, p, u)
	}

	// Quiet window: count the controller's reads over a few periods.
	mark := lastSeq(env)
	time.Sleep(2*verify + verify/2)
	reads := countSince(env, mark)
	t.Logf("over %v with resync %v and verify %v: %v", 2*verify+verify/2, resync, verify, reads)
	if w := writes(env, mark); len(w) > 0 {
		t.Errorf("writes on a converged load balancer: %v", w)
	}
	if n := reads["DescribeVServerGroups"]; n < 5 {
		t.Errorf("%d backend passes (DescribeVServerGroups) in %v with a %v resync, want at least 5", n, 2*verify+verify/2, resync)
	}
	if n := reads["DescribeLoadBalancerTCPListenerAttribute"] + reads["DescribeLoadBalancerListeners"]; n < 1 || n > 3 {
		t.Errorf("%d listener reads in %v with a %v verify period, want 1 to 3 (one full sync per period, not per pass): %v", n, 2*verify+verify/2, verify, reads)
	}

	// The console changes.
	mark = lastSeq(env)
	rn := slb.CreateSetLoadBalancerNameRequest()
	rn.LoadBalancerId, rn.LoadBalancerName = id, "renamed-in-console"
	_, err = sdk.SetLoadBalancerName(rn)
	emulatortest.NoError(t, err)
	dp := slb.CreateSetLoadBalancerDeleteProtectionRequest()
	dp.LoadBalancerId, dp.DeleteProtection = id, "off"
	_, err = sdk.SetLoadBalancerDeleteProtection(dp)
	emulatortest.NoError(t, err)
	hc := slb.CreateSetLoadBalancerTCPListenerAttributeRequest()
	hc.LoadBalancerId, hc.ListenerPort, hc.HealthCheckURI = id, "80", "/console"
	_, err = sdk.SetLoadBalancerTCPListenerAttribute(hc)
	emulatortest.NoError(t, err)
	changed := time.Now()
	poll(t, verify+5*time.Second, "console changes put back", func() (bool, error) {
		n, p, u := state()
		return n == "drift-web" && p == "on" && u == "/healthz", nil
	})
	took := time.Since(changed)
	t.Logf("repaired %v after the console changes", took.Round(10*time.Millisecond))
	if took > verify+2*resync {
		t.Errorf("repair took %v, want within one verify period (%v) and a resync", took, verify)
	}
	time.Sleep(resync) // a write still in flight would land now
	got := writes(env, mark)
	want := map[string]int{"SetLoadBalancerName": 2, "SetLoadBalancerDeleteProtection": 2, "SetLoadBalancerTCPListenerAttribute": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("writes since the console changes (the console's own included) %v, want %v", got, want)
	}
	evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	emulatortest.NoError(t, err)
	ensured := 0
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == name && e.Reason == service.EventEnsured {
			ensured += int(e.Count)
		}
	}
	if ensured != 1 {
		t.Errorf("%d EnsuredLoadBalancer events, want 1: verifications record none", ensured)
	}
}

func poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok && err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

func lastSeq(env *emulatortest.Env) uint64 {
	rs := env.Emulator.Requests()
	if len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1].Seq
}

// countSince counts the SLB calls after seq by action.
func countSince(env *emulatortest.Env, seq uint64) map[string]int {
	out := map[string]int{}
	for _, r := range env.Emulator.Requests(gateway.RequestFilter{Product: "slb", AfterSeq: seq}) {
		out[r.Action]++
	}
	return out
}

// writes counts the SLB writes after seq by action.
func writes(env *emulatortest.Env, seq uint64) map[string]int {
	out := map[string]int{}
	for a, n := range countSince(env, seq) {
		if !strings.HasPrefix(a, "Describe") && !strings.HasPrefix(a, "List") && !strings.HasPrefix(a, "Get") {
			out[a] = n
		}
	}
	return out
}
