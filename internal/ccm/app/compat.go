package app

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/cloud-provider/names"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
)

// The existing CCM's (cloud-provider-alibaba-cloud cmd/manager) flags that
// upstream's command does not have: its Deployments start this binary
// unchanged. Each is taken with the same meaning, or accepted and ignored
// with one log line saying why (docs/migration.md lists them).
const (
	// NetworkFlag picks the VPC-internal or public product endpoints.
	NetworkFlag = "network"
	// HealthProbeBindAddrFlag serves /healthz, /readyz and /livez over
	// plain HTTP, as the existing CCM's liveness probes expect.
	HealthProbeBindAddrFlag = "health-probe-bind-addr"
	// MetricsBindAddrFlag is the existing CCM's name of --metrics-bind-address.
	MetricsBindAddrFlag = "metrics-bind-addr"
	// DryRunFlag is the existing CCM's dry run; only false is accepted.
	DryRunFlag = "dry-run"
	// useVPCEndpointsFlag is ours, older than --network.
	useVPCEndpointsFlag = "use-vpc-endpoints"
)

// ignoredFlag is an existing CCM flag with no counterpart here.
type ignoredFlag struct {
	name, def, usage string
	// why is logged once when the flag is given.
	why string
}

// ignoredFlags are accepted so that the existing CCM's command lines parse;
// their defaults are the existing CCM's.
var ignoredFlags = []ignoredFlag{
	{"sg-batch-size", "40", "The existing CCM's backend batch size per server group call.",
		"backends are added and removed in batches of each API's own limit"},
	{"max-concurrent-actions", "10", "The existing CCM's listener and server group update concurrency.",
		"a Service's listener and group writes run in dependency order, paced per API action by --cloud-api-qps and --cloud-api-product-qps"},
	{"max-throttling-retry-times", "10", "The existing CCM's retries of throttled calls in a row.",
		"throttled calls are retried until the reconcile's deadline, the action paced down to the quota the cloud advertises"},
	{"node-reconcile-batch-size", "100", "The existing CCM's node status batch size.",
		"node lookups come from one cached listing of the VPC's instances (--instance-cache-ttl), not batches"},
	{"route-reconcile-batch-size", "50", "The existing CCM's route status batch size.",
		"the route controller batches route writes per table itself"},
	{"node-event-aggregation-wait-seconds", "1", "The existing CCM's wait to aggregate Node events.",
		"the route controller coalesces Node events in its work queue"},
	{"pprof-bind-addr", ":6060", "The existing CCM's plain-HTTP pprof address.",
		"profiling is served on the secure port with authentication (--profiling), never over plain HTTP"},
}

// compat holds the existing CCM's flags.
type compat struct {
	network     string
	healthAddr  string
	dryRun      bool
	ignored     map[string]*string
	controllers *legacyControllers
}

func addCompatFlags(fs *pflag.FlagSet, metricsAddr *string) *compat {
	c := &compat{network: provider.NetworkVPC, ignored: map[string]*string{}}
	fs.StringVar(&c.network, NetworkFlag, c.network,
		"vpc: call the products' VPC-internal endpoints (<product>-vpc.<region>.aliyuncs.com), reachable without Internet egress; public: the public regional endpoints. The existing CCM's flag and default. ECS_ENDPOINT etc. and cloud-config endpoints still win.")
	fs.StringVar(&c.healthAddr, HealthProbeBindAddrFlag, c.healthAddr,
		"host:port to answer /healthz, /readyz and /livez over plain HTTP, with the secure port's checks (the existing CCM's liveness probe). Unset: the secure port itself (10258, the existing CCM's default probe port) answers plain HTTP too; another port: a listener of its own; empty or 0: off.")
	fs.StringVar(metricsAddr, MetricsBindAddrFlag, *metricsAddr, "The existing CCM's name of --"+MetricsBindAddressFlag+" (its default was :8080; here off unless given).")
	fs.BoolVar(&c.dryRun, DryRunFlag, false, "The existing CCM's dry run: only false is accepted, the CCM itself has no dry-run mode (it would write); the plan subcommand lists what it would write.")
	for _, f := range ignoredFlags {
		v := f.def
		c.ignored[f.name] = &v
		fs.StringVar(&v, f.name, f.def, f.usage+" Accepted and ignored: "+f.why+".")
	}
	return c
}

