package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/nlb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/slb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

const (
	clusterID   = "bench"
	clusterCIDR = "10.128.0.0/12"
	namespace   = "default"
	accessKeyID = "LTAI5tBenchKey0000000001"
	// accessKeySecret is a key of the local emulator only, valid nowhere else.
	accessKeySecret = "bench-local-emulator-secret-000"
	accountID       = "1234567890123456"
)

// zones are the two zones of the seeded VPC (NLB needs two).
var zones = []string{"cn-hangzhou-h", "cn-hangzhou-i"}

// envSpec sizes one environment.
type envSpec struct {
	// instances is how many ECS instances to seed (Nodes are registered
	// separately, so some may wait for a later "add Nodes" step).
	instances int
	// latency is added to every cloud call.
	latency time.Duration
	// quotaProfile and quotaScale throttle the cloud ("" = unlimited).
	quotaProfile string
	quotaScale   float64
	// productScale overrides quotaScale per product.
	productScale map[string]float64
	// ccmArgs are extra CCM flags, ccmEnv extra CCM environment.
	ccmArgs []string
	ccmEnv  []string
	// auditWrites audits the writes to Nodes and Events
	// (localcluster.Options.AuditWrites).
	auditWrites bool
}

// env is one running benchmark environment: a local control plane with
// kwok, the in-process emulator and the CCM binary as a process.
type env struct {
	dir      string
	cluster  *localcluster.Cluster
	kube     kubernetes.Interface
	cloud    *emulator.Emulator
	ccm      *ccmtest.CCM
	ccmSeq   int
	spec     envSpec
	vswitch  []string
	instIPs  []string // instance i's private IP; instance 0 is the CCM's own machine
	logf     func(string, ...any)
	ccmStart time.Time
}

