package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

const (
	// kubeAPIQPS and kubeAPIBurst are the CCM's default --kube-api-qps and
	// --kube-api-burst, which the benchmark leaves as they are.
	kubeAPIQPS   = 20.0
	kubeAPIBurst = 30
	clbPrefix    = "clb-"
	nlbPrefix    = "nlb-"
	w4Prefix     = "w4-"
	// clbBatch and nlbBatch are the emulator's (and the cloud's) backends
	// per call: slb.backendServersPerCall, nlb.serversPerCall.
	clbBatch = 20
	nlbBatch = 200
)

func (r *runner) spec(instances int, quota bool) envSpec {
	s := envSpec{instances: instances, latency: r.o.Latency, ccmArgs: r.o.CCMArgs, ccmEnv: r.o.CCMEnv}
	if quota {
		s.quotaProfile, s.quotaScale, s.productScale = r.o.QuotaProfile, r.o.QuotaScale, r.o.ProductQuotaScale
	}
	return s
}

func (r *runner) params(extra map[string]any) map[string]any {
	p := map[string]any{"latencyMs": r.o.Latency.Milliseconds(), "quotaProfile": r.o.QuotaProfile, "quotaScale": r.o.QuotaScale, "productQuotaScale": r.o.ProductQuotaScale}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// runLB runs W1 CLB, W2, W1 NLB and W3 on one environment: the restart
// starts from the converged CLB burst, the churn from both bursts.
func (r *runner) runLB(ctx context.Context, dir string) error {
	o := r.o
	e, err := startEnv(ctx, dir, r.spec(o.Nodes+o.ChurnNodes, true), r.logf)
	if err != nil {
		return err
	}
	defer e.stop()
	r.logf("registering %d Nodes", o.Nodes)
	if err := e.registerNodes(ctx, 1, o.Nodes+1); err != nil {
		return err
	}
	took, err := e.waitNodesInitialized(ctx, o.Nodes, o.Timeout)
	if err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	r.logf("%d Nodes initialized in %.1fs", o.Nodes, took.Seconds())
	// Routes of the Nodes are programmed meanwhile; let that finish so it
	// does not count in the burst.
	e.settle(ctx, 5*time.Second, 2*time.Minute)
	if o.wants(ScenarioW1) || o.wants(ScenarioW2) || o.wants(ScenarioW3) {
		if err := r.burst(ctx, e, ScenarioW1, o.Services); err != nil {
			return err
		}
	}
	// Each later scenario starts once the previous one's calls settled.
	for _, step := range []struct {
		wanted bool
		run    func() error
	}{
		// W2 restarts on the CLB burst: 1,000 converged load balancers
		// are ten listing pages; the NLB burst's 300 would add three.
		{o.wants(ScenarioW2), func() error { return r.restart(ctx, e) }},
		{o.wants(ScenarioW1NLB), func() error { return r.burst(ctx, e, ScenarioW1NLB, o.NLBServices) }},
		{o.wants(ScenarioW3), func() error { return r.churn(ctx, e) }},
	} {
		if !step.wanted {
			continue
		}
		e.settle(ctx, 5*time.Second, 2*time.Minute)
		if err := step.run(); err != nil {
			return err
		}
	}
	return nil
}

// finishMeasure stops the CCM's usage sampler and records its usage and
// the cloud calls made since before in res; it returns the calls.
func (res *Result) finishMeasure(e *env, smp *sampler, before snapshot) []ActionCalls {
	u := smp.finish()
	res.CCM = &u
	res.Calls = e.callsSince(before)
	return res.Calls
}

// settle waits until the CCM has made no cloud call for quiet (at most
// max), so that one scenario's tail does not count in the next.
func (e *env) settle(ctx context.Context, quiet, max time.Duration) {
	deadline := time.Now().Add(max)
	last, lastChange := e.total(), time.Now()
	for time.Now().Before(deadline) && time.Since(lastChange) < quiet {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		if n := e.total(); n != last {
			last, lastChange = n, time.Now()
		}
	}
}

func (e *env) total() int {
	n := 0
	for _, c := range e.cloud.Counters() {
		n += c.Calls
	}
	return n
}

// lbService is a 2-port LoadBalancer Service (CLB, or NLB across both
// zones) with Cluster traffic policy, so every Node is a backend.
func (e *env) lbService(name string, nlb bool, ports int) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
		},
	}
	for i, p := range []int32{80, 443}[:ports] {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("p%d", p), Port: p, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080 + int32(i))})
	}
	if nlb {
		var zm []string
		for i, z := range zones {
			zm = append(zm, z+":"+e.vswitch[i])
		}
		svc.Annotations = map[string]string{annotations.Key("zone-maps"): strings.Join(zm, ",")}
		svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	}
	return svc
}

