package naming_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/config"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

func svc() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1b9a9c4e-2f1d-4c56-9e5b-7a1a0c3d2e4f",
			Annotations: map[string]string{"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-spec": "slb.s1.small"}},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func TestDefaultClusterIDMatchesConfig(t *testing.T) {
	if naming.DefaultClusterID != config.DefaultClusterID {
		t.Fatal("naming and config disagree on the default cluster id")
	}
	if naming.ClusterID("") != "clusterid" || naming.ClusterID("c1") != "c1" {
		t.Fatal("ClusterID")
	}
}

func TestDefaultLBNameAndTags(t *testing.T) {
	s := svc()
	if got := naming.DefaultLBName(s); got != "a1b9a9c4e2f1d4c569e5b7a1a0c3d2e4" || len(got) != 32 {
		t.Errorf("DefaultLBName = %q", got)
	}
	s.UID = "ab-c"
	if got := naming.DefaultLBName(s); got != "aabc" {
		t.Errorf("short uid: %q", got)
	}
	tags := naming.DefaultTags(svc(), "")
	want := []naming.Tag{{Key: "kubernetes.do.not.delete", Value: "a1b9a9c4e2f1d4c569e5b7a1a0c3d2e4"}, {Key: "ack.aliyun.com", Value: "clusterid"}}
	if len(tags) != 2 || tags[0] != want[0] || tags[1] != want[1] {
		t.Errorf("tags %v", tags)
	}
	if naming.ReusedTag() != (naming.Tag{Key: "kubernetes.reused.by.user", Value: "true"}) {
		t.Error("reused tag")
	}
	if naming.NLBSecurityGroupName("a1b2") != "k8s-nlb-a1b2" {
		t.Error("sg name")
	}
}

func TestNamesRoundTrip(t *testing.T) {
	ref := naming.For(svc(), "")
	other := naming.Ref{ClusterID: "c-prod.1", Namespace: "shop", Name: "web"}
	cases := []struct {
		name     string
		got      string
		want     string
		nlb      bool
		ref      naming.Ref
		port     string
		protocol string
	}{
		{"clb listener", ref.CLBListener(80), "k8s/80/web/shop/clusterid", false, ref, "80", ""},
		{"clb vgroup nodePort", ref.CLBVGroup("30080"), "k8s/30080/web/shop/clusterid", false, ref, "30080", ""},
		{"clb vgroup named targetPort", ref.CLBVGroup("web-tls"), "k8s/web-tls/web/shop/clusterid", false, ref, "web-tls", ""},
		{"nlb listener", ref.NLBListener(443, "tcpssl"), "k8s.443.TCPSSL.web.shop.clusterid", true, ref, "443", "TCPSSL"},
		{"nlb listener range", ref.NLBListenerRange(1000, 2000, "tcp"), "k8s.1000_2000.TCP.web.shop.clusterid", true, ref, "1000_2000", "TCP"},
		{"nlb server group", ref.NLBServerGroup("30053", "UDP"), "k8s.30053.UDP.web.shop.clusterid", true, ref, "30053", "UDP"},
		{"nlb server group range", ref.NLBServerGroupRange(5, 6, "udp"), "k8s.5_6.UDP.web.shop.clusterid", true, ref, "5_6", "UDP"},
		{"cluster id with dots", other.NLBListener(80, "TCP"), "k8s.80.TCP.web.shop.c-prod.1", true, other, "80", "TCP"},
		{"cluster id with slash", naming.Ref{ClusterID: "a/b", Namespace: "n", Name: "s"}.CLBListener(1), "k8s/1/s/n/a/b", false, naming.Ref{ClusterID: "a/b", Namespace: "n", Name: "s"}, "1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("name = %q, want %q", tc.got, tc.want)
			}
			owns, parse := tc.ref.OwnsCLB, naming.ParseCLB
			if tc.nlb {
				owns, parse = tc.ref.OwnsNLB, naming.ParseNLB
			}
			p, ok := owns(tc.got)
			if !ok || p.Port != tc.port || p.Protocol != tc.protocol || p.Ref != (naming.Ref{ClusterID: naming.ClusterID(tc.ref.ClusterID), Namespace: tc.ref.Namespace, Name: tc.ref.Name}) {
				t.Errorf("owns = %+v %v", p, ok)
			}
			if _, ok := parse(tc.got); !ok {
				t.Error("does not parse")
			}
		})
	}
	p, _ := naming.ParseNLB("k8s.1000_2000.TCP.web.shop.c")
	if lo, hi, ok := p.PortRange(); !ok || lo != 1000 || hi != 2000 {
		t.Errorf("range %d-%d %v", lo, hi, ok)
	}
	if _, _, ok := (naming.Parsed{Port: "80"}).PortRange(); ok {
		t.Error("80 is not a range")
	}
}

