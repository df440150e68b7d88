package service_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

// nlbZoneMaps is a zone-maps value over the seeded vSwitches.
func nlbZoneMaps() string {
	zoneMaps := ccmtest.ZoneMaps(ccmtest.SeedDoc(ccmtest.SeedSpec{}))
	return strings.Join(zoneMaps, ",")
}

// nlbListenerCerts returns the default and additional server certificates
// of the NLB's one listener.
func nlbListenerCerts(t *testing.T, lbID string) (string, []string, error) {
	t.Helper()
	ls := nlb.CreateListListenersRequest()
	ls.LoadBalancerIds = &[]string{lbID}
	resp, err := nlbClient(t).ListListeners(ls)
	if err != nil || len(resp.Listeners) != 1 {
		return "", nil, err
	}
	r := nlb.CreateListListenerCertificatesRequest()
	r.ListenerId, r.CertType = resp.Listeners[0].ListenerId, "Server"
	certs, err := nlbClient(t).ListListenerCertificates(r)
	if err != nil {
		return "", nil, err
	}
	def, extra := "", []string{}
	for _, c := range certs.Certificates {
		if c.IsDefault {
			def = c.CertificateId
		} else {
			extra = append(extra, c.CertificateId)
		}
	}
	sort.Strings(extra)
	return def, extra, nil
}

// nlbWritesSince counts the NLB write calls after seq that name one of
// ids (tests run in parallel), by action.
func nlbWritesSince(seq uint64, ids ...string) map[string]int {
	out := map[string]int{}
	for _, r := range cloud.Requests(gateway.RequestFilter{Product: "nlb", AfterSeq: seq}) {
		if !isWrite(r.Action) {
			continue
		}
		for _, v := range r.Params {
			if slices.Contains(ids, v) {
				out[r.Action]++
				break
			}
		}
	}
	return out
}

// TestNLBTLSCertificates: through the controller, a TCPSSL listener gets
// the first cert-id as its default certificate and the other cert-id
// entries plus additional-cert-ids as additional ones, and the ppv2-*
// annotations as its ProxyProtocolV2Config; an annotation edit moves only
// the difference (one disassociate, one associate).
func TestNLBTLSCertificates(t *testing.T) {
	t.Parallel()
	const name = "nlb-tls"
	svc := newService(svcSpec{name: name, ports: []int32{443}, annotations: map[string]string{
		annotations.Key("zone-maps"):               nlbZoneMaps(),
		annotations.Key("protocol-port"):           "tcpssl:443",
		annotations.Key("cert-id"):                 "cert-main,cert-two",
		annotations.Key("additional-cert-ids"):     "cert-three",
		annotations.Key("proxy-protocol"):          "on",
		annotations.Key("ppv2-pvl-vpc-id-enabled"): "on",
	}})
	svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	if _, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer deleteService(t, name)
	id := lbID(waitIngress(t, name, 60*time.Second))
	want := func(def string, extra ...string) {
		t.Helper()
		poll(t, 30*time.Second, "certificates "+def+" + "+strings.Join(extra, ","), func(ctx context.Context) (bool, error) {
			d, e, err := nlbListenerCerts(t, id)
			return d == def && reflect.DeepEqual(e, extra), err
		})
	}
	want("cert-main", "cert-three", "cert-two")
	ls := nlb.CreateListListenersRequest()
	ls.LoadBalancerIds = &[]string{id}
	resp, err := nlbClient(t).ListListeners(ls)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Listeners []struct {
			ProxyProtocolEnabled  bool
			ProxyProtocolV2Config map[string]bool
		}
	}
	if err := json.Unmarshal(resp.GetHttpContentBytes(), &raw); err != nil || len(raw.Listeners) != 1 {
		t.Fatalf("ListListeners: %v %s", err, resp.GetHttpContentString())
	}
	if l := raw.Listeners[0]; !l.ProxyProtocolEnabled || !reflect.DeepEqual(l.ProxyProtocolV2Config, map[string]bool{
		"Ppv2VpcIdEnabled": true, "Ppv2PrivateLinkEpIdEnabled": false, "Ppv2PrivateLinkEpsIdEnabled": false,
	}) {
		t.Errorf("proxy protocol %v, v2 config %v", l.ProxyProtocolEnabled, l.ProxyProtocolV2Config)
	}

	seq := lastSeq()
	updateService(t, name, func(s *corev1.Service) {
		s.Annotations[annotations.Key("additional-cert-ids")] = "cert-four"
	})
	want("cert-main", "cert-four", "cert-two")
	waitIngress(t, name, 30*time.Second)
	ls = nlb.CreateListListenersRequest()
	ls.LoadBalancerIds = &[]string{id}
	if resp, err = nlbClient(t).ListListeners(ls); err != nil || len(resp.Listeners) != 1 {
		t.Fatalf("listeners: %v", err)
	}
	got := nlbWritesSince(seq, id, resp.Listeners[0].ListenerId)
	if got["AssociateAdditionalCertificatesWithListener"] != 1 || got["DisassociateAdditionalCertificatesWithListener"] != 1 || len(got) != 2 {
		t.Errorf("NLB writes for one swapped certificate: %v", got)
	}
}