// createServices creates n Services named prefix+index in parallel,
// recording when each create returned in times (when not nil).
func (e *env) createServices(ctx context.Context, prefix string, n int, times *addressTimes, build func(name string) *corev1.Service) error {
	return parallel(ctx, n, 32, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("%s%04d", prefix, i)
		svc := build(name)
		err := createRetrying(ctx, func(ctx context.Context) error {
			_, err := e.kube.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{})
			return err
		})
		if err == nil && times != nil {
			times.create(name, time.Now())
		}
		return err
	})
}

// addressed counts the Services named with prefix that have an address.
func (e *env) addressed(ctx context.Context, prefix string) (int, error) {
	list, err := e.kube.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		s := &list.Items[i]
		if strings.HasPrefix(s.Name, prefix) && len(s.Status.LoadBalancer.Ingress) > 0 {
			n++
		}
	}
	return n, nil
}

// burst is W1: n 2-port Services created at once; time until every one
// has an address, calls per Service by action against the minimal plan,
// and the lower bound the quotas allow.
func (r *runner) burst(ctx context.Context, e *env, scenario string, n int) error {
	o := r.o
	isNLB := scenario == ScenarioW1NLB
	product, prefix, plan, title := "slb", clbPrefix, minimalCLB(2, o.Nodes, clbBatch), "burst of 2-port CLB Services"
	if isNLB {
		product, prefix, plan, title = "nlb", nlbPrefix, minimalNLB(2, o.Nodes, nlbBatch), "burst of 2-port NLB Services"
	}
	res := &Result{Scenario: scenario, Title: title, Start: time.Now(), Plan: plan,
		Params: r.params(map[string]any{"services": n, "ports": 2, "nodes": o.Nodes})}
	defer r.add(res)
	r.logf("%s: creating %d Services", scenario, n)
	before := e.snapshot()
	kubeBefore, err := e.kubeWrites(ctx)
	if err != nil {
		r.logf("%s: no Kubernetes API write counts: %v", scenario, err)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	times, err := e.watchAddresses(wctx, prefix)
	if err != nil {
		return err
	}
	smp := startSampler(e.ccm.PID(), time.Second)
	waitCPU := r.cpuProfile(ctx, e, scenario+"-cpu", 30*time.Second)
	defer waitCPU()
	t0 := time.Now()
	if err := e.createServices(ctx, prefix, n, times, func(name string) *corev1.Service { return e.lbService(name, isNLB, 2) }); err != nil {
		res.Error = err.Error()
		return err
	}
	created := time.Since(t0)
	var half time.Duration
	lastLog := time.Now()
	err = poll(ctx, o.Timeout, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		if e.ccm.Exited() {
			return false, "", fatalError{fmt.Errorf("cloud-controller-manager exited; see %s", e.ccm.LogPath)}
		}
		got, err := e.addressed(ctx, prefix)
		if err != nil {
			return false, "", err
		}
		if el := time.Since(t0).Seconds(); len(res.Timeline) == 0 || el-res.Timeline[len(res.Timeline)-1].Seconds >= 1 || got == n {
			res.Timeline = append(res.Timeline, Sample{Seconds: el, Addressed: got, Calls: e.callCounts(before)})
		}
		if half == 0 && got*2 >= n {
			half = time.Since(t0)
		}
		if time.Since(lastLog) > 15*time.Second {
			r.logf("%s: %d/%d Services addressed", scenario, got, n)
			lastLog = time.Now()
		}
		return got == n, fmt.Sprintf("%d/%d Services addressed", got, n), nil
	})
	conv := time.Since(t0)
	res.Seconds = conv.Seconds()
	r.heapProfile(ctx, e, scenario+"-heap")
	calls := res.finishMeasure(e, smp, before)
	res.PerService = n
	if err != nil {
		res.Error = err.Error()
		return err
	}
	res.metric("create all Services (client)", created.Seconds(), "s")
	res.metric("time to 50% addressed", half.Seconds(), "s")
	res.metric("time to all addressed", conv.Seconds(), "s")
	if p50, p90, mx, m := times.percentiles(); m > 0 {
		res.metric("time to address p50 (create to address, per Service)", p50, "s")
		res.metric("time to address p90", p90, "s")
		res.metric("time to address max", mx, "s")
		if m != n {
			res.note("time to address of %d of %d Services (the watch missed the others)", m, n)
		}
	}
	// The Kubernetes side has a bound of its own: the service
	// controller's patches of the Services (finalizer, labels, status) go
	// through one client held to --kube-api-qps (20 by default); its
	// events (POSTs, and PATCHes of repeated ones) through another.
	if w := e.kubeWritesSince(ctx, kubeBefore); w != nil {
		total := 0.0
		for _, v := range w {
			total += v
		}
		res.metric("Kubernetes API writes per Service (the CCM's, all clients)", total/float64(n), "")
		res.metric("  of which PATCH (Services; repeated events)", w["PATCH"]/float64(n), "")
		res.metric("  of which POST (events)", w["POST"]/float64(n), "")
		res.metric(fmt.Sprintf("Kubernetes client bound (PATCHes ÷ %g/s after a burst of %d)", kubeAPIQPS, kubeAPIBurst), max(w["PATCH"]-kubeAPIBurst, 0)/kubeAPIQPS, "s")
	}
	t := totals(calls, product)
	minimal := planCalls(plan)
	res.metric(product+" calls", float64(t.Calls), "")
	res.metric(product+" errors (throttled, busy)", float64(t.Errors), "")
	res.metric("minimal plan per Service", float64(minimal), "calls")
	// Both ways: a throttled call is refused, yet it still cost a round
	// trip and, on the real gateway, counts against the limit.
	res.target("calls per Service ÷ minimal plan", float64(t.Calls)/float64(n)/float64(minimal), "", 1.1)
	res.metric("successful calls per Service ÷ minimal plan", float64(t.Calls-t.Errors)/float64(n)/float64(minimal), "")
	if b, ok := busiest(calls, product); ok {
		res.metric("quota lower bound ("+b.Action+")", b.BoundSeconds, "s")
		res.target("time ÷ quota lower bound", conv.Seconds()/b.BoundSeconds, "", 1.2)
	} else {
		res.note("no quota profile: no lower bound")
	}
	if pb, act := r.planBound(e, plan, n); pb > 0 {
		res.metric("minimal-plan quota bound ("+act+")", pb, "s")
	}
	// The CCM's own client-side ceiling per product (--cloud-api-product-qps,
	// cloud.DefaultProductQPS by default) is a floor of its own.
	res.metric(fmt.Sprintf("client product ceiling floor (%s calls ÷ %g/s)", product, float64(cloud.DefaultProductQPS)),
		float64(t.Calls-t.Errors)/cloud.DefaultProductQPS, "s")
	if err := r.checkGroups(e, res, isNLB, n, o.Nodes); err != nil {
		return err
	}
	return nil
}

