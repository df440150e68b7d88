package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

func vpcClient(t *testing.T) *vpc.Client {
	return emulatortest.For(cloud, accessKeyID, accessKeySecret).VPC(t)
}

func ecsClient(t *testing.T) *ecs.Client {
	return emulatortest.For(cloud, accessKeyID, accessKeySecret).ECS(t)
}

var touches atomic.Int64

// touch changes a label of ours on the Service: no hash change, so the
// controller runs its hash-gated backend pass, as on a periodic resync.
func touch(t *testing.T, name string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"test-touch": fmt.Sprint(touches.Add(1))}}})
	if _, err := kube(t).CoreV1().Services(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitStatus waits until the Service's status is exactly want.
func waitStatus(t *testing.T, name string, want []corev1.LoadBalancerIngress) {
	t.Helper()
	var got []corev1.LoadBalancerIngress
	poll(t, 20*time.Second, fmt.Sprintf("status of %s = %v", name, want), func(ctx context.Context) (bool, error) {
		got = plain(getService(t, name).Status.LoadBalancer.Ingress)
		if !reflect.DeepEqual(got, want) {
			return false, fmt.Errorf("status %v", got)
		}
		return true, nil
	})
}

// plain drops the ipMode the API server defaults, which the CCM never sets.
func plain(in []corev1.LoadBalancerIngress) []corev1.LoadBalancerIngress {
	out := make([]corev1.LoadBalancerIngress, 0, len(in))
	for _, i := range in {
		i.IPMode = nil
		out = append(out, i)
	}
	return out
}

func ips(list ...string) []corev1.LoadBalancerIngress {
	out := make([]corev1.LoadBalancerIngress, 0, len(list))
	for _, ip := range list {
		out = append(out, corev1.LoadBalancerIngress{IP: ip})
	}
	return out
}

// TestEIPStatus: with external-ip-type eip the status lists the EIPs bound
// to the load balancer (VPC DescribeEipAddresses); when they cannot be
// read, or none is bound, a FailedSetEIPAddress Warning names the cause
// and the status falls back to the load balancer address. An EIP bound
// later reaches the status at the next hash-gated pass; the hostname
// annotation overrides both.
func TestEIPStatus(t *testing.T) {
	t.Parallel()
	name := "eip"
	rule, err := cloud.Gateway.AddFault(gateway.FaultRule{Product: "vpc", Action: "DescribeEipAddresses",
		Error: &gateway.FaultError{Status: http.StatusForbidden, Code: "Forbidden.RAM", Message: "User not authorized to operate on the specified resource."}})
	if err != nil {
		t.Fatal(err)
	}
	createService(t, svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.Key("external-ip-type"): "eip"}})
	svc := waitIngress(t, name, 30*time.Second)
	lb, _ := describeLB(t, lbID(svc))
	ev := waitEvent(t, name, "FailedSetEIPAddress", "Forbidden.RAM")
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, lb.Address) {
		t.Errorf("event %s %q: want a Warning naming the fallback address %s", ev.Type, ev.Message, lb.Address)
	}
	if got := plain(svc.Status.LoadBalancer.Ingress); !reflect.DeepEqual(got, ips(lb.Address)) {
		t.Errorf("status %v, want the load balancer address %s", got, lb.Address)
	}
	cloud.Gateway.RemoveFault(rule.ID)

	// Readable, but nothing bound yet: still the address, and a Warning saying why.
	touch(t, name)
	waitEvent(t, name, "FailedSetEIPAddress", "no EIP is bound")

	// Two EIPs bound to the load balancer (the emulator binds EIPs to an
	// SLB instance only through its seed), one elsewhere.
	if _, err := cloud.Seed(&api.Seed{EIPs: []api.SeedEIP{
		{IPAddress: "47.98.10.21", InstanceID: lb.LoadBalancerId, InstanceType: "SlbInstance"},
		{IPAddress: "47.98.10.20", InstanceID: lb.LoadBalancerId, InstanceType: "SlbInstance"},
		{IPAddress: "47.98.10.22"},
	}}); err != nil {
		t.Fatal(err)
	}
	req := vpc.CreateDescribeEipAddressesRequest()
	req.AssociatedInstanceType, req.AssociatedInstanceId = "SlbInstance", lb.LoadBalancerId
	resp, err := vpcClient(t).DescribeEipAddresses(req)
	if err != nil {
		t.Fatal(err)
	}
	var bound []string
	for _, e := range resp.EipAddresses.EipAddress {
		bound = append(bound, e.IpAddress)
	}
	sort.Strings(bound)
	if !reflect.DeepEqual(bound, []string{"47.98.10.20", "47.98.10.21"}) {
		t.Fatalf("EIPs bound to %s: %v", lb.LoadBalancerId, bound)
	}
	touch(t, name)
	waitStatus(t, name, ips(bound...))

	// hostname overrides the EIPs; removing it brings them back.
	updateService(t, name, func(s *corev1.Service) { s.Annotations[annotations.Key("hostname")] = "eip.example.com" })
	waitStatus(t, name, []corev1.LoadBalancerIngress{{Hostname: "eip.example.com"}})
	updateService(t, name, func(s *corev1.Service) { delete(s.Annotations, annotations.Key("hostname")) })
	waitStatus(t, name, ips(bound...))
	deleteService(t, name)
}

// TestHostnameStatus: the hostname annotation is the whole status from
// the first sync, and dropping it publishes the address.
func TestHostnameStatus(t *testing.T) {
	t.Parallel()
	name := "hostname"
	createService(t, svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{annotations.Key("hostname"): "www.example.com"}})
	svc := waitIngress(t, name, 30*time.Second)
	if got := plain(svc.Status.LoadBalancer.Ingress); !reflect.DeepEqual(got, []corev1.LoadBalancerIngress{{Hostname: "www.example.com"}}) {
		t.Errorf("status %v, want only the hostname", got)
	}
	lb, ok := describeLB(t, lbID(svc))
	if !ok {
		t.Fatalf("no load balancer %s", lbID(svc))
	}
	updateService(t, name, func(s *corev1.Service) { delete(s.Annotations, annotations.Key("hostname")) })
	waitStatus(t, name, ips(lb.Address))
	deleteService(t, name)
}
