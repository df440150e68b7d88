// Package sandbox runs a whole local cluster on loopback that uses the CCM
// on the emulated cloud: the control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok) from localcluster, the
// alicloud-emulator and the cloud-controller-manager as processes built
// from this repository, kwok Nodes registered as kubelets would register
// them, and the example workload of examples/. Everything lives in one
// directory: binaries, logs, the cloud's state, kubeconfig and sandbox.env.
package sandbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// Options configure `sandbox up`.
type Options struct {
	// Dir holds everything the sandbox keeps (created when missing).
	Dir string
	// Nodes is the number of ECS instances (and Nodes) of a new cloud; a
	// kept cloud keeps its instances.
	Nodes int
	// ExitAfterReady stops everything and returns once ready.
	ExitAfterReady bool
	// ReadyTimeout bounds the wait for ready once every process runs.
	ReadyTimeout time.Duration
	// Out receives progress and the summary.
	Out io.Writer
}

// Files in the sandbox directory.
const (
	// ReadyFile exists while the sandbox is up and ready.
	ReadyFile = "ready"
	// PIDsFile lists "name pid" of every process the sandbox started.
	PIDsFile = "pids"
	// LockFile holds the pid of the running `sandbox up`.
	LockFile = "sandbox.pid"
)

// sandbox is one `up` run.
type sandbox struct {
	o        Options
	dir      string
	logDir   string
	binDir   string
	cpBinDir string
	root     string
	start    time.Time
	cluster  *localcluster.Cluster
	emulator *component
	ccm      *component
	env      *Env
}

func (s *sandbox) logf(format string, args ...any) {
	fmt.Fprintf(s.o.Out, "%6.1fs  %s\n", time.Since(s.start).Seconds(), fmt.Sprintf(format, args...))
}

