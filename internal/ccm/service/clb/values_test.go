package clb

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	emuapi "github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// valueCertID is the seeded server certificate HTTPS listeners use.
const valueCertID = "1234567890123456_18f0000000a_1714763408_709981430"

// listenerCall is the SDK's create action of each listener protocol.
var listenerCall = map[annotations.Protocol]func() (requests.AcsRequest, responses.AcsResponse){
	annotations.ProtocolTCP: func() (requests.AcsRequest, responses.AcsResponse) {
		return slb.CreateCreateLoadBalancerTCPListenerRequest(), slb.CreateCreateLoadBalancerTCPListenerResponse()
	},
	annotations.ProtocolUDP: func() (requests.AcsRequest, responses.AcsResponse) {
		return slb.CreateCreateLoadBalancerUDPListenerRequest(), slb.CreateCreateLoadBalancerUDPListenerResponse()
	},
	annotations.ProtocolHTTP: func() (requests.AcsRequest, responses.AcsResponse) {
		return slb.CreateCreateLoadBalancerHTTPListenerRequest(), slb.CreateCreateLoadBalancerHTTPListenerResponse()
	},
	annotations.ProtocolHTTPS: func() (requests.AcsRequest, responses.AcsResponse) {
		return slb.CreateCreateLoadBalancerHTTPSListenerRequest(), slb.CreateCreateLoadBalancerHTTPSListenerResponse()
	},
}

// candidates are the values tried for an annotation: every enumerated
// value and a few the parser must refuse (the ones the API dropped or
// never had among them), or a range's bounds and their neighbours.
func candidates(a annotations.Annotation) []string {
	if a.Kind == annotations.KindEnum {
		return append(append([]string(nil), a.Values...), "wlc", "qch", "bogus")
	}
	return []string{strconv.Itoa(a.Min - 1), strconv.Itoa(a.Min), strconv.Itoa((a.Min + a.Max) / 2), strconv.Itoa(a.Max), strconv.Itoa(a.Max + 1)}
}

// valueService is a CLB Service with one port of protocol and ann.
func valueService(proto annotations.Protocol, ann map[string]string) *corev1.Service {
	ann = maps.Clone(ann)
	if ann == nil {
		ann = map[string]string{}
	}
	port := corev1.ServicePort{Name: "p", Port: 80, NodePort: 30080, TargetPort: intstr.FromInt(8080), Protocol: corev1.ProtocolTCP}
	switch proto {
	case annotations.ProtocolUDP:
		port.Protocol = corev1.ProtocolUDP
	case annotations.ProtocolHTTP:
		ann[annotations.Key("protocol-port")] = "http:80"
	case annotations.ProtocolHTTPS:
		ann[annotations.Key("protocol-port")] = "https:80"
		ann[annotations.Key("cert-id")] = valueCertID
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Annotations: ann},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{port}},
	}
}

// TestAnnotationValuesMatchTheEmulator crosses the annotation parser's
// enumerated and ranged listener values with the emulated CLB's validation
// of the listener call each becomes, per listener protocol: a value the
// parser accepts must create the listener (through listenerSettings, as
// the CCM sends it), so a value the emulator refuses must be one the
// parser refuses (an InvalidAnnotation event, not a listener that is
// retried forever).
func TestAnnotationValuesMatchTheEmulator(t *testing.T) {
	env := emulatortest.Start(t)
	env.Seed(t, &emuapi.Seed{
		VPCs:         []emuapi.SeedVPC{{ID: "vpc-values", CIDRBlock: "192.168.0.0/16", VSwitches: []emuapi.SeedVSwitch{{ID: "vsw-values", ZoneID: "cn-hangzhou-h", CIDRBlock: "192.168.0.0/24"}}}},
		Certificates: []emuapi.SeedCertificate{{ID: valueCertID, Name: "values", Domain: "www.example.com"}},
	})
	// Every crossed value gets a listener of its own on one load balancer.
	if err := env.Emulator.Store.Settings().SetQuota(store.QuotaSLBListenersPerLB, 1000); err != nil {
		t.Fatal(err)
	}
	c := env.SLB(t)
	lbReq := slb.CreateCreateLoadBalancerRequest()
	lbReq.LoadBalancerName = "values"
	lb, err := c.CreateLoadBalancer(lbReq)
	if err != nil {
		t.Fatal(err)
	}
	nextPort := 1000
	create := func(proto annotations.Protocol, params map[string]string) error {
		req, resp := listenerCall[proto]()
		q := req.GetQueryParams()
		maps.Copy(q, params)
		nextPort++
		q["LoadBalancerId"], q["ListenerPort"], q["BackendServerPort"] = lb.LoadBalancerId, strconv.Itoa(nextPort), "30080"
		return c.DoAction(req, resp)
	}

	crossed := 0
	for _, a := range annotations.Registry {
		if a.Scope == annotations.ScopeNLB || a.Backends || (a.Kind != annotations.KindEnum && a.Kind != annotations.KindInt) {
			continue
		}
		suffix := strings.TrimPrefix(a.Key, annotations.Prefix)
		for proto := range listenerCall {
			// The parameter the annotation becomes on this protocol's
			// listener, found from its first value's listener settings.
			param := ""
			for _, v := range candidates(a) {
				s, perr := annotations.Parse(valueService(proto, map[string]string{a.Key: v}), annotations.Defaults{})
				if perr != nil {
					continue
				}
				base, _ := annotations.Parse(valueService(proto, nil), annotations.Defaults{})
				set, cr := listenerSettings(s, s.Ports[0])
				bset, _ := listenerSettings(base, base.Ports[0])
				for k := range set {
					if _, ok := bset[k]; !ok {
						param = k
					}
				}
				if param == "" {
					break // not a listener setting of this protocol
				}
				crossed++
				params := maps.Clone(cr)
				maps.Copy(params, set)
				if err := create(proto, params); err != nil {
					t.Errorf("%s=%q on a %s port: the parser accepts it, the emulator refuses %s=%q: %v",
						suffix, v, proto, param, params[param], briefly(err))
				}
			}
		}
	}
	t.Logf("%d accepted values crossed with the emulator", crossed)
	if crossed < 40 {
		t.Fatalf("only %d values crossed; the mapping from annotations to parameters broke", crossed)
	}
}

// TestSchedulerPerProtocol pins the one value both tables disagreed on:
// wlc, and the schedulers HTTP listeners do not take.
func TestSchedulerPerProtocol(t *testing.T) {
	for _, tc := range []struct {
		proto annotations.Protocol
		value string
		ok    bool
	}{
		{annotations.ProtocolTCP, "wlc", false},
		{annotations.ProtocolTCP, "qch", false},
		{annotations.ProtocolTCP, "tch", true},
		{annotations.ProtocolUDP, "sch", true},
		{annotations.ProtocolHTTP, "sch", false},
		{annotations.ProtocolHTTPS, "wrr", true},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.proto, tc.value), func(t *testing.T) {
			_, err := annotations.Parse(valueService(tc.proto, map[string]string{annotations.Key("scheduler"): tc.value}), annotations.Defaults{})
			var inv *annotations.InvalidError
			if got := !errors.As(err, &inv); got != tc.ok {
				t.Fatalf("parser accepts %v, want %v (%v)", got, tc.ok, err)
			}
		})
	}
}

func briefly(err error) string {
	var se *sdkerrors.ServerError
	if errors.As(err, &se) {
		return se.ErrorCode() + ": " + se.Message()
	}
	return err.Error()
}
