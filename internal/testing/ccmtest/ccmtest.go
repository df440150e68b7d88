// Package ccmtest runs the cloud-controller-manager binary against a local
// control plane and the in-process emulator, for integration tests and
// benchmarks.
package ccmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary builds cmd/cloud-controller-manager once per test binary and
// returns its path.
func Binary() (string, error) {
	buildOnce.Do(func() { buildPath, buildErr = BuildBinary() })
	return buildPath, buildErr
}

// BuildBinary builds cmd/cloud-controller-manager, the production binary
// (tests never build another), and returns its path.
//
// The binary goes to one path under the repository's .cache (ignored by
// git), not to a new temp dir: test binaries exit without a cleanup hook
// when killed, and a 150 MB binary left in /tmp per test binary and run
// once filled the disk. Each build writes a file of its own and renames it
// over the path, so test binaries building at the same time never see a
// half-written file and a running process keeps the inode it started from.
func BuildBinary() (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "test-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("test binary dir: %w", err)
	}
	const name = "cloud-controller-manager"
	path := filepath.Join(dir, name)
	// go build refuses to overwrite a file it did not write, so the
	// build's own file lives in a fresh dir next to the path.
	tmpDir, err := os.MkdirTemp(dir, name+".build-")
	if err != nil {
		return "", fmt.Errorf("test binary: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, name)
	cmd := exec.Command("go", "build", "-o", tmp, "./cmd/cloud-controller-manager")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build cloud-controller-manager: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("test binary: %w", err)
	}
	return path, nil
}

// Cloud is the seeded emulated cloud of one test.
type Cloud struct {
	// VpcID is the seeded VPC (vpc-...).
	VpcID string
	// VSwitches are the seeded vSwitch ids, one per zone, in Zones order.
	VSwitches []string
	// Zones are the zone ids of the vSwitches, e.g. cn-hangzhou-h.
	Zones []string
	// RouteTables are the VPC's route table ids (vtb-...).
	RouteTables []string
	// Instances in creation order, with their private IPs.
	Instances []SeededInstance
}

// SeededInstance is one seeded ECS instance.
type SeededInstance struct {
	// ID is the instance id (i-...), PrivateIP its primary private address,
	// Zone its zone id.
	ID, PrivateIP, Zone string
}

// Zones used by the seed: the region plus a letter, as the cloud names them.
var defaultZones = []string{"cn-hangzhou-h", "cn-hangzhou-i"}

// SeedSpec is the cloud a test starts from.
type SeedSpec struct {
	// Instances is the number of ECS instances, spread over the zones.
	Instances int
	// ExtraRouteTable adds a custom route table to the VPC.
	ExtraRouteTable bool
	// NamePrefix prefixes instance names.
	NamePrefix string
	// IPv6 enables IPv6 in the VPC and gives vSwitch i the /64 number i;
	// instances still get IPv6 addresses only when asked for.
	IPv6 bool
}

// TestAccountID is the account the test emulators' access keys belong to.
const TestAccountID = "1234567890"

// StartEmulator starts an in-process emulator on a free loopback port that
// accepts the one access key a test binary's CCM signs with.
func StartEmulator(accessKeyID, accessKeySecret string) (*emulator.Emulator, error) {
	e, err := emulator.New(emulator.Config{AccessKeys: []emulator.AccessKey{{ID: accessKeyID, Secret: accessKeySecret, AccountID: TestAccountID}}})
	if err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	if _, err := e.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start emulator: %w", err)
	}
	return e, nil
}

