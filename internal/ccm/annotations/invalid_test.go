package annotations_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// parseInvalid parses a CLB (or NLB) Service and requires an *InvalidError.
func parseInvalid(t *testing.T, nlb bool, ann map[string]string) (*annotations.Settings, *annotations.InvalidError) {
	t.Helper()
	svc := service(ann)
	if nlb {
		svc = nlbService(ann)
	}
	s, err := annotations.Parse(svc, annotations.Defaults{})
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("err = %v, want *InvalidError", err)
	}
	if s == nil {
		t.Fatal("no partial settings")
	}
	return s, inv
}

func TestMessageTruncatesLongValues(t *testing.T) {
	long := strings.Repeat("x", 5000)
	wide := strings.Repeat("界", 5000)
	cases := []struct {
		name  string
		key   string
		val   string
		cut   string // the first MaxValueChars characters of the echoed text
		total int    // its length in characters
	}{
		{"whole value", pre + "name", long, long[:256], 5000},
		{"multi-byte value", pre + "name", wide, strings.Repeat("界", 256), 5000},
		{"list element", pre + "additional-resource-tags", "a=1,k=" + long, "k=" + long[:254], 5002},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, inv := parseInvalid(t, false, map[string]string{tc.key: tc.val})
			if len(inv.Problems) != 1 || inv.Problems[0].Value != tc.val {
				t.Fatalf("problems %+v: the whole value must be kept", inv.Problems)
			}
			msg := inv.Error()
			want := fmt.Sprintf("%q…(truncated, %d chars)", tc.cut, tc.total)
			if !strings.Contains(msg, want) {
				t.Errorf("message %q lacks %q", msg, want)
			}
			if len(msg) > annotations.MaxMessageBytes || !utf8.ValidString(msg) {
				t.Errorf("message of %d bytes (valid UTF-8: %v)", len(msg), utf8.ValidString(msg))
			}
		})
	}
}