// planBound is the quota bound of n Services' minimal plans: the plan
// step whose calls take longest at its action's limit.
func (r *runner) planBound(e *env, plan []PlanStep, n int) (float64, string) {
	if e.spec.quotaProfile == "" {
		return 0, ""
	}
	p, err := gateway.LookupQuotaProfile(e.spec.quotaProfile)
	if err != nil {
		return 0, ""
	}
	best, act := 0.0, ""
	for _, s := range plan {
		ro, _ := e.cloud.Gateway.ActionReadOnly(s.Product, s.Action)
		if q := p.QPS(s.Product, s.Action, ro, e.spec.scale(s.Product)); q > 0 && float64(s.Calls*n)/q > best {
			best, act = float64(s.Calls*n)/q, s.Action
		}
	}
	return best, act
}

// checkGroups verifies in the cloud that the burst built what it should:
// n load balancers with 2 listeners' groups of every Node each.
func (r *runner) checkGroups(e *env, res *Result, isNLB bool, n, nodes int) error {
	st, err := e.state()
	if err != nil {
		return err
	}
	lbs, right, groups := 0, 0, 0
	if isNLB {
		lbs = len(st.NLB.LoadBalancers)
		for _, g := range st.NLB.ServerGroups {
			groups++
			if len(g.Servers) == nodes {
				right++
			}
		}
	} else {
		lbs = len(st.SLB.LoadBalancers)
		for _, g := range st.SLB.VServerGroups {
			groups++
			if len(g.Backends) == nodes {
				right++
			}
		}
	}
	res.metric("load balancers in the cloud", float64(lbs), "")
	res.metric("groups with every Node", float64(right), fmt.Sprintf("of %d", groups))
	if lbs != n || right != 2*n {
		res.note("the cloud does not match: %d LBs for %d Services, %d of %d groups complete", lbs, n, right, groups)
	}
	return nil
}

