package soak

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// Namespaces of the workload: the tenants whose Services must converge,
// and the one whose Services are bad input aimed across the boundary.
const (
	nsA      = "soak-a"
	nsB      = "soak-b"
	nsTenant = "soak-attacker"
	// labelRole tells the checker what to expect of a Service.
	labelRole = "soak.alicloud-ccm.io/role"
	roleGood  = "good"
	// roleAttack marks bad input: no address is expected, only that
	// nothing of anyone else changes and that it deletes cleanly.
	roleAttack = "attack"
	// nodeLabel is the label the backend-label Services select on.
	nodeLabel = "soak.alicloud-ccm.io/pool"
	// rangesA and rangesB are the loadBalancerSourceRanges the workload
	// toggles (CLB access control lists, NLB security groups).
	rangesA = "10.0.0.0/8"
	rangesB = "172.16.0.0/12"
)

// svcRef is a Service the workload believes exists.
type svcRef struct {
	ns, name string
	nlb      bool
	attack   string
}

func (s svcRef) key() string { return s.ns + "/" + s.name }

// workload applies the seeded schedule of Service and Node changes. Every
// random choice comes from rng in a fixed order and depends only on the
// workload's own bookkeeping, so a seed replays the same schedule (the
// cluster's timing, not the choices, differs between runs).
type workload struct {
	e   *env
	rng *rand.Rand
	s   *sentinels
	log func(string, ...any)

	mu       sync.Mutex
	live     map[string]svcRef
	order    []string // keys of live, in creation order (map order is random)
	seq      int
	nodes    []string       // Node names in join order
	nodeInst map[string]int // Node name → instance index
	spare    []int          // instance indexes free to join
	cordoned map[string]bool
	labelled map[string]bool
	created  map[types.UID]time.Time
	addr     map[types.UID]time.Duration
	// owners maps each created Service's default LB name to it.
	owners map[string]string

	counts map[string]int
}

func newWorkload(e *env, s *sentinels, seed int64) *workload {
	w := &workload{
		e: e, s: s, rng: rand.New(rand.NewSource(seed)), log: e.o.Logf,
		live: map[string]svcRef{}, nodeInst: map[string]int{}, cordoned: map[string]bool{}, labelled: map[string]bool{},
		created: map[types.UID]time.Time{}, addr: map[types.UID]time.Duration{}, counts: map[string]int{}, owners: map[string]string{},
	}
	for i := 1 + e.o.Nodes; i < 1+e.o.Nodes+e.o.SpareInstances; i++ {
		w.spare = append(w.spare, i)
	}
	return w
}

// nextSeq numbers the next Service, so names never repeat.
func (w *workload) nextSeq() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	return w.seq
}

func (w *workload) count(what string) {
	w.mu.Lock()
	w.counts[what]++
	w.mu.Unlock()
}

// setup creates the namespaces and the initial Nodes and waits until the
// CCM has initialized them.
func (w *workload) setup(ctx context.Context) error {
	for _, ns := range []string{nsA, nsB, nsTenant} {
		_, err := w.e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	for i := 1; i <= w.e.o.Nodes; i++ {
		if err := w.joinNode(ctx, i); err != nil {
			return err
		}
	}
	// Pods are admitted once kube-controller-manager has made their
	// namespace's default ServiceAccount.
	for _, ns := range []string{nsA, nsB} {
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := w.e.kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		}); err != nil {
			return fmt.Errorf("ServiceAccount %s/default: %w", ns, err)
		}
	}
	w.log("waiting for %d Nodes to be initialized", len(w.nodes))
	return w.waitNodes(ctx, 3*time.Minute)
}

