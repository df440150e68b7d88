package service_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// TestCreateThenDelete: a LoadBalancer Service gets a CLB with our name,
// tags, protections, one running listener and one vServer group per port
// holding every Node; its address lands in status; deleting the Service
// deletes the CLB and then lets the Service go.
func TestCreateThenDelete(t *testing.T) {
	name := "create-delete"
	created := createService(t, svcSpec{name: name, ports: []int32{80, 443}})
	took := poll(t, 30*time.Second, "ingress", func(ctx context.Context) (bool, error) {
		return len(getService(t, name).Status.LoadBalancer.Ingress) > 0, nil
	})
	svc := waitIngress(t, name, 10*time.Second)
	t.Logf("address %s after %v", svc.Status.LoadBalancer.Ingress[0].IP, took.Round(time.Millisecond))
	id := lbID(svc)
	lb, ok := describeLB(t, id)
	if !ok {
		t.Fatalf("load balancer %s from the label does not exist", id)
	}
	defName := naming.DefaultLBName(created)
	if lb.LoadBalancerName != defName || lb.Address != svc.Status.LoadBalancer.Ingress[0].IP {
		t.Errorf("name %q address %q, want %q and the status address %q", lb.LoadBalancerName, lb.Address, defName, svc.Status.LoadBalancer.Ingress[0].IP)
	}
	if lb.DeleteProtection != "on" || lb.ModificationProtectionStatus != "ConsoleProtection" || lb.LoadBalancerSpec != "slb.s1.small" {
		t.Errorf("protections %s/%s spec %s, want on/ConsoleProtection slb.s1.small", lb.DeleteProtection, lb.ModificationProtectionStatus, lb.LoadBalancerSpec)
	}
	tags := map[string]string{}
	for _, tg := range lb.Tags.Tag {
		tags[tg.TagKey] = tg.TagValue
	}
	if tags[naming.TagKeyDefaultName] != defName || tags[naming.TagKeyCluster] != clusterID {
		t.Errorf("tags %v", tags)
	}
	if !hasString(svc.Finalizers, naming.FinalizerCLB) {
		t.Errorf("finalizers %v lack %s", svc.Finalizers, naming.FinalizerCLB)
	}
	ls := listeners(t, id)
	if len(ls) != 2 {
		t.Fatalf("%d listeners, want 2", len(ls))
	}
	ref := naming.For(svc, clusterID)
	groups := groupMembers(t, id)
	for i, l := range ls {
		sp := svc.Spec.Ports[i]
		if l.ListenerPort != int(sp.Port) || l.ListenerProtocol != "tcp" || l.Status != "running" || l.Description != ref.CLBListener(sp.Port) {
			t.Errorf("listener %d: %d/%s %s %q", i, l.ListenerPort, l.ListenerProtocol, l.Status, l.Description)
		}
		members := groups[ref.CLBVGroup(itoa(sp.NodePort))]
		if len(members) != nodeCount {
			t.Errorf("group of port %d has %d members, want %d", sp.Port, len(members), nodeCount)
		}
		for _, n := range nodeNames {
			if members[instances[n]] != 100 {
				t.Errorf("node %s weight %d, want 100", n, members[instances[n]])
			}
		}
	}
	waitEvent(t, name, "EnsuredLoadBalancer", id)

	deleteService(t, name)
	if _, ok := describeLB(t, id); ok {
		t.Errorf("load balancer %s survived its Service", id)
	}
}

// TestAddAndRemovePort changes the ports: a listener and group appear,
// then the old ones go.
func TestAddAndRemovePort(t *testing.T) {
	name := "ports"
	createService(t, svcSpec{name: name, ports: []int32{80}})
	id := lbID(waitIngress(t, name, 30*time.Second))
	updateService(t, name, func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "p81", Port: 81, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9090)})
	})
	poll(t, 20*time.Second, "listener 81", func(ctx context.Context) (bool, error) {
		ls := listeners(t, id)
		return len(ls) == 2 && ls[1].ListenerPort == 81 && ls[1].Status == "running", nil
	})
	updateService(t, name, func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[1:] })
	poll(t, 20*time.Second, "listener 80 removed", func(ctx context.Context) (bool, error) {
		ls := listeners(t, id)
		return len(ls) == 1 && ls[0].ListenerPort == 81 && len(groupMembers(t, id)) == 1, nil
	})
	deleteService(t, name)
}