// SeedDoc returns the seed for spec: one VPC 192.168.0.0/16 with a vSwitch
// per zone and spec.Instances instances.
func SeedDoc(spec SeedSpec) *api.Seed {
	vpc := api.SeedVPC{Name: "cluster-vpc", CIDRBlock: "192.168.0.0/16"}
	for i, z := range defaultZones {
		vpc.VSwitches = append(vpc.VSwitches, api.SeedVSwitch{
			ID: fmt.Sprintf("vsw-%s%d", strings.ReplaceAll(z, "-", ""), i), Name: "vsw-" + z, ZoneID: z,
			CIDRBlock: fmt.Sprintf("192.168.%d.0/24", i),
		})
	}
	if spec.IPv6 {
		vpc.EnableIPv6 = true
		for i := range vpc.VSwitches {
			n := i
			vpc.VSwitches[i].IPv6CIDRBlock = &n
		}
	}
	if spec.ExtraRouteTable {
		vpc.RouteTables = append(vpc.RouteTables, api.SeedRouteTable{Name: "custom"})
	}
	s := &api.Seed{VPCs: []api.SeedVPC{vpc}}
	for i := 0; i < spec.Instances; i++ {
		s.Instances = append(s.Instances, api.SeedInstance{
			Name:               fmt.Sprintf("%snode-%d", spec.NamePrefix, i),
			InstanceType:       "ecs.g7.large",
			VSwitchID:          vpc.VSwitches[i%len(vpc.VSwitches)].ID,
			InstanceChargeType: "PostPaid",
			SpotStrategy:       "NoSpot",
		})
	}
	return s
}

// CCMOptions configure a CCM process.
type CCMOptions struct {
	// Kubeconfig is an admin kubeconfig of the cluster.
	Kubeconfig string
	// Emulator is the emulator's host:port.
	Emulator string
	// AccessKeyID and AccessKeySecret sign cloud calls (passed in the environment).
	AccessKeyID, AccessKeySecret string
	// CloudConfig is the cloud-config file content (YAML or JSON).
	CloudConfig string
	// Args are extra flags.
	Args []string
	// LogPath receives stdout and stderr.
	LogPath string
	// Binary is the cloud-controller-manager to run, e.g. one taken from
	// an image; Binary() builds it when empty.
	Binary string
	// Env is extra environment (e.g. GOMEMLIMIT=100MiB).
	Env []string
}

// Environ is the environment the binary runs with: the emulator's
// endpoints over HTTP, its metadata service, the access key, then o.Env.
func (o CCMOptions) Environ() []string {
	env := []string{
		"ECS_ENDPOINT=" + o.Emulator, "VPC_ENDPOINT=" + o.Emulator, "SLB_ENDPOINT=" + o.Emulator, "NLB_ENDPOINT=" + o.Emulator,
		"ALICLOUD_CLIENT_SCHEME=HTTP", "METADATA_ENDPOINT=http://" + o.Emulator,
		"ALIBABA_CLOUD_ACCESS_KEY_ID=" + o.AccessKeyID, "ALIBABA_CLOUD_ACCESS_KEY_SECRET=" + o.AccessKeySecret,
	}
	return append(env, o.Env...)
}

// CCM is a running cloud-controller-manager process.
type CCM struct {
	p *localcluster.Process
	// LogPath receives the process output.
	LogPath string
	// Port is the secure (healthz/metrics) port.
	Port int
	exit *exitWatch
}

// StartCCM runs the binary with the test defaults: emulator endpoints over
// HTTP, region and VPC from the emulator's metadata service unless the
// cloud-config sets them, fast node monitoring.
func StartCCM(ctx context.Context, o CCMOptions) (*CCM, error) {
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = Binary(); err != nil {
			return nil, err
		}
	}
	dir := filepath.Dir(o.LogPath)
	cfgPath := filepath.Join(dir, strings.TrimSuffix(filepath.Base(o.LogPath), ".log")+"-cloud-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(o.CloudConfig), 0o600); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + o.Kubeconfig,
		"--authentication-kubeconfig=" + o.Kubeconfig,
		"--authorization-kubeconfig=" + o.Kubeconfig,
		"--cloud-config=" + cfgPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--webhook-secure-port=0",
		"--node-monitor-period=1s",
		"--node-status-update-frequency=10s",
		"--v=2",
	}
	args = append(args, o.Args...)
	started := time.Now()
	p, err := localcluster.StartProcess(strings.TrimSuffix(filepath.Base(o.LogPath), ".log"), bin, args, dir, o.Environ())
	if err != nil {
		return nil, fmt.Errorf("start cloud-controller-manager: %w", err)
	}
	c := &CCM{p: p, LogPath: p.LogPath(), Port: port}
	c.watchExit(started)
	return c, nil
}