// restart is W2: the CCM restarted with everything converged; every call
// and write of the first RestartWindow.
func (r *runner) restart(ctx context.Context, e *env) error {
	res := &Result{Scenario: ScenarioW2, Title: "CCM restart with everything converged", Start: time.Now(),
		Params: r.params(map[string]any{"windowSeconds": r.o.RestartWindow.Seconds(), "services": r.o.Services, "nlbServices": r.o.NLBServices, "nodes": r.o.Nodes})}
	if !r.o.wants(ScenarioW1NLB) {
		res.Params["nlbServices"] = 0
	}
	defer r.add(res)
	r.logf("w2: restarting the CCM, counting calls for %s", r.o.RestartWindow)
	e.ccm.Stop()
	before := e.snapshot()
	if err := e.startCCM(ctx); err != nil {
		res.Error = err.Error()
		return err
	}
	smp := startSampler(e.ccm.PID(), time.Second)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(r.o.RestartWindow):
	}
	res.Seconds = r.o.RestartWindow.Seconds()
	calls := res.finishMeasure(e, smp, before)
	t := totals(calls)
	res.target("calls in the window (all products)", float64(t.Calls), "", 15)
	res.target("writes in the window", float64(t.Writes), "", 0)
	for _, p := range []string{"slb", "nlb", "ecs", "vpc"} {
		if pt := totals(calls, p); pt.Calls > 0 {
			res.metric(p+" calls / writes", float64(pt.Calls), fmt.Sprintf("/ %d writes", pt.Writes))
		}
	}
	if e.ccm.Exited() {
		res.Error = "the restarted CCM exited"
		return fmt.Errorf("%s", res.Error)
	}
	return nil
}

