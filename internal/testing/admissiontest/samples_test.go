package admissiontest

import (
	"fmt"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// zoneMaps is a valid zone-maps value; every NLB Service needs one unless
// it reuses an NLB.
const zoneMaps = "cn-hangzhou-h:vsw-aaa,cn-hangzhou-i:vsw-bbb"

// sample is a valid and an invalid value of one registry entry; extra are
// annotations (suffix, value) the valid value needs beside it.
type sample struct {
	valid, invalid string
	extra          []string
}

// formatSamples are the KindFormat entries' samples, by owner and suffix.
var formatSamples = map[string]sample{
	"CLB/id":                      {valid: "lb-abc123", invalid: "lb-bad!"},
	"NLB/id":                      {valid: "nlb-abc123", invalid: "lb-abc123"},
	"CLB/name":                    {valid: "web-lb.1", invalid: "1web"},
	"NLB/name":                    {valid: "ab", invalid: "a"},
	"*/resource-group-id":         {valid: "rg-abc", invalid: "rg-"},
	"*/additional-resource-tags":  {valid: "team=web,env", invalid: "team=web,aliyun-x=1"},
	"CLB/protocol-port":           {valid: "http:80,https:443", invalid: "ftp:80", extra: []string{"cert-id", "cert-1"}},
	"NLB/protocol-port":           {valid: "tcpssl:443,udp:53", invalid: "tcp:53", extra: []string{"cert-id", "cert-1"}},
	"NLB/cert-id":                 {valid: "c1,c2", invalid: "c1,c 2"},
	"*/health-check-uri":          {valid: "/healthz", invalid: "healthz"},
	"*/health-check-domain":       {valid: "example.com", invalid: "ex_ample.com"},
	"*/health-check-httpcode":     {valid: "http_2xx,HTTP_3xx", invalid: "http_2xx,http_9xx"},
	"*/health-check-connect-port": {valid: "-520", invalid: "70000"},
	"CLB/vgroup-port":             {valid: "rsp-abc:80,rsp-def:443", invalid: "rsp-abc:81", extra: []string{"id", "lb-abc"}},
	"NLB/vgroup-port":             {valid: "sgp-abc:80", invalid: "sgp-abc", extra: []string{"id", "nlb-abc"}},
	"*/backend-label":             {valid: "a=b,example.com/x=y", invalid: "a=b,a"},
	"CLB/vswitch-id":              {valid: "vsw-abc", invalid: "vsw"},
	"CLB/ip":                      {valid: "10.0.0.5", invalid: "10.0.0.300"},
	"CLB/hostname":                {valid: "a.example.com", invalid: "A_B.example.com"},
	"CLB/acl-id":                  {valid: "acl-1", invalid: "acl_1"},
	"CLB/forward-port":            {valid: "80:443", invalid: "80:80", extra: []string{"protocol-port", "http:80,https:443", "cert-id", "cert-1"}},
	"CLB/cookie":                  {valid: "sess", invalid: "$sess"},
	"CLB/domain-extensions":       {valid: "a.example.com:cert-2,*.b.example.com:cert-3", invalid: "a.example.com", extra: []string{"protocol-port", "https:443", "cert-id", "cert-1"}},
	// The test Service has a UDP port, whose NLB listener takes 10 to 20
	// seconds (a cross-field rule, TestCrossFieldRules); 901 is out of
	// every protocol's range.
	"NLB/idle-timeout":                          {valid: "20", invalid: "901"},
	"NLB/zone-maps":                             {valid: zoneMaps, invalid: "cn-hangzhou-h:vsw-aaa,cn-hangzhou-h:vsw-bbb"},
	"NLB/security-group-ids":                    {valid: "sg-1,sg-2", invalid: "sg-1,sg-1"},
	"NLB/bandwidth-package-id":                  {valid: "cbwp-1", invalid: "cbwp"},
	"NLB/cacert-id":                             {valid: "ca1", invalid: "ca=1"},
	"NLB/additional-cert-ids":                   {valid: "a,b", invalid: "a,b:c"},
	"NLB/listener-port-range":                   {valid: "100-200:80", invalid: "200-100:80", extra: []string{annotations.BackendTypeKey, "eni"}},
	"*/service.beta.kubernetes.io/backend-type": {valid: "eni", invalid: "vm"},
}

// sampleOf returns the samples of an entry for a kind; ok is false for
// entries the parser accepts any value of.
func sampleOf(a *annotations.Annotation, owner annotations.Owner) (sample, bool) {
	switch a.Kind {
	case annotations.KindOnOff:
		return sample{valid: "Off", invalid: "maybe"}, true
	case annotations.KindTrueFalse:
		return sample{valid: "FALSE", invalid: "yes"}, true
	case annotations.KindInt:
		if s, ok := formatSamples[owner.String()+"/"+a.Suffix()]; ok {
			return s, true
		}
		return sample{valid: fmt.Sprint(a.Max), invalid: fmt.Sprint(a.Max + 1)}, true
	case annotations.KindEnum:
		return sample{valid: strings.ToUpper(a.Values[0]), invalid: "not-" + a.Values[0]}, true
	case annotations.KindFormat:
		if s, ok := formatSamples[owner.String()+"/"+a.Suffix()]; ok {
			return s, true
		}
		s, ok := formatSamples["*/"+a.Suffix()]
		return s, ok
	}
	return sample{}, false
}

// base returns the annotations every Service of the kind carries.
func base(owner annotations.Owner) []string {
	if owner == annotations.OwnerNLB {
		return []string{annotations.Key("zone-maps"), zoneMaps}
	}
	return nil
}

// keyOf returns the current key of a suffix or full key.
func keyOf(s string) string {
	if strings.Contains(s, "/") {
		return s
	}
	return annotations.Key(s)
}

// classOf is the spec.loadBalancerClass of a kind's Services.
func classOf(owner annotations.Owner) *string {
	if owner == annotations.OwnerNLB {
		return nlbClass()
	}
	return nil
}
