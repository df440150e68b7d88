package slb_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func TestTCPListenerLifecycle(t *testing.T) {
	_, c := newEnv(t)
	lb := createLB(t, c, nil).LoadBalancerId
	gid := createGroup(t, c, lb, `[{"serverId":"`+instance1+`","port":80,"weight":100,"type":"ecs"}]`)

	r := slb.CreateCreateLoadBalancerTCPListenerRequest()
	r.LoadBalancerId, r.ListenerPort, r.VServerGroupId = lb, requests.NewInteger(80), gid
	r.Bandwidth, r.Scheduler, r.PersistenceTimeout = requests.NewInteger(-1), "rr", requests.NewInteger(60)
	r.HealthCheckInterval = requests.NewInteger(7) // sent as healthCheckInterval
	r.ProxyProtocolV2Enabled, r.Description = requests.NewBoolean(true), "tcp80"
	r.Tag = &[]slb.CreateLoadBalancerTCPListenerTag{{Key: "k", Value: "v"}}
	_, err := c.CreateLoadBalancerTCPListener(r)
	must(t, err)

	d := slb.CreateDescribeLoadBalancerTCPListenerAttributeRequest()
	d.LoadBalancerId, d.ListenerPort = lb, requests.NewInteger(80)
	attr, err := c.DescribeLoadBalancerTCPListenerAttribute(d)
	must(t, err)
	if attr.Status != "stopped" || attr.VServerGroupId != gid || attr.Scheduler != "rr" || attr.PersistenceTimeout != 60 ||
		attr.HealthCheckInterval != 7 || !attr.ProxyProtocolV2Enabled || attr.Description != "tcp80" || attr.Bandwidth != -1 ||
		attr.EstablishedTimeout != 900 || attr.HealthCheck != "on" || len(attr.Tags.Tag) != 1 {
		t.Fatalf("unexpected attribute %+v", attr)
	}

	set := slb.CreateSetLoadBalancerTCPListenerAttributeRequest()
	set.LoadBalancerId, set.ListenerPort = lb, requests.NewInteger(80)
	set.HealthCheckInterval, set.Scheduler, set.VServerGroup = requests.NewInteger(9), "wrr", "off"
	_, err = c.SetLoadBalancerTCPListenerAttribute(set)
	wantErr(t, err, "MissingParameter", http.StatusBadRequest) // no vServer group and no BackendServerPort
	// A fresh request: the SDK keeps the parameters of earlier calls in a reused one.
	set = slb.CreateSetLoadBalancerTCPListenerAttributeRequest()
	set.LoadBalancerId, set.ListenerPort = lb, requests.NewInteger(80)
	set.HealthCheckInterval, set.Scheduler = requests.NewInteger(9), "wrr"
	_, err = c.SetLoadBalancerTCPListenerAttribute(set)
	must(t, err)
	attr, err = c.DescribeLoadBalancerTCPListenerAttribute(d)
	must(t, err)
	if attr.HealthCheckInterval != 9 || attr.Scheduler != "wrr" || attr.PersistenceTimeout != 60 {
		t.Fatalf("set did not apply: %+v", attr)
	}

	start := slb.CreateStartLoadBalancerListenerRequest()
	start.LoadBalancerId, start.ListenerPort = lb, requests.NewInteger(80)
	_, err = c.StartLoadBalancerListener(start)
	must(t, err)
	attr, err = c.DescribeLoadBalancerTCPListenerAttribute(d)
	must(t, err)
	if attr.Status != "running" {
		t.Fatalf("status %s after start", attr.Status)
	}

	// A UDP listener may share the port; now the protocol must be named.
	u := slb.CreateCreateLoadBalancerUDPListenerRequest()
	u.LoadBalancerId, u.ListenerPort, u.BackendServerPort = lb, requests.NewInteger(80), requests.NewInteger(80)
	u.HealthCheckReq, u.HealthCheckExp = "ping", "pong"
	_, err = c.CreateLoadBalancerUDPListener(u)
	must(t, err)
	stop := slb.CreateStopLoadBalancerListenerRequest()
	stop.LoadBalancerId, stop.ListenerPort = lb, requests.NewInteger(80)
	_, err = c.StopLoadBalancerListener(stop)
	wantErr(t, err, "MissingParameter", http.StatusBadRequest)
	stop.ListenerProtocol = "tcp"
	_, err = c.StopLoadBalancerListener(stop)
	must(t, err)
	ud := slb.CreateDescribeLoadBalancerUDPListenerAttributeRequest()
	ud.LoadBalancerId, ud.ListenerPort = lb, requests.NewInteger(80)
	uattr, err := c.DescribeLoadBalancerUDPListenerAttribute(ud)
	must(t, err)
	if uattr.HealthCheckReq != "ping" || uattr.HealthCheckExp != "pong" || uattr.Status != "stopped" || uattr.BackendServerPort != 80 {
		t.Fatalf("unexpected UDP attribute %+v", uattr)
	}
	us := slb.CreateSetLoadBalancerUDPListenerAttributeRequest()
	us.LoadBalancerId, us.ListenerPort, us.HealthCheckReq = lb, requests.NewInteger(80), "hello"
	_, err = c.SetLoadBalancerUDPListenerAttribute(us)
	must(t, err)

	del := slb.CreateDeleteLoadBalancerListenerRequest()
	del.LoadBalancerId, del.ListenerPort, del.ListenerProtocol = lb, requests.NewInteger(80), "udp"
	_, err = c.DeleteLoadBalancerListener(del)
	must(t, err)
	_, err = c.DescribeLoadBalancerUDPListenerAttribute(ud)
	wantErr(t, err, "ListenerNotFound", http.StatusNotFound)
	_, err = c.DeleteLoadBalancerListener(del)
	wantErr(t, err, "ListenerNotFound", http.StatusNotFound)
}