// churn is W3: add ChurnNodes Nodes, then remove them; time until every
// group is right and writes per group.
func (r *runner) churn(ctx context.Context, e *env) error {
	o := r.o
	for _, step := range []struct {
		name  string
		want  int
		apply func() error
	}{
		{"add", o.Nodes + o.ChurnNodes, func() error {
			return e.oneByOne(ctx, o.Nodes+1, o.Nodes+o.ChurnNodes+1, o.ChurnInterval, e.registerNodes)
		}},
		{"remove", o.Nodes, func() error {
			return e.oneByOne(ctx, o.Nodes+1, o.Nodes+o.ChurnNodes+1, o.ChurnInterval, e.deleteNodes)
		}},
	} {
		title := fmt.Sprintf("node churn: %s %d Nodes", step.name, o.ChurnNodes)
		if o.ChurnInterval > 0 {
			title += fmt.Sprintf(", one every %s", o.ChurnInterval)
		}
		res := &Result{Scenario: ScenarioW3 + "-" + step.name, Title: title, Start: time.Now(),
			Params: r.params(map[string]any{"nodesBefore": o.Nodes, "churn": o.ChurnNodes, "churnIntervalSeconds": o.ChurnInterval.Seconds()})}
		r.logf("w3: %s %d Nodes", step.name, o.ChurnNodes)
		before := e.snapshot()
		smp := startSampler(e.ccm.PID(), time.Second)
		t0 := time.Now()
		if err := step.apply(); err != nil {
			res.Error = err.Error()
			r.add(res)
			return err
		}
		var groups int
		err := poll(ctx, o.Timeout, 500*time.Millisecond, func(context.Context) (bool, string, error) {
			st, err := e.state()
			if err != nil {
				return false, "", err
			}
			right := 0
			groups = 0
			for _, g := range st.SLB.VServerGroups {
				groups++
				if len(g.Backends) == step.want {
					right++
				}
			}
			for _, g := range st.NLB.ServerGroups {
				groups++
				if len(g.Servers) == step.want {
					right++
				}
			}
			return right == groups, fmt.Sprintf("%d/%d groups right", right, groups), nil
		})
		took := time.Since(t0)
		res.Seconds = took.Seconds()
		e.settle(ctx, 3*time.Second, time.Minute)
		calls := res.finishMeasure(e, smp, before)
		if err != nil {
			res.Error = err.Error()
			r.add(res)
			return err
		}
		res.target("time until every group is right", took.Seconds(), "s", 60)
		clbGroups, nlbGroups := 2*o.Services, 0
		if o.wants(ScenarioW1NLB) {
			nlbGroups = 2 * o.NLBServices
		}
		// A write is a call that changed the group; throttled attempts
		// are shown apart.
		if ct := totals(calls, "slb"); clbGroups > 0 {
			ok := okWrites(calls, "slb")
			res.target("CLB writes per vServer group", float64(ok)/float64(clbGroups), "", 1)
			res.metric("CLB write attempts per group (throttled included)", float64(ct.Writes)/float64(clbGroups), "")
			res.metric("CLB minimal writes per group", float64(ceilDiv(o.ChurnNodes, clbBatch)), "")
		}
		if nt := totals(calls, "nlb"); nlbGroups > 0 {
			ok := okWrites(calls, "nlb")
			res.target("NLB writes per server group", float64(ok)/float64(nlbGroups), "", 1)
			res.metric("NLB write attempts per group (throttled included)", float64(nt.Writes)/float64(nlbGroups), "")
		}
		res.metric("groups checked", float64(groups), "")
		r.add(res)
	}
	return nil
}

// oneByOne applies fn to the Nodes of instances [from, to): all at once
// without an interval, else one at a time interval apart.
func (e *env) oneByOne(ctx context.Context, from, to int, interval time.Duration, fn func(ctx context.Context, from, to int) error) error {
	if interval <= 0 {
		return fn(ctx, from, to)
	}
	for i := from; i < to; i++ {
		if i > from {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(interval):
			}
		}
		if err := fn(ctx, i, i+1); err != nil {
			return err
		}
	}
	return nil
}