func TestListElementProblems(t *testing.T) {
	cases := []struct {
		key, value string
		nlb        bool
		index      int
		element    string
		reason     string // substring of Problem.Reason
	}{
		{pre + "additional-resource-tags", "k1=v1,k2,=v", false, 3, "=v", "a tag key is required"},
		{pre + "additional-resource-tags", "k1=v1,,=v", false, 3, "=v", "a tag key is required"},
		{pre + "additional-resource-tags", "a=1,b=2,a=3", false, 3, "a=3", "repeats the key of element 1"},
		{pre + "additional-resource-tags", "a=1,acs:x=2", false, 2, "acs:x=2", "aliyun or acs:"},
		{pre + "additional-resource-tags", "a=1,ack.aliyun.com=c", false, 2, "ack.aliyun.com=c", "controller sets the ack.aliyun.com tag"},
		{pre + "additional-resource-tags", "a=1,b=" + strings.Repeat("v", 129), false, 2, "b=" + strings.Repeat("v", 129), "value is longer than 128"},
		{pre + "zone-maps", zones + ",z3", true, 3, "z3", "a vSwitch is required"},
		{pre + "zone-maps", zones + ",z3:vsw-3:10.0.0.1:eip-1:x", true, 3, "z3:vsw-3:10.0.0.1:eip-1:x", "more than 4"},
		{pre + "zone-maps", "z1:vsw-1,z2:vsw-2:fe80::1", true, 2, "z2:vsw-2:fe80::1", "more than 4"},
		{pre + "zone-maps", "z1:vsw-1,z2:vsw-2:10.0.0.300", true, 2, "z2:vsw-2:10.0.0.300", "not an IPv4 address"},
		{pre + "zone-maps", "z1:vsw-1,z2:subnet-2", true, 2, "z2:subnet-2", "vSwitch id does not start with vsw-"},
		{pre + "zone-maps", "z1:vsw-1,z1:vsw-2", true, 2, "z1:vsw-2", "repeats the zone of element 1"},
		{pre + "zone-maps", "z1:vsw-1,z2:vsw-2::alloc-2", true, 2, "z2:vsw-2::alloc-2", "EIP allocation id does not start with eip-"},
		{pre + "domain-extensions", "a.example.com:c1,b.example.com", false, 2, "b.example.com", "a certificate id is required"},
		{pre + "domain-extensions", "a.example.com:c1,bad_domain:c2", false, 2, "bad_domain:c2", "not a DNS name"},
		{pre + "domain-extensions", "a.example.com:c1,a.example.com:c2", false, 2, "a.example.com:c2", "repeats the domain of element 1"},
		{pre + "vgroup-port", "rsp-a:80,rsp-b:81", false, 2, "rsp-b:81", "port 81 is not a Service port"},
		{pre + "vgroup-port", "rsp-a:80,sgp-b:443", false, 2, "sgp-b:443", "group id does not start with rsp-"},
		{pre + "vgroup-port", "rsp-a:80,rsp-b:80", false, 2, "rsp-b:80", "port 80 is already given by element 1"},
		{pre + "vgroup-port", "rsp-a:80,rsp-b", false, 2, "rsp-b", "expected rsp-…:port"},
		{pre + "vgroup-port", "sgp-a:80,sgp-b:4294967376", true, 2, "sgp-b:4294967376", "not a Service port"},
		{pre + "security-group-ids", "sg-1,sg-2,default", true, 3, "default", "id does not start with sg-"},
		{pre + "security-group-ids", "sg-1,sg-1", true, 2, "sg-1", "repeats the id of element 1"},
		{pre + "cert-id", "c1,c 2", true, 2, "c 2", "no blanks"},
		{pre + "additional-cert-ids", "c1,c2,c1", true, 3, "c1", "repeats the id of element 1"},
		{pre + "cacert-id", "ca1,ca=2", true, 2, "ca=2", "no blanks, ':' or '='"},
		{pre + "protocol-port", "http:80,ftp:443", false, 2, "ftp:443", "not one of tcp, udp, http, https"},
		{pre + "protocol-port", "https:443,udp:53,tcp:8080", false, 3, "tcp:8080", "port 8080 is not a Service port"},
		{pre + "protocol-port", "tcp:80,tcp:x", false, 2, "tcp:x", "not a number"},
		{pre + "protocol-port", "tcp:80,tcp:", false, 2, "tcp:", "a port is required"},
		{pre + "protocol-port", "tcp:80,tcp:53", true, 2, "tcp:53", "port 53 is UDP in the Service"},
		{pre + "health-check-httpcode", "http_2xx,http_6xx", false, 2, "http_6xx", "not a status class"},
		{pre + "health-check-httpcode", "http_2xx,HTTP_2XX", false, 2, "HTTP_2XX", "repeats the class of element 1"},
		{pre + "backend-label", "pool=web,zone", false, 2, "zone", "a value is required"},
		{pre + "backend-label", "pool=web,-bad=x", false, 2, "-bad=x", "not a label key"},
		{pre + "backend-label", "pool=web,zone=a b", false, 2, "zone=a b", "not a label value"},
		{pre + "backend-label", "pool=web,pool=api", false, 2, "pool=api", "repeats the key of element 1"},
		{pre + "forward-port", "80:443,443", false, 2, "443", "expected httpPort:httpsPort"},
		{pre + "forward-port", "80:80", false, 1, "80:80", "cannot forward to itself"},
		{pre + "forward-port", "80:443,80:8443", false, 2, "80:8443", "port 8443 is not a Service port"},
		{pre + "listener-port-range", "1000-2000:80,3000:443", true, 2, "3000:443", "not start-end"},
		{pre + "listener-port-range", "1000-2000:80,3000-x:443", true, 2, "3000-x:443", "not numbers"},
		{pre + "listener-port-range", "1000-2000:80,3000-2000:443", true, 2, "3000-2000:443", "starts after it ends"},
		{pre + "listener-port-range", "1000-2000:80,0-10:443", true, 2, "0-10:443", "within 1–65535"},
		{pre + "listener-port-range", "1000-2000:80,3000-4000:80", true, 2, "3000-4000:80", "port 80 is already given by element 1"},
	}
	for _, tc := range cases {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			ann := map[string]string{tc.key: tc.value}
			if tc.nlb {
				if tc.key != pre+"zone-maps" {
					ann[pre+"id"] = "nlb-1"
				}
				// A range needs eni backends; keep that rule out of the way.
				ann[annotations.BackendTypeKey] = "eni"
			}
			_, inv := parseInvalid(t, tc.nlb, ann)
			if len(inv.Problems) != 1 {
				t.Fatalf("problems = %+v, want exactly one", inv.Problems)
			}
			p := inv.Problems[0]
			if p.Key != tc.key || p.Value != tc.value || p.Index != tc.index || p.Element != tc.element || !strings.Contains(p.Reason, tc.reason) {
				t.Errorf("problem = %+v, want element %d %q because ~ %q", p, tc.index, tc.element, tc.reason)
			}
			want := fmt.Sprintf("%s: element %d %q is invalid: ", tc.key, tc.index, tc.element)
			if !strings.Contains(inv.Error(), want) || !strings.Contains(inv.Error(), "(accepted: "+p.Accepted+")") {
				t.Errorf("message %q lacks %q and the accepted values", inv.Error(), want)
			}
		})
	}
}

