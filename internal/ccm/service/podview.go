package service

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The pods one sync reads. An endpoint's claim about a pod is checked
// against the pod as it is now, never against what an earlier sync read:
// a pod that completed keeps listing its address in status.podIP while the
// CNI may have handed the address to another pod, and a pod being deleted
// is about to give it back. So each sync reads the pods it needs afresh,
// in at most two requests whatever the number of endpoints: one LIST of
// the Service's namespace (the pods its endpoints name; a consistent read,
// which kube-apiserver serves from its watch cache since 1.31,
// ConsistentListFromCache), and one LIST of the cluster's pods from the
// watch cache (resourceVersion 0) for the addresses of endpoints that name
// no pod, indexed by address. No pod informer: caching every pod of the
// cluster would cost memory in proportion to the cluster, for the few
// Services with eni backends.

// othersSelector keeps out of the cluster-wide listing the pods that hold
// no address of their own: host-network pods (their address is their
// Node's, which an untargeted endpoint may never name anyway) and pods
// that completed (their address is free).
const othersSelector = "spec.hostNetwork=false,status.phase!=Succeeded,status.phase!=Failed"

// podView is what one sync knows of pods, read lazily, at most once each;
// it lives only as long as the sync.
type podView struct {
	kube kubernetes.Interface
	ns   string

	localRead bool
	local     map[string]*corev1.Pod // the Service namespace's pods by name
	localErr  error

	othersRead bool
	others     map[string]*corev1.Pod // other namespaces' pods by address
	othersErr  error

	// lists counts the LISTs made, for tests.
	lists int
}

func newPodView(kube kubernetes.Interface, ns string) *podView {
	return &podView{kube: kube, ns: ns}
}

// pod returns the pod name of the Service's namespace as it is now (nil
// when there is none). The namespace is listed on first use; a failed
// listing is returned to every caller of this sync, so that the sync fails
// rather than refuse (and deregister) every pod on a transient error.
func (v *podView) pod(ctx context.Context, name string) (*corev1.Pod, error) {
	if !v.localRead {
		v.localRead = true
		v.lists++
		list, err := v.kube.CoreV1().Pods(v.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			v.localErr = fmt.Errorf("list the pods of namespace %s: %w", v.ns, err)
		} else {
			v.local = make(map[string]*corev1.Pod, len(list.Items))
			for i := range list.Items {
				v.local[list.Items[i].Name] = &list.Items[i]
			}
		}
	}
	if v.localErr != nil {
		return nil, v.localErr
	}
	return v.local[name], nil
}

// holderElsewhere returns the pod of another namespace that holds ip now
// (nil when none does), from one listing of the cluster's pods per sync.
// A failed listing fails the sync: the address is not taken on trust.
func (v *podView) holderElsewhere(ctx context.Context, ip string) (*corev1.Pod, error) {
	if !v.othersRead {
		v.othersRead = true
		v.lists++
		list, err := v.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector:   othersSelector,
			ResourceVersion: "0", // the watch cache answers; no etcd read
		})
		if err != nil {
			v.othersErr = fmt.Errorf("list the cluster's pods to find who holds the addresses of endpoints without a targetRef: %w", err)
		} else {
			// In name order, so that the pod named for an address shared by
			// several (a stale status) does not change between syncs.
			items := list.Items
			sort.Slice(items, func(i, j int) bool {
				if items[i].Namespace != items[j].Namespace {
					return items[i].Namespace < items[j].Namespace
				}
				return items[i].Name < items[j].Name
			})
			v.others = map[string]*corev1.Pod{}
			for i := range items {
				p := &items[i]
				if p.Namespace == v.ns || p.Spec.HostNetwork || terminated(p) {
					continue // the selector's rules, should a server ignore it
				}
				for _, a := range podAddresses(p) {
					if _, taken := v.others[a]; !taken {
						v.others[a] = p
					}
				}
			}
		}
	}
	if v.othersErr != nil {
		return nil, v.othersErr
	}
	return v.others[ip], nil
}

// podAddresses are the pod's addresses (status.podIPs, else status.podIP).
func podAddresses(p *corev1.Pod) []string {
	var out []string
	for _, a := range p.Status.PodIPs {
		if a.IP != "" {
			out = append(out, a.IP)
		}
	}
	if len(out) == 0 && p.Status.PodIP != "" {
		out = append(out, p.Status.PodIP)
	}
	return out
}

// terminated reports a pod that completed: its containers will not run
// again and its address is free for the CNI to hand out.
func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
