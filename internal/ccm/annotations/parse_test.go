package annotations_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// examples holds a valid value for every registered annotation; the test
// below fails when an entry is added without one, so every annotation is
// proven to be read by Parse.
var examples = map[string]string{
	"id": "", "force-override-listeners": "true", "name": "my-lb", "address-type": "intranet",
	"resource-group-id": "rg-abc", "additional-resource-tags": "team=web,env=,flag",
	"ip-version": "", "preserve-lb-on-delete": "", "protocol-port": "", "cert-id": "",
	"tls-cipher-policy": "", "idle-timeout": "15", "proxy-protocol": "on", "scheduler": "",
	"connection-drain": "on", "connection-drain-timeout": "30", "health-check-flag": "on",
	"health-check-type": "http", "health-check-uri": "/healthz", "health-check-domain": "www.example.com",
	"health-check-method": "GET", "health-check-httpcode": "http_2xx,http_3xx", "health-check-connect-port": "-520",
	"healthy-threshold": "4", "unhealthy-threshold": "5", "health-check-interval": "3", "health-check-connect-timeout": "6", "kube-proxy-health-check": "off",
	"vgroup-port": "", "weight": "60", "default-weight": "50", "ignore-weight-update": "on",
	"backend-label": "pool=web,kubernetes.io/os=linux", "remove-unscheduled-backend": "on", "backend-ip-version": "ipv6",
	"spec": "slb.s2.small", "instance-charge-type": "paybyclcu", "charge-type": "paybybandwidth", "bandwidth": "100",
	"network-type": "vpc", "vswitch-id": "vsw-123", "master-zoneid": "cn-hangzhou-h", "slave-zoneid": "cn-hangzhou-i",
	"ip": "192.168.0.10", "delete-protection": "off", "modification-protection": "NonProtection",
	"external-ip-type": "eip", "hostname": "web.example.com", "acl-status": "on", "acl-id": "acl-1",
	"acl-type": "white", "forward-port": "80:443", "http2-enabled": "on", "sticky-session": "on",
	"sticky-session-type": "insert", "cookie": "SESSION", "cookie-timeout": "1800", "persistence-timeout": "0",
	"health-check-switch": "off", "health-check-timeout": "8", "request-timeout": "60", "established-timeout": "600",
	"xforwardedfor-proto": "on", "xforwardedfor-slbport": "off", "xforwardedfor-clientsrcport": "on",
	"domain-extensions": "*.example.com:cert-2,api.example.com:cert-3",
	"zone-maps":         zones + ":10.0.0.5:eip-xyz", "security-group-ids": "sg-1,sg-2", "bandwidth-package-id": "cbwp-1",
	"ipv6-address-type": "intranet", "cross-zone-enabled": "off", "server-group-type": "ip",
	"preserve-client-ip": "on", "cacert": "on", "cacert-id": "ca-1,ca-2", "cps": "1000",
	"ppv2-pvl-ep-id-enabled": "on", "ppv2-pvl-eps-id-enabled": "off", "ppv2-pvl-vpc-id-enabled": "on",
	"alpn": "on", "alpn-policy": "http2preferred", "additional-cert-ids": "c-1", "listener-port-range": "",
	annotations.BackendTypeKey: "eni",
}

// perKind overrides examples whose valid values differ between CLB and NLB.
var perKind = map[annotations.Owner]map[string]string{
	annotations.OwnerCLB: {"id": "lb-123", "ip-version": "ipv6", "protocol-port": "https:443,http:80", "cert-id": "cert-1",
		"tls-cipher-policy": "tls_cipher_policy_1_2", "scheduler": "wrr", "vgroup-port": "rsp-1:80", "preserve-lb-on-delete": ""},
	annotations.OwnerNLB: {"id": "nlb-123", "ip-version": "dualstack", "protocol-port": "tcpssl:443", "cert-id": "c-1,c-2",
		"tls-cipher-policy": "tls_cipher_policy_1_2", "scheduler": "sch", "vgroup-port": "sgp-1:80", "listener-port-range": "1000-2000:53",
		"preserve-lb-on-delete": "keep"},
}

func TestEveryRegisteredAnnotationParses(t *testing.T) {
	for _, owner := range []annotations.Owner{annotations.OwnerCLB, annotations.OwnerNLB} {
		t.Run(owner.String(), func(t *testing.T) {
			ann := map[string]string{}
			for _, a := range annotations.Registry {
				if a.Scope == annotations.ScopeRouting || !scopeHas(a.Scope, owner) {
					continue
				}
				v, ok := perKind[owner][a.Suffix()]
				if !ok {
					v, ok = examples[a.Suffix()]
				}
				if !ok {
					t.Fatalf("registry entry %s has no example value in this test", a.Key)
				}
				ann[a.Key] = v
			}
			svc := service(ann)
			s, err := annotations.Parse(svc, annotations.Defaults{Owner: owner})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for k := range ann {
				a, _ := annotations.Find(k, owner)
				if !s.IsSet(a.Suffix()) {
					t.Errorf("%s was not read by Parse", k)
				}
			}
		})
	}
}