// resolveNetwork returns provider.Options.Network from --network and our
// older --use-vpc-endpoints, refusing a contradiction.
func (c *compat) resolveNetwork(fs *pflag.FlagSet, useVPCEndpoints bool) (string, error) {
	switch c.network {
	case provider.NetworkVPC, provider.NetworkPublic:
	default:
		return "", fmt.Errorf("--%s=%q: want vpc or public", NetworkFlag, c.network)
	}
	if !fs.Changed(useVPCEndpointsFlag) {
		return c.network, nil
	}
	fromOld := provider.NetworkPublic
	if useVPCEndpoints {
		fromOld = provider.NetworkVPC
	}
	if fs.Changed(NetworkFlag) && fromOld != c.network {
		return "", fmt.Errorf("--%s=%s and --%s=%t contradict each other: keep --%s", NetworkFlag, c.network, useVPCEndpointsFlag, useVPCEndpoints, NetworkFlag)
	}
	return fromOld, nil
}

// check refuses what this CCM cannot do as asked and logs, once each, the
// flags it ignores.
func (c *compat) check(fs *pflag.FlagSet) error {
	if c.dryRun {
		// Ignoring it would write to the cloud when asked not to.
		return fmt.Errorf("--%s=true: this CCM has no dry-run mode and would write to the cloud; remove the flag, and run `cloud-controller-manager plan` to see what it would write", DryRunFlag)
	}
	for _, f := range ignoredFlags {
		if fs.Changed(f.name) {
			klog.InfoS("Ignoring the existing CCM's flag", "flag", "--"+f.name, "value", *c.ignored[f.name], "reason", f.why)
		}
	}
	if c.controllers != nil {
		for _, n := range c.controllers.dropped {
			klog.InfoS("Ignoring the existing CCM's controller", "flag", "--controllers", "controller", n, "reason", droppedControllers[n])
		}
	}
	return nil
}

// droppedControllers are the existing CCM's controllers this CCM does not
// have, and why.
var droppedControllers = map[string]string{
	"ingress": "no ALB Ingress controller here; run the existing CCM's, or the ALB Ingress controller, for Ingresses",
	"pvtz":    "no PrivateZone controller here",
}

// legacyControllers wraps upstream's --controllers so that it also takes
// the existing CCM's controller names: node (initialization and deletion
// of Nodes: cloud-node-controller and cloud-node-lifecycle-controller),
// route, service (CLB) and nlb (NLB) — both our service-lb-controller —,
// ingress and pvtz (ignored). Upstream names and aliases pass unchanged.
type legacyControllers struct {
	inner pflag.Value
	// legacy is set when a name only the existing CCM has is given: then
	// service means CLB only and nlb NLB only, as there.
	legacy   bool
	clb, nlb bool
	dropped  []string
}

func wrapControllers(fs *pflag.FlagSet) (*legacyControllers, error) {
	f := fs.Lookup("controllers")
	if f == nil {
		return nil, errors.New("upstream's --controllers flag is missing")
	}
	l := &legacyControllers{inner: f.Value}
	f.Value = l
	f.Usage += " The existing CCM's names are accepted too: node (= cloud-node-controller and cloud-node-lifecycle-controller), route, service (CLB Services) and nlb (NLB Services); ingress and pvtz are ignored with a log line."
	return l, nil
}

// String implements pflag.Value.
func (l *legacyControllers) String() string { return l.inner.String() }

// Type implements pflag.Value.
func (l *legacyControllers) Type() string { return l.inner.Type() }

// Set implements pflag.Value: it translates the existing CCM's names and
// hands the rest to upstream's value, which validates them.
func (l *legacyControllers) Set(v string) error {
	var out []string
	add := func(names ...string) {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	for _, n := range strings.Split(v, ",") {
		switch n = strings.TrimSpace(n); n {
		case "node":
			l.legacy = true
			add(names.CloudNodeController, names.CloudNodeLifecycleController)
		case "service":
			l.clb = true
			add(names.ServiceLBController)
		case "nlb":
			l.legacy, l.nlb = true, true
			add(names.ServiceLBController)
		case "ingress", "pvtz":
			l.legacy = true
			if !slices.Contains(l.dropped, n) {
				l.dropped = append(l.dropped, n)
			}
		default:
			add(n)
		}
	}
	if len(out) == 0 {
		// Only ignored controllers: run none, as the existing CCM would
		// run none of ours. Disabling one without enabling any does that.
		out = []string{"-" + names.CloudNodeController}
	}
	return l.inner.Set(strings.Join(out, ","))
}

// disabledKinds says which load balancer kinds the service controller
// leaves alone: with the existing CCM's names, those not named.
func (l *legacyControllers) disabledKinds() (clb, nlb bool) {
	if l == nil || !l.legacy {
		return false, false
	}
	return !l.clb, !l.nlb
}
