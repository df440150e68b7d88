package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

func nlbClient(t *testing.T) *nlb.Client {
	return emulatortest.For(cloud, accessKeyID, accessKeySecret).NLB(t)
}

// TestNLBServiceThroughTheController: a Service of class
// alibabacloud.com/nlb gets an NLB (not a CLB) with a listener and a server
// group of every Node per port, its DNS name in status and the NLB
// finalizer; deleting the Service deletes the NLB.
func TestNLBServiceThroughTheController(t *testing.T) {
	zoneMaps := ccmtest.ZoneMaps(ccmtest.SeedDoc(ccmtest.SeedSpec{}))
	const name = "nlb-web"
	seq := lastSeq()
	svc := newService(svcSpec{name: name, ports: []int32{80, 443}, annotations: map[string]string{
		annotations.Key("zone-maps"): strings.Join(zoneMaps, ","),
	}})
	svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	if _, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitIngress(t, name, 60*time.Second)
	id := lbID(got)
	if !strings.HasPrefix(id, "nlb-") {
		t.Fatalf("loadbalancer-id label %q is not an NLB", id)
	}
	if !hasString(got.Finalizers, naming.FinalizerNLB) || hasString(got.Finalizers, naming.FinalizerCLB) {
		t.Fatalf("finalizers %v", got.Finalizers)
	}
	attr := nlb.CreateGetLoadBalancerAttributeRequest()
	attr.LoadBalancerId = id
	lb, err := nlbClient(t).GetLoadBalancerAttribute(attr)
	if err != nil {
		t.Fatal(err)
	}
	if host := got.Status.LoadBalancer.Ingress[0].Hostname; host == "" || host != lb.DNSName {
		t.Fatalf("status hostname %q, NLB DNS name %q", host, lb.DNSName)
	}
	if !lb.DeletionProtectionConfig.Enabled {
		t.Error("NLBs we create have deletion protection on")
	}
	ls := nlb.CreateListListenersRequest()
	ls.LoadBalancerIds = &[]string{id}
	listeners, err := nlbClient(t).ListListeners(ls)
	if err != nil {
		t.Fatal(err)
	}
	if len(listeners.Listeners) != 2 {
		t.Fatalf("%d listeners, want 2", len(listeners.Listeners))
	}
	for _, l := range listeners.Listeners {
		sv := nlb.CreateListServerGroupServersRequest()
		sv.ServerGroupId = l.ServerGroupId
		servers, err := nlbClient(t).ListServerGroupServers(sv)
		if err != nil {
			t.Fatal(err)
		}
		if len(servers.Servers) != nodeCount {
			t.Errorf("listener %s: %d servers, want one per Node (%d)", l.ListenerDescription, len(servers.Servers), nodeCount)
		}
	}
	for _, w := range writesSince(seq) {
		if w.Product == "slb" {
			t.Fatalf("an NLB Service made an SLB write: %s", w.Action)
		}
	}

	deleteService(t, name)
	_, err = nlbClient(t).GetLoadBalancerAttribute(attr)
	var se *sdkerrors.ServerError
	if !errors.As(err, &se) || !strings.HasPrefix(se.ErrorCode(), "ResourceNotFound") {
		t.Fatalf("NLB still there after the Service was deleted: %v", err)
	}
}