func scopeHas(s annotations.Scope, o annotations.Owner) bool {
	if o == annotations.OwnerCLB {
		return s&annotations.ScopeCLB != 0
	}
	return s&annotations.ScopeNLB != 0
}

func TestRegistryIsConsistent(t *testing.T) {
	seen := map[string]annotations.Scope{}
	for _, a := range annotations.Registry {
		if a.Doc == "" || !strings.HasPrefix(a.Key, "service.beta.kubernetes.io/") {
			t.Errorf("%s: missing doc or bad key", a.Key)
		}
		if overlap := seen[a.Key] & a.Scope; overlap != 0 {
			t.Errorf("%s registered twice for scope %d", a.Key, overlap)
		}
		seen[a.Key] |= a.Scope
		if a.Legacy != "" && a.Legacy != annotations.LegacyKey(a.Suffix()) {
			t.Errorf("%s: legacy key %s", a.Key, a.Legacy)
		}
		switch a.Kind {
		case annotations.KindEnum:
			if len(a.Values) == 0 {
				t.Errorf("%s: enum without values", a.Key)
			}
		case annotations.KindInt:
			if a.Min > a.Max {
				t.Errorf("%s: empty range", a.Key)
			}
			if a.Default != "" && !strings.Contains(a.Accepted(), "integer") {
				t.Errorf("%s: accepted text %q", a.Key, a.Accepted())
			}
		}
	}
}

func TestParseDefaults(t *testing.T) {
	s, err := annotations.Parse(service(nil), annotations.Defaults{ResourceGroupID: "rg-default", BackendType: annotations.BackendENI})
	if err != nil {
		t.Fatal(err)
	}
	if s.Owner != annotations.OwnerCLB || s.Reused() || !s.ManagesListeners() {
		t.Errorf("owner %v reused %v manages %v", s.Owner, s.Reused(), s.ManagesListeners())
	}
	if !reflect.DeepEqual(s.LoadBalancer, annotations.LoadBalancer{}) || !reflect.DeepEqual(s.Listener, annotations.Listener{}) {
		t.Errorf("unset annotations produced values: %+v %+v", s.LoadBalancer, s.Listener)
	}
	if s.ResourceGroupID() != "rg-default" || s.Backend.Type != annotations.BackendENI || s.Backend.TypeFromAnnotation {
		t.Errorf("defaults not applied: rg %q backend %q", s.ResourceGroupID(), s.Backend.Type)
	}
	if !s.BackendSelector().Empty() {
		t.Errorf("selector %v, want everything", s.BackendSelector())
	}
	want := []annotations.Protocol{annotations.ProtocolTCP, annotations.ProtocolTCP, annotations.ProtocolUDP}
	for i, p := range s.Ports {
		if p.Protocol != want[i] || p.ProtocolFromAnnotation || p.VGroupID != "" || p.ForwardTo != 0 {
			t.Errorf("port %d: %+v", p.Port, p)
		}
	}
	if got := annotations.Or(s.LoadBalancer.DeleteProtection, annotations.DefaultDeleteProtection); !got {
		t.Error("delete protection default off")
	}
	s, _ = annotations.Parse(service(nil), annotations.Defaults{})
	if s.Backend.Type != annotations.BackendECS || s.ResourceGroupID() != "" {
		t.Errorf("zero defaults: %q %q", s.Backend.Type, s.ResourceGroupID())
	}
}

