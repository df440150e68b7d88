package service_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// clbView is what the create-time cases read of a CLB: its attributes and
// its listeners by port.
type clbView struct {
	lb *slb.LoadBalancer
	ls map[int]slb.ListenerInDescribeLoadBalancerListeners
}

func readCLB(t *testing.T, id string) clbView {
	t.Helper()
	lb, ok := describeLB(t, id)
	if !ok {
		t.Fatalf("load balancer %s not found", id)
	}
	v := clbView{lb: lb, ls: map[int]slb.ListenerInDescribeLoadBalancerListeners{}}
	for _, l := range listeners(t, id) {
		v.ls[l.ListenerPort] = l
	}
	return v
}

// mismatch renders "what is got, want want; " when got differs from want
// ("" when they are equal), so that the cases' checks concatenate.
func mismatch[T comparable](what string, got, want T) string {
	if got == want {
		return ""
	}
	return fmt.Sprintf("%s is %q, want %q; ", what, fmt.Sprint(got), fmt.Sprint(want))
}

// TestCreateTimeSettings: each CLB setting that is sent at creation (or
// set on a listener) reaches the cloud through the real API server, the
// CCM process and the SDK; a full sync afterwards writes nothing and warns
// about nothing (an immutable attribute that matches is no change); and a
// change of the setting, where it can change, is exactly the one call that
// makes it.
func TestCreateTimeSettings(t *testing.T) {
	t.Parallel()
	certA, certB := uploadCert(t), uploadCert(t)
	_, zones := clusterNetwork(t)
	zone := func(i int) string { z, _, _ := strings.Cut(zones[i], ":"); return z }
	tcp80 := func(v clbView) slb.TCPListenerConfig { return v.ls[80].TCPListenerConfig }
	for _, tc := range []struct {
		name  string
		ann   map[string]string
		ports []int32
		check func(v clbView) string
		// update changes annotations after the first checks; want are the
		// write actions it must take (on this load balancer), then after
		// holds.
		update map[string]string
		want   []string
		after  func(v clbView) string
	}{
		{
			name: "spec", ann: map[string]string{annotations.Key("spec"): "slb.s1.small"},
			check:  func(v clbView) string { return mismatch("spec", v.lb.LoadBalancerSpec, "slb.s1.small") },
			update: map[string]string{annotations.Key("spec"): "slb.s2.small"}, want: []string{"ModifyLoadBalancerInstanceSpec"},
			after: func(v clbView) string { return mismatch("spec", v.lb.LoadBalancerSpec, "slb.s2.small") },
		},
		{
			name: "zones", ann: map[string]string{annotations.Key("master-zoneid"): zone(1), annotations.Key("slave-zoneid"): zone(0)},
			check: func(v clbView) string {
				return mismatch("master zone", v.lb.MasterZoneId, zone(1)) + mismatch("slave zone", v.lb.SlaveZoneId, zone(0))
			},
		},
		{
			name: "resource-group", ann: map[string]string{annotations.Key("resource-group-id"): "rg-aek2createtime01"},
			check: func(v clbView) string { return mismatch("resource group", v.lb.ResourceGroupId, "rg-aek2createtime01") },
		},
		{
			name: "classic", ann: map[string]string{annotations.Key("address-type"): "intranet", annotations.Key("network-type"): "classic"},
			check: func(v clbView) string {
				return mismatch("network type", v.lb.NetworkType, "classic") + mismatch("address type", v.lb.AddressType, "intranet") +
					mismatch("vSwitch", v.lb.VSwitchId, "")
			},
		},
		{
			name: "drain", ann: map[string]string{annotations.Key("connection-drain"): "on", annotations.Key("connection-drain-timeout"): "30"},
			check: func(v clbView) string {
				return mismatch("drain", tcp80(v).ConnectionDrain, "on") + mismatch("drain timeout", tcp80(v).ConnectionDrainTimeout, 30)
			},
			update: map[string]string{annotations.Key("connection-drain-timeout"): "60"}, want: []string{"SetLoadBalancerTCPListenerAttribute"},
			after: func(v clbView) string { return mismatch("drain timeout", tcp80(v).ConnectionDrainTimeout, 60) },
		},
		{
			name: "proxy-protocol", ann: map[string]string{annotations.Key("proxy-protocol"): "on"},
			check:  func(v clbView) string { return mismatch("proxy protocol", tcp80(v).ProxyProtocolV2Enabled, "true") },
			update: map[string]string{annotations.Key("proxy-protocol"): "off"}, want: []string{"SetLoadBalancerTCPListenerAttribute"},
			after: func(v clbView) string { return mismatch("proxy protocol", tcp80(v).ProxyProtocolV2Enabled, "false") },
		},
		{
			name: "persistence", ann: map[string]string{annotations.Key("persistence-timeout"): "60"},
			check:  func(v clbView) string { return mismatch("persistence", tcp80(v).PersistenceTimeout, 60) },
			update: map[string]string{annotations.Key("persistence-timeout"): "0"}, want: []string{"SetLoadBalancerTCPListenerAttribute"},
			after: func(v clbView) string { return mismatch("persistence", tcp80(v).PersistenceTimeout, 0) },
		},
		{
			name: "cert", ports: []int32{443},
			ann: map[string]string{annotations.Key("protocol-port"): "https:443", annotations.Key("cert-id"): certA},
			check: func(v clbView) string {
				return mismatch("certificate", v.ls[443].HTTPSListenerConfig.ServerCertificateId, certA)
			},
			update: map[string]string{annotations.Key("cert-id"): certB}, want: []string{"SetLoadBalancerHTTPSListenerAttribute"},
			after: func(v clbView) string {
				return mismatch("certificate", v.ls[443].HTTPSListenerConfig.ServerCertificateId, certB)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "create-" + tc.name
			ports := tc.ports
			if ports == nil {
				ports = []int32{80}
			}
			createService(t, svcSpec{name: name, ports: ports, annotations: tc.ann})
			defer deleteService(t, name)
			id := lbID(waitIngress(t, name, 60*time.Second))
			if msg := tc.check(readCLB(t, id)); msg != "" {
				t.Fatalf("after create: %s", msg)
			}
			// A full sync of the converged Service writes nothing and
			// reports nothing.
			seq := lastSeq()
			resync(t, name, "slb", "DescribeLoadBalancerListeners", id)
			if w := writesOn("slb", seq, id); len(w) > 0 {
				t.Errorf("writes on a converged load balancer: %v", actions(w))
			}
			for _, e := range events(t, name) {
				if e.Type == corev1.EventTypeWarning {
					t.Errorf("Warning %s: %s", e.Reason, e.Message)
				}
			}
			if tc.update == nil {
				return
			}
			seq = lastSeq()
			updateService(t, name, func(s *corev1.Service) {
				for k, v := range tc.update {
					s.Annotations[k] = v
				}
			})
			poll(t, 30*time.Second, "the change applied", func(ctx context.Context) (bool, error) {
				return tc.after(readCLB(t, id)) == "", nil
			})
			s := waitIngress(t, name, 30*time.Second)
			if s.Labels[naming.LabelHash] != naming.Hash(s) {
				t.Fatalf("hash label not updated")
			}
			got := actions(writesOn("slb", seq, id))
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("writes for the change %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSharedBorrowedLoadBalancer: two Services borrow one user's CLB (id
// and force-override-listeners, distinct ports); both converge, each with
// its own listener and vServer group; deleting one removes its listener
// and group only, with no write touching the other's; deleting the second
// leaves the user's load balancer, protected and without our listeners.
// Under the suite's loadBalancerReuse: any (the migration mode: no grant
// tag); TestUnderTagged runs it again with the load balancer granted.
func TestSharedBorrowedLoadBalancer(t *testing.T) {
	t.Parallel()
	sharedBorrowedLoadBalancer(t, "shared", nil)
}

// sharedBorrowedLoadBalancer is TestSharedBorrowedLoadBalancer with
// Services named prefix-a and prefix-b on a load balancer tagged tags.
func sharedBorrowedLoadBalancer(t *testing.T, prefix string, tags map[string]string) {
	clb := kinds(t)[0]
	user := clb.userLB(t, tags)
	ann := func() map[string]string {
		return map[string]string{annotations.Key("id"): user, annotations.Key("force-override-listeners"): "true"}
	}
	a, b := prefix+"-a", prefix+"-b"
	createService(t, svcSpec{name: a, ports: []int32{80}, annotations: ann()})
	createService(t, svcSpec{name: b, ports: []int32{81}, annotations: ann()})
	defer deleteService(t, b)
	defer deleteService(t, a)
	sa, sb := waitIngress(t, a, 60*time.Second), waitIngress(t, b, 60*time.Second)
	if lbID(sa) != user || lbID(sb) != user {
		t.Fatalf("labels %q and %q, want both %s", lbID(sa), lbID(sb), user)
	}
	ra, rb := naming.For(sa, clusterID), naming.For(sb, clusterID)
	groupA, groupB := ra.CLBVGroup(fmt.Sprint(sa.Spec.Ports[0].NodePort)), rb.CLBVGroup(fmt.Sprint(sb.Spec.Ports[0].NodePort))
	poll(t, 30*time.Second, "both Services' listeners and groups", func(ctx context.Context) (bool, error) {
		v := readCLB(t, user)
		g := groupMembers(t, user)
		return v.ls[80].Description == ra.CLBListener(80) && v.ls[81].Description == rb.CLBListener(81) &&
			len(g[groupA]) == nodeCount && len(g[groupB]) == nodeCount, nil
	})
	idB := clbGroupIDs(t, user)[groupB]
	membersB := groupMembers(t, user)[groupB]

	seq := lastSeq()
	deleteService(t, a)
	v := readCLB(t, user)
	if _, ok := v.ls[80]; ok {
		t.Errorf("listener 80 of the deleted Service is still there")
	}
	if l := v.ls[81]; l.Description != rb.CLBListener(81) || l.VServerGroupId != idB || l.Status != "running" {
		t.Errorf("the other Service's listener changed: %s", clbString(l))
	}
	g := groupMembers(t, user)
	if _, ok := g[groupA]; ok {
		t.Errorf("group %s of the deleted Service is still there", groupA)
	}
	if fmt.Sprint(g[groupB]) != fmt.Sprint(membersB) {
		t.Errorf("the other Service's members %v, were %v", g[groupB], membersB)
	}
	for _, r := range writesOn("slb", seq, user, idB) {
		if r.Params["ListenerPort"] == "81" || r.Params["VServerGroupId"] == idB {
			t.Errorf("write %s touches the other Service's listener or group: %v", r.Action, r.Params)
		}
	}
	// The other Service is still served: its next full sync writes nothing.
	seq = lastSeq()
	resync(t, b, "slb", "DescribeLoadBalancerListeners", user)
	if w := writesOn("slb", seq, user); len(w) > 0 {
		t.Errorf("writes for the remaining Service: %v", actions(w))
	}

	deleteService(t, b)
	if !clb.exists(t, user) || !clb.protected(t, user) {
		t.Fatalf("user load balancer %s deleted or unprotected", user)
	}
	if ls := listeners(t, user); len(ls) != 0 {
		t.Errorf("listeners left on the user's load balancer: %d", len(ls))
	}
}