// Up runs the sandbox until ctx is done (or until ready with
// ExitAfterReady). Whatever happens, every process it started is stopped
// before it returns.
func Up(ctx context.Context, o Options) (err error) {
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 4 * time.Minute
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	s := &sandbox{o: o, start: time.Now()}
	if s.dir, err = filepath.Abs(o.Dir); err != nil {
		return fmt.Errorf("sandbox directory: %w", err)
	}
	s.logDir, s.binDir = filepath.Join(s.dir, "logs"), filepath.Join(s.dir, "bin")
	for _, d := range []string{s.dir, s.logDir, s.binDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer os.Remove(filepath.Join(s.dir, LockFile))
	_ = os.Remove(filepath.Join(s.dir, ReadyFile))
	defer func() {
		if s.emulator == nil && s.cluster == nil {
			return
		}
		s.stop()
		fmt.Fprintln(s.o.Out, "Stopped every process the sandbox started.")
	}()
	if s.root, err = localcluster.RepoRoot(); err != nil {
		return fmt.Errorf("sandbox must run inside the repository: %w", err)
	}

	if err := s.build(ctx); err != nil {
		return err
	}
	if err := s.startEmulator(ctx); err != nil {
		return err
	}
	cl, err := newClients(s.env.EmulatorEndpoint, s.env.AccessKeyID, s.env.AccessKeySecret)
	if err != nil {
		return err
	}
	facts, err := cl.discover()
	if err != nil {
		return fmt.Errorf("read the emulated cloud: %w", err)
	}
	s.env.VpcID = facts.VpcID
	s.logf("cloud: %s with vSwitches %s, route table %s, %d instances", facts.VpcID, mapValues(facts.VSwitches), facts.RouteTableID, len(facts.Instances))

	if err := s.startCluster(ctx); err != nil {
		return err
	}
	controllers, err := s.startCCM(ctx, facts)
	if err != nil {
		return err
	}
	s.env.Kubeconfig = filepath.Join(s.dir, "kubeconfig")
	if err := writeKubeconfig(s.cluster.KubeconfigPath, s.env.Kubeconfig); err != nil {
		return err
	}
	if err := WriteEnv(s.dir, s.env); err != nil {
		return err
	}
	if err := s.writePIDs(); err != nil {
		return err
	}

	cs, err := s.cluster.Clientset()
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	obs := &observer{kube: cs, cloud: cl, facts: facts, instances: liveInstances(facts.Instances), routes: controllers.routes, services: controllers.services, since: s.start}
	registered, err := registerNodes(ctx, cs, obs.instances)
	if err != nil {
		return err
	}
	if len(registered) > 0 {
		s.logf("registered Nodes %s as kubelets with --cloud-provider=external would (uninitialized taint, no providerID)", strings.Join(registered, ", "))
	}
	admission, err := applyAdmission(ctx, s.cluster.RESTConfig, s.root)
	if err != nil {
		return fmt.Errorf("install the admission policy: %w", err)
	}
	s.logf("applied %s (deploy/admission): Services with a bad annotation are refused", strings.Join(admission, ", "))
	created, err := applyExamples(ctx, s.cluster.RESTConfig, filepath.Join(s.root, "examples"))
	if err != nil {
		return fmt.Errorf("deploy examples: %w", err)
	}
	if len(created) > 0 {
		s.logf("deployed %s", strings.Join(created, ", "))
	}
	if !controllers.routes {
		s.logf("note: this CCM build has no route controller; not waiting for routes")
	}
	if !controllers.services {
		s.logf("note: this CCM build has no service controller; not waiting for the Service's external IP")
	}

	if err := s.waitReady(ctx, obs); err != nil {
		return err
	}
	sum, err := obs.summary(ctx)
	if err != nil {
		return fmt.Errorf("read summary: %w", err)
	}
	sum.Dir, sum.Kubeconfig, sum.EmulatorEndpoint = s.dir, s.env.Kubeconfig, s.env.EmulatorEndpoint
	sum.ConsoleURL = ConsoleURL(s.env.EmulatorEndpoint)
	sum.ReadySeconds = time.Since(s.start).Seconds()
	if err := sum.writeJSON(s.dir); err != nil {
		return err
	}
	fmt.Fprintf(s.o.Out, "\nSandbox ready in %.1fs.\n", sum.ReadySeconds)
	sum.Print(s.o.Out)
	s.printExplore()
	if err := os.WriteFile(filepath.Join(s.dir, ReadyFile), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return fmt.Errorf("write ready file: %w", err)
	}
	defer os.Remove(filepath.Join(s.dir, ReadyFile))
	if o.ExitAfterReady {
		fmt.Fprintln(s.o.Out, "\n--exit-after-ready: stopping.")
		return nil
	}
	fmt.Fprintln(s.o.Out, "\nRunning; Ctrl-C (SIGINT) or SIGTERM stops every process.")
	return s.watch(ctx)
}

// watch waits for ctx, failing early if a component dies.
func (s *sandbox) watch(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(s.o.Out, "\nStopping...")
			return nil
		case <-t.C:
			if err := s.alive(); err != nil {
				return err
			}
		}
	}
}

// alive returns an error naming the first component that exited.
func (s *sandbox) alive() error {
	for _, c := range []*component{s.emulator, s.ccm} {
		if c == nil {
			continue
		}
		if done, _ := c.Exited(); done {
			return c.failure("exited")
		}
	}
	if s.cluster != nil {
		if err := s.cluster.CheckAlive(); err != nil {
			return fmt.Errorf("control plane: %w (logs in %s)", err, s.logDir)
		}
	}
	return nil
}

// stop stops everything in reverse start order.
func (s *sandbox) stop() {
	if s.ccm != nil {
		s.ccm.Stop(10 * time.Second)
	}
	if s.cluster != nil {
		s.cluster.Stop()
	}
	if s.emulator != nil {
		s.emulator.Stop(10 * time.Second)
	}
	_ = os.Remove(filepath.Join(s.dir, PIDsFile))
}

