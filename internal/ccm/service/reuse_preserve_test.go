package service_test

import (
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// TestReuse: the id annotation binds a user's load balancer. Without
// force-override-listeners its listeners are left alone; with it, ours are
// created and the user's on a Service port is taken over (our group and
// description), so it goes with the Service. The load balancer survives
// the Service either way.
func TestReuse(t *testing.T) {
	for _, force := range []bool{false, true} {
		name := "reuse-noforce"
		if force {
			name = "reuse-force"
		}
		t.Run(name, func(t *testing.T) {
			lb := userLB(t)
			ann := map[string]string{annotations.Key("id"): lb.LoadBalancerId}
			if force {
				ann[annotations.Key("force-override-listeners")] = "true"
			}
			createService(t, svcSpec{name: name, ports: []int32{80, 81}, annotations: ann})
			svc := waitIngress(t, name, 30*time.Second)
			if svc.Status.LoadBalancer.Ingress[0].IP != lb.Address || lbID(svc) != lb.LoadBalancerId {
				t.Errorf("status %v label %s", svc.Status.LoadBalancer.Ingress, lbID(svc))
			}
			got, _ := describeLB(t, lb.LoadBalancerId)
			reusedTag := false
			for _, tg := range got.Tags.Tag {
				reusedTag = reusedTag || tg.TagKey == naming.TagKeyReused && tg.TagValue == "true"
				if tg.TagKey == naming.TagKeyDefaultName {
					t.Errorf("a reused load balancer got our ownership tag")
				}
			}
			if !reusedTag {
				t.Errorf("tags %v lack %s", got.Tags.Tag, naming.TagKeyReused)
			}
			ls := listeners(t, lb.LoadBalancerId)
			if !force {
				if len(ls) != 1 || ls[0].Description != "user-80" || ls[0].VServerGroupId != "" {
					t.Errorf("without force the listeners changed: %+v", ls)
				}
			} else {
				if len(ls) != 2 || ls[0].Description != naming.For(svc, clusterID).CLBListener(80) || ls[0].VServerGroupId == "" || ls[1].Description != naming.For(svc, clusterID).CLBListener(81) || ls[1].Status != "running" {
					t.Errorf("with force: %+v", ls)
				}
			}
			if n := len(groupMembers(t, lb.LoadBalancerId)); n != 2 {
				t.Errorf("%d vServer groups, want 2", n)
			}
			deleteService(t, name)
			if _, ok := describeLB(t, lb.LoadBalancerId); !ok {
				t.Fatalf("reused load balancer %s was deleted", lb.LoadBalancerId)
			}
			ls = listeners(t, lb.LoadBalancerId)
			if force && len(ls) != 0 {
				t.Errorf("after delete: listeners %+v, want none (the user's on 80 was taken over)", ls)
			}
			if !force && (len(ls) != 1 || ls[0].Description != "user-80") {
				t.Errorf("after delete: listeners %+v, want only the user's", ls)
			}
		})
	}
}

// TestPreserveOnDelete: preserve-lb-on-delete keeps the load balancer and
// its listeners; protections are turned off and our tags removed.
func TestPreserveOnDelete(t *testing.T) {
	name := "preserve"
	createService(t, svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.Key("preserve-lb-on-delete"): ""}})
	id := lbID(waitIngress(t, name, 30*time.Second))
	deleteService(t, name)
	lb, ok := describeLB(t, id)
	if !ok {
		t.Fatalf("preserved load balancer %s was deleted", id)
	}
	if lb.DeleteProtection != "off" || lb.ModificationProtectionStatus != "NonProtection" {
		t.Errorf("protections %s/%s, want off/NonProtection", lb.DeleteProtection, lb.ModificationProtectionStatus)
	}
	for _, tg := range lb.Tags.Tag {
		if tg.TagKey == naming.TagKeyDefaultName || tg.TagKey == naming.TagKeyCluster {
			t.Errorf("tag %s kept", tg.TagKey)
		}
	}
	if n := len(listeners(t, id)); n != 1 {
		t.Errorf("%d listeners kept, want 1", n)
	}
}
