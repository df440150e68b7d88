package nlb_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func (f *fixture) getListener(t *testing.T, id string) *nlb.GetListenerAttributeResponse {
	t.Helper()
	r := nlb.CreateGetListenerAttributeRequest()
	r.ListenerId = id
	resp, err := f.c.GetListenerAttribute(r)
	noErr(t, err)
	return resp
}

func TestListenerLifecycle(t *testing.T) {
	f := newFixture(t)
	lb := f.createLB(t, lbRequest("lsn"))
	sg := f.createSG(t, "tcp", "vpc-a", "Instance", "TCP", false)
	setDelays(t, f.env, 0, 300*time.Millisecond)

	c := nlb.CreateCreateListenerRequest()
	c.LoadBalancerId, c.ServerGroupId, c.ListenerProtocol = lb, sg, "TCP"
	c.ListenerPort = requests.NewInteger(80)
	c.ListenerDescription = "k8s.80.TCP.web.default.c1"
	c.IdleTimeout = requests.NewInteger(60)
	c.ProxyProtocolEnabled = requests.NewBoolean(true)
	c.Tag = &[]nlb.CreateListenerTag{{Key: "owner", Value: "ccm"}}
	resp, err := f.c.CreateListener(c)
	noErr(t, err)
	id := resp.ListenerId
	if !strings.HasPrefix(id, "lsn-") || resp.JobId == "" {
		t.Fatalf("create: %+v", resp)
	}
	got := f.getListener(t, id)
	if got.ListenerStatus != "Provisioning" {
		t.Fatalf("status after create = %s, want Provisioning", got.ListenerStatus)
	}
	if got.LoadBalancerId != lb || got.ListenerProtocol != "TCP" || got.ListenerPort != 80 || got.ServerGroupId != sg ||
		got.ListenerDescription != c.ListenerDescription || got.IdleTimeout != 60 || !got.ProxyProtocolEnabled ||
		got.RegionId != "cn-hangzhou" || len(got.Tags) != 1 || got.Tags[0].Key != "owner" || got.Tags[0].Value != "ccm" {
		t.Fatalf("listener: %+v", got)
	}
	// A second listener op on the LB while the create job runs.
	s := nlb.CreateStopListenerRequest()
	s.ListenerId = id
	_, err = f.c.StopListener(s)
	wantErr(t, err, "Conflict.Lock", http.StatusBadRequest)
	eventually(t, "Running", func() bool { return f.getListener(t, id).ListenerStatus == "Running" })
	if g := f.listSG(t, sg); strings.Join(g.RelatedLoadBalancerIds, ",") != lb {
		t.Fatalf("RelatedLoadBalancerIds = %v", g.RelatedLoadBalancerIds)
	}

	st := nlb.CreateStartListenerRequest()
	st.ListenerId = id
	_, err = f.c.StartListener(st)
	wantErr(t, err, "IncorrectStatus.listener", http.StatusBadRequest)

	sr, err := f.c.StopListener(s)
	noErr(t, err)
	if got := f.getListener(t, id).ListenerStatus; got != "Stopping" {
		t.Fatalf("status after stop = %s, want Stopping", got)
	}
	eventually(t, "Stopped", func() bool { return f.getListener(t, id).ListenerStatus == "Stopped" })
	if f.jobStatus(t, sr.JobId) != "Succeeded" {
		t.Fatal("stop job not Succeeded once the listener is Stopped")
	}
	_, err = f.c.StopListener(s)
	wantErr(t, err, "IncorrectStatus.listener", http.StatusBadRequest)
	_, err = f.c.StartListener(st)
	noErr(t, err)
	if got := f.getListener(t, id).ListenerStatus; got != "Starting" {
		t.Fatalf("status after start = %s, want Starting", got)
	}
	eventually(t, "Running again", func() bool { return f.getListener(t, id).ListenerStatus == "Running" })

	sg2 := f.createSG(t, "tcp2", "vpc-a", "Instance", "TCP", false)
	eventually(t, "sg2 Available", func() bool { return f.listSG(t, sg2).ServerGroupStatus == "Available" })
	u := nlb.CreateUpdateListenerAttributeRequest()
	u.ListenerId, u.ServerGroupId, u.ListenerDescription = id, sg2, "changed"
	_, err = f.c.UpdateListenerAttribute(u)
	noErr(t, err)
	got = f.getListener(t, id)
	if got.ListenerStatus != "Configuring" || got.ServerGroupId != sg2 || got.ListenerDescription != "changed" {
		t.Fatalf("after update: %+v", got)
	}
	eventually(t, "Running after update", func() bool { return f.getListener(t, id).ListenerStatus == "Running" })
	setDelays(t, f.env, 0, 0)

	// The group is in use by the listener now.
	d := nlb.CreateDeleteServerGroupRequest()
	d.ServerGroupId = sg2
	_, err = f.c.DeleteServerGroup(d)
	wantErr(t, err, "ResourceInUse.ServerGroup", http.StatusBadRequest)

	l := nlb.CreateListListenersRequest()
	l.LoadBalancerIds = &[]string{lb}
	lr, err := f.c.ListListeners(l)
	noErr(t, err)
	if lr.TotalCount != 1 || lr.Listeners[0].ListenerId != id || lr.Listeners[0].ListenerStatus != "Running" || lr.Listeners[0].Tags[0].Key != "owner" {
		t.Fatalf("ListListeners: %+v", lr)
	}

	dl := nlb.CreateDeleteListenerRequest()
	dl.ListenerId = id
	dr, err := f.c.DeleteListener(dl)
	noErr(t, err)
	if dr.JobId == "" {
		t.Fatal("DeleteListener returned no JobId")
	}
	g := nlb.CreateGetListenerAttributeRequest()
	g.ListenerId = id
	_, err = f.c.GetListenerAttribute(g)
	wantErr(t, err, "ResourceNotFound.listener", http.StatusNotFound)
	_, err = f.c.DeleteServerGroup(d)
	noErr(t, err)
}