// startEnv starts the cloud, the control plane and the CCM.
func startEnv(ctx context.Context, dir string, spec envSpec, logf func(string, ...any)) (_ *env, err error) {
	e := &env{dir: dir, spec: spec, logf: logf}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e.cloud, err = emulator.New(emulator.Config{
		AccessKeys:     []emulator.AccessKey{{ID: accessKeyID, Secret: accessKeySecret, AccountID: accountID}},
		RequestLogSize: 2000,
	})
	if err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	// The account quotas a cluster of this size would have raised; the
	// API rate limits are what the benchmark measures against.
	st := e.cloud.Store.Settings()
	for name, n := range map[string]int{
		store.QuotaSLBInstances: 100000, store.QuotaNLBInstances: 100000,
		store.QuotaSLBBackendsPerLB: 100000, store.QuotaNLBServersPerGroup: 100000,
		store.QuotaVPCCustomRoutesPerTable: 100000,
	} {
		if err := st.SetQuota(name, n); err != nil {
			return nil, err
		}
	}
	if _, err := e.cloud.Seed(e.seed()); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	if _, err := e.cloud.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	if spec.latency > 0 {
		if _, err := e.cloud.Gateway.AddFault(gateway.FaultRule{Latency: gateway.Duration(spec.latency)}); err != nil {
			return nil, fmt.Errorf("latency: %w", err)
		}
	}
	if spec.quotaProfile != "" {
		if err := applyQuota(e.cloud.Gateway, spec); err != nil {
			return nil, err
		}
	}
	logf("starting the control plane (etcd, kube-apiserver, kube-controller-manager, kwok) in %s", dir)
	e.cluster, err = localcluster.Start(ctx, localcluster.Options{
		Dir: filepath.Join(dir, "cluster"), ControllerManager: true, Kwok: true,
		ClusterCIDR: clusterCIDR, NodeCIDRMaskSize: 24,
		// W4's thousands of LoadBalancer Services each need a NodePort.
		ServiceNodePortRange: "20000-39999",
		// Long enough that a busy 2-core machine never marks kwok Nodes
		// NotReady, which would move backends and spoil the counts.
		NodeMonitorGracePeriod: 2 * time.Minute,
		AuditWrites:            spec.auditWrites,
	})
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(e.cluster.RESTConfig)
	// Creating a thousand Services must not be the slow part.
	cfg.QPS, cfg.Burst = 2000, 4000
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if err := e.startCCM(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// seed is one VPC with a /18 vSwitch per zone and spec.instances
// instances with fixed addresses, alternating zones.
func (e *env) seed() *api.Seed {
	v := api.SeedVPC{Name: "bench-vpc", CIDRBlock: "192.168.0.0/16"}
	for i, z := range zones {
		id := fmt.Sprintf("vsw-bench%d", i)
		e.vswitch = append(e.vswitch, id)
		v.VSwitches = append(v.VSwitches, api.SeedVSwitch{ID: id, Name: "bench-" + z, ZoneID: z, CIDRBlock: fmt.Sprintf("192.168.%d.0/18", i*64)})
	}
	s := &api.Seed{VPCs: []api.SeedVPC{v}}
	for i := 0; i < e.spec.instances+1; i++ {
		zone := i % len(zones)
		base := binary.BigEndian.Uint32(net.ParseIP(fmt.Sprintf("192.168.%d.0", zone*64)).To4())
		ip := make(net.IP, 4)
		binary.BigEndian.PutUint32(ip, base+10+uint32(i/len(zones)))
		e.instIPs = append(e.instIPs, ip.String())
		s.Instances = append(s.Instances, api.SeedInstance{
			Name: fmt.Sprintf("bench-%d", i), HostName: fmt.Sprintf("bench-%d", i), InstanceType: "ecs.g7.large",
			VSwitchID: e.vswitch[zone], PrivateIP: ip.String(), InstanceChargeType: "PostPaid", SpotStrategy: "NoSpot",
		})
	}
	return s
}

// startCCM starts a CCM process (again after a stop: a restart). The
// secure port is picked free and then released, so another process may
// take it first; a CCM that exits at once on "address already in use" is
// started again on another port.
func (e *env) startCCM(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		if err := e.startCCMOnce(ctx); err != nil {
			return err
		}
		if exited := e.ccm.Wait(3 * time.Second); exited == -1 {
			return nil
		}
		if log := e.ccm.Log(); attempt >= 3 || !strings.Contains(log, "address already in use") {
			return fmt.Errorf("cloud-controller-manager exited at start; see %s", e.ccm.LogPath)
		}
		e.logf("cloud-controller-manager lost its port to another process; starting it again")
	}
}

func (e *env) startCCMOnce(ctx context.Context) error {
	e.ccmSeq++
	// ccmtest's short node periods suit tests; the benchmark measures the
	// CCM as deployed, so its node controllers run at the CCM's defaults
	// (a 10 s status sweep would add a DescribeInstances listing every
	// 15 s to every scenario's count).
	args := append([]string{"--leader-elect=false", "--cluster-cidr=" + clusterCIDR, "--allocate-node-cidrs=true",
		"--configure-cloud-routes=true", "--node-monitor-period=5s", "--node-status-update-frequency=5m", "--v=1"}, e.spec.ccmArgs...)
	c, err := ccmtest.StartCCM(ctx, ccmtest.CCMOptions{
		Kubeconfig: e.cluster.KubeconfigPath, Emulator: e.cloud.Addr(),
		AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		CloudConfig: "Global:\n  clusterID: " + clusterID + "\n",
		Args:        args,
		Env:         e.spec.ccmEnv,
		LogPath:     filepath.Join(e.dir, fmt.Sprintf("cloud-controller-manager-%d.log", e.ccmSeq)),
	})
	if err != nil {
		return err
	}
	e.ccm, e.ccmStart = c, time.Now()
	return nil
}

// stop stops everything the environment started.
func (e *env) stop() {
	if e.ccm != nil {
		e.ccm.Stop()
	}
	if e.cluster != nil {
		e.cluster.Stop()
	}
	if e.cloud != nil {
		_ = e.cloud.Close()
	}
}

// nodeName is the Node of instance i (i ≥ 1).
func nodeName(i int) string { return fmt.Sprintf("node-%04d", i) }

// registerNodes registers the Nodes of instances [from, to) as kubelets
// would, in parallel.
func (e *env) registerNodes(ctx context.Context, from, to int) error {
	return parallel(ctx, to-from, 16, func(ctx context.Context, k int) error {
		i := from + k
		_, err := localcluster.RegisterKubeletNode(ctx, e.kube, localcluster.KubeletNode{Name: nodeName(i), InternalIP: e.instIPs[i], Kwok: true})
		return err
	})
}

// deleteNodes deletes the Nodes of instances [from, to), as when a node
// group scales in.
func (e *env) deleteNodes(ctx context.Context, from, to int) error {
	return parallel(ctx, to-from, 16, func(ctx context.Context, k int) error {
		return e.kube.CoreV1().Nodes().Delete(ctx, nodeName(from+k), metav1.DeleteOptions{})
	})
}

// waitNodesInitialized waits until want Nodes have a providerID, no
// uninitialized taint and are Ready.
func (e *env) waitNodesInitialized(ctx context.Context, want int, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	err := poll(ctx, timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		if e.ccm.Exited() {
			return false, "", fatalError{fmt.Errorf("cloud-controller-manager exited; see %s", e.ccm.LogPath)}
		}
		nodes, err := e.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, "", err
		}
		n := 0
		for i := range nodes.Items {
			if initialized(&nodes.Items[i]) {
				n++
			}
		}
		return n >= want, fmt.Sprintf("%d/%d Nodes initialized", n, want), nil
	})
	return time.Since(start), err
}