func TestCreateListenerErrors(t *testing.T) {
	env, c := newEnv(t)
	lb := createLB(t, c, nil).LoadBalancerId
	other := createLB(t, c, nil).LoadBalancerId
	foreign := createGroup(t, c, other, "")
	createTCP(t, c, lb, 80, nil)
	tests := []struct {
		name   string
		mutate func(r *slb.CreateLoadBalancerTCPListenerRequest)
		code   string
		status int
	}{
		{"same port and protocol", func(r *slb.CreateLoadBalancerTCPListenerRequest) {}, "ListenerAlreadyExists", 400},
		{"unknown load balancer", func(r *slb.CreateLoadBalancerTCPListenerRequest) { r.LoadBalancerId = "lb-nope" }, "InvalidLoadBalancerId.NotFound", 404},
		{"port out of range", func(r *slb.CreateLoadBalancerTCPListenerRequest) { r.ListenerPort = requests.NewInteger(70000) }, "InvalidParameter", 400},
		{"no backend port or group", func(r *slb.CreateLoadBalancerTCPListenerRequest) {
			r.ListenerPort, r.BackendServerPort = requests.NewInteger(81), ""
		}, "MissingParameter", 400},
		{"group of another load balancer", func(r *slb.CreateLoadBalancerTCPListenerRequest) {
			r.ListenerPort, r.VServerGroupId = requests.NewInteger(82), foreign
		}, "InvalidParameter", 400},
		{"unknown group", func(r *slb.CreateLoadBalancerTCPListenerRequest) {
			r.ListenerPort, r.VServerGroupId = requests.NewInteger(82), "rsp-nope"
		}, "InvalidParameter", 400},
		{"bad scheduler", func(r *slb.CreateLoadBalancerTCPListenerRequest) {
			r.ListenerPort, r.Scheduler = requests.NewInteger(83), "random"
		}, "InvalidParameter", 400},
		{"bad threshold", func(r *slb.CreateLoadBalancerTCPListenerRequest) {
			r.ListenerPort, r.HealthyThreshold = requests.NewInteger(83), requests.NewInteger(11)
		}, "InvalidParameter", 400},
		{"acl on without acl", func(r *slb.CreateLoadBalancerTCPListenerRequest) {
			r.ListenerPort, r.AclStatus = requests.NewInteger(83), "on"
		}, "MissingParameter", 400},
		{"unknown acl", func(r *slb.CreateLoadBalancerTCPListenerRequest) {
			r.ListenerPort, r.AclId = requests.NewInteger(83), "acl-nope"
		}, "ResourceNotFound.Acl", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := slb.CreateCreateLoadBalancerTCPListenerRequest()
			r.LoadBalancerId, r.ListenerPort, r.BackendServerPort = lb, requests.NewInteger(80), requests.NewInteger(80)
			tt.mutate(r)
			_, err := c.CreateLoadBalancerTCPListener(r)
			wantErr(t, err, tt.code, tt.status)
		})
	}

	// HTTP on a port a TCP listener holds.
	h := slb.CreateCreateLoadBalancerHTTPListenerRequest()
	h.LoadBalancerId, h.ListenerPort, h.BackendServerPort, h.StickySession, h.HealthCheck = lb, requests.NewInteger(80), requests.NewInteger(80), "off", "off"
	_, err := c.CreateLoadBalancerHTTPListener(h)
	wantErr(t, err, "ListenerPortConflict", http.StatusBadRequest)

	must(t, env.Emulator.Store.Settings().SetQuota(store.QuotaSLBListenersPerLB, 2))
	createTCP(t, c, lb, 90, nil)
	r := slb.CreateCreateLoadBalancerTCPListenerRequest()
	r.LoadBalancerId, r.ListenerPort, r.BackendServerPort = lb, requests.NewInteger(91), requests.NewInteger(91)
	_, err = c.CreateLoadBalancerTCPListener(r)
	wantErr(t, err, "QuotaExceeded.ListenersPerLoadBalancer", http.StatusBadRequest)
}