// TestLoadBalancerDeletedOutOfBand: the CLB vanishes behind the CCM's
// back; the next pass (here triggered by an unrelated label) recreates it.
func TestLoadBalancerDeletedOutOfBand(t *testing.T) {
	name := "lb-oob"
	createService(t, svcSpec{name: name, ports: []int32{80}})
	svc := waitIngress(t, name, 30*time.Second)
	old := lbID(svc)
	c := slbClient(t)
	dp := slb.CreateSetLoadBalancerDeleteProtectionRequest()
	dp.LoadBalancerId, dp.DeleteProtection = old, "off"
	if _, err := c.SetLoadBalancerDeleteProtection(dp); err != nil {
		t.Fatal(err)
	}
	del := slb.CreateDeleteLoadBalancerRequest()
	del.LoadBalancerId = old
	if _, err := c.DeleteLoadBalancer(del); err != nil {
		t.Fatal(err)
	}
	updateService(t, name, func(s *corev1.Service) { s.Labels["touch"] = "1" })
	poll(t, 30*time.Second, "recreated load balancer", func(ctx context.Context) (bool, error) {
		s := getService(t, name)
		id := lbID(s)
		if id == "" || id == old {
			return false, nil
		}
		lb, ok := describeLB(t, id)
		return ok && len(s.Status.LoadBalancer.Ingress) > 0 && s.Status.LoadBalancer.Ingress[0].IP == lb.Address && len(listeners(t, id)) == 1, nil
	})
	deleteService(t, name)
}

// TestListenerDeletedOutOfBand: a listener deleted in the console is
// found through its group's missing listener and recreated.
func TestListenerDeletedOutOfBand(t *testing.T) {
	name := "listener-oob"
	createService(t, svcSpec{name: name, ports: []int32{80, 81}})
	id := lbID(waitIngress(t, name, 30*time.Second))
	del := slb.CreateDeleteLoadBalancerListenerRequest()
	del.LoadBalancerId, del.ListenerPort, del.ListenerProtocol = id, requests.NewInteger(81), "tcp"
	if _, err := slbClient(t).DeleteLoadBalancerListener(del); err != nil {
		t.Fatal(err)
	}
	if n := len(listeners(t, id)); n != 1 {
		t.Fatalf("%d listeners after the out-of-band delete", n)
	}
	updateService(t, name, func(s *corev1.Service) { s.Labels["touch"] = "1" })
	poll(t, 20*time.Second, "listener 81 recreated", func(ctx context.Context) (bool, error) {
		ls := listeners(t, id)
		return len(ls) == 2 && ls[1].ListenerPort == 81 && ls[1].Status == "running", nil
	})
	deleteService(t, name)
}

// TestTypeChangeRemovesLoadBalancer: a Service changed to ClusterIP loses
// its CLB, status, labels and finalizer.
func TestTypeChangeRemovesLoadBalancer(t *testing.T) {
	name := "type-change"
	createService(t, svcSpec{name: name, ports: []int32{80}})
	id := lbID(waitIngress(t, name, 30*time.Second))
	updateService(t, name, func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeClusterIP
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].NodePort = 0
		}
	})
	poll(t, 20*time.Second, "cleanup", func(ctx context.Context) (bool, error) {
		s := getService(t, name)
		return !hasString(s.Finalizers, naming.FinalizerCLB) && len(s.Status.LoadBalancer.Ingress) == 0 && lbID(s) == "", nil
	})
	if _, ok := describeLB(t, id); ok {
		t.Errorf("load balancer %s survived the type change", id)
	}
	deleteService(t, name)
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