// lock refuses a second `up` on a directory whose sandbox still runs.
func (s *sandbox) lock() error {
	path := filepath.Join(s.dir, LockFile)
	if data, err := os.ReadFile(path); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid != os.Getpid() && processAlive(pid) {
			return fmt.Errorf("a sandbox (pid %d) already runs in %s; stop it first", pid, s.dir)
		}
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// build makes sure the control-plane binaries exist (building them with
// progress when missing) and builds the CCM and the emulator into DIR/bin.
func (s *sandbox) build(ctx context.Context) error {
	s.logf("control plane: checking binaries (the first build takes about ten minutes on 2 cores)")
	cpDir, err := localcluster.EnsureBinaries(ctx, func(format string, args ...any) { s.logf(format, args...) })
	if err != nil {
		return fmt.Errorf("control-plane binaries: %w", err)
	}
	s.cpBinDir = cpDir
	s.logf("building cloud-controller-manager and alicloud-emulator into %s", s.binDir)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", s.binDir+string(filepath.Separator), "./cmd/cloud-controller-manager", "./cmd/alicloud-emulator")
	cmd.Dir = s.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	link := filepath.Join(s.binDir, "kubectl")
	_ = os.Remove(link)
	if err := os.Symlink(filepath.Join(cpDir, "kubectl"), link); err != nil {
		return fmt.Errorf("link kubectl: %w", err)
	}
	return nil
}

// startEmulator runs the emulator on its state file, seeding an empty one.
func (s *sandbox) startEmulator(ctx context.Context) error {
	old, _ := ReadEnv(s.dir)
	s.env = &Env{RegionID: Region, ClusterID: ClusterID}
	if old != nil && old.AccessKeyID != "" && old.AccessKeySecret != "" {
		s.env.AccessKeyID, s.env.AccessKeySecret = old.AccessKeyID, old.AccessKeySecret
	} else {
		s.env.AccessKeyID, s.env.AccessKeySecret = "LTAI5t"+randomString(18), randomString(30)
	}
	// Keep the endpoint of the previous run when its port is free, so
	// shells that sourced sandbox.env keep working.
	addr := ""
	if old != nil && old.EmulatorEndpoint != "" {
		if l, err := net.Listen("tcp", old.EmulatorEndpoint); err == nil {
			l.Close()
			addr = old.EmulatorEndpoint
		}
	}
	if addr == "" {
		port, err := freePort()
		if err != nil {
			return err
		}
		addr = "127.0.0.1:" + strconv.Itoa(port)
	}
	s.env.EmulatorEndpoint = addr
	seed := filepath.Join(s.dir, "seed.json")
	if err := writeSeed(seed, s.o.Nodes); err != nil {
		return err
	}
	state := filepath.Join(s.dir, "cloud.db")
	s.logf("starting alicloud-emulator on %s (state %s)", addr, state)
	c, err := startComponent("alicloud-emulator", filepath.Join(s.binDir, "alicloud-emulator"),
		[]string{"--listen", addr, "--state", state, "--seed", seed, "--region", Region}, s.logDir,
		// The key travels in the environment: never on a command line or in a log.
		[]string{"ALICLOUD_EMULATOR_ACCESS_KEY_ID=" + s.env.AccessKeyID, "ALICLOUD_EMULATOR_ACCESS_KEY_SECRET=" + s.env.AccessKeySecret})
	if err != nil {
		return err
	}
	s.emulator = c
	return c.waitFor(ctx, 30*time.Second, "serving", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/_emulator/health", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health: HTTP %d", resp.StatusCode)
		}
		return nil
	})
}

// startCluster starts the control plane in DIR/cluster; its logs are
// linked into DIR/logs.
func (s *sandbox) startCluster(ctx context.Context) error {
	s.logf("starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok")
	c, err := localcluster.Start(ctx, localcluster.Options{
		Dir:               filepath.Join(s.dir, "cluster"),
		BinDir:            s.cpBinDir,
		ControllerManager: true,
		Scheduler:         true,
		Kwok:              true,
		ClusterCIDR:       ClusterCIDR,
		Logf:              func(format string, args ...any) { s.logf(format, args...) },
	})
	if err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	s.cluster = c
	for _, p := range c.LogPaths() {
		link := filepath.Join(s.logDir, filepath.Base(p))
		_ = os.Remove(link)
		if err := os.Symlink(p, link); err != nil {
			return fmt.Errorf("link log %s: %w", p, err)
		}
	}
	return nil
}