func TestListProblemMessage(t *testing.T) {
	_, inv := parseInvalid(t, false, map[string]string{pre + "additional-resource-tags": "k1=v1,k2,=v"})
	want := `invalid Service annotation: service.beta.kubernetes.io/alibaba-cloud-loadbalancer-additional-resource-tags: element 3 "=v" is invalid: a tag key is required (accepted: k1=v1,k2=v2,k3 (keys 1–64 characters, unique, not starting with aliyun or acs:, not kubernetes.do.not.delete or ack.aliyun.com; values up to 128; at most 20))`
	if got := inv.Error(); got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
}

func TestEveryBadElementIsReported(t *testing.T) {
	s, inv := parseInvalid(t, false, map[string]string{
		pre + "protocol-port": "http:80, ftp:443,udp:53,tcp:9", pre + "backend-label": "a=1,b,c=3,d",
	})
	type at struct {
		key   string
		index int
	}
	var got []at
	for _, p := range inv.Problems {
		got = append(got, at{p.Key, p.Index})
	}
	want := []at{{pre + "backend-label", 2}, {pre + "backend-label", 4}, {pre + "protocol-port", 2}, {pre + "protocol-port", 4}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems at %v, want %v", got, want)
	}
	// A list with a bad element is not applied in part.
	if s.Backend.Labels != nil {
		t.Errorf("labels %v applied in part", s.Backend.Labels)
	}
	for _, p := range s.Ports {
		if p.ProtocolFromAnnotation {
			t.Errorf("port %d protocol %s applied in part", p.Port, p.Protocol)
		}
	}
}

func TestSingleIDGivenAList(t *testing.T) {
	_, inv := parseInvalid(t, false, map[string]string{pre + "acl-id": "acl-1,acl-2"})
	if p := inv.Problems[0]; p.Reason != "one id is accepted, not a list" {
		t.Errorf("problem %+v", p)
	}
	_, inv = parseInvalid(t, false, map[string]string{pre + "acl-id": "acl-1 2"})
	if p := inv.Problems[0]; !strings.Contains(p.Reason, "the id has characters other than") {
		t.Errorf("problem %+v", p)
	}
}

