package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/providerid"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// running is a connection to a running sandbox, through its directory.
type running struct {
	env   *Env
	kube  kubernetes.Interface
	cloud *clients
	facts *cloudFacts
}

// connect reads DIR/sandbox.env and DIR/kubeconfig of a running sandbox.
func connect(dir string) (*running, error) {
	if _, err := os.Stat(filepath.Join(dir, ReadyFile)); err != nil {
		return nil, fmt.Errorf("%w in %s (start one with: go run ./cmd/sandbox up --dir %s)", errNoSandbox, dir, dir)
	}
	env, err := ReadEnv(dir)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", env.Kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	cl, err := newClients(env.EmulatorEndpoint, env.AccessKeyID, env.AccessKeySecret)
	if err != nil {
		return nil, err
	}
	facts, err := cl.discover()
	if err != nil {
		return nil, fmt.Errorf("read the emulated cloud at %s: %w", env.EmulatorEndpoint, err)
	}
	return &running{env: env, kube: cs, cloud: cl, facts: facts}, nil
}

// AddNode creates an ECS instance through the ECS API (RunInstances), in
// the zone with the fewest instances, and registers its Node as kubelet
// would. It returns the Node's name.
func AddNode(ctx context.Context, dir string, out io.Writer) (string, error) {
	r, err := connect(dir)
	if err != nil {
		return "", err
	}
	next, count := 0, map[string]int{}
	for _, in := range r.facts.Instances {
		if n, err := strconv.Atoi(strings.TrimPrefix(in.HostName, HostPrefix)); err == nil && n >= next {
			next = n + 1
		}
		count[in.Zone]++
	}
	zone := zones[0]
	for _, z := range zones {
		if count[z] < count[zone] {
			zone = z
		}
	}
	name := HostPrefix + strconv.Itoa(next)
	req := ecs.CreateRunInstancesRequest()
	req.ImageId = ImageID
	req.InstanceType = InstanceType
	req.VSwitchId = r.facts.VSwitches[zone]
	req.SecurityGroupId = r.facts.SecurityGroup
	req.InstanceName = name
	req.HostName = name
	req.InstanceChargeType = "PostPaid"
	req.SpotStrategy = "NoSpot"
	req.ClientToken = "sandbox-add-" + name + "-" + r.facts.VpcID
	resp, err := r.cloud.ecs.RunInstances(req)
	if err != nil {
		return "", fmt.Errorf("RunInstances: %w", err)
	}
	if len(resp.InstanceIdSets.InstanceIdSet) != 1 {
		return "", fmt.Errorf("RunInstances returned %d instances", len(resp.InstanceIdSets.InstanceIdSet))
	}
	id := resp.InstanceIdSets.InstanceIdSet[0]
	instances, err := r.cloud.instances(r.facts.VpcID)
	if err != nil {
		return "", err
	}
	var in *Instance
	for i := range instances {
		if instances[i].ID == id {
			in = &instances[i]
		}
	}
	if in == nil || in.PrivateIP == "" {
		return "", fmt.Errorf("instance %s not listed with a private IP", id)
	}
	fmt.Fprintf(out, "created ECS instance %s (%s, %s, %s)\n", id, name, in.PrivateIP, zone)
	if _, err := registerNodes(ctx, r.kube, []Instance{*in}); err != nil {
		return "", err
	}
	fmt.Fprintf(out, "registered Node %s; the CCM initializes it, programs its route and adds it to the load balancer's backends\n", name)
	fmt.Fprintf(out, "watch: kubectl get node %s -w   (KUBECONFIG=%s)\n", name, r.env.Kubeconfig)
	return name, nil
}

// RemoveNode deletes the Node's ECS instance through the ECS API
// (DeleteInstance with Force, as when a VM is released) and stops its kwok
// heartbeat, as when its kubelet dies. The CCM then deletes the Node.
func RemoveNode(ctx context.Context, dir, name string, out io.Writer) error {
	r, err := connect(dir)
	if err != nil {
		return err
	}
	n, err := r.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no Node %s", name)
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	id := ""
	if n.Spec.ProviderID != "" {
		if _, id, err = providerid.Parse(n.Spec.ProviderID); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
	} else {
		for _, in := range r.facts.Instances {
			if in.PrivateIP == nodeInternalIP(n) {
				id = in.ID
			}
		}
	}
	if id == "" {
		return fmt.Errorf("node %s: no ECS instance found (no providerID, no instance with IP %s)", name, nodeInternalIP(n))
	}
	req := ecs.CreateDeleteInstanceRequest()
	req.InstanceId = id
	req.Force = "true"
	if _, err := r.cloud.ecs.DeleteInstance(req); err != nil {
		return fmt.Errorf("DeleteInstance %s: %w", id, err)
	}
	fmt.Fprintf(out, "deleted ECS instance %s\n", id)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{localcluster.KwokNodeAnnotation: nil}}})
	if _, err := r.kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("stop heartbeat of node %s: %w", name, err)
	}
	fmt.Fprintf(out, "stopped Node %s's heartbeat; once it is NotReady (about 20-40s) the CCM sees its instance is gone and deletes it, and its route and backend go with it\n", name)
	fmt.Fprintf(out, "watch: kubectl get nodes -w   (KUBECONFIG=%s)\n", r.env.Kubeconfig)
	return nil
}

// Status prints the summary of a running sandbox.
func Status(ctx context.Context, dir string, out io.Writer) error {
	r, err := connect(dir)
	if err != nil {
		return err
	}
	obs := &observer{kube: r.kube, cloud: r.cloud, facts: r.facts, instances: liveInstances(r.facts.Instances), routes: true, services: true}
	if prev, err := readSummary(dir); err == nil {
		obs.routes, obs.services = prev.RoutesManaged, prev.ServicesManaged
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sum, err := obs.summary(cctx)
	if err != nil {
		return err
	}
	sum.ConsoleURL = ConsoleURL(r.env.EmulatorEndpoint)
	sum.Print(out)
	return nil
}

// readSummary reads DIR/summary.json.
func readSummary(dir string) (*Summary, error) {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("decode summary.json: %w", err)
	}
	return &s, nil
}
