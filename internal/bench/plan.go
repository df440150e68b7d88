package bench

// The minimal plan is the fewest API calls that can take a Service from
// nothing to an addressed load balancer with its listeners and groups,
// derived from the APIs alone (docs/performance.md, "Minimal plan"):
//
// CLB, P TCP ports, N Nodes, B backends per call (20):
//   - 1 DescribeLoadBalancers: a controller that may restart must look for
//     an LB it created before creating one;
//   - 1 CreateLoadBalancer: its answer carries the id and the address;
//   - per port, 1 CreateVServerGroup carrying the first B backends and
//     ceil(N/B)-1 AddVServerGroupBackendServers for the rest;
//   - per port, 1 CreateLoadBalancerTCPListener (bound to its group) and 1
//     StartLoadBalancerListener (a new CLB listener is stopped).
//
// NLB, P ports, N Nodes, B servers per call (200), everything asynchronous:
//   - 1 ListLoadBalancers to look for an existing LB, 1 CreateLoadBalancer,
//     1 GetLoadBalancerAttribute once it is Active (the address);
//   - per port 1 CreateServerGroup and ceil(N/B) AddServersToServerGroup;
//   - per port 1 CreateListener (a new NLB listener runs);
//   - job waits: 1 for the group creates and 1 for the server adds (one
//     ListAsynJobs covers up to 20 jobs), and P-1 between listener creates,
//     whose jobs lock the LB one after the other.

// PlanStep is one action of a minimal plan with its count per Service.
type PlanStep struct {
	Product string `json:"product"`
	Action  string `json:"action"`
	Calls   int    `json:"calls"`
}

func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// minimalCLB is the minimal plan of a CLB Service.
func minimalCLB(ports, nodes, batch int) []PlanStep {
	groups := ceilDiv(nodes, batch)
	if groups == 0 {
		groups = 1
	}
	steps := []PlanStep{
		{"slb", "DescribeLoadBalancers", 1},
		{"slb", "CreateLoadBalancer", 1},
		{"slb", "CreateVServerGroup", ports},
	}
	if groups > 1 {
		steps = append(steps, PlanStep{"slb", "AddVServerGroupBackendServers", ports * (groups - 1)})
	}
	return append(steps,
		PlanStep{"slb", "CreateLoadBalancerTCPListener", ports},
		PlanStep{"slb", "StartLoadBalancerListener", ports})
}

// minimalNLB is the minimal plan of an NLB Service. Like the CLB plan's
// DescribeLoadBalancers, it looks for what a controller that may have
// restarted, or lost an answer, created before: the load balancer, and
// the server groups, which belong to the VPC rather than to the load
// balancer and so are not found through it (one ListServerGroups by tag).
func minimalNLB(ports, nodes, batch int) []PlanStep {
	steps := []PlanStep{
		{"nlb", "ListLoadBalancers", 1},
		{"nlb", "ListServerGroups", 1},
		{"nlb", "CreateLoadBalancer", 1},
		{"nlb", "GetLoadBalancerAttribute", 1},
		{"nlb", "CreateServerGroup", ports},
		{"nlb", "AddServersToServerGroup", ports * ceilDiv(nodes, batch)},
		{"nlb", "CreateListener", ports},
		{"nlb", "ListAsynJobs", 2 + ports - 1},
	}
	return steps
}

func planCalls(steps []PlanStep) int {
	n := 0
	for _, s := range steps {
		n += s.Calls
	}
	return n
}
