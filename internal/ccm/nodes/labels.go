package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// ReasonLabelsSynced (Normal) says which labels a resync changed on a Node.
const ReasonLabelsSynced = "SyncedNodeLabels"

// wantLabels are the labels a Node of in carries: upstream's instance
// type, zone and region (GA and beta keys) and the existing CCM's charge
// type, spot strategy and node pool.
func wantLabels(in *Instance, region string) map[string]string {
	out := additionalLabels(in)
	if in.Region != "" {
		region = in.Region
	}
	for _, kv := range [][3]string{
		{v1.LabelInstanceTypeStable, v1.LabelInstanceType, in.Type},
		{v1.LabelTopologyZone, v1.LabelFailureDomainBetaZone, in.Zone},
		{v1.LabelTopologyRegion, v1.LabelFailureDomainBetaRegion, region},
	} {
		if kv[2] != "" {
			out[kv[0]], out[kv[1]] = kv[2], kv[2]
		}
	}
	return out
}

// labelChanges are the labels of want the Node lacks or has another value
// for; labels the instance no longer implies are left alone, since the
// Node's owner may have set them.
func labelChanges(n *v1.Node, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range want {
		if cur, ok := n.Labels[k]; !ok || cur != v {
			out[k] = v
		}
	}
	return out
}

// SyncLabels re-applies the instance-derived labels of every initialized
// Node. The upstream cloud-node controller sets them only at
// initialization (and never overwrites a label that is present), so a
// changed instance type, a PostPaid instance converted to PrePaid or a
// node pool tag set later would otherwise never reach the Node; the
// existing CCM resyncs them every 5 minutes. One cached instance listing
// answers every Node; a Node is patched only when a label differs.
func (s *Instances) SyncLabels(ctx context.Context, kube kubernetes.Interface, lister corelisters.NodeLister) error {
	all, err := lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list Nodes: %w", err)
	}
	var errs []error
	patched := 0
	for _, n := range all {
		if Excluded(n) || uninitialized(n) {
			continue
		}
		in, err := s.find(ctx, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
			continue
		}
		if in == nil {
			// The lifecycle controller deals with Nodes whose instance is gone.
			continue
		}
		changes := labelChanges(n, wantLabels(in, s.region))
		if len(changes) == 0 {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": changes}})
		if err != nil {
			return fmt.Errorf("encode the label patch of Node %s: %w", n.Name, err)
		}
		if _, err := kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			errs = append(errs, fmt.Errorf("patch the labels of Node %s: %w", n.Name, err))
			continue
		}
		patched++
		keys := make([]string, 0, len(changes))
		for k := range changes {
			keys = append(keys, k+"="+changes[k])
		}
		sort.Strings(keys)
		klog.InfoS("Synced Node labels from its ECS instance", "node", klog.KObj(n), "instance", in.ID, "labels", keys)
		s.event(n, v1.EventTypeNormal, ReasonLabelsSynced, "Labels from ECS instance %s: %v", in.ID, keys)
	}
	klog.V(4).InfoS("Node label resync done", "nodes", len(all), "patched", patched, "errors", len(errs))
	return errors.Join(errs...)
}

// RunLabelSync calls SyncLabels every period until ctx is done, first
// once the Node cache has synced.
func (s *Instances) RunLabelSync(ctx context.Context, kube kubernetes.Interface, lister corelisters.NodeLister, synced cache.InformerSynced, period time.Duration) {
	if !cache.WaitForNamedCacheSync("node-labels", ctx.Done(), synced) {
		return
	}
	klog.InfoS("Starting Node label resync", "period", period)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := s.SyncLabels(ctx, kube, lister); err != nil {
			klog.ErrorS(err, "Node label resync incomplete; retrying at the next period")
		}
	}, period)
}
