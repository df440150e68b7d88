package soak

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sync"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// lossyActions are the writes whose responses the soak loses after the
// cloud applied them (a blind replay duplicates a create, a retried delete
// meets NotFound): every create and delete the CCM makes, with the route
// entries, security groups and access control lists among them.
var lossyActions = map[string][]string{
	"slb": {"CreateLoadBalancer", "CreateVServerGroup", "CreateLoadBalancerTCPListener", "CreateLoadBalancerUDPListener",
		"CreateAccessControlList", "AddVServerGroupBackendServers", "DeleteLoadBalancer", "DeleteVServerGroup",
		"DeleteLoadBalancerListener", "DeleteAccessControlList"},
	"nlb": {"CreateLoadBalancer", "CreateServerGroup", "CreateListener", "AddServersToServerGroup",
		"DeleteLoadBalancer", "DeleteServerGroup", "DeleteListener"},
	"vpc": {"CreateRouteEntry", "CreateRouteEntries", "DeleteRouteEntry", "DeleteRouteEntries"},
	"ecs": {"CreateSecurityGroup", "AuthorizeSecurityGroup", "DeleteSecurityGroup"},
}

// chaos injects the cloud faults and kills and restarts processes, and
// keeps the figures of what it did.
type chaos struct {
	e   *env
	rng *rand.Rand
	log func(string, ...any)

	mu        sync.Mutex
	rules     []gateway.FaultRule
	kills     int
	failovers []time.Duration
	exits     int
	apiDown   time.Duration
	// timedOut counts the calls the timeout window held.
	timedOut  int
	ruleKinds map[string]string
	// wg tracks the delayed restarts of killed replicas (they end with
	// the chaos phase), measuring the failover watchers (they outlive it).
	wg, measuring sync.WaitGroup
}

func newChaos(e *env, seed int64) *chaos {
	return &chaos{e: e, rng: rand.New(rand.NewSource(seed)), log: e.o.Logf, ruleKinds: map[string]string{}}
}

func (c *chaos) add(kind string, r gateway.FaultRule) error {
	got, err := c.e.cloud.Gateway.AddFault(r)
	if err != nil {
		return fmt.Errorf("fault %s %s/%s: %w", kind, r.Product, r.Action, err)
	}
	c.mu.Lock()
	c.rules = append(c.rules, got)
	c.ruleKinds[got.ID] = kind
	c.mu.Unlock()
	return nil
}

// startFaults adds the steady faults of the chaos phase: latency on every
// call, errors on a share of them, lost responses on creates and deletes,
// and extra errors on the route, security-group and ACL creates.
func (c *chaos) startFaults() error {
	o := c.e.o
	if err := c.add("latency", gateway.FaultRule{Latency: gateway.Duration(20 * time.Millisecond)}); err != nil {
		return err
	}
	if err := c.add("latency", gateway.FaultRule{Latency: gateway.Duration(30 * time.Millisecond), Probability: 0.5}); err != nil {
		return err
	}
	for _, product := range slices.Sorted(maps.Keys(lossyActions)) {
		for _, action := range lossyActions[product] {
			if err := c.add("lost response", gateway.FaultRule{Product: product, Action: action, Drop: true, After: true, Probability: o.LossRate}); err != nil {
				return err
			}
		}
	}
	for _, t := range [][2]string{{"vpc", "CreateRouteEntry"}, {"vpc", "CreateRouteEntries"}, {"ecs", "CreateSecurityGroup"}, {"slb", "CreateAccessControlList"}} {
		if err := c.add("error", gateway.FaultRule{Product: t[0], Action: t[1], Probability: 2 * o.ErrorRate,
			Error: &gateway.FaultError{Code: "ServiceUnavailable", Message: "soak: injected"}}); err != nil {
			return err
		}
	}
	codes := []string{"ServiceUnavailable", "InternalError", "Throttling.User"}
	for _, code := range codes {
		if err := c.add("error", gateway.FaultRule{Probability: o.ErrorRate / float64(len(codes)),
			Error: &gateway.FaultError{Code: code, Message: "soak: injected"}}); err != nil {
			return err
		}
	}
	return nil
}

// timeoutWindow makes every cloud call hang past the client's timeout for
// d: the cloud is unreachable but the connections open.
func (c *chaos) timeoutWindow(ctx context.Context, d time.Duration) error {
	c.log("chaos: every cloud call times out for %v", d)
	if err := c.add("timeout", gateway.FaultRule{Latency: gateway.Duration(10 * time.Minute)}); err != nil {
		return err
	}
	c.mu.Lock()
	id := c.rules[len(c.rules)-1].ID
	c.mu.Unlock()
	_ = sleep(ctx, d)
	// The rule's count goes with it: keep it for the report.
	for _, r := range c.e.cloud.Gateway.Faults() {
		if r.ID == id {
			c.mu.Lock()
			c.timedOut = r.Fired
			c.mu.Unlock()
		}
	}
	c.e.cloud.Gateway.RemoveFault(id)
	c.log("chaos: the cloud answers again")
	return nil
}

