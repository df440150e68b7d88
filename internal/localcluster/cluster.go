// Package localcluster runs a real Kubernetes control plane on loopback for
// tests, benchmarks and the sandbox: etcd and kube-apiserver with TLS, RBAC
// and service-account tokens, and optionally kube-controller-manager (as in
// a cluster whose cloud loops belong to an external CCM), kube-scheduler and
// kwok for fake nodes and pods. The binaries are built from source by
// hack/controlplane.sh.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KwokNodeAnnotation marks the Nodes kwok manages (kwok's own convention).
// Removing it stops the Node's heartbeat, as when its kubelet dies.
const (
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	KwokNodeValue      = "fake"
)

// Options configures a local cluster.
type Options struct {
	// Dir holds certificates, data and logs; a temp dir when empty.
	Dir string
	// BinDir holds the control-plane binaries; found through
	// hack/controlplane.sh (and built when missing) when empty.
	BinDir string
	// ControllerManager starts kube-controller-manager.
	ControllerManager bool
	// Scheduler starts kube-scheduler.
	Scheduler bool
	// Kwok starts kwok managing the Nodes annotated kwok.x-k8s.io/node=fake.
	Kwok bool
	// ClusterCIDR is the pod network nodeipam allocates node podCIDRs from.
	ClusterCIDR string
	// NodeCIDRMaskSize is the size of each node's podCIDR.
	NodeCIDRMaskSize int
	// ServiceCIDR is the ClusterIP range.
	ServiceCIDR string
	// ServiceNodePortRange widens the NodePort range ("" = the API
	// server's 30000-32767, room for 2,768 LoadBalancer Service ports).
	ServiceNodePortRange string
	// NodeMonitorGracePeriod is how long a Node may miss heartbeats before
	// kube-controller-manager marks it NotReady.
	NodeMonitorGracePeriod time.Duration
	// AuditWrites makes kube-apiserver audit the writes to Nodes and
	// Events (Cluster.AuditedWrites counts them by client).
	AuditWrites bool
	// Logf receives progress messages; nil discards them.
	Logf func(format string, args ...any)
}

// Cluster is a running local control plane.
type Cluster struct {
	// RESTConfig authenticates as a cluster admin (system:masters).
	RESTConfig *rest.Config
	// KubeconfigPath is an admin kubeconfig file.
	KubeconfigPath string
	// Dir is the cluster's working directory.
	Dir string
	// LogDir holds one log file per component.
	LogDir string
	// APIServerURL is the https URL of kube-apiserver.
	APIServerURL string
	// Options are the options the cluster was started with, defaults filled.
	Options Options

	pki        *pki
	stopMirror context.CancelFunc
	// apiArgs start kube-apiserver again on the same port and data
	// (RestartAPIServer).
	apiArgs []string
	// auditLog is the API server's audit log ("": not audited).
	auditLog string
	procs    []*Process
	tempDir  bool
	keepLogs bool
}

func (o *Options) defaults() {
	if o.ClusterCIDR == "" {
		o.ClusterCIDR = "10.244.0.0/16"
	}
	if o.NodeCIDRMaskSize == 0 {
		o.NodeCIDRMaskSize = 24
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = "10.96.0.0/16"
	}
	if o.NodeMonitorGracePeriod == 0 {
		o.NodeMonitorGracePeriod = 20 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// Start runs a cluster and waits until kube-apiserver is ready. On error
// every process it started is stopped.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	opts.defaults()
	c := &Cluster{Options: opts}
	if opts.BinDir == "" {
		if opts.BinDir, err = EnsureBinaries(ctx, opts.Logf); err != nil {
			return nil, err
		}
		c.Options.BinDir = opts.BinDir
	}
	if opts.Dir == "" {
		if opts.Dir, err = os.MkdirTemp("", "localcluster-"); err != nil {
			return nil, err
		}
		c.tempDir = true
	}
	c.Dir = opts.Dir
	c.LogDir = filepath.Join(c.Dir, "logs")
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.keepLogs = true
			c.Stop()
			err = fmt.Errorf("%w (component logs in %s)", err, c.LogDir)
		}
	}()
	if c.pki, err = newPKI(filepath.Join(c.Dir, "pki")); err != nil {
		return nil, fmt.Errorf("create certificates: %w", err)
	}
	if err := c.startEtcdAndAPIServer(ctx); err != nil {
		return nil, err
	}
	if opts.ControllerManager {
		if err := c.startControllerManager(); err != nil {
			return nil, err
		}
	}
	if opts.Scheduler {
		if err := c.startScheduler(); err != nil {
			return nil, err
		}
	}
	if opts.Kwok {
		if err := c.startKwok(); err != nil {
			return nil, err
		}
	}
	// A component that dies right after start is a broken setup; catch it
	// here rather than as a test timeout.
	time.Sleep(300 * time.Millisecond)
	for _, p := range c.procs {
		if done, werr := p.Exited(); done {
			return nil, fmt.Errorf("%s exited at start (%v):\n%s", p.name, werr, p.Tail(20))
		}
	}
	return c, nil
}