// waitNodes waits until every Node has a providerID, a podCIDR and is Ready.
func (w *workload) waitNodes(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		list, err := w.e.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			ok := 0
			for i := range list.Items {
				n := &list.Items[i]
				if n.Spec.ProviderID != "" && n.Spec.PodCIDR != "" && ready(n) {
					ok++
				}
			}
			if ok == len(list.Items) && ok > 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Nodes not initialized after %v (last error: %v)", timeout, err)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (w *workload) joinNode(ctx context.Context, inst int) error {
	name := fmt.Sprintf("soak-node-%03d", inst)
	_, err := localcluster.RegisterKubeletNode(ctx, w.e.kube, localcluster.KubeletNode{Name: name, InternalIP: w.e.ips[w.e.instances[inst]], Kwok: true})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	w.mu.Lock()
	w.nodes = append(w.nodes, name)
	w.nodeInst[name] = inst
	w.mu.Unlock()
	return nil
}

// step makes one random change; the mix leans to Service updates, as a
// busy cluster's does.
func (w *workload) step(ctx context.Context) {
	w.mu.Lock()
	n := len(w.live)
	w.mu.Unlock()
	r := w.rng.Float64()
	var err error
	var what string
	switch {
	case r < 0.30 && n < w.e.o.MaxServices, n == 0:
		what, err = "create", w.create(ctx)
	case r < 0.72:
		what, err = "update", w.update(ctx)
	case r < 0.90:
		what, err = "delete", w.deleteOne(ctx)
	case r < 0.94:
		what, err = "attack", w.attack(ctx)
	default:
		what, err = "node", w.nodeChange(ctx)
	}
	if err != nil {
		w.count(what + " failed")
		w.log("workload: %s: %v", what, err)
	}
}

// ports draws 1 or 2 of the Service ports the workload uses.
func (w *workload) ports() []corev1.ServicePort {
	all := []corev1.ServicePort{
		{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
		{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8443)},
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)},
	}
	w.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	out := all[:1+w.rng.Intn(2)]
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// tweak is one annotation change: a key and the values it cycles through
// ("" removes it).
type tweak struct {
	key    string
	values []string
}

var clbTweaks = []tweak{
	{"scheduler", []string{"wrr", "rr", ""}},
	{"persistence-timeout", []string{"0", "60", ""}},
	{"established-timeout", []string{"60", "300", ""}},
	{"health-check-interval", []string{"2", "5", ""}},
	{"healthy-threshold", []string{"2", "4", ""}},
	{"health-check-switch", []string{"on", "off", ""}},
	{"connection-drain", []string{"off", ""}},
	{"additional-resource-tags", []string{"team=a", "team=b,env=soak", ""}},
	{"remove-unscheduled-backend", []string{"on", "off", ""}},
	{"backend-label", []string{nodeLabel + "=blue", ""}},
	{"delete-protection", []string{"on", "off", ""}},
	{"modification-protection", []string{"ConsoleProtection", "NonProtection", ""}},
}

var nlbTweaks = []tweak{
	{"scheduler", []string{"Wrr", "Rr", ""}},
	{"cross-zone-enabled", []string{"on", "off", ""}},
	{"idle-timeout", []string{"15", "20", ""}}, // valid on UDP (10-20) and TCP (10-900) listeners alike
	{"health-check-flag", []string{"on", "off", ""}},
	{"healthy-threshold", []string{"2", "4", ""}},
	{"additional-resource-tags", []string{"team=a", "team=b,env=soak", ""}},
	{"remove-unscheduled-backend", []string{"on", "off", ""}},
	{"backend-label", []string{nodeLabel + "=blue", ""}},
}

func applyTweak(rng *rand.Rand, svc *corev1.Service, nlb bool) string {
	pool := clbTweaks
	if nlb {
		pool = nlbTweaks
	}
	t := pool[rng.Intn(len(pool))]
	v := t.values[rng.Intn(len(t.values))]
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	if v == "" {
		delete(svc.Annotations, annotations.Key(t.key))
	} else {
		svc.Annotations[annotations.Key(t.key)] = v
	}
	return t.key + "=" + v
}

// zoneMaps is the NLB zone-maps of both seeded zones.
func (w *workload) zoneMaps() string {
	var zm []string
	for i, z := range w.e.zones {
		zm = append(zm, z+":"+w.e.vswitches[i])
	}
	return strings.Join(zm, ",")
}