func TestParseValues(t *testing.T) {
	cases := []struct {
		name  string
		nlb   bool
		ann   map[string]string
		check func(t *testing.T, s *annotations.Settings)
	}{
		{"load balancer", false, map[string]string{
			pre + "id": "lb-abc", pre + "force-override-listeners": "TRUE", pre + "name": "web",
			pre + "address-type": "Intranet", pre + "resource-group-id": "rg-1", pre + "additional-resource-tags": "a=1, b= ,c",
			pre + "ip-version": "IPv6", pre + "preserve-lb-on-delete": "", pre + "spec": "slb.s3.large",
			pre + "instance-charge-type": "paybyspec", pre + "charge-type": "PayByBandwidth", pre + "bandwidth": "100",
			pre + "network-type": "classic", pre + "vswitch-id": "vsw-1", pre + "master-zoneid": "z1", pre + "slave-zoneid": "z2",
			pre + "ip": "10.0.0.8", pre + "delete-protection": "OFF", pre + "modification-protection": "nonprotection",
			pre + "external-ip-type": "EIP", pre + "hostname": "a.example.com",
		}, func(t *testing.T, s *annotations.Settings) {
			lb := s.LoadBalancer
			want := annotations.LoadBalancer{
				ID: "lb-abc", ForceOverrideListeners: true, Name: ptr("web"), AddressType: ptr("intranet"),
				ResourceGroupID: ptr("rg-1"), AdditionalTags: []annotations.Tag{{Key: "a", Value: "1"}, {Key: "b"}, {Key: "c"}},
				IPVersion: ptr("ipv6"), PreserveOnDelete: true, Spec: ptr("slb.s3.large"), InstanceChargeType: ptr("PayBySpec"),
				ChargeType: ptr("paybybandwidth"), Bandwidth: ptr(100), NetworkType: ptr("classic"), VSwitchID: ptr("vsw-1"),
				MasterZoneID: ptr("z1"), SlaveZoneID: ptr("z2"), IP: ptr("10.0.0.8"), DeleteProtection: ptr(false),
				ModificationProtection: ptr("NonProtection"), ExternalIPType: ptr("eip"), Hostname: ptr("a.example.com"),
			}
			if !reflect.DeepEqual(lb, want) {
				t.Errorf("got  %+v\nwant %+v", lb, want)
			}
			if !s.Reused() || !s.ManagesListeners() || s.ResourceGroupID() != "rg-1" {
				t.Error("reuse flags")
			}
		}},
		{"reused without override", false, map[string]string{pre + "id": "lb-abc"}, func(t *testing.T, s *annotations.Settings) {
			if s.ManagesListeners() {
				t.Error("reused LB listeners must be left alone")
			}
		}},
		{"clb listeners", false, map[string]string{
			pre + "protocol-port": "HTTPS:443, http:80", pre + "cert-id": "cert-1", pre + "forward-port": "80:443",
			pre + "tls-cipher-policy": "TLS_CIPHER_POLICY_1_2_STRICT", pre + "idle-timeout": "15", pre + "scheduler": "WRR",
			pre + "http2-enabled": "on", pre + "sticky-session": "on", pre + "sticky-session-type": "server", pre + "cookie": "sid",
			pre + "persistence-timeout": "3600", pre + "request-timeout": "180", pre + "established-timeout": "10",
			pre + "xforwardedfor-proto": "on", pre + "acl-status": "on", pre + "acl-id": "acl-9", pre + "acl-type": "black",
			pre + "domain-extensions": "a.example.com:cert-a",
		}, func(t *testing.T, s *annotations.Settings) {
			l := s.Listener
			if *l.CertID != "cert-1" || *l.TLSCipherPolicy != "tls_cipher_policy_1_2_strict" || *l.IdleTimeout != 15 ||
				*l.Scheduler != "wrr" || !*l.HTTP2 || !*l.StickySession || *l.StickySessionType != "server" || *l.Cookie != "sid" ||
				*l.PersistenceTimeout != 3600 || *l.RequestTimeout != 180 || *l.EstablishedTimeout != 10 || !*l.XForwardedForProto ||
				!*l.ACLStatus || *l.ACLID != "acl-9" || *l.ACLType != "black" ||
				!reflect.DeepEqual(l.DomainExtensions, []annotations.DomainExtension{{Domain: "a.example.com", CertID: "cert-a"}}) {
				t.Errorf("listener %+v", l)
			}
			http, _ := s.PortByNumber(80)
			https, _ := s.PortByNumber(443)
			dns, _ := s.PortByNumber(53)
			if http.Protocol != annotations.ProtocolHTTP || http.ForwardTo != 443 || !http.ProtocolFromAnnotation ||
				https.Protocol != annotations.ProtocolHTTPS || dns.Protocol != annotations.ProtocolUDP || dns.ProtocolFromAnnotation {
				t.Errorf("ports %+v", s.Ports)
			}
		}},
		{"health checks", false, map[string]string{
			pre + "health-check-flag": "on", pre + "health-check-type": "HTTP", pre + "health-check-uri": "/ready",
			pre + "health-check-domain": "$_ip", pre + "health-check-method": "HEAD", pre + "health-check-httpcode": "HTTP_2XX,http_4xx",
			pre + "health-check-connect-port": "8080", pre + "healthy-threshold": "2", pre + "unhealthy-threshold": "10",
			pre + "health-check-interval": "50", pre + "health-check-connect-timeout": "300", pre + "health-check-switch": "off",
			pre + "health-check-timeout": "1",
		}, func(t *testing.T, s *annotations.Settings) {
			want := annotations.HealthCheck{Flag: ptr(true), Switch: ptr(false), Type: ptr("http"), URI: ptr("/ready"),
				Domain: ptr("$_ip"), Method: ptr("head"), HTTPCodes: []string{"http_2xx", "http_4xx"}, ConnectPort: ptr(8080),
				HealthyThreshold: ptr(2), UnhealthyThreshold: ptr(10), Interval: ptr(50), ConnectTimeout: ptr(300), Timeout: ptr(1), Chosen: true}
			if !reflect.DeepEqual(s.Listener.HealthCheck, want) {
				t.Errorf("got  %+v\nwant %+v", s.Listener.HealthCheck, want)
			}
		}},
		{"connect port uses backend port", false, map[string]string{pre + "health-check-connect-port": "-520"}, func(t *testing.T, s *annotations.Settings) {
			if *s.Listener.HealthCheck.ConnectPort != annotations.UseBackendPort {
				t.Error(*s.Listener.HealthCheck.ConnectPort)
			}
		}},
		{"backends", false, map[string]string{
			annotations.BackendTypeKey: "ENI", pre + "id": "lb-a", pre + "vgroup-port": "rsp-a:80,rsp-b:443", pre + "weight": "0",
			pre + "default-weight": "100", pre + "ignore-weight-update": "on", pre + "backend-label": "pool=web, zone=a",
			pre + "remove-unscheduled-backend": "on", pre + "backend-ip-version": "DualStack",
		}, func(t *testing.T, s *annotations.Settings) {
			b := s.Backend
			if b.Type != annotations.BackendENI || !b.TypeFromAnnotation || *b.Weight != 0 || *b.DefaultWeight != 100 ||
				!b.IgnoreWeightUpdate || !b.RemoveUnscheduled || *b.IPVersion != "dualstack" ||
				!reflect.DeepEqual(b.Labels, map[string]string{"pool": "web", "zone": "a"}) {
				t.Errorf("backend %+v", b)
			}
			if !s.BackendSelector().Matches(labels.Set{"pool": "web", "zone": "a", "x": "y"}) || s.BackendSelector().Matches(labels.Set{"pool": "web"}) {
				t.Error("selector")
			}
			if p, _ := s.PortByNumber(80); p.VGroupID != "rsp-a" {
				t.Errorf("vgroup %+v", p)
			}
		}},
		{"nlb", true, map[string]string{
			pre + "zone-maps": "z1:vsw-1:10.0.0.1, z2:vsw-2::eip-2,z3:vsw-3", pre + "security-group-ids": "sg-1, sg-2",
			pre + "bandwidth-package-id": "cbwp-1", pre + "ipv6-address-type": "Internet", pre + "cross-zone-enabled": "on",
			pre + "ip-version": "DUALSTACK", pre + "scheduler": "tch", pre + "protocol-port": "tcpssl:443,udp:53",
			pre + "cert-id": "c1,c2", pre + "tls-cipher-policy": "spy-custom", pre + "idle-timeout": "20",
			pre + "alpn": "on", pre + "alpn-policy": "http2only", pre + "additional-cert-ids": "c3", pre + "cacert": "on",
			pre + "cacert-id": "ca1", pre + "cps": "0", pre + "ppv2-pvl-vpc-id-enabled": "on", pre + "server-group-type": "IP",
			pre + "preserve-client-ip": "off", pre + "connection-drain-timeout": "0", pre + "id": "nlb-x", pre + "vgroup-port": "sgp-x:80",
			pre + "listener-port-range": "1000-2000:80", annotations.BackendTypeKey: "eni",
			// CLB-only keys are ignored on an NLB Service, even with bad values.
			pre + "spec": "bogus", pre + "acl-status": "maybe",
		}, func(t *testing.T, s *annotations.Settings) {
			lb, l := s.LoadBalancer, s.Listener
			wantZones := []annotations.ZoneMapping{{ZoneID: "z1", VSwitchID: "vsw-1", IPv4Address: "10.0.0.1"}, {ZoneID: "z2", VSwitchID: "vsw-2", AllocationID: "eip-2"}, {ZoneID: "z3", VSwitchID: "vsw-3"}}
			if s.Owner != annotations.OwnerNLB || !reflect.DeepEqual(lb.ZoneMaps, wantZones) || !lb.SecurityGroupIDsSet ||
				!reflect.DeepEqual(lb.SecurityGroupIDs, []string{"sg-1", "sg-2"}) || *lb.BandwidthPackageID != "cbwp-1" ||
				*lb.IPv6AddressType != "internet" || !*lb.CrossZoneEnabled || *lb.IPVersion != "DualStack" || lb.Spec != nil {
				t.Errorf("lb %+v", lb)
			}
			if *l.Scheduler != "Tch" || !reflect.DeepEqual(l.CertIDs, []string{"c1", "c2"}) || *l.TLSCipherPolicy != "spy-custom" ||
				*l.IdleTimeout != 20 || !*l.ALPN || *l.ALPNPolicy != "HTTP2Only" || !reflect.DeepEqual(l.AdditionalCertIDs, []string{"c3"}) ||
				!*l.CACert || !reflect.DeepEqual(l.CACertIDs, []string{"ca1"}) || *l.CPS != 0 || !*l.PPv2VPCID || l.PPv2EndpointID != nil ||
				*l.ConnectionDrainTimeout != 0 || l.ACLStatus != nil {
				t.Errorf("listener %+v", l)
			}
			if *s.Backend.ServerGroupType != "ip" || *s.Backend.PreserveClientIP {
				t.Errorf("backend %+v", s.Backend)
			}
			p80, _ := s.PortByNumber(80)
			p443, _ := s.PortByNumber(443)
			if p80.VGroupID != "sgp-x" || *p80.PortRange != (annotations.PortRange{Start: 1000, End: 2000}) || p443.Protocol != annotations.ProtocolTCPSSL {
				t.Errorf("ports %+v", s.Ports)
			}
		}},
		{"nlb empty security groups clear", true, map[string]string{pre + "id": "nlb-1", pre + "security-group-ids": ""}, func(t *testing.T, s *annotations.Settings) {
			if !s.LoadBalancer.SecurityGroupIDsSet || len(s.LoadBalancer.SecurityGroupIDs) != 0 {
				t.Errorf("%+v", s.LoadBalancer)
			}
		}},
		{"empty values are absent", false, map[string]string{pre + "bandwidth": "", pre + "scheduler": "  "}, func(t *testing.T, s *annotations.Settings) {
			if s.LoadBalancer.Bandwidth != nil || s.Listener.Scheduler != nil || s.IsSet("bandwidth") {
				t.Error("empty value treated as set")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := service(tc.ann)
			if tc.nlb {
				svc = nlbService(tc.ann)
			}
			s, err := annotations.Parse(svc, annotations.Defaults{})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tc.check(t, s)
		})
	}
}

func TestLegacyPrefix(t *testing.T) {
	cases := []struct {
		name    string
		ann     map[string]string
		want    string
		wantKey string
	}{
		{"legacy only", map[string]string{legacy + "spec": "slb.s2.small"}, "slb.s2.small", legacy + "spec"},
		{"current only", map[string]string{pre + "spec": "slb.s3.small"}, "slb.s3.small", pre + "spec"},
		{"current wins", map[string]string{legacy + "spec": "slb.s2.small", pre + "spec": "slb.s3.small"}, "slb.s3.small", pre + "spec"},
		{"current wins even if legacy is invalid", map[string]string{legacy + "spec": "bogus", pre + "spec": "slb.s3.small"}, "slb.s3.small", pre + "spec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := annotations.Parse(service(tc.ann), annotations.Defaults{})
			if err != nil {
				t.Fatal(err)
			}
			if *s.LoadBalancer.Spec != tc.want || s.Key("spec") != tc.wantKey {
				t.Errorf("spec %q from %q", *s.LoadBalancer.Spec, s.Key("spec"))
			}
			key, v, ok := annotations.Get(service(tc.ann), "spec")
			if !ok || v != tc.want || key != tc.wantKey {
				t.Errorf("Get = %q %q %v", key, v, ok)
			}
		})
	}
	if k := (&annotations.Settings{}).Key("spec"); k != pre+"spec" {
		t.Errorf("Key of absent = %q", k)
	}
}