func (c *Cluster) bin(name string) string { return filepath.Join(c.Options.BinDir, name) }

func (c *Cluster) startEtcdAndAPIServer(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	c.Options.Logf("localcluster: starting etcd on %s", etcdURL)
	if _, err := c.startTracked("etcd", []string{
		"--name=default",
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}); err != nil {
		return err
	}

	p := c.pki
	if err := p.issue("apiserver", "kube-apiserver", nil, []string{"127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", serviceIP(c.Options.ServiceCIDR)}); err != nil {
		return err
	}
	if err := p.serviceAccountKey(); err != nil {
		return err
	}
	// The front-proxy (request header) client: without it the apiserver
	// publishes no requestheader CA in extension-apiserver-authentication,
	// and every delegated-authentication server (the CCM on 10258) logs an
	// error about the missing bundle each time it reloads it.
	if err := p.issue("front-proxy-client", "front-proxy-client", nil, nil); err != nil {
		return err
	}
	// component-base logs an error at every start unless it is given a
	// non-empty metric-label allow list ("The manifest file is empty" with
	// none, "empty allow-list mapping" with an empty one), so each component
	// gets one that names a metric nothing registers: it restricts nothing.
	allowList := filepath.Join(c.Dir, "metric-label-allowlist.yaml")
	if err := os.WriteFile(allowList, []byte("localcluster_no_such_metric,label: unused\n"), 0o644); err != nil {
		return err
	}
	for _, u := range []struct{ name, cn, group string }{
		{"admin", "admin", "system:masters"},
		{"controller-manager", "system:kube-controller-manager", ""},
		{"scheduler", "system:kube-scheduler", ""},
	} {
		var groups []string
		if u.group != "" {
			groups = []string{u.group}
		}
		if err := p.issue(u.name, u.cn, groups, nil); err != nil {
			return err
		}
	}
	c.APIServerURL = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.Options.Logf("localcluster: starting kube-apiserver on %s", c.APIServerURL)
	apiArgs := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver"),
		"--tls-cert-file=" + p.path("apiserver.crt"),
		"--tls-private-key-file=" + p.path("apiserver.key"),
		"--client-ca-file=" + p.path("ca.crt"),
		"--service-account-key-file=" + p.path("sa.pub"),
		"--service-account-signing-key-file=" + p.path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + c.Options.ServiceCIDR,
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		"--requestheader-client-ca-file=" + p.path("ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.path("front-proxy-client.crt"),
		"--proxy-client-key-file=" + p.path("front-proxy-client.key"),
		"--allow-metric-labels-manifest=" + allowList,
		"--profiling=false",
		"--v=1",
	}
	if c.Options.ServiceNodePortRange != "" {
		apiArgs = append(apiArgs, "--service-node-port-range="+c.Options.ServiceNodePortRange)
	}
	if c.Options.AuditWrites {
		args, log, err := auditArgs(c.Dir)
		if err != nil {
			return err
		}
		apiArgs, c.auditLog = append(apiArgs, args...), log
	}
	c.apiArgs = apiArgs
	api, err := c.startTracked("kube-apiserver", apiArgs)
	if err != nil {
		return err
	}

	for _, k := range []struct{ file, user string }{
		{"admin.kubeconfig", "admin"},
		{"controller-manager.kubeconfig", "controller-manager"},
		{"scheduler.kubeconfig", "scheduler"},
	} {
		if err := c.writeKubeconfig(filepath.Join(c.Dir, k.file), k.user); err != nil {
			return err
		}
	}
	c.KubeconfigPath = filepath.Join(c.Dir, "admin.kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		return fmt.Errorf("load admin kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	c.RESTConfig = cfg
	return c.waitReady(ctx, api)
}

// waitReady polls /readyz until kube-apiserver answers ok.
func (c *Cluster) waitReady(ctx context.Context, api *Process) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		if done, werr := api.Exited(); done {
			return fmt.Errorf("kube-apiserver exited (%v):\n%s", werr, api.Tail(20))
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		cancel()
		if err == nil && string(body) == "ok" {
			// The default ServiceAccount and RBAC bootstrap roles appear
			// shortly after readyz; wait for the roles tests rely on.
			if _, err := cs.RbacV1().ClusterRoles().Get(ctx, "system:kube-controller-manager", metav1GetOptions); err == nil {
				c.Options.Logf("localcluster: kube-apiserver ready")
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("kube-apiserver not ready after 60s (last error: %v):\n%s", last, api.Tail(20))
}

// startTracked starts the control plane binary name with args, logging to
// c.LogDir, and keeps it for Stop.
func (c *Cluster) startTracked(name string, args []string) (*Process, error) {
	proc, err := StartProcess(name, c.bin(name), args, c.LogDir, nil)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, proc)
	return proc, nil
}

func (c *Cluster) startControllerManager() error {
	c.Options.Logf("localcluster: starting kube-controller-manager")
	p := c.pki
	if _, err := c.startTracked("kube-controller-manager", []string{
		"--kubeconfig=" + filepath.Join(c.Dir, "controller-manager.kubeconfig"),
		"--authentication-kubeconfig=" + filepath.Join(c.Dir, "controller-manager.kubeconfig"),
		"--authorization-kubeconfig=" + filepath.Join(c.Dir, "controller-manager.kubeconfig"),
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + c.Options.ClusterCIDR,
		"--node-cidr-mask-size=" + strconv.Itoa(c.Options.NodeCIDRMaskSize),
		"--service-cluster-ip-range=" + c.Options.ServiceCIDR,
		"--service-account-private-key-file=" + p.path("sa.key"),
		"--root-ca-file=" + p.path("ca.crt"),
		"--cluster-signing-cert-file=" + p.path("ca.crt"),
		"--cluster-signing-key-file=" + p.path("ca.key"),
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		"--node-monitor-period=2s",
		"--node-monitor-grace-period=" + c.Options.NodeMonitorGracePeriod.String(),
		"--concurrent-deployment-syncs=5",
		"--concurrent-replicaset-syncs=5",
		"--allow-metric-labels-manifest=" + filepath.Join(c.Dir, "metric-label-allowlist.yaml"),
		"--v=1",
	}); err != nil {
		return err
	}
	return nil
}

func (c *Cluster) startScheduler() error {
	c.Options.Logf("localcluster: starting kube-scheduler")
	kc := filepath.Join(c.Dir, "scheduler.kubeconfig")
	if _, err := c.startTracked("kube-scheduler", []string{
		"--kubeconfig=" + kc,
		"--allow-metric-labels-manifest=" + filepath.Join(c.Dir, "metric-label-allowlist.yaml"),
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--leader-elect=false",
		"--v=1",
	}); err != nil {
		return err
	}
	return nil
}

func (c *Cluster) startKwok() error {
	c.Options.Logf("localcluster: starting kwok")
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	stages := filepath.Join(c.Dir, "kwok-stages.yaml")
	if err := writeKwokStages(filepath.Join(c.Options.BinDir, "kwok-stages.yaml"), stages); err != nil {
		return err
	}
	if _, err := c.startTracked("kwok", []string{
		"--kubeconfig=" + c.KubeconfigPath,
		"--config=" + stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector=" + KwokNodeAnnotation + "=" + KwokNodeValue,
		"--node-lease-duration-seconds=40",
		"--cidr=" + c.Options.ClusterCIDR,
		"--node-ip=127.0.0.1",
		"--server-address=127.0.0.1:" + strconv.Itoa(ports[0]),
	}); err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stopMirror = cancel
	runKwokMirror(ctx, cs)
	return nil
}

// RestartAPIServer stops kube-apiserver (SIGTERM, as a rolling upgrade
// does; SIGKILL after 5 s, since it stops serving at once but its process
// can linger half a minute) and starts it again with the same flags, port
// and etcd, then waits until it is ready; every client sees its
// connections drop and its watches end meanwhile. down is how long it
// stays stopped.
func (c *Cluster) RestartAPIServer(ctx context.Context, down time.Duration) error {
	i := -1
	for k, p := range c.procs {
		if p.name == "kube-apiserver" {
			i = k
		}
	}
	if i < 0 {
		return errors.New("restart kube-apiserver: not running")
	}
	c.Options.Logf("localcluster: restarting kube-apiserver")
	c.procs[i].Stop(5 * time.Second)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	api, err := StartProcess("kube-apiserver", c.bin("kube-apiserver"), c.apiArgs, c.LogDir, nil)
	if err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	c.procs[i] = api
	if err := c.waitReady(ctx, api); err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	return nil
}

// Clientset returns an admin clientset.
func (c *Cluster) Clientset() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(c.RESTConfig)
}

// KeepLogs keeps the working directory (without etcd data) on Stop, e.g.
// after a failed test.
func (c *Cluster) KeepLogs() { c.keepLogs = true }

// LogPaths lists the component log files.
func (c *Cluster) LogPaths() []string {
	var out []string
	for _, p := range c.procs {
		out = append(out, p.logPath)
	}
	return out
}

// CheckAlive returns an error naming the first component that has exited.
func (c *Cluster) CheckAlive() error {
	for _, p := range c.procs {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited (%v):\n%s", p.name, err, p.Tail(20))
		}
	}
	return nil
}

