package soak

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/app"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

const (
	clusterID   = "soak"
	clusterCIDR = "10.128.0.0/12"
	// soakKeyID signs the soak's own calls (sentinels, final reads): the
	// "someone else" of the same account, told apart in the request log.
	soakKeyID = "LTAI5tSoakOwnerKey00001"
	// soakKeySecret and the replicas' secrets are keys of the local
	// emulator only, valid nowhere else.
	soakKeySecret = "soak-owner-local-emulator-secret-0"
	accountID     = "1234567890123456"
)

// replica is one CCM process slot: a killed replica is started again in
// the same slot with a new log file.
type replica struct {
	name, keyID, secret string
	mu                  sync.Mutex
	ccm                 *ccmtest.CCM
	starts              int
	started             time.Time
	logs                []string
	// procs are every process the replica ran, in start order.
	procs []*ccmtest.CCM
}

func (r *replica) startedAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

// env is the running soak environment.
type env struct {
	o       Options
	dir     string
	binary  string
	cloud   *emulator.Emulator
	cluster *localcluster.Cluster
	kube    kubernetes.Interface
	sdk     *emulatortest.Env
	// bug is the front of the injected bug between the replicas and the
	// cloud (nil without Options.InjectBug).
	bug      *bugFront
	replicas []*replica
	// instances are the seeded instance ids (0 is the metadata service's
	// own host), ips their private addresses.
	instances []string
	ips       map[string]string
	vswitches []string
	zones     []string
	vpcID     string
	table     string
}

// startEnv starts the emulator, the control plane and the CCM replicas.
func startEnv(ctx context.Context, o Options) (_ *env, err error) {
	e := &env{o: o, dir: o.WorkDir}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return nil, fmt.Errorf("work dir: %w", err)
	}
	o.Logf("building cloud-controller-manager")
	built, err := ccmtest.BuildBinary()
	if err != nil {
		return nil, err
	}
	// Replicas restart from this path for the whole run: a link of its
	// own keeps them on this build when a test elsewhere rebuilds the
	// shared one.
	if e.binary, err = ownCopy(built, filepath.Join(e.dir, "cloud-controller-manager")); err != nil {
		return nil, err
	}
	keys := []emulator.AccessKey{{ID: soakKeyID, Secret: soakKeySecret, AccountID: accountID}}
	for i := 0; i < o.Replicas; i++ {
		n := string(rune('a' + i))
		r := &replica{name: n, keyID: "LTAI5tSoakReplica" + strings.ToUpper(n) + "0001", secret: "soak-replica-" + n + "-local-emulator-secret"}
		e.replicas = append(e.replicas, r)
		keys = append(keys, emulator.AccessKey{ID: r.keyID, Secret: r.secret, AccountID: accountID})
	}
	e.cloud, err = emulator.New(emulator.Config{AccessKeys: keys, RequestLogSize: 20000})
	if err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	st := e.cloud.Store.Settings()
	for name, n := range map[string]int{store.QuotaSLBInstances: 1000, store.QuotaNLBInstances: 1000} {
		if err := st.SetQuota(name, n); err != nil {
			return nil, fmt.Errorf("quota %s: %w", name, err)
		}
	}
	// Instance 0 hosts the metadata service; the rest are Nodes, spares
	// for joins, and one VM that is no Node (the tenant attacks' target).
	ids, err := e.cloud.Seed(ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: 1 + o.Nodes + o.SpareInstances + 1, NamePrefix: "soak-"}))
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	e.instances, e.vswitches, e.table = ids["instance"], ids["vswitch"], ids["routeTable"][0]
	if len(ids["vpc"]) > 0 {
		e.vpcID = ids["vpc"][0]
	}
	if _, err := e.cloud.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start emulator: %w", err)
	}
	if o.InjectBug {
		if e.bug, err = startBugFront(e.cloud.Gateway); err != nil {
			return nil, err
		}
		o.Logf("injected bug: the replicas' %s calls are answered with success and never reach the cloud", bugAction)
	}
	e.sdk = emulatortest.For(e.cloud, soakKeyID, soakKeySecret)
	if e.ips, err = e.sdk.PrivateIPs(e.instances); err != nil {
		return nil, err
	}
	for _, id := range e.vswitches {
		e.zones = append(e.zones, e.cloud.Region()+"-"+zoneLetter(id))
	}
	o.Logf("starting the control plane (etcd, kube-apiserver, kube-controller-manager, kwok) in %s", e.dir)
	e.cluster, err = localcluster.Start(ctx, localcluster.Options{
		Dir: filepath.Join(e.dir, "cluster"), ControllerManager: true, Kwok: true,
		ClusterCIDR: clusterCIDR, NodeCIDRMaskSize: 24,
		// The API-server restart and a loaded machine must not make kwok
		// Nodes NotReady: that would move backends for reasons outside the
		// schedule.
		NodeMonitorGracePeriod: 3 * time.Minute,
		Logf:                   o.Logf,
	})
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(e.cluster.RESTConfig)
	cfg.QPS, cfg.Burst = 200, 400
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kube client: %w", err)
	}
	for _, r := range e.replicas {
		if err := e.startReplica(ctx, r); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// zoneLetter recovers the zone of a SeedDoc vSwitch id (vsw-cnhangzhouh0).
func zoneLetter(vsw string) string {
	s := strings.TrimRight(vsw, "0123456789")
	return s[len(s)-1:]
}

// startReplica starts the replica's CCM process with leader election.
func (e *env) startReplica(ctx context.Context, r *replica) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts++
	logPath := filepath.Join(e.dir, fmt.Sprintf("ccm-%s-%d.log", r.name, r.starts))
	c, err := ccmtest.StartCCM(ctx, ccmtest.CCMOptions{
		Kubeconfig: e.cluster.KubeconfigPath, Emulator: e.cloudAddr(), AccessKeyID: r.keyID, AccessKeySecret: r.secret,
		// Tagged reuse: an id annotation naming a load balancer the
		// administrator did not mark reusable (a sentinel) is refused.
		CloudConfig: "Global:\n  clusterID: " + clusterID + "\n  loadBalancerReuse: tagged\n",
		Binary:      e.binary,
		Args: append([]string{
			"--leader-elect=true",
			"--leader-elect-lease-duration=" + e.o.LeaseDuration.String(),
			"--leader-elect-renew-deadline=" + e.o.RenewDeadline.String(),
			"--leader-elect-retry-period=" + e.o.RetryPeriod.String(),
			"--cluster-cidr=" + clusterCIDR, "--allocate-node-cidrs=true", "--configure-cloud-routes=true",
			"--route-reconciliation-period=30s", "--node-monitor-period=5s", "--node-status-update-frequency=1m", "--v=2",
		}, e.o.CCMArgs...),
		LogPath: logPath,
	})
	if err != nil {
		return fmt.Errorf("start replica %s: %w", r.name, err)
	}
	r.ccm, r.started = c, time.Now()
	r.procs = append(r.procs, c)
	r.logs = append(r.logs, logPath)
	return nil
}