func TestHTTPAndHTTPSListeners(t *testing.T) {
	_, c := newEnv(t)
	lb := createLB(t, c, nil).LoadBalancerId

	hs := slb.CreateCreateLoadBalancerHTTPSListenerRequest()
	hs.LoadBalancerId, hs.ListenerPort, hs.BackendServerPort = lb, requests.NewInteger(443), requests.NewInteger(80)
	hs.StickySession, hs.HealthCheck = "off", "on"
	_, err := c.CreateLoadBalancerHTTPSListener(hs)
	wantErr(t, err, "MissingParameter", http.StatusBadRequest)
	hs.ServerCertificateId = "1_2_3_4"
	_, err = c.CreateLoadBalancerHTTPSListener(hs)
	wantErr(t, err, "ResourceNotFound.ServerCertificate", http.StatusNotFound)
	hs.ServerCertificateId, hs.CACertificateId, hs.TLSCipherPolicy = seedCert, seedCACert, "tls_cipher_policy_1_2"
	_, err = c.CreateLoadBalancerHTTPSListener(hs)
	must(t, err)

	h := slb.CreateCreateLoadBalancerHTTPListenerRequest()
	h.LoadBalancerId, h.ListenerPort, h.HealthCheck = lb, requests.NewInteger(80), "off"
	h.ListenerForward, h.ForwardPort = "on", requests.NewInteger(8443)
	_, err = c.CreateLoadBalancerHTTPListener(h)
	wantErr(t, err, "MissingParameter", http.StatusBadRequest) // StickySession is required
	h.StickySession = "on"
	_, err = c.CreateLoadBalancerHTTPListener(h)
	wantErr(t, err, "MissingParameter", http.StatusBadRequest) // StickySessionType
	h.StickySessionType, h.CookieTimeout = "insert", requests.NewInteger(300)
	_, err = c.CreateLoadBalancerHTTPListener(h)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest) // no HTTPS listener on 8443
	h.ForwardPort = requests.NewInteger(443)
	_, err = c.CreateLoadBalancerHTTPListener(h)
	must(t, err)

	hd := slb.CreateDescribeLoadBalancerHTTPListenerAttributeRequest()
	hd.LoadBalancerId, hd.ListenerPort = lb, requests.NewInteger(80)
	hattr, err := c.DescribeLoadBalancerHTTPListenerAttribute(hd)
	must(t, err)
	if hattr.ListenerForward != "on" || hattr.ForwardPort != 443 || hattr.StickySessionType != "insert" || hattr.CookieTimeout != 300 ||
		hattr.XForwardedFor != "on" || hattr.Gzip != "on" || hattr.IdleTimeout != 15 || hattr.RequestTimeout != 60 || hattr.Status != "stopped" {
		t.Fatalf("unexpected HTTP attribute %+v", hattr)
	}
	hset := slb.CreateSetLoadBalancerHTTPListenerAttributeRequest()
	hset.LoadBalancerId, hset.ListenerPort, hset.XForwardedForSLBIP, hset.IdleTimeout = lb, requests.NewInteger(80), "on", requests.NewInteger(30)
	_, err = c.SetLoadBalancerHTTPListenerAttribute(hset)
	must(t, err)

	sd := slb.CreateDescribeLoadBalancerHTTPSListenerAttributeRequest()
	sd.LoadBalancerId, sd.ListenerPort = lb, requests.NewInteger(443)
	sattr, err := c.DescribeLoadBalancerHTTPSListenerAttribute(sd)
	must(t, err)
	if sattr.ServerCertificateId != seedCert || sattr.CACertificateId != seedCACert || sattr.TLSCipherPolicy != "tls_cipher_policy_1_2" ||
		sattr.EnableHttp2 != "on" || sattr.HealthCheck != "on" || len(sattr.ServerCertificates.ServerCertificate) != 1 {
		t.Fatalf("unexpected HTTPS attribute %+v", sattr)
	}
	sset := slb.CreateSetLoadBalancerHTTPSListenerAttributeRequest()
	sset.LoadBalancerId, sset.ListenerPort, sset.EnableHttp2 = lb, requests.NewInteger(443), "off"
	_, err = c.SetLoadBalancerHTTPSListenerAttribute(sset)
	must(t, err)

	// The HTTPS listener is a forward target, so it cannot go first.
	del := slb.CreateDeleteLoadBalancerListenerRequest()
	del.LoadBalancerId, del.ListenerPort = lb, requests.NewInteger(443)
	_, err = c.DeleteLoadBalancerListener(del)
	wantErr(t, err, "Operation.NotAllowed", http.StatusBadRequest)

	list := slb.CreateDescribeLoadBalancerListenersRequest()
	list.LoadBalancerId = &[]string{lb}
	lr, err := c.DescribeLoadBalancerListeners(list)
	must(t, err)
	if lr.TotalCount != 2 || len(lr.Listeners) != 2 || lr.Listeners[0].ListenerProtocol != "http" ||
		lr.Listeners[0].HTTPListenerConfig.ForwardPort != 443 || lr.Listeners[0].HTTPListenerConfig.IdleTimeout != 30 ||
		lr.Listeners[0].HTTPListenerConfig.XForwardedForSLBIP != "on" ||
		lr.Listeners[1].HTTPSListenerConfig.ServerCertificateId != seedCert || lr.Listeners[1].HTTPSListenerConfig.EnableHttp2 != "off" {
		t.Fatalf("unexpected listeners %+v", lr.Listeners)
	}
}

