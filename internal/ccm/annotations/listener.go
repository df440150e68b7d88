package annotations

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

func (r *reader) listener(s *Settings) {
	l := &s.Listener
	if r.owner == OwnerCLB {
		l.CertID = r.str("cert-id")
	} else if ids, ok := r.idList("cert-id", ""); ok {
		l.CertIDs = ids
	}
	if r.owner == OwnerCLB {
		l.TLSCipherPolicy = r.enum("tls-cipher-policy")
	} else {
		l.TLSCipherPolicy = r.str("tls-cipher-policy")
	}
	l.IdleTimeout = r.intv("idle-timeout")
	l.ProxyProtocol = r.onOff("proxy-protocol")
	l.Scheduler = r.enum("scheduler")
	l.ConnectionDrain = r.onOff("connection-drain")
	l.ConnectionDrainTimeout = r.intv("connection-drain-timeout")
	r.healthCheck(&l.HealthCheck)

	if r.owner == OwnerCLB {
		l.HTTP2 = r.onOff("http2-enabled")
		l.StickySession = r.onOff("sticky-session")
		l.StickySessionType = r.enum("sticky-session-type")
		l.Cookie = r.strIf("cookie", validCookie)
		l.CookieTimeout = r.intv("cookie-timeout")
		l.PersistenceTimeout = r.intv("persistence-timeout")
		l.RequestTimeout = r.intv("request-timeout")
		l.EstablishedTimeout = r.intv("established-timeout")
		l.XForwardedForProto = r.onOff("xforwardedfor-proto")
		l.XForwardedForSLBPort = r.onOff("xforwardedfor-slbport")
		l.XForwardedForClientSrcPort = r.onOff("xforwardedfor-clientsrcport")
		l.ACLStatus = r.onOff("acl-status")
		l.ACLID = r.idWithPrefix("acl-id", "acl-")
		l.ACLType = r.enum("acl-type")
		l.DomainExtensions = r.domainExtensions()
		return
	}
	l.ALPN = r.onOff("alpn")
	l.ALPNPolicy = r.enum("alpn-policy")
	l.AdditionalCertIDs, _ = r.idList("additional-cert-ids", "")
	l.CACert = r.onOff("cacert")
	l.CACertIDs, _ = r.idList("cacert-id", "")
	l.CPS = r.intv("cps")
	l.PPv2EndpointID = r.onOff("ppv2-pvl-ep-id-enabled")
	l.PPv2EndpointServiceID = r.onOff("ppv2-pvl-eps-id-enabled")
	l.PPv2VPCID = r.onOff("ppv2-pvl-vpc-id-enabled")
}

func validCookie(v string) bool {
	if len(v) > 200 || strings.HasPrefix(v, "$") {
		return false
	}
	for _, c := range v {
		if c <= ' ' || c > '~' || c == ',' || c == ';' {
			return false
		}
	}
	return true
}

func (r *reader) domainExtensions() []DomainExtension {
	out, _, _ := uniqueList(r, "domain-extensions", "domain", func(e element) (string, DomainExtension, string) {
		d, cert, found := strings.Cut(e.text, ":")
		d, cert = strings.TrimSpace(d), strings.TrimSpace(cert)
		why := ""
		switch {
		case !found || cert == "":
			why = "a certificate id is required after the domain"
		case strings.ContainsAny(cert, " :"):
			why = "the certificate id contains a blank or ':'"
		case len(validation.IsDNS1123Subdomain(strings.ToLower(strings.TrimPrefix(d, "*.")))) > 0:
			why = "the domain is not a DNS name (a leading *. is allowed)"
		}
		return d, DomainExtension{Domain: d, CertID: cert}, why
	})
	return out
}

func (r *reader) healthCheck(h *HealthCheck) {
	h.Flag = r.onOff("health-check-flag")
	h.Type = r.enum("health-check-type")
	h.URI = r.strIf("health-check-uri", func(v string) bool {
		return strings.HasPrefix(v, "/") && len(v) <= 80 && !strings.ContainsAny(v, " \t")
	})
	h.Domain = r.strIf("health-check-domain", validHealthDomain)
	h.Method = r.enum("health-check-method")
	if l, ok := r.list("health-check-httpcode"); ok {
		empty := r.emptyList(l, "no status class given")
		codes, ok := uniqueElements(r, l, "class", func(e element) (string, string, string) {
			c := strings.ToLower(e.text)
			why := ""
			if c != "http_2xx" && c != "http_3xx" && c != "http_4xx" && c != "http_5xx" {
				why = "not a status class"
			}
			return c, c, why
		})
		if ok && !empty {
			h.HTTPCodes = codes
		}
	}
	h.ConnectPort = checked(r, "health-check-connect-port", func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && (n == UseBackendPort || n >= 1 && n <= 65535)
	})
	h.HealthyThreshold = r.intv("healthy-threshold")
	h.UnhealthyThreshold = r.intv("unhealthy-threshold")
	h.Interval = r.intv("health-check-interval")
	h.ConnectTimeout = r.intv("health-check-connect-timeout")
	if r.owner == OwnerCLB {
		h.Switch = r.onOff("health-check-switch")
		h.Timeout = r.intv("health-check-timeout")
	}
}

func validHealthDomain(v string) bool {
	if v == "$_ip" {
		return true
	}
	if len(v) > 80 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
