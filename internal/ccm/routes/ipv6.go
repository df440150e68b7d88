package routes

import (
	"context"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// EventIPv6RouteSkipped (Warning, once per Node and podCIDR): the Node's
// IPv6 podCIDR gets no route because the VPC has no IPv6 CIDR.
const EventIPv6RouteSkipped = "IPv6RouteSkipped"

// ipv6Recheck is how long the VPC's IPv6 answer is trusted: IPv6 enabled
// on the VPC later is picked up within it, and a VPC without IPv6 costs
// one DescribeVpcs per period, not one per pass.
const ipv6Recheck = 5 * time.Minute

// ipv6State caches the VPC's IPv6 answer and the Nodes already told.
type ipv6State struct {
	mu        sync.Mutex
	checkedAt time.Time
	enabled   bool
	// warned are the Node/podCIDR pairs that got EventIPv6RouteSkipped.
	warned map[string]bool
}

// hasIPv6 reports whether one of the cluster CIDRs is IPv6.
func hasIPv6(cidrs []netip.Prefix) bool {
	for _, c := range cidrs {
		if c.Addr().Is6() {
			return true
		}
	}
	return false
}

// vpcHasIPv6 asks the cloud, at most once per ipv6Recheck, whether the
// cluster VPC has an IPv6 CIDR.
func (c *Controller) vpcHasIPv6(ctx context.Context) (bool, error) {
	s := &c.v6
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.checkedAt.IsZero() && time.Since(s.checkedAt) < ipv6Recheck {
		return s.enabled, nil
	}
	enabled, err := c.cloud.VPCHasIPv6(ctx, c.opts.VpcID)
	if err != nil {
		return false, err
	}
	s.checkedAt, s.enabled = time.Now(), enabled
	klog.FromContext(ctx).V(2).Info("Checked the VPC for IPv6", "vpc", c.opts.VpcID, "ipv6", enabled)
	return enabled, nil
}

// ipv6Targets drops the IPv6 targets when the VPC has no IPv6, telling
// each Node once (a Warning event and a log line) rather than failing its
// create at every pass. When the VPC cannot be asked (no VPC id, the call
// failed), the targets stay and the cloud's answer to the create decides.
func (c *Controller) ipv6Targets(ctx context.Context, ns nodeSet, byName map[string]*corev1.Node) nodeSet {
	var v6 []target
	for _, t := range ns.Targets {
		if t.CIDR.Addr().Is6() {
			v6 = append(v6, t)
		}
	}
	if len(v6) == 0 || c.opts.VpcID == "" {
		return ns
	}
	logger := klog.FromContext(ctx)
	enabled, err := c.vpcHasIPv6(ctx)
	if err != nil {
		logger.Error(err, "Cannot tell whether the VPC has IPv6; creating the IPv6 routes anyway", "routes", len(v6))
		return ns
	}
	if enabled {
		return ns
	}
	kept := ns.Targets[:0:0]
	for _, t := range ns.Targets {
		if !t.CIDR.Addr().Is6() {
			kept = append(kept, t)
		}
	}
	ns.Targets = kept
	c.v6.mu.Lock()
	defer c.v6.mu.Unlock()
	if c.v6.warned == nil {
		c.v6.warned = map[string]bool{}
	}
	seen := map[string]bool{}
	for _, t := range v6 {
		key := t.Node + "/" + t.CIDR.String()
		seen[key] = true
		if c.v6.warned[key] {
			continue
		}
		c.v6.warned[key] = true
		logger.Info("VPC has no IPv6 CIDR; the Node's IPv6 podCIDR gets no route", "node", t.Node, "podCIDR", t.CIDR, "vpc", c.opts.VpcID, "recheck", ipv6Recheck)
		c.recorder.Eventf(nodeRef(byName, t.Node), corev1.EventTypeWarning, EventIPv6RouteSkipped,
			"VPC %s has no IPv6 CIDR: no route for IPv6 podCIDR %s (checked again every %v)", c.opts.VpcID, t.CIDR, ipv6Recheck)
	}
	// Forget Nodes and podCIDRs that are gone, so a returning one is told again.
	for key := range c.v6.warned {
		if !seen[key] {
			delete(c.v6.warned, key)
		}
	}
	return ns
}