func (w *workload) newService(ns, name string, nlb bool, role string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{labelRole: role}, Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    w.ports(),
		},
	}
	if nlb {
		svc.Annotations[annotations.Key("zone-maps")] = w.zoneMaps()
		svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	}
	return svc
}

// create makes a CLB or NLB Service with a few random annotations, and
// sometimes source ranges (an access control list or security group).
func (w *workload) create(ctx context.Context) error {
	seq := w.nextSeq()
	nlb := w.rng.Float64() < 0.4
	ns := nsA
	if w.rng.Intn(2) == 1 {
		ns = nsB
	}
	kind := "clb"
	if nlb {
		kind = "nlb"
	}
	svc := w.newService(ns, fmt.Sprintf("%s-%04d", kind, seq), nlb, roleGood)
	for i := w.rng.Intn(4); i > 0; i-- {
		applyTweak(w.rng, svc, nlb)
	}
	if !nlb && w.rng.Float64() < 0.2 {
		svc.Annotations[annotations.Key("address-type")] = "intranet"
	}
	if w.rng.Float64() < 0.3 {
		svc.Spec.LoadBalancerSourceRanges = []string{rangesA}
	}
	// A quarter are Local: their backends are the Nodes that run their
	// pods, which kwok runs where the pods are bound.
	var podNodes []string
	if w.rng.Float64() < 0.25 {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		podNodes = w.pickNodes(1 + w.rng.Intn(2))
	}
	if err := w.createService(ctx, svc, svcRef{ns: ns, name: svc.Name, nlb: nlb}); err != nil {
		return err
	}
	return w.createPods(ctx, ns, svc.Name, podNodes)
}

// pickNodes draws n Nodes (with repeats) for pods.
func (w *workload) pickNodes(n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for i := 0; i < n && len(w.nodes) > 0; i++ {
		out = append(out, w.nodes[w.rng.Intn(len(w.nodes))])
	}
	return out
}

// createPods creates a pod of the Service (selector app=name) on each of
// nodes; the EndpointSlice controller lists them once kwok runs them.
func (w *workload) createPods(ctx context.Context, ns, name string, nodes []string) error {
	for i, node := range nodes {
		pod := localcluster.KwokPod(ns, fmt.Sprintf("%s-%d", name, i), node, map[string]string{"app": name})
		if _, err := w.e.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("pod %s/%s: %w", ns, pod.Name, err)
		}
	}
	if len(nodes) > 0 {
		w.count("pods created")
	}
	return nil
}

// createService creates svc and books it; a create whose answer was lost
// (the API server restarting) is booked when the Service exists.
func (w *workload) createService(ctx context.Context, svc *corev1.Service, ref svcRef) error {
	start := time.Now()
	got, err := w.e.kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		var gerr error
		if got, gerr = w.e.kube.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{}); gerr != nil {
			return fmt.Errorf("create %s/%s: %w", svc.Namespace, svc.Name, err)
		}
	}
	w.mu.Lock()
	w.live[ref.key()] = ref
	w.order = append(w.order, ref.key())
	w.owners[naming.DefaultLBName(got)] = ref.key()
	if ref.attack == "" {
		w.created[got.UID] = start
	}
	w.mu.Unlock()
	w.count("created")
	return nil
}

// pick draws a live Service (attack ones included when attacks is true).
func (w *workload) pick(attacks bool) (svcRef, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keys []string
	for _, k := range w.order {
		if ref, ok := w.live[k]; ok && (attacks || ref.attack == "") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return svcRef{}, false
	}
	return w.live[keys[w.rng.Intn(len(keys))]], true
}

