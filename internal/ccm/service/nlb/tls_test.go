package nlb_test

import (
	"reflect"
	"sort"
	"testing"

	sdknlb "github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/emulatortest"
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
