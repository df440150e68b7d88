package nlb_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestDeleteLostResponses: a delete whose answer is lost after the cloud
// applied it is replayed by the cloud client, the replay is answered not
// found, and that counts as done: removing a port and two source ranges
// (a listener, a server group, two security group rules in one call,
// whose replay is refused whole and so revoked one by one) and releasing the
// Service (the load balancer, its server group, its security group)
// succeed without a failed pass, each lost delete sent again.
func TestDeleteLostResponses(t *testing.T) {
	f := newFixture(t)
	s := svc("lost-deletes", nil)
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "alt", Port: 8443, NodePort: 30443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8443)})
	s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"}
	req := f.ensureNew(request(t, s, instances, nil))
	lbID := req.LoadBalancerID
	lose := func(actions map[string]string) {
		for a, product := range actions {
			_, err := f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: product, Action: a, Drop: true, After: true, Count: 1})
			emulatortest.NoError(t, err)
		}
	}
	replayed := func(actions map[string]string) {
		t.Helper()
		for a, product := range actions {
			if n := len(f.env.Emulator.Requests(gateway.RequestFilter{Product: product, Action: a})); n < 2 {
				t.Errorf("%s sent %d times, want the lost one and its replay", a, n)
			}
		}
	}

	removal := map[string]string{"DeleteListener": "nlb", "DeleteServerGroup": "nlb", "RevokeSecurityGroup": "ecs"}
	lose(removal)
	s.Spec.Ports = s.Spec.Ports[:1]
	s.Spec.LoadBalancerSourceRanges = s.Spec.LoadBalancerSourceRanges[:1]
	req = request(t, s, instances, nil)
	req.LoadBalancerID = lbID
	f.ensure(req)
	replayed(removal)
	if ls := f.listeners(lbID); len(ls) != 1 {
		t.Errorf("%d listeners, want 1", len(ls))
	}

	release := map[string]string{"DeleteLoadBalancer": "nlb", "DeleteSecurityGroup": "ecs"}
	lose(release)
	if _, err := deleteBound(f.ctx, f.p, req); err != nil {
		t.Fatalf("release: %v", err)
	}
	replayed(release)
	if f.lbExists(lbID) {
		t.Error("load balancer still exists")
	}
	if g := f.groupsOf(s); len(g) != 0 {
		t.Errorf("server groups left: %+v", g)
	}
	if g := f.ownGroups(s); len(g) != 0 {
		t.Errorf("security groups left: %+v", g)
	}
}