// stopFaults removes every fault and counts what fired, by kind.
func (c *chaos) stopFaults() map[string]int {
	fired := map[string]int{}
	for _, r := range c.e.cloud.Gateway.Faults() {
		c.mu.Lock()
		kind := c.ruleKinds[r.ID]
		c.mu.Unlock()
		fired[kind] += r.Fired
	}
	c.e.cloud.Gateway.ClearFaults()
	c.mu.Lock()
	if c.timedOut > 0 {
		fired["timeout"] = c.timedOut
	}
	c.mu.Unlock()
	return fired
}

// killLeader SIGKILLs the replica holding the Lease and measures, in the
// background, how long until another replica holds it; the killed
// replica starts again a few seconds later, as its Pod would. It reports
// false when no replica could be killed (none leads, or the Lease cannot
// be read while the API server is away). The measurement runs under
// measureCtx, which outlives the chaos phase, so a kill near its end is
// still measured.
func (c *chaos) killLeader(ctx, measureCtx context.Context) bool {
	var leader *replica
	for _, r := range c.e.replicas {
		if r.leading() {
			leader = r
		}
	}
	if leader == nil {
		c.log("chaos: no replica leads right now; killing later")
		return false
	}
	holder, err := c.e.leaseHolder(ctx)
	if err != nil || holder == "" {
		c.log("chaos: cannot read the Lease holder (%v); killing later", err)
		return false
	}
	leader.mu.Lock()
	leader.ccm.Kill()
	leader.mu.Unlock()
	killed := time.Now()
	c.mu.Lock()
	c.kills++
	c.mu.Unlock()
	c.log("chaos: SIGKILLed leader replica %s (Lease holder %s)", leader.name, holder)
	restartAfter := time.Duration(2+c.rng.Intn(6)) * time.Second
	c.wg.Add(1)
	c.measuring.Add(1)
	go func() {
		defer c.measuring.Done()
		// A failover slower than this is reported as this long.
		bound := 4*c.e.o.LeaseDuration + time.Minute
		ctx, cancel := context.WithTimeout(measureCtx, bound)
		defer cancel()
		for ctx.Err() == nil {
			if h, err := c.e.leaseHolder(ctx); err == nil && h != "" && h != holder {
				d := time.Since(killed)
				c.mu.Lock()
				c.failovers = append(c.failovers, d)
				c.mu.Unlock()
				c.log("chaos: Lease taken by %s %v after the kill", h, d.Round(100*time.Millisecond))
				return
			}
			_ = sleep(ctx, 100*time.Millisecond)
		}
		c.mu.Lock()
		c.failovers = append(c.failovers, bound)
		c.mu.Unlock()
		c.log("chaos: no other replica took the Lease within %v of the kill", bound)
	}()
	go func() {
		defer c.wg.Done()
		if sleep(ctx, restartAfter) != nil {
			return
		}
		if err := c.e.startReplica(ctx, leader); err != nil {
			c.log("chaos: restart replica %s: %v", leader.name, err)
		}
	}()
	return true
}

// supervise restarts a replica that exited on its own (leadership lost
// while the API server was away), as its Pod's restart policy would.
func (c *chaos) supervise(ctx context.Context) {
	for {
		if sleep(ctx, 2*time.Second) != nil {
			return
		}
		for _, r := range c.e.replicas {
			r.mu.Lock()
			exited := r.ccm != nil && r.ccm.Exited()
			code := -1
			if exited {
				code = r.ccm.Wait(time.Second)
			}
			r.mu.Unlock()
			// A SIGKILLed process (no exit code) is the kill's to restart.
			if !exited || code == -1 {
				continue
			}
			// A process that dies again at once waits, as a Pod in
			// CrashLoopBackOff does (kubelet's first delay is 10 s).
			if time.Since(r.startedAt()) < 10*time.Second {
				continue
			}
			c.mu.Lock()
			c.exits++
			c.mu.Unlock()
			c.log("chaos: replica %s exited with code %d; restarting it", r.name, code)
			if err := c.e.startReplica(ctx, r); err != nil {
				c.log("chaos: restart replica %s: %v", r.name, err)
			}
		}
	}
}

// restartAPIServer stops kube-apiserver for a few seconds and starts it
// again.
func (c *chaos) restartAPIServer(ctx context.Context) error {
	start := time.Now()
	if err := c.e.cluster.RestartAPIServer(ctx, 3*time.Second); err != nil {
		return err
	}
	c.mu.Lock()
	c.apiDown = time.Since(start)
	c.mu.Unlock()
	c.log("chaos: kube-apiserver back after %v", c.apiDown.Round(100*time.Millisecond))
	return nil
}