// manyTags has 21 distinct tags, one over the cloud's limit.
var manyTags = func() string {
	var tags []string
	for i := 0; i <= 20; i++ {
		tags = append(tags, fmt.Sprintf("k%d=v", i))
	}
	return strings.Join(tags, ",")
}()

func TestInvalidValues(t *testing.T) {
	cases := []struct {
		key, value string
		nlb        bool
		accepted   string // substring of Problem.Accepted
	}{
		{pre + "id", "i-123", false, "lb-"},
		{pre + "id", "lb-123", true, "nlb-"},
		{pre + "force-override-listeners", "yes", false, "true, false"},
		{pre + "name", strings.Repeat("x", 81), false, "1 to 80 characters"},
		{pre + "name", "web lb", false, "1 to 80 characters"},
		{pre + "name", "1web", false, "starting with a letter"},
		{pre + "name", "x", true, "2 to 128 characters"},
		{pre + "name", "team/web", true, "2 to 128 characters"},
		{pre + "address-type", "public", false, "internet, intranet"},
		{legacy + "address-type", "public", false, "internet, intranet"},
		{pre + "resource-group-id", "group1", false, "rg-"},
		{pre + "additional-resource-tags", "aliyun=1", false, "k1=v1"},
		{pre + "additional-resource-tags", "a=1,a=2", false, "k1=v1"},
		{pre + "additional-resource-tags", "=v", false, "k1=v1"},
		{pre + "additional-resource-tags", "ack.aliyun.com=other", false, "not kubernetes.do.not.delete or ack.aliyun.com"},
		{pre + "additional-resource-tags", "kubernetes.do.not.delete=x", false, "not kubernetes.do.not.delete"},
		{pre + "additional-resource-tags", manyTags, false, "at most 20"},
		{pre + "ip-version", "DualStack", false, "ipv4, ipv6"},
		{pre + "ip-version", "ipv6", true, "ipv4, DualStack"},
		{pre + "protocol-port", "ftp:80", false, "tcp, udp, http or https"},
		{pre + "protocol-port", "tcpssl:443", false, "tcp, udp, http or https"},
		{pre + "protocol-port", "http:8080", false, "a Service port"},
		{pre + "protocol-port", "http:80,https:80", false, "a Service port"},
		{pre + "protocol-port", "http", false, "proto:port"},
		{pre + "protocol-port", "https:443", true, "tcp, udp or tcpssl"},
		{pre + "protocol-port", "http:53", false, "udp only for UDP ports"},
		{pre + "protocol-port", "udp:80", true, "udp only for UDP ports"},
		{pre + "tls-cipher-policy", "tls_1_3", false, "tls_cipher_policy_1_0"},
		{pre + "idle-timeout", "61", false, "from 1 to 60"},
		{pre + "idle-timeout", "901", true, "from 10 to 900"},
		{pre + "idle-timeout", "9", true, "from 10 to 900"},
		{pre + "idle-timeout", "60", true, "a udp port's listener takes 10 to 20"},
		{pre + "idle-timeout", "ten", false, "from 1 to 60"},
		{pre + "proxy-protocol", "true", false, "on, off"},
		{pre + "scheduler", "lc", false, "wrr, rr, sch, tch"},
		{pre + "scheduler", "wlc", false, "wrr, rr, sch, tch"},
		{pre + "scheduler", "hash", true, "Wrr, Rr, Sch"},
		{pre + "connection-drain-timeout", "5", false, "from 10 to 900"},
		{pre + "health-check-type", "udp", false, "tcp, http"},
		{pre + "health-check-uri", "healthz", false, "starting with /"},
		{pre + "health-check-domain", "bad domain", false, "letters, digits"},
		{pre + "health-check-method", "post", false, "head, get"},
		{pre + "health-check-httpcode", "http_6xx", false, "http_2xx"},
		{pre + "health-check-connect-port", "0", false, "-520"},
		{pre + "health-check-connect-port", "65536", false, "-520"},
		{pre + "healthy-threshold", "1", false, "from 2 to 10"},
		{pre + "unhealthy-threshold", "11", false, "from 2 to 10"},
		{pre + "health-check-interval", "0", false, "from 1 to 50"},
		{pre + "health-check-connect-timeout", "301", false, "from 1 to 300"},
		{pre + "vgroup-port", "sgp-1:80", false, "rsp-"},
		{pre + "vgroup-port", "rsp-1:80", true, "sgp-"},
		{pre + "vgroup-port", "rsp-1:81", false, "a Service port"},
		{pre + "weight", "101", false, "from 0 to 100"},
		{pre + "default-weight", "-1", false, "from 0 to 100"},
		{pre + "ignore-weight-update", "yes", false, "on, off"},
		{pre + "backend-label", "pool", false, "k=v"},
		{pre + "backend-label", "pool=a b", false, "k=v"},
		{pre + "remove-unscheduled-backend", "1", false, "on, off"},
		{pre + "backend-ip-version", "ipv5", false, "ipv4, ipv6, dualstack"},
		{pre + "spec", "slb.s9.huge", false, "slb.s1.small"},
		{pre + "instance-charge-type", "prepaid", false, "PayBySpec, PayByCLCU"},
		{pre + "charge-type", "free", false, "paybytraffic, paybybandwidth"},
		{pre + "bandwidth", "0", false, "from 1 to 5120"},
		{pre + "network-type", "vpc2", false, "classic, vpc"},
		{pre + "vswitch-id", "vpc-1", false, "vsw-"},
		{pre + "ip", "10.0.0.300", false, "IPv4 or IPv6"},
		{pre + "delete-protection", "enabled", false, "on, off"},
		{pre + "modification-protection", "on", false, "ConsoleProtection, NonProtection"},
		{pre + "external-ip-type", "ip", false, "eip"},
		{pre + "hostname", "Bad_Host", false, "DNS-1123"},
		{pre + "acl-status", "1", false, "on, off"},
		{pre + "acl-id", "a1", false, "acl-"},
		{pre + "acl-type", "grey", false, "white, black"},
		{pre + "forward-port", "80-443", false, "httpPort:httpsPort"},
		{pre + "forward-port", "80:8443", false, "httpPort:httpsPort"},
		{pre + "http2-enabled", "yes", false, "on, off"},
		{pre + "sticky-session", "yes", false, "on, off"},
		{pre + "sticky-session-type", "rewrite", false, "insert, server"},
		{pre + "cookie", "a;b", false, "without ','"},
		{pre + "cookie-timeout", "86401", false, "from 1 to 86400"},
		{pre + "persistence-timeout", "3601", false, "from 0 to 3600"},
		{pre + "health-check-switch", "no", false, "on, off"},
		{pre + "health-check-timeout", "0", false, "from 1 to 300"},
		{pre + "request-timeout", "181", false, "from 1 to 180"},
		{pre + "established-timeout", "9", false, "from 10 to 900"},
		{pre + "xforwardedfor-proto", "true", false, "on, off"},
		{pre + "xforwardedfor-slbport", "true", false, "on, off"},
		{pre + "xforwardedfor-clientsrcport", "true", false, "on, off"},
		{pre + "domain-extensions", "example.com", false, "domain:certId"},
		{pre + "zone-maps", "z1:vsw-1", true, "2–10 distinct zones"},
		{pre + "zone-maps", "z1:vsw-1,z1:vsw-2", true, "2–10 distinct zones"},
		{pre + "zone-maps", "z1:vsw-1:10.0.0.999,z2:vsw-2", true, "zone:vsw"},
		{pre + "zone-maps", "z1:subnet-1,z2:vsw-2", true, "zone:vsw"},
		{pre + "zone-maps", "z1:vsw-1:10.0.0.1:alloc-1,z2:vsw-2", true, "zone:vsw"},
		{pre + "security-group-ids", "sg-1,default", true, "sg-"},
		{pre + "bandwidth-package-id", "bwp-1", true, "cbwp-"},
		{pre + "ipv6-address-type", "public", true, "internet, intranet"},
		{pre + "cross-zone-enabled", "true", true, "on, off"},
		{pre + "server-group-type", "eni", true, "instance, ip"},
		{pre + "preserve-client-ip", "yes", true, "on, off"},
		{pre + "cacert", "yes", true, "on, off"},
		{pre + "cacert-id", "a,a", true, "certificate ids"},
		{pre + "cps", "-1", true, "from 0 to 1000000"},
		{pre + "ppv2-pvl-ep-id-enabled", "true", true, "on, off"},
		{pre + "ppv2-pvl-eps-id-enabled", "true", true, "on, off"},
		{pre + "ppv2-pvl-vpc-id-enabled", "true", true, "on, off"},
		{pre + "alpn", "h2", true, "on, off"},
		{pre + "alpn-policy", "HTTP3", true, "HTTP1Only"},
		{pre + "additional-cert-ids", "c1 c2", true, "certificate ids"},
		{pre + "listener-port-range", "2000-1000:80", true, "start ≤ end"},
		{pre + "listener-port-range", "1000-70000:80", true, "start ≤ end"},
		{pre + "listener-port-range", "1000:80", true, "start-end:port"},
		{pre + "listener-port-range", "1000-2000:81", true, "a Service port"},
		{annotations.BackendTypeKey, "pod", false, "ecs, eni"},
	}
	for _, tc := range cases {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			ann := map[string]string{tc.key: tc.value}
			svc := service(ann)
			if tc.nlb {
				// Satisfy the zone-maps requirement so only tc's problem shows.
				if tc.key == pre+"id" {
					ann[pre+"zone-maps"] = zones
				} else if _, ok := ann[pre+"id"]; !ok {
					ann[pre+"id"] = "nlb-1"
				}
				svc = nlbService(ann)
			}
			_, err := annotations.Parse(svc, annotations.Defaults{})
			var inv *annotations.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("err = %v, want *InvalidError", err)
			}
			if len(inv.Problems) != 1 {
				t.Fatalf("problems = %v, want exactly one", inv.Problems)
			}
			p := inv.Problems[0]
			if p.Key != tc.key || p.Value != tc.value || !strings.Contains(p.Reason+" "+p.Accepted, tc.accepted) {
				t.Errorf("problem = %+v, want key %s value %q accepted ~ %q", p, tc.key, tc.value, tc.accepted)
			}
			// A list problem quotes its bad element, not the whole value.
			shown := tc.value
			if p.Index > 0 {
				shown = p.Element
			}
			for _, part := range []string{tc.key, shown, p.Accepted} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("message %q lacks %q", err.Error(), part)
				}
			}
		})
	}
}