// update changes annotations, ports or source ranges of a live Service.
func (w *workload) update(ctx context.Context) error {
	ref, ok := w.pick(false)
	if !ok {
		return nil
	}
	r := w.rng.Float64()
	tw := w.rng.Int63()
	ports := w.ports()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		svc, err := w.e.kube.CoreV1().Services(ref.ns).Get(ctx, ref.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch {
		case r < 0.6:
			// A private draw per attempt keeps a conflict retry from
			// shifting the shared sequence.
			applyTweak(rand.New(rand.NewSource(tw)), svc, ref.nlb)
		case r < 0.7:
			keep := map[int32]int32{}
			for _, p := range svc.Spec.Ports {
				keep[p.Port] = p.NodePort
			}
			for i := range ports {
				ports[i].NodePort = keep[ports[i].Port]
			}
			svc.Spec.Ports = ports
		case r < 0.8:
			// Local ↔ Cluster: a Service without pods turning Local has no
			// backends, which must hold too.
			if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			} else {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
		default:
			switch len(svc.Spec.LoadBalancerSourceRanges) {
			case 0:
				svc.Spec.LoadBalancerSourceRanges = []string{rangesA}
			case 1:
				svc.Spec.LoadBalancerSourceRanges = []string{rangesA, rangesB}
			default:
				svc.Spec.LoadBalancerSourceRanges = nil
			}
		}
		_, err = w.e.kube.CoreV1().Services(ref.ns).Update(ctx, svc, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		w.forget(ref)
		return nil
	}
	if err != nil {
		return fmt.Errorf("update %s: %w", ref.key(), err)
	}
	w.count("updated")
	return nil
}

func (w *workload) forget(ref svcRef) {
	w.mu.Lock()
	delete(w.live, ref.key())
	w.mu.Unlock()
}

// deleteOne deletes a live Service (bad input included).
func (w *workload) deleteOne(ctx context.Context) error {
	ref, ok := w.pick(true)
	if !ok {
		return nil
	}
	return w.deleteService(ctx, ref)
}

func (w *workload) deleteService(ctx context.Context, ref svcRef) error {
	err := w.e.kube.CoreV1().Services(ref.ns).Delete(ctx, ref.name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", ref.key(), err)
	}
	w.forget(ref)
	w.count("deleted")
	if err := w.e.kube.CoreV1().Pods(ref.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: "app=" + ref.name}); err != nil {
		w.log("workload: delete the pods of %s: %v", ref.key(), err)
	}
	if ref.attack == "eni-vm" {
		_ = w.e.kube.DiscoveryV1().EndpointSlices(ref.ns).Delete(ctx, ref.name+"-hand", metav1.DeleteOptions{})
	}
	return nil
}

// attack creates bad input in the attacker's namespace aimed at the
// sentinels or at another tenant's Service.
func (w *workload) attack(ctx context.Context) error {
	seq := w.nextSeq()
	kinds := []string{"vgroup-sentinel", "vgroup-victim", "id-sentinel-clb", "id-sentinel-nlb", "eni-vm"}
	kind := kinds[w.rng.Intn(len(kinds))]
	nlb := kind == "id-sentinel-nlb"
	svc := w.newService(nsTenant, fmt.Sprintf("%s-%04d", kind, seq), nlb, roleAttack)
	svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}
	switch kind {
	case "vgroup-sentinel":
		svc.Annotations[annotations.Key("vgroup-port")] = w.s.ids.clbGroup + ":80"
	case "vgroup-victim":
		g, ok := w.victimGroup()
		if !ok {
			return nil
		}
		svc.Annotations[annotations.Key("vgroup-port")] = g + ":80"
	case "id-sentinel-clb":
		svc.Annotations[annotations.Key("id")] = w.s.ids.clb
		svc.Annotations[annotations.Key("force-override-listeners")] = "true"
		svc.Spec.Ports[0].Port = sentinelPort
	case "id-sentinel-nlb":
		svc.Annotations[annotations.Key("id")] = w.s.ids.nlb
		svc.Annotations[annotations.Key("force-override-listeners")] = "true"
		svc.Spec.Ports[0].Port = sentinelPort
	case "eni-vm":
		svc.Annotations[annotations.BackendTypeKey] = "eni"
		svc.Spec.Selector = nil
	}
	if err := w.createService(ctx, svc, svcRef{ns: nsTenant, name: svc.Name, nlb: nlb, attack: kind}); err != nil {
		return err
	}
	w.count("attack " + kind)
	if kind != "eni-vm" {
		return nil
	}
	// A hand-written slice naming a VM that is no Node, as anyone with
	// edit rights in the namespace can write.
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name + "-hand", Namespace: nsTenant, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "soak-attacker",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{w.s.vmIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	if _, err := w.e.kube.DiscoveryV1().EndpointSlices(nsTenant).Create(ctx, sl, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("hand-written EndpointSlice: %w", err)
	}
	return nil
}

