package nlb_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	sdknlb "github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// certs returns a listener's default and additional server certificates
// as ListListenerCertificates reports them.
func (f *fixture) certs(listenerID string) (def string, extra []string) {
	f.t.Helper()
	r := sdknlb.CreateListListenerCertificatesRequest()
	r.ListenerId, r.CertType = listenerID, "Server"
	resp, err := f.sdk.ListListenerCertificates(r)
	emulatortest.NoError(f.t, err)
	for _, c := range resp.Certificates {
		if c.IsDefault {
			def = c.CertificateId
		} else {
			extra = append(extra, c.CertificateId)
		}
	}
	sort.Strings(extra)
	return def, extra
}

// TestAdditionalCertificates: every cert-id after the first and the
// additional-cert-ids of a TCPSSL listener are associated with it; a
// change makes only the calls the difference needs, a converged Ensure
// makes none, and without the annotations the set is left alone.
func TestAdditionalCertificates(t *testing.T) {
	f := newFixture(t)
	s := svc("tls", map[string]string{"protocol-port": "tcpssl:80", "cert-id": "cert-a,cert-b", "additional-cert-ids": "cert-c,cert-b"})
	req := f.ensureNew(request(t, s, instances[:2], nil))
	lbID := req.LoadBalancerID
	lsn := f.listeners(lbID)[0].ListenerId
	if def, extra := f.certs(lsn); def != "cert-a" || !reflect.DeepEqual(extra, []string{"cert-b", "cert-c"}) {
		t.Fatalf("after create: default %q, additional %v", def, extra)
	}
	for _, tc := range []struct {
		name      string
		certID    string
		extra     *string // nil: annotation removed
		want      []string
		writes    map[string]int
		def       string
		certReads int
	}{
		{"converged", "cert-a,cert-b", ptr("cert-c,cert-b"), []string{"cert-b", "cert-c"}, nil, "cert-a", 1},
		{"one swapped", "cert-a,cert-b", ptr("cert-d"), []string{"cert-b", "cert-d"}, map[string]int{"AssociateAdditionalCertificatesWithListener": 1, "DisassociateAdditionalCertificatesWithListener": 1}, "cert-a", 1},
		{"default changed", "cert-e,cert-b", ptr("cert-d"), []string{"cert-b", "cert-d"}, map[string]int{"UpdateListenerAttribute": 1}, "cert-e", 1},
		{"emptied", "cert-e", ptr(""), nil, map[string]int{"DisassociateAdditionalCertificatesWithListener": 1}, "cert-e", 1},
		{"added back", "cert-e", ptr("cert-f"), []string{"cert-f"}, map[string]int{"AssociateAdditionalCertificatesWithListener": 1}, "cert-e", 1},
		{"not managed", "cert-e", nil, []string{"cert-f"}, nil, "cert-e", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Annotations[annKey("cert-id")] = tc.certID
			delete(s.Annotations, annKey("additional-cert-ids"))
			if tc.extra != nil {
				s.Annotations[annKey("additional-cert-ids")] = *tc.extra
			}
			r := request(t, s, instances[:2], nil)
			r.LoadBalancerID = lbID
			m := f.mark()
			f.ensure(r)
			_, _, writes := f.callsSince(m)
			if len(writes) != len(tc.writes) {
				t.Errorf("writes %v, want %v", writes, tc.writes)
			}
			for k, v := range tc.writes {
				if writes[k] != v {
					t.Errorf("writes %v, want %v", writes, tc.writes)
				}
			}
			reads := 0
			for _, r := range f.env.Emulator.Requests() {
				if r.Seq > m && r.Action == "ListListenerCertificates" {
					reads++
				}
			}
			if reads != tc.certReads {
				t.Errorf("%d ListListenerCertificates calls, want %d", reads, tc.certReads)
			}
			if def, extra := f.certs(lsn); def != tc.def || !reflect.DeepEqual(extra, tc.want) {
				t.Errorf("default %q, additional %v; want %q, %v", def, extra, tc.def, tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// ppv2 reads a listener's ProxyProtocolV2Config from the raw ListListeners
// answer (the typed response has no field for it).
func (f *fixture) ppv2(lbID string) map[string]bool {
	f.t.Helper()
	r := sdknlb.CreateListListenersRequest()
	r.LoadBalancerIds = &[]string{lbID}
	resp, err := f.sdk.ListListeners(r)
	emulatortest.NoError(f.t, err)
	var body struct {
		Listeners []struct{ ProxyProtocolV2Config map[string]bool }
	}
	emulatortest.NoError(f.t, json.Unmarshal(resp.GetHttpContentBytes(), &body))
	if len(body.Listeners) != 1 {
		f.t.Fatalf("%d listeners", len(body.Listeners))
	}
	return body.Listeners[0].ProxyProtocolV2Config
}

// TestProxyProtocolV2: the ppv2-* annotations become the listener's
// ProxyProtocolV2Config, on create and on change; a change sends only the
// fields that differ, and a converged Ensure writes nothing.
func TestProxyProtocolV2(t *testing.T) {
	f := newFixture(t)
	s := svc("ppv2", map[string]string{"proxy-protocol": "on", "ppv2-pvl-vpc-id-enabled": "on"})
	req := f.ensureNew(request(t, s, instances[:2], nil))
	lbID := req.LoadBalancerID
	const vpc, ep, eps = "Ppv2VpcIdEnabled", "Ppv2PrivateLinkEpIdEnabled", "Ppv2PrivateLinkEpsIdEnabled"
	if got := f.ppv2(lbID); !reflect.DeepEqual(got, map[string]bool{vpc: true, ep: false, eps: false}) {
		t.Fatalf("after create: %v", got)
	}
	for _, tc := range []struct {
		name string
		ann  map[string]string
		sent string // the ProxyProtocolV2Config of the one update, "" = no write
		want map[string]bool
	}{
		{"converged", map[string]string{"ppv2-pvl-vpc-id-enabled": "on"}, "", map[string]bool{vpc: true, ep: false, eps: false}},
		{"endpoint ids on", map[string]string{"ppv2-pvl-vpc-id-enabled": "on", "ppv2-pvl-ep-id-enabled": "on", "ppv2-pvl-eps-id-enabled": "on"},
			`{"Ppv2PrivateLinkEpIdEnabled":true,"Ppv2PrivateLinkEpsIdEnabled":true}`, map[string]bool{vpc: true, ep: true, eps: true}},
		{"vpc off", map[string]string{"ppv2-pvl-vpc-id-enabled": "off", "ppv2-pvl-ep-id-enabled": "on", "ppv2-pvl-eps-id-enabled": "on"},
			`{"Ppv2VpcIdEnabled":false}`, map[string]bool{vpc: false, ep: true, eps: true}},
		{"annotations removed", nil, "", map[string]bool{vpc: false, ep: true, eps: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"ppv2-pvl-vpc-id-enabled", "ppv2-pvl-ep-id-enabled", "ppv2-pvl-eps-id-enabled"} {
				delete(s.Annotations, annKey(k))
			}
			for k, v := range tc.ann {
				s.Annotations[annKey(k)] = v
			}
			r := request(t, s, instances[:2], nil)
			r.LoadBalancerID = lbID
			m := f.mark()
			f.ensure(r)
			var sent []string
			for _, rec := range f.env.Emulator.Requests(gateway.RequestFilter{AfterSeq: m}) {
				if !api.IsReadOnlyAction(rec.Action) {
					sent = append(sent, rec.Action+" "+rec.Params["ProxyProtocolV2Config"])
				}
			}
			want := []string(nil)
			if tc.sent != "" {
				want = []string{"UpdateListenerAttribute " + tc.sent}
			}
			if !reflect.DeepEqual(sent, want) {
				t.Errorf("writes %q, want %q", sent, want)
			}
			if got := f.ppv2(lbID); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ProxyProtocolV2Config %v, want %v", got, tc.want)
			}
		})
	}
}