func TestMessageIsBounded(t *testing.T) {
	// 30 real problems: the first ones whole, then a count of the rest.
	ann := map[string]string{}
	for _, suffix := range []string{
		"force-override-listeners", "proxy-protocol", "connection-drain", "health-check-flag", "health-check-switch",
		"http2-enabled", "sticky-session", "xforwardedfor-proto", "xforwardedfor-slbport", "xforwardedfor-clientsrcport",
		"acl-status", "delete-protection", "ignore-weight-update", "remove-unscheduled-backend",
	} {
		ann[pre+suffix] = "maybe"
	}
	for _, suffix := range []string{
		"idle-timeout", "connection-drain-timeout", "healthy-threshold", "unhealthy-threshold", "health-check-interval",
		"health-check-connect-timeout", "weight", "default-weight", "bandwidth", "cookie-timeout", "persistence-timeout",
		"health-check-timeout", "request-timeout", "established-timeout",
	} {
		ann[pre+suffix] = "-7"
	}
	ann[pre+"spec"], ann[pre+"scheduler"] = "huge", "fastest"
	_, inv := parseInvalid(t, false, ann)
	if len(inv.Problems) != 30 {
		t.Fatalf("%d problems, want 30: %v", len(inv.Problems), inv.Problems)
	}
	checkBounded(t, inv)

	// Problems of every size, including values cut at MaxValueChars.
	synthetic := &annotations.InvalidError{}
	for i := range 30 {
		synthetic.Problems = append(synthetic.Problems, annotations.Problem{
			Key: fmt.Sprintf("%sk%d", pre, i), Value: strings.Repeat("v", i*40), Accepted: strings.Repeat("a", i),
		})
	}
	checkBounded(t, synthetic)

	// A first problem longer than the bound on its own (256 four-byte
	// characters, each escaped by %q only if unprintable: here printable).
	huge := &annotations.InvalidError{Problems: []annotations.Problem{
		{Key: pre + "name", Value: strings.Repeat("😀", 300), Accepted: "1–80 characters"},
		{Key: pre + "spec", Value: "huge", Accepted: "one of slb.s1.small"},
	}}
	msg := huge.Error()
	if len(msg) > annotations.MaxMessageBytes || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "…; and 1 more problem") {
		t.Errorf("oversized first problem: %d bytes, valid %v, %q", len(msg), utf8.ValidString(msg), msg[max(0, len(msg)-60):])
	}
}

// TestMessageBoundAtEverySize: whatever the sizes, the message fits with
// its count of left-out problems, and no problem is cut in the middle
// except a first one too long on its own.
func TestMessageBoundAtEverySize(t *testing.T) {
	for size := 850; size <= 1100; size++ {
		for n := 1; n <= 3; n++ {
			inv := &annotations.InvalidError{Problems: []annotations.Problem{{Key: "k0", Value: "v", Accepted: strings.Repeat("a", size)}}}
			for i := 1; i < n; i++ {
				inv.Problems = append(inv.Problems, annotations.Problem{Key: fmt.Sprintf("k%d", i), Value: "v", Accepted: "b"})
			}
			msg := inv.Error()
			if len(msg) > annotations.MaxMessageBytes {
				t.Fatalf("size %d, %d problems: %d bytes", size, n, len(msg))
			}
			if first := inv.Problems[0].String(); !strings.Contains(msg, first) && !strings.Contains(msg, "…"+moreProblems(n-1)) {
				t.Fatalf("size %d, %d problems: first neither whole nor marked cut: %q", size, n, msg[len(msg)-40:])
			}
		}
	}
}

// checkBounded asserts the message fits, shows whole problems in order
// from the first (those affecting backends first), and counts the ones it
// leaves out.
func checkBounded(t *testing.T, inv *annotations.InvalidError) {
	t.Helper()
	msg := inv.Error()
	inv = &annotations.InvalidError{Problems: backendsFirst(inv.Problems)}
	if len(msg) > annotations.MaxMessageBytes || !utf8.ValidString(msg) {
		t.Fatalf("message of %d bytes (valid UTF-8: %v)", len(msg), utf8.ValidString(msg))
	}
	body, ok := strings.CutPrefix(msg, "invalid Service annotations: ")
	if !ok {
		t.Fatalf("message %q", msg)
	}
	shown := 0
	for _, p := range inv.Problems {
		s := p.String()
		if shown > 0 {
			s = "; " + s
		}
		if !strings.HasPrefix(body, s) {
			break
		}
		body = body[len(s):]
		shown++
	}
	if shown == 0 || shown == len(inv.Problems) {
		t.Fatalf("%d of %d problems shown: %q", shown, len(inv.Problems), msg)
	}
	if want := moreProblems(len(inv.Problems) - shown); body != want {
		t.Errorf("message ends %q, want %q", body, want)
	}
	// The cut is as late as it can be: one more problem would not fit.
	if next := len(msg) - len(body) + len("; ") + len(inv.Problems[shown].String()); next <= annotations.MaxMessageBytes-len(moreProblems(len(inv.Problems)-shown-1)) {
		t.Errorf("problem %d would have fitted", shown)
	}
}

