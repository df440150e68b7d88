package annotations

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Owner says which of our controllers (if any) handles a Service.
type Owner int

// Owners.
const (
	// OwnerNone: not ours (not type LoadBalancer, another class, or opted out).
	OwnerNone Owner = iota
	// OwnerCLB: a Classic Load Balancer Service.
	OwnerCLB
	// OwnerNLB: a Network Load Balancer Service.
	OwnerNLB
)

// String implements fmt.Stringer.
func (o Owner) String() string {
	switch o {
	case OwnerCLB:
		return "CLB"
	case OwnerNLB:
		return "NLB"
	default:
		return "None"
	}
}

// NLBClass is the spec.loadBalancerClass that selects NLB.
const NLBClass = "alibabacloud.com/nlb"

// Class decides which controller owns a Service, following the existing
// CCM's rules so both never fight over one Service. typeAnnotationGate is
// the LoadBalancerTypeAnnotation feature gate.
func Class(svc *corev1.Service, typeAnnotationGate bool) Owner {
	return Decide(svc, typeAnnotationGate).Owner
}

// Decision is Class's answer with how it was reached, so that a Service
// already bound to one kind is never moved to another (or released) by
// what is only a default.
type Decision struct {
	// Owner is the controller that should serve the Service.
	Owner Owner
	// Explicit is true when the Service itself chose Owner: through
	// spec.loadBalancerClass, or, with the gate on, through the type
	// annotation (present or absent). False when Owner is only the
	// default or an opt-out annotation (class, tunnel-type).
	Explicit bool
	// Unserved is the type annotation's value when it names a kind this
	// CCM does not serve under the current gate ("nlb" with the gate off,
	// "alb", a typo); Owner is then OwnerNone.
	Unserved string
}

// Decide is Class with the reasons (see Decision).
func Decide(svc *corev1.Service, typeAnnotationGate bool) Decision {
	if svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return Decision{Owner: OwnerNone, Explicit: true}
	}
	if svc.Spec.LoadBalancerClass != nil {
		if *svc.Spec.LoadBalancerClass == NLBClass {
			return Decision{Owner: OwnerNLB, Explicit: true}
		}
		return Decision{Owner: OwnerNone, Explicit: true}
	}
	lbType := strings.TrimSpace(svc.Annotations[LoadBalancerTypeKey])
	switch {
	case lbType == "":
	case typeAnnotationGate && strings.EqualFold(lbType, "nlb"):
		return Decision{Owner: OwnerNLB, Explicit: true}
	case strings.EqualFold(lbType, "clb"):
		// What is served without the gate too: the annotation agrees.
	default:
		return Decision{Owner: OwnerNone, Unserved: lbType}
	}
	if svc.Annotations[ClassKey] != "" {
		return Decision{Owner: OwnerNone}
	}
	if _, ok := svc.Annotations[TunnelTypeKey]; ok {
		return Decision{Owner: OwnerNone}
	}
	return Decision{Owner: OwnerCLB, Explicit: typeAnnotationGate}
}

// WantsLoadBalancer reports whether a Service should have a load balancer
// now; false means its cloud resources must be cleaned up (deleted Service
// or type changed away from LoadBalancer).
func WantsLoadBalancer(svc *corev1.Service) bool {
	return svc != nil && svc.DeletionTimestamp == nil && svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// BackendType is where traffic goes: nodes (ecs) or pod ENIs (eni).
type BackendType string

// Backend types.
const (
	// BackendECS registers nodes on their nodePort.
	BackendECS BackendType = "ecs"
	// BackendENI registers pod IPs on their targetPort.
	BackendENI BackendType = "eni"
)

// DefaultBackendType resolves the cluster-wide default backend type as the
// existing CCM does: env SERVICE_FORCE_BACKEND_ENI (true/false) first, then
// cloud-config serviceBackendType, then ecs. getenv is os.LookupEnv in
// production.
func DefaultBackendType(getenv func(string) (string, bool), configured string) BackendType {
	if getenv != nil {
		if v, ok := getenv("SERVICE_FORCE_BACKEND_ENI"); ok {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true":
				return BackendENI
			case "false":
				return BackendECS
			}
		}
	}
	if strings.EqualFold(strings.TrimSpace(configured), string(BackendENI)) {
		return BackendENI
	}
	return BackendECS
}