func initialized(n *corev1.Node) bool {
	if n.Spec.ProviderID == "" {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == cloudapi.TaintExternalCloudProvider {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// cloudState is the emulated cloud read directly from its store, so that
// checking convergence spends none of the API quota the CCM runs against.
type cloudState struct {
	SLB slb.State
	NLB nlb.State
	VPC vpc.State
}

func (e *env) state() (*cloudState, error) {
	dump, err := e.cloud.Store.Dump()
	if err != nil {
		return nil, err
	}
	var s cloudState
	for part, dst := range map[string]any{"slb": &s.SLB, "nlb": &s.NLB, "vpc": &s.VPC} {
		if raw, ok := dump[part]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return nil, fmt.Errorf("decode %s state: %w", part, err)
			}
		}
	}
	return &s, nil
}

// parallel runs fn for 0..n-1 on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return first
}

// fatalError ends a poll at once; other errors are retried until the
// timeout.
type fatalError struct{ error }

// poll calls check every interval until it is done, fails fatally or
// times out; the timeout error carries check's last progress message.
func poll(ctx context.Context, timeout, interval time.Duration, check func(context.Context) (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		done, progress, err := check(ctx)
		if err == nil && done {
			return nil
		}
		var fatal fatalError
		if errors.As(err, &fatal) {
			return fatal.error
		}
		if progress != "" {
			last = progress
		}
		if err != nil {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s (%s)", timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// scale is the quota scale of product.
func (s envSpec) scale(product string) float64 {
	if f, ok := s.productScale[product]; ok {
		return f
	}
	return s.quotaScale
}

// applyQuota throttles every action at its profile limit times its
// product's scale.
func applyQuota(g *gateway.Gateway, spec envSpec) error {
	rules, err := g.QuotaProfileRules(spec.quotaProfile, spec.quotaScale)
	if err != nil {
		return err
	}
	for product, f := range spec.productScale {
		scaled, err := g.QuotaProfileRules(spec.quotaProfile, f)
		if err != nil {
			return fmt.Errorf("quota scale of %s: %w", product, err)
		}
		kept := rules[:0]
		for _, r := range rules {
			if r.Product != product {
				kept = append(kept, r)
			}
		}
		rules = kept
		for _, r := range scaled {
			if r.Product == product {
				rules = append(rules, r)
			}
		}
	}
	for _, r := range rules {
		if _, err := g.AddThrottle(r); err != nil {
			return fmt.Errorf("quota %s/%s: %w", r.Product, r.Action, err)
		}
	}
	return nil
}