// backendsFirst orders problems as the message shows them.
func backendsFirst(ps []annotations.Problem) []annotations.Problem {
	var first, rest []annotations.Problem
	for _, p := range ps {
		if p.AffectsBackends {
			first = append(first, p)
		} else {
			rest = append(rest, p)
		}
	}
	return append(first, rest...)
}

// moreProblems is the tail of a message that leaves n problems out.
func moreProblems(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; and 1 more problem"
	}
	return fmt.Sprintf("; and %d more problems", n)
}

func TestShortMessagesAreWhole(t *testing.T) {
	_, inv := parseInvalid(t, false, map[string]string{pre + "spec": "huge", pre + "bandwidth": "0", pre + "weight": "x"})
	ps := inv.Problems
	if len(ps) != 3 || ps[2].Key != pre+"weight" {
		t.Fatalf("problems %+v", ps)
	}
	// The weight problem stops backends too, so it is named first.
	want := "invalid Service annotations: " + ps[2].String() + "; " + ps[0].String() + "; " + ps[1].String()
	if inv.Error() != want {
		t.Errorf("message %q, want %q", inv.Error(), want)
	}
}

func TestBackendsUsable(t *testing.T) {
	cases := []struct {
		name   string
		nlb    bool
		ann    map[string]string
		usable bool
	}{
		{"bandwidth", false, map[string]string{pre + "bandwidth": "0"}, true},
		{"health-check-interval", false, map[string]string{pre + "health-check-interval": "99"}, true},
		{"spec", false, map[string]string{pre + "spec": "slb.s9.huge"}, true},
		{"scheduler", false, map[string]string{pre + "scheduler": "fastest"}, true},
		{"tags element", false, map[string]string{pre + "additional-resource-tags": "a=1,=v"}, true},
		{"hostname", false, map[string]string{pre + "hostname": "Bad_Host"}, true},
		{"force-override-listeners", false, map[string]string{pre + "id": "lb-1", pre + "force-override-listeners": "yes"}, true},
		{"backend-ip-version (parsed, not applied)", false, map[string]string{pre + "backend-ip-version": "ipv5"}, true},
		{"clb protocol-port element", false, map[string]string{pre + "protocol-port": "ftp:80"}, true},
		{"https without cert", false, map[string]string{pre + "protocol-port": "https:443"}, true},
		{"acl on without id", false, map[string]string{pre + "acl-status": "on"}, true},
		{"domain extensions without https", false, map[string]string{pre + "domain-extensions": "a.com:c"}, true},
		{"nlb scheduler", true, map[string]string{pre + "id": "nlb-1", pre + "scheduler": "hash"}, true},
		{"nlb preserve-client-ip", true, map[string]string{pre + "id": "nlb-1", pre + "preserve-client-ip": "yes"}, true},
		{"nlb zone-maps missing", true, map[string]string{}, true},
		{"nlb tcpssl without cert", true, map[string]string{pre + "id": "nlb-1", pre + "protocol-port": "tcpssl:443"}, true},
		{"nlb bad security groups", true, map[string]string{pre + "id": "nlb-1", pre + "security-group-ids": "sg-1,x"}, true},

		{"backend-label", false, map[string]string{pre + "backend-label": "pool"}, false},
		{"weight", false, map[string]string{pre + "weight": "101"}, false},
		{"default-weight", false, map[string]string{pre + "default-weight": "-1"}, false},
		{"ignore-weight-update", false, map[string]string{pre + "ignore-weight-update": "yes"}, false},
		{"remove-unscheduled-backend", false, map[string]string{pre + "remove-unscheduled-backend": "1"}, false},
		{"vgroup-port", false, map[string]string{pre + "vgroup-port": "rsp-1:81"}, false},
		{"backend-type", false, map[string]string{annotations.BackendTypeKey: "pod"}, false},
		{"id", false, map[string]string{pre + "id": "i-123"}, false},
		{"legacy weight", false, map[string]string{legacy + "weight": "x"}, false},
		{"forward-port element", false, map[string]string{pre + "forward-port": "80:81"}, false},
		{"forward-port the protocols do not allow", false, map[string]string{pre + "forward-port": "80:443"}, false},
		{"sctp port", false, nil, false},
		{"nlb protocol-port element", true, map[string]string{pre + "id": "nlb-1", pre + "protocol-port": "http:80"}, false},
		{"nlb server-group-type", true, map[string]string{pre + "id": "nlb-1", pre + "server-group-type": "eni"}, false},
		{"nlb listener-port-range element", true, map[string]string{pre + "id": "nlb-1", pre + "listener-port-range": "1-2"}, false},
		{"nlb listener-port-range without eni", true, map[string]string{pre + "id": "nlb-1", pre + "listener-port-range": "1-2:80"}, false},
		{"nlb vgroup-port", true, map[string]string{pre + "id": "nlb-1", pre + "vgroup-port": "rsp-1:80"}, false},
		{"one backend problem among others", false, map[string]string{pre + "bandwidth": "0", pre + "spec": "x", pre + "weight": "x"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := service(tc.ann)
			if tc.nlb {
				svc = nlbService(tc.ann)
			}
			if tc.name == "sctp port" {
				svc.Spec.Ports[2].Protocol = corev1.ProtocolSCTP
			}
			_, err := annotations.Parse(svc, annotations.Defaults{})
			var inv *annotations.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("err = %v, want *InvalidError", err)
			}
			if got := inv.BackendsUsable(); got != tc.usable {
				t.Errorf("BackendsUsable = %v, want %v; problems %+v", got, tc.usable, inv.Problems)
			}
		})
	}
}