func TestProblemsAreAggregated(t *testing.T) {
	ann := map[string]string{
		pre + "spec": "huge", legacy + "bandwidth": "-5", pre + "scheduler": "x",
		pre + "protocol-port": "https:443", // and no cert-id
	}
	s, err := annotations.Parse(service(ann), annotations.Defaults{})
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) || s == nil {
		t.Fatalf("err = %v settings %v", err, s)
	}
	keys := []string{}
	for _, p := range inv.Problems {
		keys = append(keys, p.Key)
	}
	want := []string{pre + "spec", legacy + "bandwidth", pre + "scheduler", pre + "protocol-port"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("problem keys = %v, want %v", keys, want)
	}
	if !strings.HasPrefix(err.Error(), "invalid Service annotations: ") || strings.Count(err.Error(), "; ") != 3 {
		t.Errorf("message %q", err.Error())
	}
	if p, _ := s.PortByNumber(443); p.Protocol != annotations.ProtocolHTTPS {
		t.Error("valid parts must still be returned")
	}
}

func TestCrossFieldChecks(t *testing.T) {
	cases := []struct {
		name     string
		nlb      bool
		ann      map[string]string
		key      string
		accepted string // substring; "" = must be valid
	}{
		{"https needs cert", false, map[string]string{pre + "protocol-port": "https:443"}, pre + "protocol-port", "requires " + pre + "cert-id"},
		{"https needs cert (legacy keys quoted)", false, map[string]string{legacy + "protocol-port": "https:443"}, legacy + "protocol-port", "requires " + pre + "cert-id"},
		{"https with cert", false, map[string]string{pre + "protocol-port": "https:443", legacy + "cert-id": "c"}, "", ""},
		{"forward needs http and https", false, map[string]string{pre + "forward-port": "80:443"}, pre + "forward-port", "maps the first port to http"},
		{"forward reversed", false, map[string]string{pre + "protocol-port": "http:443,https:80", pre + "cert-id": "c", pre + "forward-port": "80:443"}, pre + "forward-port", "maps the first port to http"},
		{"forward ok", false, map[string]string{pre + "protocol-port": "http:80,https:443", pre + "cert-id": "c", pre + "forward-port": "80:443"}, "", ""},
		{"acl on needs id", false, map[string]string{pre + "acl-status": "on"}, pre + "acl-status", "requires " + pre + "acl-id"},
		{"acl off without id", false, map[string]string{pre + "acl-status": "off"}, "", ""},
		{"sticky needs type", false, map[string]string{pre + "sticky-session": "on"}, pre + "sticky-session", "sticky-session-type"},
		{"insert needs timeout", false, map[string]string{pre + "sticky-session": "on", pre + "sticky-session-type": "insert"}, pre + "sticky-session-type", "cookie-timeout"},
		{"server needs cookie", false, map[string]string{pre + "sticky-session": "on", pre + "sticky-session-type": "server"}, pre + "sticky-session-type", pre + "cookie"},
		{"drain needs timeout", false, map[string]string{pre + "connection-drain": "on"}, pre + "connection-drain", "connection-drain-timeout"},
		{"domain extensions need https", false, map[string]string{pre + "domain-extensions": "a.com:c"}, pre + "domain-extensions", "https port"},
		{"nlb needs zone maps", true, map[string]string{}, pre + "zone-maps", "required unless " + pre + "id"},
		{"nlb reused needs no zone maps", true, map[string]string{pre + "id": "nlb-1"}, "", ""},
		{"nlb bad zone maps reported once", true, map[string]string{pre + "zone-maps": "z1:vsw-1"}, pre + "zone-maps", "2–10"},
		{"tcpssl needs cert", true, map[string]string{pre + "id": "nlb-1", pre + "protocol-port": "tcpssl:443"}, pre + "protocol-port", "requires " + pre + "cert-id"},
		{"cacert needs ids", true, map[string]string{pre + "id": "nlb-1", pre + "cacert": "on"}, pre + "cacert", "cacert-id"},
		{"alpn needs policy", true, map[string]string{pre + "id": "nlb-1", pre + "alpn": "on"}, pre + "alpn", "alpn-policy"},
		{"port range needs eni", true, map[string]string{pre + "id": "nlb-1", pre + "listener-port-range": "1-2:80"}, pre + "listener-port-range", "backend-type: eni"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := service(tc.ann)
			if tc.nlb {
				svc = nlbService(tc.ann)
			}
			_, err := annotations.Parse(svc, annotations.Defaults{})
			if tc.accepted == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var inv *annotations.InvalidError
			if !errors.As(err, &inv) || len(inv.Problems) != 1 {
				t.Fatalf("err = %v, want one problem", err)
			}
			if p := inv.Problems[0]; p.Key != tc.key || !strings.Contains(p.Accepted, tc.accepted) || p.Value != tc.ann[tc.key] {
				t.Errorf("problem %+v, want key %s accepted ~ %q", p, tc.key, tc.accepted)
			}
		})
	}
}