func TestCreateListenerValidation(t *testing.T) {
	f := newFixture(t)
	lb := f.createLB(t, lbRequest("val"))
	tcp := f.createSG(t, "tcp", "vpc-a", "Instance", "TCP", false)
	udp := f.createSG(t, "udp", "vpc-a", "Instance", "UDP", false)
	anyPort := f.createSG(t, "any", "vpc-a", "Instance", "TCP", true)
	otherVPC := f.createSG(t, "other", "vpc-b", "Instance", "TCP", false)
	f.createListener(t, lb, tcp, "TCP", 443)

	cases := []struct {
		name   string
		mod    func(r *nlb.CreateListenerRequest)
		code   string
		status int
	}{
		{"same port tcp", func(r *nlb.CreateListenerRequest) {}, "Conflict.Port", 400},
		{"same port tcpssl", func(r *nlb.CreateListenerRequest) {
			r.ListenerProtocol, r.CertificateIds = "TCPSSL", &[]string{"123-cn-hangzhou"}
		}, "Conflict.Port", 400},
		{"range covering port", func(r *nlb.CreateListenerRequest) {
			r.ServerGroupId, r.ListenerPort = anyPort, requests.NewInteger(0)
			r.StartPort, r.EndPort = requests.NewInteger(400), requests.NewInteger(500)
		}, "Conflict.Port", 400},
		{"missing port", func(r *nlb.CreateListenerRequest) { r.ListenerPort = "" }, "MissingParameter", 400},
		{"port out of range", func(r *nlb.CreateListenerRequest) { r.ListenerPort = requests.NewInteger(70000) }, "InvalidParameter", 400},
		{"missing protocol", func(r *nlb.CreateListenerRequest) { r.ListenerProtocol = "" }, "MissingParameter", 400},
		{"bad protocol", func(r *nlb.CreateListenerRequest) { r.ListenerProtocol = "HTTP" }, "InvalidParameter", 400},
		{"tcpssl without certificate", func(r *nlb.CreateListenerRequest) {
			r.ListenerProtocol, r.ListenerPort = "TCPSSL", requests.NewInteger(8443)
		}, "MissingParameter", 400},
		{"protocol mismatch", func(r *nlb.CreateListenerRequest) { r.ServerGroupId = udp }, "InvalidParameter", 400},
		{"group of other vpc", func(r *nlb.CreateListenerRequest) { r.ServerGroupId = otherVPC }, "InvalidParameter", 400},
		{"any-port group on a port", func(r *nlb.CreateListenerRequest) { r.ServerGroupId = anyPort }, "InvalidParameter", 400},
		{"unknown group", func(r *nlb.CreateListenerRequest) { r.ServerGroupId = "sgp-x" }, "ResourceNotFound.serverGroup", 404},
		{"missing group", func(r *nlb.CreateListenerRequest) { r.ServerGroupId = "" }, "MissingParameter", 400},
		{"unknown lb", func(r *nlb.CreateListenerRequest) { r.LoadBalancerId = "nlb-x" }, "ResourceNotFound.loadBalancer", 404},
		{"idle timeout", func(r *nlb.CreateListenerRequest) { r.IdleTimeout = requests.NewInteger(901) }, "InvalidParameter", 400},
		{"certificate on tcp", func(r *nlb.CreateListenerRequest) {
			r.ListenerPort, r.CertificateIds = requests.NewInteger(445), &[]string{"1001-cn-hangzhou"}
		}, "InvalidParameter", 400},
		{"dry run", func(r *nlb.CreateListenerRequest) {
			r.ListenerPort, r.DryRun = requests.NewInteger(444), requests.NewBoolean(true)
		}, "DryRunOperation", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := nlb.CreateCreateListenerRequest()
			r.LoadBalancerId, r.ServerGroupId, r.ListenerProtocol = lb, tcp, "TCP"
			r.ListenerPort = requests.NewInteger(443)
			tc.mod(r)
			_, err := f.c.CreateListener(r)
			wantErr(t, err, tc.code, tc.status)
		})
	}

	// UDP on the TCP port is fine; so is a port range with an any-port group.
	u := nlb.CreateCreateListenerRequest()
	u.LoadBalancerId, u.ServerGroupId, u.ListenerProtocol = lb, udp, "UDP"
	u.ListenerPort, u.AlpnEnabled, u.CaEnabled = requests.NewInteger(443), requests.NewBoolean(false), requests.NewBoolean(false)
	_, err := f.c.CreateListener(u)
	noErr(t, err)
	r := nlb.CreateCreateListenerRequest()
	r.LoadBalancerId, r.ServerGroupId, r.ListenerProtocol = lb, anyPort, "TCP"
	r.StartPort, r.EndPort = requests.NewInteger(1000), requests.NewInteger(2000)
	resp, err := f.c.CreateListener(r)
	noErr(t, err)
	got := f.getListener(t, resp.ListenerId)
	if got.ListenerPort != 0 || got.StartPort != "1000" || got.EndPort != "2000" {
		t.Fatalf("range listener: %+v", got)
	}

	// The listener quota of the LB.
	noErr(t, f.env.Emulator.Store.Settings().SetQuota(store.QuotaNLBListenersPerLB, 3))
	q := nlb.CreateCreateListenerRequest()
	q.LoadBalancerId, q.ServerGroupId, q.ListenerProtocol = lb, tcp, "TCP"
	q.ListenerPort = requests.NewInteger(8080)
	_, err = f.c.CreateListener(q)
	wantErr(t, err, "QuotaExceeded.ListenersNum", http.StatusBadRequest)

	// Listeners cannot be added while the LB is Provisioning.
	setDelays(t, f.env, time.Hour, 0)
	young := f.createLB(t, lbRequest("young"))
	q.LoadBalancerId = young
	_, err = f.c.CreateListener(q)
	wantErr(t, err, "IncorrectStatus.loadbalancer", http.StatusBadRequest)
	d := nlb.CreateDeleteLoadBalancerRequest()
	d.LoadBalancerId = young
	_, err = f.c.DeleteLoadBalancer(d)
	wantErr(t, err, "ResourceInCreating.loadbalancer", http.StatusBadRequest)

	// Deleting the LB takes its listeners along.
	d.LoadBalancerId = lb
	_, err = f.c.DeleteLoadBalancer(d)
	noErr(t, err)
	l := nlb.CreateListListenersRequest()
	l.LoadBalancerIds = &[]string{lb}
	lr, err := f.c.ListListeners(l)
	noErr(t, err)
	if lr.TotalCount != 0 {
		t.Fatalf("listeners of a deleted LB: %+v", lr.Listeners)
	}
}