// backendView is what the backend pass reads from Settings.
type backendView struct {
	Owner    annotations.Owner
	Backend  annotations.Backend
	Ports    []annotations.Port
	ID       string
	Reused   bool
	Selector string
}

func viewOf(s *annotations.Settings) backendView {
	return backendView{s.Owner, s.Backend, s.Ports, s.LoadBalancer.ID, s.Reused(), s.BackendSelector().String()}
}

func TestPartialSettingsKeepBackendFields(t *testing.T) {
	base := map[annotations.Owner]map[string]string{
		annotations.OwnerCLB: {
			pre + "id": "lb-1", pre + "backend-label": "pool=web", pre + "weight": "60", pre + "default-weight": "20",
			pre + "ignore-weight-update": "on", pre + "remove-unscheduled-backend": "on", pre + "vgroup-port": "rsp-a:53",
			annotations.BackendTypeKey: "eni", pre + "backend-ip-version": "ipv6",
			pre + "protocol-port": "http:80,https:443", pre + "cert-id": "c", pre + "forward-port": "80:443",
		},
		annotations.OwnerNLB: {
			pre + "id": "nlb-1", pre + "backend-label": "pool=web", pre + "weight": "60", pre + "default-weight": "20",
			pre + "ignore-weight-update": "on", pre + "remove-unscheduled-backend": "on", pre + "vgroup-port": "sgp-a:53",
			annotations.BackendTypeKey: "eni", pre + "server-group-type": "ip", pre + "preserve-client-ip": "on",
			pre + "protocol-port": "tcpssl:443", pre + "cert-id": "c1", pre + "listener-port-range": "1000-2000:80",
		},
	}
	bad := map[annotations.Owner]map[string]string{
		annotations.OwnerCLB: {
			pre + "bandwidth": "0", pre + "health-check-interval": "0", pre + "spec": "huge", pre + "name": strings.Repeat("n", 81),
			pre + "additional-resource-tags": "a=1,=v", pre + "scheduler": "x", pre + "health-check-httpcode": "http_2xx,x",
			pre + "domain-extensions": "a.com", pre + "acl-id": "acl-1,acl-2", pre + "hostname": "Bad_Host",
			pre + "force-override-listeners": "yes", pre + "tls-cipher-policy": "x", pre + "sticky-session": "maybe",
			pre + "backend-ip-version": "ipv5", pre + "delete-protection": "x", pre + "vswitch-id": "v",
		},
		annotations.OwnerNLB: {
			pre + "zone-maps": "z1", pre + "security-group-ids": "sg-1,x", pre + "scheduler": "x",
			pre + "health-check-interval": "0", pre + "preserve-client-ip": "yes", pre + "cps": "-1",
			pre + "cacert-id": "a,a", pre + "alpn-policy": "x", pre + "connection-drain-timeout": "901",
			pre + "idle-timeout": "0", pre + "ip-version": "ipv6",
		},
	}
	for _, owner := range []annotations.Owner{annotations.OwnerCLB, annotations.OwnerNLB} {
		for key, value := range bad[owner] {
			t.Run(owner.String()+"/"+key, func(t *testing.T) {
				// The same Service without the bad annotation, and with it.
				good, withBad := map[string]string{}, map[string]string{key: value}
				for k, v := range base[owner] {
					if k != key {
						good[k], withBad[k] = v, v
					}
				}
				want, err := annotations.Parse(service(good), annotations.Defaults{Owner: owner})
				if err != nil {
					t.Fatalf("base: %v", err)
				}
				got, err := annotations.Parse(service(withBad), annotations.Defaults{Owner: owner})
				var inv *annotations.InvalidError
				if !errors.As(err, &inv) || !inv.BackendsUsable() {
					t.Fatalf("err = %v, want a problem outside the backends", err)
				}
				if !reflect.DeepEqual(viewOf(got), viewOf(want)) {
					t.Errorf("backend fields differ\n got %+v\nwant %+v", viewOf(got), viewOf(want))
				}
			})
		}
	}
}

