package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// grantsNLBCertificates (run by TestUnderTagged): NLB certificates are
// certificates of the SSL Certificates Service, whose tags the CCM cannot
// read, so under tagged their grant is the cloud config's
// certificateGrants. team-a's NLB Service naming team-b's certificate by
// cert-id, then by cacert-id, then a certificate the config does not list
// by additional-cert-ids, is refused before anything is made: a Warning
// naming the certificate, the annotation, the namespace and the exact
// cloud-config entry to add; no NLB write for the Service and none naming
// team-b's certificate. With the certificate granted to team-a, the NLB
// and its TCPSSL listener are made; the Service deletes completely.
func grantsNLBCertificates(t *testing.T) {
	tenants(t)
	const name = "grant-nlb-cert"
	seq := lastSeq()
	svc := newService(svcSpec{name: name, ports: []int32{443}, annotations: map[string]string{
		annotations.Key("zone-maps"):     nlbZoneMaps(),
		annotations.Key("protocol-port"): "tcpssl:443",
		annotations.Key("cert-id"):       nlbCertOfVictim,
	}})
	svc.Spec.LoadBalancerClass = ptr.To(annotations.NLBClass)
	svc = createIn(t, attackerNS, svc)
	nothingMade := func(stage string) {
		t.Helper()
		if got := kinds(t)[1].tagged(t, svc); len(got) > 0 {
			t.Fatalf("%s: load balancers made for the refused Service: %v", stage, got)
		}
		if w := writesOn("nlb", seq, naming.DefaultLBName(svc), nlbCertOfVictim); len(w) > 0 {
			t.Fatalf("%s: NLB writes for the refused Service or naming team-b's certificate: %v", stage, actions(w))
		}
	}

	e := waitEventIn(t, attackerNS, name, service.EventCertificateNotGranted, nlbCertOfVictim)
	t.Logf("refused: %s", e.Message)
	for _, want := range []string{
		annotations.Key("cert-id"), "namespace " + attackerNS, "SSL Certificates Service",
		`certificateGrants: {"` + nlbCertOfVictim + `": "` + victimNS + "," + attackerNS + `"}`, "loadBalancerReuse: tagged",
	} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("the Warning does not say %q: %s", want, e.Message)
		}
	}
	nothingMade("cert-id")

	updateServiceIn(t, attackerNS, name, func(s *corev1.Service) {
		s.Annotations[annotations.Key("cert-id")] = nlbCertOfAttacker
		s.Annotations[annotations.Key("cacert")] = "on"
		s.Annotations[annotations.Key("cacert-id")] = nlbCertOfVictim
	})
	waitEventIn(t, attackerNS, name, service.EventCertificateNotGranted, annotations.Key("cacert-id"))
	nothingMade("cacert-id")

	const unlisted = "7999-cn-hangzhou"
	updateServiceIn(t, attackerNS, name, func(s *corev1.Service) {
		delete(s.Annotations, annotations.Key("cacert"))
		delete(s.Annotations, annotations.Key("cacert-id"))
		s.Annotations[annotations.Key("additional-cert-ids")] = unlisted
	})
	e = waitEventIn(t, attackerNS, name, service.EventCertificateNotGranted, annotations.Key("additional-cert-ids"))
	if want := `{"` + unlisted + `": "` + attackerNS + `"}`; !strings.Contains(e.Message, want) {
		t.Errorf("the Warning does not say %q: %s", want, e.Message)
	}
	nothingMade("additional-cert-ids")

	updateServiceIn(t, attackerNS, name, func(s *corev1.Service) { delete(s.Annotations, annotations.Key("additional-cert-ids")) })
	id := lbID(waitIngressIn(t, attackerNS, name, 90*time.Second))
	poll(t, 30*time.Second, "the listener serving team-a's certificate", func(ctx context.Context) (bool, error) {
		def, _, err := nlbListenerCerts(t, id)
		return def == nlbCertOfAttacker, err
	})
	if w := writesOn("nlb", seq, nlbCertOfVictim, unlisted); len(w) > 0 {
		t.Fatalf("NLB writes naming a certificate team-a was not granted: %v", actions(w))
	}
	deleteServiceIn(t, attackerNS, name, 60*time.Second)
	if nlbLBExists(t, id) {
		t.Errorf("NLB %s outlived its Service", id)
	}
}