// cloudAddr is the cloud endpoint of the replicas: the emulator, or the
// injected bug's front of it.
func (e *env) cloudAddr() string {
	if e.bug != nil {
		return e.bug.addr
	}
	return e.cloud.Addr()
}

// leading reports whether the replica's current process has acquired the
// Lease: a replica that loses it exits, so a live process that logged
// the acquisition still holds it.
func (r *replica) leading() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	// client-go logs `"Successfully acquired lease" lock="kube-system/ccm"`.
	return r.ccm != nil && !r.ccm.Exited() && strings.Contains(strings.ToLower(r.ccm.Log()), "successfully acquired lease")
}

// leaseHolder is the holder identity of the CCM's Lease ("" when none).
func (e *env) leaseHolder(ctx context.Context) (string, error) {
	l, err := e.kube.CoordinationV1().Leases("kube-system").Get(ctx, app.LeaseName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read the Lease: %w", err)
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// logPaths lists every CCM log the soak produced.
func (e *env) logPaths() []string {
	var out []string
	for _, r := range e.replicas {
		r.mu.Lock()
		out = append(out, r.logs...)
		r.mu.Unlock()
	}
	return out
}

// stop ends every process the environment started.
func (e *env) stop() {
	for _, r := range e.replicas {
		r.mu.Lock()
		if r.ccm != nil {
			r.ccm.Stop()
		}
		r.mu.Unlock()
	}
	if e.cluster != nil {
		e.cluster.Stop()
	}
	if e.bug != nil {
		e.bug.close()
	}
	if e.cloud != nil {
		_ = e.cloud.Close()
	}
	if e.binary != "" {
		// The run's own link: a kept work dir keeps logs, not 150 MB.
		_ = os.Remove(e.binary)
	}
}

// ownCopy hard-links src to dst (copying when they are on different file
// systems) and returns dst.
func ownCopy(src, dst string) (string, error) {
	_ = os.Remove(dst)
	if err := os.Link(src, dst); err == nil {
		return dst, nil
	}
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	return dst, out.Close()
}