// runRoutes is the route burst: RouteNodes Nodes join at once; time until
// every route is Available, and the route calls.
func (r *runner) runRoutes(ctx context.Context, dir string) error {
	o := r.o
	spec := r.spec(o.RouteNodes, true)
	spec.auditWrites = true
	e, err := startEnv(ctx, dir, spec, r.logf)
	if err != nil {
		return err
	}
	defer e.stop()
	res := &Result{Scenario: ScenarioRoutes, Title: fmt.Sprintf("route burst: %d Nodes join at once", o.RouteNodes), Start: time.Now(),
		Params: r.params(map[string]any{"nodes": o.RouteNodes})}
	defer r.add(res)
	e.settle(ctx, 3*time.Second, 30*time.Second)
	before := e.snapshot()
	smp := startSampler(e.ccm.PID(), time.Second)
	t0 := time.Now()
	r.logf("routes: registering %d Nodes at once", o.RouteNodes)
	if err := parallel(ctx, o.RouteNodes, 64, func(ctx context.Context, k int) error {
		return e.registerNodes(ctx, k+1, k+2)
	}); err != nil {
		res.Error = err.Error()
		return err
	}
	registered := time.Since(t0)
	initialized, err := e.waitNodesInitialized(ctx, o.RouteNodes, o.Timeout)
	if err != nil {
		res.Error = err.Error()
		return err
	}
	initialized += registered
	r.logf("routes: %d Nodes initialized after %.1fs", o.RouteNodes, initialized.Seconds())
	lastLog := time.Now()
	err = poll(ctx, o.Timeout, 500*time.Millisecond, func(context.Context) (bool, string, error) {
		st, err := e.state()
		if err != nil {
			return false, "", err
		}
		now, avail := time.Now(), 0
		for _, re := range st.VPC.RouteEntries {
			if strings.HasPrefix(re.Description, "k8s/"+clusterID+"/") && !re.ReadyAt.After(now) {
				avail++
			}
		}
		if time.Since(lastLog) > 15*time.Second {
			r.logf("routes: %d/%d Available", avail, o.RouteNodes)
			lastLog = time.Now()
		}
		return avail == o.RouteNodes, fmt.Sprintf("%d/%d routes Available", avail, o.RouteNodes), nil
	})
	took := time.Since(t0)
	res.Seconds = took.Seconds()
	calls := res.finishMeasure(e, smp, before)
	if err != nil {
		res.Error = err.Error()
		return err
	}
	res.metric("register all Nodes (client)", registered.Seconds(), "s")
	res.metric("time until every route is Available", took.Seconds(), "s")
	nodeInitWrites(res, e, t0, initialized, o.RouteNodes)
	var creates, single int
	for _, c := range calls {
		switch c.Action {
		case "CreateRouteEntries":
			creates = c.Calls
		case "CreateRouteEntry":
			single = c.Calls
		}
	}
	res.metric("CreateRouteEntries calls", float64(creates), "")
	res.metric("CreateRouteEntry calls", float64(single), "")
	res.metric("minimal CreateRouteEntries (50 per call)", float64(ceilDiv(o.RouteNodes, 50)), "")
	if b, ok := busiest(calls, "vpc"); ok {
		res.metric("vpc quota lower bound ("+b.Action+")", b.BoundSeconds, "s")
	}
	return nil
}

// nodeInitWrites reports what initializing n Nodes took and cost the
// CCM's Kubernetes clients, from the API server's audit of the writes to
// Nodes and Events made until initialized after t0 (and 10 s more, for
// the events sent behind), and the time those writes need at the
// default --kube-api-qps of each client that made them.
func nodeInitWrites(res *Result, e *env, t0 time.Time, initialized time.Duration, n int) {
	res.metric("every Node initialized (providerID set, taint removed)", initialized.Seconds(), "s")
	writes, err := e.cluster.AuditedWrites(t0, t0.Add(initialized+10*time.Second))
	if err != nil {
		res.note("Node initialization writes not counted: %v", err)
		return
	}
	byClient := map[string]int{}
	for _, w := range writes {
		if w.Program != "cloud-controller-manager" {
			continue
		}
		res.metric(fmt.Sprintf("writes per Node: %s %s %s", w.Client, w.Verb, w.Resource), float64(w.Count)/float64(n), "")
		byClient[w.Client] += w.Count
	}
	for c, k := range byClient {
		res.metric(fmt.Sprintf("%s: all its writes at %g/s after a burst of %d (one limiter; the CCM gives some recorders a client of their own)", c, kubeAPIQPS, kubeAPIBurst),
			max(float64(k-kubeAPIBurst), 0)/kubeAPIQPS, "s")
	}
}