// ccmControllers is which of the CCM's optional controllers the built
// binary has.
type ccmControllers struct{ routes, services bool }

// detectControllers reads the controller list from the CCM's --help.
func detectControllers(bin string) (ccmControllers, error) {
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		return ccmControllers{}, fmt.Errorf("%s --help: %w\n%s", bin, err, out)
	}
	var c ccmControllers
	_, rest, ok := strings.Cut(string(out), "All controllers:")
	if !ok {
		return c, fmt.Errorf("%s --help lists no controllers", bin)
	}
	line, _, _ := strings.Cut(rest, "\n")
	for _, name := range strings.Split(line, ",") {
		switch strings.TrimSpace(name) {
		case "node-route-controller", "route":
			c.routes = true
		case "service-lb-controller", "service":
			c.services = true
		}
	}
	return c, nil
}

// startCCM writes the cloud-config and runs the CCM against the cluster
// and the emulator.
func (s *sandbox) startCCM(ctx context.Context, f *cloudFacts) (ccmControllers, error) {
	bin := filepath.Join(s.binDir, "cloud-controller-manager")
	controllers, err := detectControllers(bin)
	if err != nil {
		return controllers, err
	}
	var vsw []string
	for _, z := range zones {
		if id := f.VSwitches[z]; id != "" {
			vsw = append(vsw, z+":"+id)
		}
	}
	s.env.ZoneMaps = strings.Join(vsw, ",")
	cfgPath := filepath.Join(s.dir, "cloud-config.yaml")
	// loadBalancerReuse as deploy/ and the chart ship it: borrowing an LB
	// needs the owner's grant tag, so the sandbox shows what users get.
	cfg := fmt.Sprintf("# Written by the sandbox; credentials come from the environment.\nGlobal:\n  clusterID: %s\n  region: %s\n  vpcid: %s\n  vswitchid: %q\n  routeTableIDs: %s\n  loadBalancerReuse: tagged\n",
		ClusterID, Region, f.VpcID, strings.Join(vsw, ","), f.RouteTableID)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return controllers, fmt.Errorf("write cloud-config: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return controllers, err
	}
	kc := s.cluster.KubeconfigPath
	s.env.CloudConfig, s.env.ClusterCIDR = cfgPath, ClusterCIDR
	var endpoints []string
	for _, k := range ccmEndpointVars {
		endpoints = append(endpoints, k+"="+ccmEndpointEnv(s.env.EmulatorEndpoint)[k])
	}
	s.logf("starting cloud-controller-manager (cloud-config %s)", cfgPath)
	c, err := startComponent("cloud-controller-manager", bin, []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--cloud-config=" + cfgPath,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port), "--webhook-secure-port=0",
		// One CCM: no need to wait for the Lease a previous run held.
		"--leader-elect=false",
		"--cluster-cidr=" + ClusterCIDR, "--allocate-node-cidrs=true", "--configure-cloud-routes=true",
		"--node-monitor-period=5s",
		"--v=2",
	}, s.logDir, append([]string{
		"ALIBABA_CLOUD_ACCESS_KEY_ID=" + s.env.AccessKeyID, "ALIBABA_CLOUD_ACCESS_KEY_SECRET=" + s.env.AccessKeySecret,
	}, endpoints...))
	if err != nil {
		return controllers, err
	}
	s.ccm = c
	// A bad configuration makes the CCM exit at once; catch it here.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
	return controllers, c.waitFor(ctx, 60*time.Second, "healthy", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("healthz: HTTP %d", resp.StatusCode)
		}
		return nil
	})
}

