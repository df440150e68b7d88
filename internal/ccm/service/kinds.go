package service

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// Which provider serves a Service: its class, the type annotation under
// the gate, and the finalizer of the provider it is bound to.

// owner returns the provider that should serve svc now: the one of its
// class, when it wants a load balancer; nil otherwise.
func (c *Controller) owner(svc *corev1.Service) Provider {
	p, _ := c.decide(svc)
	return p
}

// decide is owner with the ownership rule that keeps a bound Service
// where it is: a Service carrying one provider's finalizer stays with that
// provider unless the Service itself asks for another kind (its
// loadBalancerClass, or the type annotation under the gate). So a default
// that changes (the LoadBalancerTypeAnnotation gate turned off) never
// moves or deletes a load balancer. ambiguous explains a Service that asks
// for what we cannot serve or whose opt-out contradicts its binding: it
// gets a Warning and no cloud write until it is fixed or deleted.
func (c *Controller) decide(svc *corev1.Service) (p Provider, ambiguous string) {
	if !annotations.WantsLoadBalancer(svc) {
		return nil, ""
	}
	d := annotations.Decide(svc, c.opts.Defaults.LoadBalancerTypeAnnotation)
	var bound Provider
	for _, bp := range c.providers {
		if hasFinalizer(svc, bp.Descriptor().Finalizer) {
			if bound != nil {
				bound = nil // two bindings: the class decides, as before
				break
			}
			bound = bp
		}
	}
	if d.Unserved != "" {
		msg := fmt.Sprintf("annotation %s=%q names a load balancer kind this controller does not serve", annotations.LoadBalancerTypeKey, d.Unserved)
		if strings.EqualFold(d.Unserved, "nlb") {
			msg += " without the LoadBalancerTypeAnnotation feature gate (cloud-config featureGates); use spec.loadBalancerClass " + annotations.NLBClass + " or turn the gate on"
		}
		if bound == nil {
			if strings.EqualFold(d.Unserved, "nlb") {
				return nil, msg
			}
			return nil, "" // another controller's Service
		}
		if strings.EqualFold(d.Unserved, bound.Descriptor().Kind) {
			// The annotation agrees with the binding (an NLB made while
			// the gate was on): keep serving it.
			return bound, ""
		}
		return nil, msg + fmt.Sprintf("; the Service keeps its %s load balancer unchanged until the annotation is fixed or the Service is deleted", bound.Descriptor().Kind)
	}
	for _, cand := range c.providers {
		if d.Owner == cand.Descriptor().Owner {
			p = cand
		}
	}
	if bound == nil || p == bound || d.Explicit {
		return p, ""
	}
	if p == nil {
		return nil, fmt.Sprintf("the Service opts out of this controller (annotation %s or %s) but is bound to a %s load balancer; it is kept unchanged until the annotation is removed or the Service is deleted",
			annotations.ClassKey, annotations.TunnelTypeKey, bound.Descriptor().Kind)
	}
	// Only a default points elsewhere: stay.
	return bound, ""
}

// stale returns the providers whose finalizer svc carries but which no
// longer serve it (class switched, type changed, Service deleted): each
// must release what it made before the finalizer goes.
func (c *Controller) stale(svc *corev1.Service, owner Provider) []Provider {
	var out []Provider
	for _, p := range c.providers {
		if p != owner && hasFinalizer(svc, p.Descriptor().Finalizer) {
			out = append(out, p)
		}
	}
	return out
}

func (c *Controller) interesting(svc *corev1.Service) bool {
	owner, ambiguous := c.decide(svc)
	return owner != nil || ambiguous != "" || len(c.stale(svc, owner)) > 0
}