// Exited reports whether the process has ended.
func (c *CCM) Exited() bool {
	done, _ := c.p.Exited()
	return done
}

// ExitedAt is when the process was seen to end; zero while it runs.
func (c *CCM) ExitedAt() time.Time { return c.p.ExitedAt() }

// Wait blocks until the process ends or timeout passes; it returns the exit code (-1 on timeout).
func (c *CCM) Wait(timeout time.Duration) int {
	select {
	case <-c.p.Done():
		return c.p.ExitCode()
	case <-time.After(timeout):
		return -1
	}
}

// Stop sends SIGTERM and waits; SIGKILL after 10s.
func (c *CCM) Stop() {
	c.exit.stopping.Store(true)
	c.p.Stop(10 * time.Second)
}

// Kill kills the process at once, as when its machine dies.
func (c *CCM) Kill() {
	c.exit.stopping.Store(true)
	c.p.Kill()
}

// PID is the process id, to inspect what it listens on and its resource
// use in /proc.
func (c *CCM) PID() int { return c.p.PID() }

// Log returns the process output so far.
func (c *CCM) Log() string {
	data, _ := os.ReadFile(c.LogPath)
	return string(data)
}

// Tail returns the last n lines of the process output, for failures.
func (c *CCM) Tail(n int) string { return Tail(c.Log(), n) }

// Poll runs cond every interval until it holds or timeout passes; an
// error of cond only means "not yet", and the timeout's error carries the
// last one.
func Poll(timeout, interval time.Duration, cond func(ctx context.Context) (bool, error)) error {
	return PollContext(context.Background(), timeout, interval, cond)
}

// PollContext is Poll ending early when ctx is done: its error is then
// ctx's cause (a CCM's *ExitError under CCM.Context), with cond's last
// error.
func PollContext(ctx context.Context, timeout, interval time.Duration, cond func(ctx context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			// The cause ends with a log tail: the condition's error first.
			return fmt.Errorf("(last: %v) %w", last, cause)
		}
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

// Until polls cond every 200 ms until it holds; it fails when timeout
// passes, with cond's last error and the tail of the log, or as soon as
// the process exits (stopped or not), with its *ExitError.
func (c *CCM) Until(timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	if c.Exited() {
		<-c.ended().Done()
		return context.Cause(c.ended())
	}
	err := PollContext(c.ended(), timeout, 200*time.Millisecond, cond)
	if err != nil {
		if c.ended().Err() != nil {
			return err
		}
		return fmt.Errorf("%w; log tail:\n%s", err, c.Tail(30))
	}
	return nil
}

// RegisterNodes registers a kwok Node per instance id, named
// <prefix>00, <prefix>01, ..., with the instance's private address as its
// InternalIP (read through the SDK with keyID/secret), as kubelets with
// --cloud-provider=external register them; it returns the Node names in
// the order of ids.
func RegisterNodes(ctx context.Context, cs kubernetes.Interface, cloud *emulator.Emulator, keyID, secret, prefix string, ids []string) ([]string, error) {
	ips, err := emulatortest.For(cloud, keyID, secret).PrivateIPs(ids)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ids))
	for i, id := range ids {
		name := fmt.Sprintf("%s%02d", prefix, i)
		if _, err := localcluster.RegisterKubeletNode(ctx, cs, localcluster.KubeletNode{Name: name, InternalIP: ips[id], Kwok: true}); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// WaitNodesInitialized waits until the CCM has initialized every named Node
// (providerID set, uninitialized taint gone) and kwok reports it Ready.
func WaitNodesInitialized(ctx context.Context, cs kubernetes.Interface, names []string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || n.Spec.ProviderID == "" || !nodeReady(n) {
				return false, nil
			}
			for _, t := range n.Spec.Taints {
				if t.Key == cloudapi.TaintExternalCloudProvider {
					return false, nil
				}
			}
		}
		return true, nil
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

// ZoneMaps are the zone:vSwitch pairs of doc's first VPC, as an NLB
// Service's zone-maps annotation names them.
func ZoneMaps(doc *api.Seed) []string {
	var out []string
	for _, v := range doc.VPCs[0].VSwitches {
		out = append(out, v.ZoneID+":"+v.ID)
	}
	return out
}