func TestListenerCertificates(t *testing.T) {
	f := newFixture(t)
	lb := f.createLB(t, lbRequest("ssl"))
	sg := f.createSG(t, "tcp", "vpc-a", "Instance", "TCP", false)
	c := nlb.CreateCreateListenerRequest()
	c.LoadBalancerId, c.ServerGroupId, c.ListenerProtocol = lb, sg, "TCPSSL"
	c.ListenerPort = requests.NewInteger(443)
	c.CertificateIds = &[]string{"1001-cn-hangzhou"}
	c.AlpnEnabled, c.AlpnPolicy = requests.NewBoolean(true), "HTTP2Preferred"
	resp, err := f.c.CreateListener(c)
	noErr(t, err)
	id := resp.ListenerId
	got := f.getListener(t, id)
	if got.ListenerProtocol != "TCPSSL" || strings.Join(got.CertificateIds, ",") != "1001-cn-hangzhou" ||
		got.SecurityPolicyId != "tls_cipher_policy_1_0" || !got.AlpnEnabled || got.AlpnPolicy != "HTTP2Preferred" {
		t.Fatalf("TCPSSL listener: %+v", got)
	}

	a := nlb.CreateAssociateAdditionalCertificatesWithListenerRequest()
	a.ListenerId, a.AdditionalCertificateIds = id, &[]string{"1002-cn-hangzhou", "1003-cn-hangzhou"}
	ar, err := f.c.AssociateAdditionalCertificatesWithListener(a)
	noErr(t, err)
	if ar.JobId == "" {
		t.Fatal("associate returned no JobId")
	}
	_, err = f.c.AssociateAdditionalCertificatesWithListener(a)
	wantErr(t, err, "ResourceAlreadyAssociated.certificate", http.StatusBadRequest)

	l := nlb.CreateListListenerCertificatesRequest()
	l.ListenerId = id
	lr, err := f.c.ListListenerCertificates(l)
	noErr(t, err)
	if lr.TotalCount != 3 || strings.Join(lr.CertificateIds, ",") != "1001-cn-hangzhou,1002-cn-hangzhou,1003-cn-hangzhou" ||
		!lr.Certificates[0].IsDefault || lr.Certificates[1].IsDefault || lr.Certificates[1].CertificateType != "Server" || lr.Certificates[1].Status != "Associated" {
		t.Fatalf("ListListenerCertificates: %+v", lr)
	}

	dis := nlb.CreateDisassociateAdditionalCertificatesWithListenerRequest()
	dis.ListenerId, dis.AdditionalCertificateIds = id, &[]string{"1002-cn-hangzhou"}
	_, err = f.c.DisassociateAdditionalCertificatesWithListener(dis)
	noErr(t, err)
	l = nlb.CreateListListenerCertificatesRequest()
	l.ListenerId = id
	lr, err = f.c.ListListenerCertificates(l)
	noErr(t, err)
	if strings.Join(lr.CertificateIds, ",") != "1001-cn-hangzhou,1003-cn-hangzhou" {
		t.Fatalf("after disassociate: %v", lr.CertificateIds)
	}
	_, err = f.c.DisassociateAdditionalCertificatesWithListener(dis)
	wantErr(t, err, "ResourceNotFound.certificate", http.StatusNotFound)

	tcp := f.createListener(t, lb, sg, "TCP", 80)
	a = nlb.CreateAssociateAdditionalCertificatesWithListenerRequest()
	a.ListenerId, a.AdditionalCertificateIds = tcp, &[]string{"1004-cn-hangzhou"}
	_, err = f.c.AssociateAdditionalCertificatesWithListener(a)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
}
