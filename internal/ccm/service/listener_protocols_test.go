package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// TestListenerAnnotations covers HTTP/HTTPS/UDP listeners with their
// settings, and an update of one setting.
func TestListenerAnnotations(t *testing.T) {
	cert := uploadCert(t)
	name := "listeners"
	createService(t, svcSpec{name: name, ports: []int32{80, 443, 53, 8080}, protocols: []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolTCP},
		annotations: map[string]string{
			annotations.Key("protocol-port"):       "http:80,https:443,udp:53",
			annotations.Key("cert-id"):             cert,
			annotations.Key("forward-port"):        "80:443",
			annotations.Key("sticky-session"):      "on",
			annotations.Key("sticky-session-type"): "insert",
			annotations.Key("cookie-timeout"):      "1800",
			annotations.Key("health-check-flag"):   "on",
			annotations.Key("health-check-uri"):    "/healthz",
			annotations.Key("persistence-timeout"): "60",
			annotations.Key("idle-timeout"):        "30",
			annotations.Key("xforwardedfor-proto"): "on",
			annotations.Key("scheduler"):           "wrr",
			annotations.Key("established-timeout"): "300",
			annotations.Key("bandwidth"):           "20",
			annotations.Key("charge-type"):         "paybybandwidth",
		}})
	svc := waitIngress(t, name, 30*time.Second)
	ls := listeners(t, lbID(svc))
	byPort := map[int]slb.ListenerInDescribeLoadBalancerListeners{}
	for _, l := range ls {
		byPort[l.ListenerPort] = l
	}
	if len(ls) != 4 {
		t.Fatalf("%d listeners", len(ls))
	}
	if l := byPort[80]; l.ListenerProtocol != "http" || l.HTTPListenerConfig.ListenerForward != "on" || l.HTTPListenerConfig.ForwardPort != 443 {
		t.Errorf("80: %s forward %s:%d", l.ListenerProtocol, l.HTTPListenerConfig.ListenerForward, l.HTTPListenerConfig.ForwardPort)
	}
	if l := byPort[443]; l.ListenerProtocol != "https" || l.HTTPSListenerConfig.ServerCertificateId != cert || l.HTTPSListenerConfig.StickySession != "on" ||
		l.HTTPSListenerConfig.CookieTimeout != 1800 || l.HTTPSListenerConfig.HealthCheck != "on" || l.HTTPSListenerConfig.HealthCheckURI != "/healthz" ||
		l.HTTPSListenerConfig.IdleTimeout != 30 || l.HTTPSListenerConfig.XForwardedForProto != "on" || l.VServerGroupId == "" {
		t.Errorf("443: %+v", l)
	}
	if l := byPort[53]; l.ListenerProtocol != "udp" || l.UDPListenerConfig.PersistenceTimeout != 60 || l.Scheduler != "wrr" {
		t.Errorf("53: %s persistence %d scheduler %s", l.ListenerProtocol, l.UDPListenerConfig.PersistenceTimeout, l.Scheduler)
	}
	if l := byPort[8080]; l.ListenerProtocol != "tcp" || l.TCPListenerConfig.EstablishedTimeout != 300 || l.TCPListenerConfig.PersistenceTimeout != 60 {
		t.Errorf("8080: %s established %d", l.ListenerProtocol, l.TCPListenerConfig.EstablishedTimeout)
	}
	if lb, _ := describeLB(t, lbID(svc)); lb.InternetChargeType != "paybybandwidth" || lb.Bandwidth != 20 {
		t.Errorf("charge %s bandwidth %d", lb.InternetChargeType, lb.Bandwidth)
	}
	seq := lastSeq()
	updateService(t, name, func(s *corev1.Service) {
		s.Annotations[annotations.Key("established-timeout")] = "600"
		s.Annotations[annotations.Key("bandwidth")] = "30"
	})
	poll(t, 20*time.Second, "updated timeout and bandwidth", func(ctx context.Context) (bool, error) {
		lb, _ := describeLB(t, lbID(svc))
		for _, l := range listeners(t, lbID(svc)) {
			if l.ListenerPort == 8080 {
				return l.TCPListenerConfig.EstablishedTimeout == 600 && lb.Bandwidth == 30, nil
			}
		}
		return false, nil
	})
	waitIngress(t, name, 10*time.Second)
	// Only the two changes are written.
	if w := actions(writesSince(seq)); len(w) != 2 {
		t.Errorf("writes after the update: %v, want one listener update and one internet spec change", w)
	}
	deleteService(t, name)
}