func TestDescribeLoadBalancerListenersPaging(t *testing.T) {
	_, c := newEnv(t)
	a := createLB(t, c, nil).LoadBalancerId
	b := createLB(t, c, nil).LoadBalancerId
	for p := 1; p <= 3; p++ {
		createTCP(t, c, a, p, func(r *slb.CreateLoadBalancerTCPListenerRequest) {
			r.Description = "a"
			r.ProxyProtocolV2Enabled = requests.NewBoolean(true)
		})
	}
	createTCP(t, c, b, 10, func(r *slb.CreateLoadBalancerTCPListenerRequest) {
		r.Tag = &[]slb.CreateLoadBalancerTCPListenerTag{{Key: "team", Value: "x"}}
	})
	tests := []struct {
		name  string
		setup func(r *slb.DescribeLoadBalancerListenersRequest)
		total int
	}{
		{"all", nil, 4},
		{"one lb", func(r *slb.DescribeLoadBalancerListenersRequest) { r.LoadBalancerId = &[]string{b} }, 1},
		{"port", func(r *slb.DescribeLoadBalancerListenersRequest) { r.ListenerPort = requests.NewInteger(2) }, 1},
		{"protocol", func(r *slb.DescribeLoadBalancerListenersRequest) { r.ListenerProtocol = "udp" }, 0},
		{"description", func(r *slb.DescribeLoadBalancerListenersRequest) { r.Description = "a" }, 3},
		{"tag", func(r *slb.DescribeLoadBalancerListenersRequest) {
			r.Tag = &[]slb.DescribeLoadBalancerListenersTag{{Key: "team", Value: "x"}}
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := slb.CreateDescribeLoadBalancerListenersRequest()
			if tt.setup != nil {
				tt.setup(r)
			}
			resp, err := c.DescribeLoadBalancerListeners(r)
			must(t, err)
			if resp.TotalCount != tt.total || len(resp.Listeners) != tt.total {
				t.Fatalf("TotalCount %d (%d items), want %d", resp.TotalCount, len(resp.Listeners), tt.total)
			}
		})
	}
	r := slb.CreateDescribeLoadBalancerListenersRequest()
	r.MaxResults = requests.NewInteger(3)
	first, err := c.DescribeLoadBalancerListeners(r)
	must(t, err)
	if len(first.Listeners) != 3 || first.NextToken == "" || first.Listeners[0].TCPListenerConfig.ProxyProtocolV2Enabled != "true" {
		t.Fatalf("first page %+v", first)
	}
	r.NextToken = first.NextToken
	second, err := c.DescribeLoadBalancerListeners(r)
	must(t, err)
	if len(second.Listeners) != 1 || second.NextToken != "" || second.Listeners[0].LoadBalancerId != b || second.Listeners[0].Tags[0].TagKey != "team" {
		t.Fatalf("second page %+v", second)
	}
	r.MaxResults = requests.NewInteger(101)
	_, err = c.DescribeLoadBalancerListeners(r)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
}