// runW4 is W4: CCM peak RSS and CPU with W4Services Services on W4Nodes
// Nodes and W4Endpoints ready endpoints in their EndpointSlices. The CCM
// watches Services, Nodes and EndpointSlices, never pods, so by default
// the Services have no selector and W4 writes their slices itself (as a
// mesh or an external controller would); with W4Pods the Services select
// kwok pods and the EndpointSlice controller writes the slices. Quotas are
// off (memory, not throughput, is measured); the latency stays.
func (r *runner) runW4(ctx context.Context, dir string) error {
	o := r.o
	podMode := o.W4Pods > 0
	e, err := startEnv(ctx, dir, r.spec(o.W4Nodes, false), r.logf)
	if err != nil {
		return err
	}
	defer e.stop()
	params := map[string]any{"services": o.W4Services, "nodes": o.W4Nodes, "windowSeconds": o.W4Window.Seconds(), "quotaProfile": "none", "ccmEnv": o.CCMEnv, "ccmArgs": o.CCMArgs}
	if podMode {
		params["pods"] = o.W4Pods
	} else {
		params["endpoints"], params["sliceUpdatesPerSecond"] = o.W4Endpoints, max(0, o.W4SliceUpdates)
	}
	res := &Result{Scenario: ScenarioW4, Title: "CCM memory and CPU at size", Start: time.Now(), Params: r.params(params)}
	defer r.add(res)
	fail := func(err error) error {
		res.Error = err.Error()
		return err
	}
	smp := startSampler(e.ccm.PID(), time.Second)
	rmem := e.startRuntimeMem(ctx, 5*time.Second)
	t0 := time.Now()
	r.logf("w4: registering %d Nodes", o.W4Nodes)
	if err := e.registerNodes(ctx, 1, o.W4Nodes+1); err != nil {
		return fail(err)
	}
	if _, err := e.waitNodesInitialized(ctx, o.W4Nodes, o.Timeout); err != nil {
		return fail(err)
	}
	r.logf("w4: %d Nodes initialized after %.0fs; creating %d Services", o.W4Nodes, time.Since(t0).Seconds(), o.W4Services)
	if err := e.createServices(ctx, w4Prefix, o.W4Services, nil, func(name string) *corev1.Service {
		svc := e.lbService(name, false, 1)
		if !podMode {
			svc.Spec.Selector = nil
		}
		return svc
	}); err != nil {
		return fail(err)
	}
	if podMode {
		err = e.createW4Pods(ctx, o.W4Pods, o.W4Services, o.W4Nodes, r.logf)
	} else {
		r.logf("w4: writing the EndpointSlices of %d Services (%d endpoints)", o.W4Services, o.W4Endpoints)
		err = parallel(ctx, o.W4Services, 32, func(ctx context.Context, i int) error {
			slice := w4Slice(i, o.W4Services, o.W4Endpoints, o.W4Nodes)
			return createRetrying(ctx, func(ctx context.Context) error {
				_, err := e.kube.DiscoveryV1().EndpointSlices(namespace).Create(ctx, slice, metav1.CreateOptions{})
				return err
			})
		})
	}
	if err != nil {
		return fail(err)
	}
	created := time.Since(t0)
	r.logf("w4: every object created after %.0fs; sampling for %s", created.Seconds(), o.W4Window)
	wctx, cancel := context.WithTimeout(ctx, o.W4Window)
	updates := 0
	if !podMode && o.W4SliceUpdates > 0 {
		updates = e.churnSlices(wctx, o.W4Services, o.W4SliceUpdates)
	}
	<-wctx.Done()
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.heapProfile(ctx, e, ScenarioW4+"-heap")
	u := smp.finish()
	res.CCM = &u
	gmax, gpeak := rmem.finish()
	res.Seconds = time.Since(t0).Seconds()
	got, err := e.addressed(ctx, w4Prefix)
	if err != nil {
		return err
	}
	slices, err := e.kube.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	endpoints := 0
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				endpoints++
			}
		}
	}
	res.target("CCM peak RSS", u.PeakRSSMB, "MB", w4RSSTarget(o.W4Services))
	res.metric("CCM peak anonymous RSS (heap, stacks)", u.PeakAnonMB, "MB")
	res.metric("CCM file-backed RSS (binary pages)", u.EndFileMB, "MB")
	res.metric("CCM CPU average", u.AvgCores, "cores")
	res.metric("CCM CPU peak (1 s)", u.PeakCores, "cores")
	res.metric("CCM CPU time", u.CPUSeconds, "s")
	w4RuntimeMetrics(res, gmax, gpeak)
	res.metric("objects created after", created.Seconds(), "s")
	res.metric("EndpointSlices / ready endpoints", float64(len(slices.Items)), fmt.Sprintf("/ %d ready endpoints", endpoints))
	if !podMode {
		res.metric("EndpointSlice updates in the window", float64(updates), "")
	}
	res.metric("Services addressed at the end", float64(got), fmt.Sprintf("of %d", o.W4Services))
	res.Calls = e.callsSince(snapshot{})
	return nil
}

