package clb_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestDeleteLostResponses: a delete whose answer is lost after the cloud
// applied it is replayed by the cloud client, the replay is answered not
// found, and that counts as done: removing a port (its listener and group)
// and releasing the Service (its load balancer and access control list)
// succeed in one pass each, with every delete sent twice.
func TestDeleteLostResponses(t *testing.T) {
	f := newACLFixture(t)
	s := aclService("lost-deletes", "10.0.0.0/8")
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "alt", Port: 8443, NodePort: 30443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8443)})
	res, err := f.ensure(s, "")
	emulatortest.NoError(t, err)
	lbID := res.LoadBalancerID
	lose := func(actions ...string) {
		for _, a := range actions {
			_, err := f.env.Emulator.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: a, Drop: true, After: true, Count: 1})
			emulatortest.NoError(t, err)
		}
	}
	sent := func(actions ...string) {
		t.Helper()
		for _, a := range actions {
			if n := len(f.env.Emulator.Requests(gateway.RequestFilter{Product: "slb", Action: a})); n != 2 {
				t.Errorf("%s sent %d times, want 2 (the lost one and its replay)", a, n)
			}
		}
	}

	lose("DeleteLoadBalancerListener", "DeleteVServerGroup")
	s.Spec.Ports = s.Spec.Ports[:1]
	if _, err := f.ensure(s, lbID); err != nil {
		t.Fatalf("removing a port: %v", err)
	}
	sent("DeleteLoadBalancerListener", "DeleteVServerGroup")

	lose("DeleteLoadBalancer", "DeleteAccessControlList")
	settings, err := annotations.Parse(s, annotations.Defaults{Owner: annotations.OwnerCLB})
	emulatortest.NoError(t, err)
	req := &service.Request{Service: s, Settings: settings, ClusterID: aclClusterID, Identity: service.IdentityOf(s, aclClusterID), LoadBalancerID: lbID}
	b, _, err := service.ReleaseSet(context.Background(), f.p, req)
	emulatortest.NoError(t, err)
	req.Binding = b
	if _, err := deleteBound(context.Background(), f.p, req); err != nil {
		t.Fatalf("release: %v", err)
	}
	sent("DeleteLoadBalancer", "DeleteAccessControlList")
	if acls := f.ownACLs(s); len(acls) != 0 {
		t.Errorf("access control lists left: %v", acls)
	}
	if id := f.lbTagged(s); id != "" {
		t.Errorf("load balancer %s left", id)
	}
}