func TestListenerBusyWhileConfiguring(t *testing.T) {
	env, c := newEnv(t)
	must(t, env.Emulator.Store.Settings().SetDelay(store.DelaySLBConfiguring, 300*time.Millisecond))
	lb := createLB(t, c, nil).LoadBalancerId
	createTCP(t, c, lb, 80, nil)
	start := slb.CreateStartLoadBalancerListenerRequest()
	start.LoadBalancerId, start.ListenerPort = lb, requests.NewInteger(80)
	_, err := c.StartLoadBalancerListener(start)
	must(t, err)
	d := slb.CreateDescribeLoadBalancerTCPListenerAttributeRequest()
	d.LoadBalancerId, d.ListenerPort = lb, requests.NewInteger(80)
	attr, err := c.DescribeLoadBalancerTCPListenerAttribute(d)
	must(t, err)
	if attr.Status != "starting" {
		t.Fatalf("status %s, want starting", attr.Status)
	}
	stop := slb.CreateStopLoadBalancerListenerRequest()
	stop.LoadBalancerId, stop.ListenerPort = lb, requests.NewInteger(80)
	_, err = c.StopLoadBalancerListener(stop)
	wantErr(t, err, "ServiceIsConfiguring", http.StatusBadRequest)
	time.Sleep(350 * time.Millisecond)
	attr, err = c.DescribeLoadBalancerTCPListenerAttribute(d)
	must(t, err)
	if attr.Status != "running" {
		t.Fatalf("status %s, want running", attr.Status)
	}
	_, err = c.StopLoadBalancerListener(stop)
	must(t, err)
}