// TestRegistryBackendsMatchProblems: the registry's Backends mark (shown in
// the docs) is what a syntax problem of that key reports.
func TestRegistryBackendsMatchProblems(t *testing.T) {
	for _, owner := range []annotations.Owner{annotations.OwnerCLB, annotations.OwnerNLB} {
		for _, a := range annotations.Registry {
			if a.Scope == annotations.ScopeRouting || !scopeHas(a.Scope, owner) || a.Kind == annotations.KindPresence || a.Kind == annotations.KindString {
				continue
			}
			// Control characters, blanks, ':' and '=', too long for a name:
			// invalid for every key that validates at all.
			ann := map[string]string{a.Key: strings.Repeat("\x01 :=", 60)}
			if owner == annotations.OwnerNLB && a.Suffix() != "id" {
				ann[pre+"id"] = "nlb-1"
			}
			s := service(ann)
			_, err := annotations.Parse(s, annotations.Defaults{Owner: owner})
			var inv *annotations.InvalidError
			if !errors.As(err, &inv) {
				t.Errorf("%s %s: err = %v", owner, a.Key, err)
				continue
			}
			found := false
			for _, p := range inv.Problems {
				if p.Key != a.Key {
					continue
				}
				found = true
				if p.AffectsBackends != a.Backends {
					t.Errorf("%s %s: problem affects backends %v, registry says %v", owner, a.Key, p.AffectsBackends, a.Backends)
				}
			}
			if !found {
				t.Errorf("%s %s: no problem reported: %v", owner, a.Key, inv.Problems)
			}
		}
	}
}