func TestOwnershipNegatives(t *testing.T) {
	ref := naming.Ref{ClusterID: "c1", Namespace: "shop", Name: "web"}
	clb := []string{
		"", "my listener", "k8s/80/web/shop", "k8s/80/web/shop/c2", "k8s/80/web/other/c1", "k8s/80/api/shop/c1",
		"K8S/80/web/shop/c1", "k8s/0/web/shop/c1", "k8s/65536/web/shop/c1", "k8s/080/web/shop/c1", "k8s/-1/web/shop/c1",
		"k8s/80/Web/shop/c1", "k8s/80/web/shop/", "k8s/80//shop/c1", "k8s.80.TCP.web.shop.c1", "k8s/not a port/web/shop/c1",
	}
	for _, name := range clb {
		if p, ok := ref.OwnsCLB(name); ok {
			t.Errorf("OwnsCLB(%q) = %+v", name, p)
		}
	}
	nlb := []string{
		"", "k8s.80.TCP.web.shop", "k8s.80.tcp.web.shop.c1", "k8s.80.HTTP.web.shop.c1", "k8s.80.TCP.web.shop.c2",
		"k8s.80.TCP.web.other.c1", "k8s.80.TCP.api.shop.c1", "k8s.2000_1000.TCP.web.shop.c1", "k8s.0.TCP.web.shop.c1",
		"k8s/80/web/shop/c1", "x8s.80.TCP.web.shop.c1", "k8s.80.TCP.web.shop.",
	}
	for _, name := range nlb {
		if p, ok := ref.OwnsNLB(name); ok {
			t.Errorf("OwnsNLB(%q) = %+v", name, p)
		}
	}
	// Parses, but another cluster's: parse succeeds, ownership does not.
	if _, ok := naming.ParseCLB("k8s/80/web/shop/c2"); !ok {
		t.Error("well-formed foreign name must parse")
	}
	// An empty ClusterID in the Ref means the default literal.
	if _, ok := (naming.Ref{Namespace: "shop", Name: "web"}).OwnsCLB("k8s/80/web/shop/clusterid"); !ok {
		t.Error("default cluster id not matched")
	}
}

func TestHash(t *testing.T) {
	base := naming.Hash(svc())
	if len(base) != 56 || base != naming.Hash(svc()) {
		t.Fatalf("hash %q not stable or wrong length", base)
	}
	mutate := map[string]func(s *corev1.Service){
		"annotation value": func(s *corev1.Service) {
			s.Annotations["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-spec"] = "slb.s2.small"
		},
		"annotation added": func(s *corev1.Service) { s.Annotations["x"] = "" },
		"port":             func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 },
		"node port":        func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30081 },
		"type":             func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort },
		"traffic policy":   func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal },
		"class":            func(s *corev1.Service) { c := "alibabacloud.com/nlb"; s.Spec.LoadBalancerClass = &c },
		"deletion":         func(s *corev1.Service) { s.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000000, 0)} },
		"source ranges":    func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} },
	}
	for name, m := range mutate {
		s := svc()
		m(s)
		if naming.Hash(s) == base {
			t.Errorf("%s: hash unchanged", name)
		}
	}
	same := map[string]func(s *corev1.Service){
		"labels":              func(s *corev1.Service) { s.Labels = map[string]string{naming.LabelHash: "x"} },
		"status":              func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}} },
		"finalizers":          func(s *corev1.Service) { s.Finalizers = []string{naming.FinalizerCLB} },
		"empty source ranges": func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{} },
		"resource version":    func(s *corev1.Service) { s.ResourceVersion = "42" },
	}
	for name, m := range same {
		s := svc()
		m(s)
		if naming.Hash(s) != base {
			t.Errorf("%s: hash changed", name)
		}
	}
	// Map iteration order must not matter.
	a, b := svc(), svc()
	for i := 0; i < 20; i++ {
		a.Annotations[string(rune('a'+i))] = "v"
	}
	for i := 19; i >= 0; i-- {
		b.Annotations[string(rune('a'+i))] = "v"
	}
	if naming.Hash(a) != naming.Hash(b) {
		t.Error("annotation order changed the hash")
	}
	s := svc()
	if !naming.HashChanged(s) {
		t.Error("missing label must count as changed")
	}
	s.Labels = map[string]string{naming.LabelHash: naming.Hash(s)}
	if naming.HashChanged(s) {
		t.Error("label equal to hash reported as changed")
	}
}