// victimGroup is a vServer group of a live good CLB Service, read from
// the emulator's store (no API call: it must not consume a fault).
func (w *workload) victimGroup() (string, bool) {
	st, err := readCloud(w.e.cloud)
	if err != nil {
		return "", false
	}
	var ids []string
	for id, g := range st.SLB.VServerGroups {
		if g.LoadBalancerID != w.s.ids.clb {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", false
	}
	sort.Strings(ids)
	return ids[w.rng.Intn(len(ids))], true
}

// nodeChange joins or removes a Node, or toggles a cordon or the label
// backend-label selects.
func (w *workload) nodeChange(ctx context.Context) error {
	w.mu.Lock()
	nodes := append([]string(nil), w.nodes...)
	spare := len(w.spare)
	w.mu.Unlock()
	r := w.rng.Float64()
	switch {
	case (r < 0.3 && spare > 0) || len(nodes) <= 2 && spare > 0:
		w.mu.Lock()
		i := w.rng.Intn(len(w.spare))
		inst := w.spare[i]
		w.spare = append(w.spare[:i], w.spare[i+1:]...)
		w.mu.Unlock()
		if err := w.joinNode(ctx, inst); err != nil {
			w.mu.Lock()
			w.spare = append(w.spare, inst)
			w.mu.Unlock()
			return err
		}
		w.count("node joined")
		return nil
	case r < 0.55 && len(nodes) > 2:
		name := nodes[w.rng.Intn(len(nodes))]
		if err := w.e.kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Node %s: %w", name, err)
		}
		w.mu.Lock()
		for i, n := range w.nodes {
			if n == name {
				w.nodes = append(w.nodes[:i], w.nodes[i+1:]...)
				break
			}
		}
		w.spare = append(w.spare, w.nodeInst[name])
		delete(w.nodeInst, name)
		w.mu.Unlock()
		w.count("node left")
		return nil
	case len(nodes) > 0:
		name := nodes[w.rng.Intn(len(nodes))]
		cordon := r < 0.8
		var patch string
		w.mu.Lock()
		if cordon {
			w.cordoned[name] = !w.cordoned[name]
			patch = fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, w.cordoned[name])
		} else {
			w.labelled[name] = !w.labelled[name]
			v := "null"
			if w.labelled[name] {
				v = `"blue"`
			}
			patch = fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, nodeLabel, v)
		}
		w.mu.Unlock()
		if _, err := w.e.kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("patch Node %s: %w", name, err)
		}
		w.count("node patched")
	}
	return nil
}

// watchAddresses records, for each good Service, the time from its
// create call to its first address in status.
func (w *workload) watchAddresses(ctx context.Context) {
	for {
		if sleep(ctx, 500*time.Millisecond) != nil {
			return
		}
		list, err := w.e.kube.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: labelRole + "=" + roleGood})
		if err != nil {
			continue
		}
		now := time.Now()
		w.mu.Lock()
		for i := range list.Items {
			s := &list.Items[i]
			t0, ok := w.created[s.UID]
			if _, done := w.addr[s.UID]; ok && !done && len(s.Status.LoadBalancer.Ingress) > 0 {
				w.addr[s.UID] = now.Sub(t0)
			}
		}
		w.mu.Unlock()
	}
}