// Stop stops every component in reverse start order and removes a temp
// working directory unless KeepLogs was called.
func (c *Cluster) Stop() {
	if c.stopMirror != nil {
		c.stopMirror()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop(10 * time.Second)
	}
	c.procs = nil
	if c.tempDir && !c.keepLogs {
		_ = os.RemoveAll(c.Dir)
	} else if c.tempDir {
		// A failed run keeps its logs for reading, not etcd's ~60 MB of
		// data: kept runs add up in /tmp.
		_ = os.RemoveAll(filepath.Join(c.Dir, "etcd"))
	}
}

// PIDs returns the process ids of the running components.
func (c *Cluster) PIDs() []int {
	var out []int
	for _, p := range c.procs {
		if done, _ := p.Exited(); !done {
			out = append(out, p.cmd.Process.Pid)
		}
	}
	return out
}

func (c *Cluster) writeKubeconfig(path, user string) error {
	p := c.pki
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.APIServerURL, CertificateAuthority: p.path("ca.crt")}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: p.path(user + ".crt"), ClientKey: p.path(user + ".key")}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

// freePorts reserves n distinct free loopback ports. They are released
// before use, so a rare race with another process is possible; components
// failing to bind surface as start errors.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// serviceIP is the first address of the service CIDR (the kubernetes
// Service's ClusterIP), which the serving certificate must name.
func serviceIP(cidr string) string {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return "10.96.0.1"
	}
	ip := n.IP.To4()
	if ip == nil {
		return "10.96.0.1"
	}
	out := make(net.IP, 4)
	copy(out, ip)
	out[3]++
	return out.String()
}

// RepoRoot finds the repository root (the directory holding
// hack/controlplane.sh) from the working directory upwards.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "controlplane.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (hack/controlplane.sh) not found above the working directory")
		}
		dir = parent
	}
}

// EnsureBinaries returns the directory of the control-plane binaries,
// building them first when they are missing. CONTROLPLANE_BIN_DIR overrides.
func EnsureBinaries(ctx context.Context, logf func(string, ...any)) (string, error) {
	if d := os.Getenv("CONTROLPLANE_BIN_DIR"); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "hack", "controlplane.sh")
	out, err := exec.CommandContext(ctx, script, "--print-dir").Output()
	if err != nil {
		return "", fmt.Errorf("%s --print-dir: %w", script, err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "kwok-stages.yaml")); err == nil {
		return dir, nil
	}
	if logf != nil {
		logf("localcluster: control-plane binaries missing, building them with %s", script)
	}
	cmd := exec.CommandContext(ctx, script)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build control plane: %w", err)
	}
	return dir, nil
}