func TestConstants(t *testing.T) {
	got := []string{naming.FinalizerCLB, naming.FinalizerNLB, naming.LabelHash, naming.LabelLoadBalancerID, naming.LabelSecurityGroupID, naming.LabelBackendsHash}
	want := []string{"service.k8s.alibaba/resources", "service.k8s.alibaba/nlb", "service.beta.kubernetes.io/hash", "service.k8s.alibaba/loadbalancer-id", "service.k8s.alibaba/security-group-id", "service.k8s.alibaba/backends-hash"}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%q != %q", got[i], want[i])
		}
	}
}

func TestPlanTags(t *testing.T) {
	tags := func(kv ...string) []naming.Tag {
		var out []naming.Tag
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, naming.Tag{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	long := strings.Repeat("k", 70)
	for _, tc := range []struct {
		name    string
		current map[string]string
		want    []naming.Tag
		own     bool
		set     []naming.Tag
		remove  []string
	}{
		{"create record", map[string]string{naming.TagKeyDefaultName: "a1"}, tags("k1", "v1", "k2", "v2"), true,
			tags("k1", "v1", "k2", "v2", naming.TagKeyManaged, "k1,k2"), nil},
		{"converged", map[string]string{"k1": "v1", naming.TagKeyManaged: "k1"}, tags("k1", "v1"), true, nil, nil},
		{"dropped key removed, console tag kept", map[string]string{"k1": "v1", "k2": "v2", "console": "x", naming.TagKeyManaged: "k1,k2"}, tags("k1", "v1b"), true,
			tags("k1", "v1b", naming.TagKeyManaged, "k1"), []string{"k2"}},
		{"annotation gone", map[string]string{"k1": "v1", "console": "x", naming.TagKeyManaged: "k1", naming.TagKeyCluster: "c"}, nil, true,
			nil, []string{"k1", naming.TagKeyManaged}},
		{"never system keys", map[string]string{naming.TagKeyCluster: "c", "acs:x": "y", naming.TagKeyManaged: naming.TagKeyCluster + ",acs:x"}, nil, true,
			nil, []string{naming.TagKeyManaged}},
		{"already gone key not removed", map[string]string{naming.TagKeyManaged: "k9"}, nil, true, nil, []string{naming.TagKeyManaged}},
		{"reused: add only", map[string]string{"k2": "v2", naming.TagKeyManaged: "k2"}, tags("k1", "v1", naming.TagKeyReused, "true"), false,
			tags("k1", "v1", naming.TagKeyReused, "true"), nil},
		{"record too long: no tracking", map[string]string{}, tags(long, "1", long+"2", "2"), true, tags(long, "1", long+"2", "2"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, remove := naming.PlanTags(tc.current, tc.want, tc.own)
			if !reflect.DeepEqual(set, tc.set) || !reflect.DeepEqual(remove, tc.remove) {
				t.Fatalf("naming.PlanTags = %v, %v; want %v, %v", set, remove, tc.set, tc.remove)
			}
		})
	}
}