// writePIDs records every process the sandbox started.
func (s *sandbox) writePIDs() error {
	var b strings.Builder
	fmt.Fprintf(&b, "sandbox %d\n", os.Getpid())
	for _, c := range []*component{s.emulator, s.ccm} {
		fmt.Fprintf(&b, "%s %d\n", c.Name(), c.PID())
	}
	for _, pid := range s.cluster.PIDs() {
		fmt.Fprintf(&b, "control-plane %d\n", pid)
	}
	return os.WriteFile(filepath.Join(s.dir, PIDsFile), []byte(b.String()), 0o644)
}

// waitReady polls until nothing is pending, telling what it waits for.
func (s *sandbox) waitReady(ctx context.Context, obs *observer) error {
	s.logf("waiting for the CCM: Nodes initialized%s%s", cond(obs.routes, ", routes programmed", ""), cond(obs.services, ", the Service's external IP", ""))
	deadline := time.Now().Add(s.o.ReadyTimeout)
	lastReport := time.Now()
	reported := ""
	var pending []string
	for {
		if err := s.alive(); err != nil {
			return err
		}
		var err error
		pending, err = obs.pending(ctx)
		if err == nil && len(pending) == 0 {
			return nil
		}
		if err != nil {
			pending = []string{err.Error()}
		}
		// Tell what changed, and repeat it now and then so a long wait
		// always says what it is waiting for.
		if now := strings.Join(pending, "; "); (now != reported && time.Since(lastReport) > 2*time.Second) || time.Since(lastReport) > 10*time.Second {
			s.logf("waiting for: %s", now)
			lastReport, reported = time.Now(), now
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s; still waiting for:\n  %s\nlast lines of %s:\n%s",
				s.o.ReadyTimeout, strings.Join(pending, "\n  "), s.ccm.LogPath(), tailFile(s.ccm.LogPath(), 25))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for: %s", strings.Join(pending, "; "))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// printExplore tells how to use the running sandbox.
func (s *sandbox) printExplore() {
	e := s.env
	fmt.Fprintf(s.o.Out, `
Explore:
  export KUBECONFIG=%[1]s PATH=%[2]s:$PATH
  kubectl get nodes -L topology.kubernetes.io/zone
  kubectl get svc %[3]s -o wide
  set -a; . %[4]s; set +a      # KUBECONFIG, the emulator's endpoint and credentials, region, cluster and VPC ids
  open http://%[5]s/_emulator/ui/        # read-only web console: resources, raw API answers, request log
  curl -s http://%[5]s/_emulator/health
  curl -s 'http://%[5]s/_emulator/requests?product=slb'    # every cloud call the CCM made
Emulated cloud: endpoint %[5]s (HTTP), region %[6]s, AccessKeyId %[7]s, AccessKeySecret %[8]s (a local key, valid only here)
Nodes: go run ./cmd/sandbox add-node --dir %[9]s | remove-node --dir %[9]s NAME | status --dir %[9]s
Logs: %[10]s
`, e.Kubeconfig, s.binDir, ExampleService, envPath(s.dir), e.EmulatorEndpoint, Region, e.AccessKeyID, e.AccessKeySecret, s.o.Dir, s.logDir)
}

// liveInstances drops instances on their way out.
func liveInstances(in []Instance) []Instance {
	var out []Instance
	for _, i := range in {
		switch i.Status {
		case "Running", "Pending", "Starting":
			out = append(out, i)
		}
	}
	return out
}

// insecureTLS accepts the CCM's self-signed loopback serving certificate
// for the health probe, which carries no data.
func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback health probe only
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func mapValues(m map[string]string) string {
	var out []string
	for _, z := range zones {
		if v, ok := m[z]; ok {
			out = append(out, v+" ("+z+")")
		}
	}
	return strings.Join(out, ", ")
}

func cond(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// errNoSandbox is returned when DIR has no running sandbox.
var errNoSandbox = errors.New("no running sandbox")