func TestSCTPPortRejected(t *testing.T) {
	svc := service(nil)
	svc.Spec.Ports[2].Protocol = corev1.ProtocolSCTP
	_, err := annotations.Parse(svc, annotations.Defaults{})
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) || inv.Problems[0].Key != "spec.ports[2].protocol" || inv.Problems[0].Value != "SCTP" {
		t.Fatalf("err = %v", err)
	}
}

func TestParseOwnerSelection(t *testing.T) {
	gone := service(map[string]string{pre + "zone-maps": zones})
	gone.Spec.Type = corev1.ServiceTypeClusterIP
	gone.Finalizers = []string{"service.k8s.alibaba/nlb"}
	cases := []struct {
		name string
		svc  *corev1.Service
		d    annotations.Defaults
		want annotations.Owner
	}{
		{"class", nlbService(map[string]string{pre + "id": "nlb-1"}), annotations.Defaults{}, annotations.OwnerNLB},
		{"default clb", service(nil), annotations.Defaults{}, annotations.OwnerCLB},
		{"forced", service(map[string]string{pre + "id": "nlb-1"}), annotations.Defaults{Owner: annotations.OwnerNLB}, annotations.OwnerNLB},
		{"type annotation with gate", service(map[string]string{annotations.LoadBalancerTypeKey: "nlb", pre + "id": "nlb-1"}), annotations.Defaults{LoadBalancerTypeAnnotation: true}, annotations.OwnerNLB},
		{"cleanup follows finalizer", gone, annotations.Defaults{}, annotations.OwnerNLB},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := annotations.Parse(tc.svc, tc.d)
			if err != nil || s.Owner != tc.want {
				t.Fatalf("owner %v err %v, want %v", s.Owner, err, tc.want)
			}
		})
	}
	if _, err := annotations.Parse(nil, annotations.Defaults{}); err == nil {
		t.Error("nil Service accepted")
	}
}