// createW4Pods creates n kwok pods once kube-controller-manager has made
// the namespace's default ServiceAccount (pods are admitted only then).
func (e *env) createW4Pods(ctx context.Context, n, services, nodes int, logf func(string, ...any)) error {
	if err := poll(ctx, time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		_, err := e.kube.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, "waiting for ServiceAccount default", nil
	}); err != nil {
		return err
	}
	logf("w4: creating %d pods", n)
	return parallel(ctx, n, 32, func(ctx context.Context, i int) error {
		_, err := e.kube.CoreV1().Pods(namespace).Create(ctx, w4Pod(i, services, nodes), metav1.CreateOptions{})
		return err
	})
}

// w4Pod is pod i, bound to a Node round robin (kwok runs it) and selected
// by Service i mod services.
func w4Pod(i, services, nodes int) *corev1.Pod {
	return localcluster.KwokPod(namespace, fmt.Sprintf("w4-pod-%05d", i), nodeName(1+i%nodes),
		map[string]string{"app": fmt.Sprintf("%s%04d", w4Prefix, i%services)})
}

// w4SliceManager is the managed-by label of the slices W4 writes: not the
// EndpointSlice controller's, so that it leaves them alone.
const w4SliceManager = "bench.alicloud-ccm.io"

// w4Slice is the EndpointSlice of Service i: its share of endpoints ready
// endpoints, each as the EndpointSlice controller would write one for a
// pod (address, conditions, nodeName, zone, targetRef), on the Nodes
// round robin.
func w4Slice(i, services, endpoints, nodes int) *discoveryv1.EndpointSlice {
	per := ceilDiv(endpoints, services)
	svc := fmt.Sprintf("%s%04d", w4Prefix, i)
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc + "-eps", Namespace: namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: w4SliceManager,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p80"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for j := 0; j < per && i*per+j < endpoints; j++ {
		k := i*per + j
		node := 1 + k%nodes
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			// Pod addresses from the cluster CIDR, one per endpoint.
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 128+(k>>16)&15, (k>>8)&255, k&255)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(nodeName(node)),
			Zone:       ptr.To(zones[node%len(zones)]),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: fmt.Sprintf("%s-%d", svc, j),
				UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", k))},
		})
	}
	return sl
}

// churnSlices updates rate EndpointSlices per second, round robin, until
// ctx is done (flipping one endpoint's serving condition, as a rollout's
// readiness changes would), and returns how many updates it made.
func (e *env) churnSlices(ctx context.Context, services, rate int) int {
	n := 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for k := 0; k < rate && ctx.Err() == nil; k++ {
			name := fmt.Sprintf("%s%04d-eps", w4Prefix, n%services)
			sl, err := e.kube.DiscoveryV1().EndpointSlices(namespace).Get(ctx, name, metav1.GetOptions{})
			if err == nil && len(sl.Endpoints) > 0 {
				c := &sl.Endpoints[0].Conditions
				c.Serving = ptr.To(!ptr.Deref(c.Serving, true))
				_, err = e.kube.DiscoveryV1().EndpointSlices(namespace).Update(ctx, sl, metav1.UpdateOptions{})
			}
			if err == nil {
				n++
			}
		}
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
		}
	}
}

// w4RSSTarget is W4's peak RSS target in MB: 110 up to 5,000 Services, 150
// at up to 10,000 (the two sizes), 150 beyond as a bound the bench
// still prints.
func w4RSSTarget(services int) float64 {
	if services <= 5000 {
		return 110
	}
	return 150
}
