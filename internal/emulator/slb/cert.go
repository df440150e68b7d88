package slb

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func errCertNotFound(kind, id string) error {
	return api.NotFound("ResourceNotFound."+kind, "The specified %s %s does not exist.", kind, id)
}

func randDigits(n int) string {
	max := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
	v, err := rand.Int(rand.Reader, max)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%0*d", n, v)
}

// newCertID returns an id in the cloud's certificate format:
// <account>_<hex upload ms>_<10 digits>_<9 digits>, e.g.
// 1231579085529123_166f8204689_1714763408_709981430.
func newCertID(account string, now time.Time) string {
	return fmt.Sprintf("%s_%x_%s_%s", account, now.UnixMilli(), randDigits(10), randDigits(9))
}

// fingerprint of a DER certificate as the console shows it.
func certFingerprint(der []byte) string {
	sum := sha1.Sum(der)
	h := hex.EncodeToString(sum[:])
	parts := make([]string, 0, len(sum))
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":")
}

func fillFromX509(c *Certificate, leaf *x509.Certificate) {
	c.CommonName = leaf.Subject.CommonName
	c.SubjectAltNames = append([]string{}, leaf.DNSNames...)
	c.Fingerprint = certFingerprint(leaf.Raw)
	c.ExpiresAt = leaf.NotAfter
	switch k := leaf.PublicKey.(type) {
	case *rsa.PublicKey:
		c.EncryptionAlgorithm, c.KeyLength = "RSA", k.N.BitLen()
	case *ecdsa.PublicKey:
		c.EncryptionAlgorithm, c.KeyLength = "ECC", k.Curve.Params().BitSize
	default:
		c.EncryptionAlgorithm = "UNKNOWN"
	}
}

func (s *Service) cert(req *api.Request, key, kind string) (*Certificate, error) {
	return api.Lookup(req, key, func(req *api.Request, id string) (*Certificate, error) {
		return s.certOfKind(req, id, kind)
	})
}

// certOfKind returns the certificate id of kind (server or ca) in the
// request's region.
func (s *Service) certOfKind(req *api.Request, id, kind string) (*Certificate, error) {
	c := s.state.Certificates[id]
	name := map[string]string{"server": "ServerCertificate", "ca": "CACertificate"}[kind]
	if c == nil || c.Kind != kind || c.RegionID != req.RegionID {
		return nil, errCertNotFound(name, id)
	}
	return c, nil
}

// certView holds the fields server and CA certificate views share.
func certView(c *Certificate) map[string]any {
	return map[string]any{
		"Fingerprint":         c.Fingerprint,
		"CommonName":          c.CommonName,
		"EncryptionAlgorithm": c.EncryptionAlgorithm,
		"EncryptionKeyLength": c.KeyLength,
		"StandardType":        c.StandardType,
		"CreateTime":          fmtResTime(c.CreatedAt),
		"CreateTimeStamp":     c.CreatedAt.UnixMilli(),
		"ExpireTime":          fmtResTime(c.ExpiresAt),
		"ExpireTimeStamp":     c.ExpiresAt.UnixMilli(),
		"RegionId":            c.RegionID,
		"ResourceGroupId":     api.ResourceGroupOr(c.ResourceGroupID),
		"Tags":                tagList{Tag: tagKVs(c.Tags)},
	}
}

func serverCertView(c *Certificate) map[string]any {
	out := certView(c)
	out["ServerCertificateId"] = c.ID
	out["ServerCertificateName"] = c.Name
	out["CertificateId"] = c.ID
	out["SubjectAlternativeNames"] = map[string]any{"SubjectAlternativeName": nonNil(c.SubjectAltNames)}
	out["RegionIdAlias"] = c.RegionID
	out["IsAliCloudCertificate"] = 0
	return out
}

func caCertView(c *Certificate) map[string]any {
	out := certView(c)
	out["CACertificateId"] = c.ID
	out["CACertificateName"] = c.Name
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Service) newCert(req *api.Request, kind, nameKey string) (*Certificate, error) {
	p := req.Params
	name := p.String(nameKey)
	if err := validName(nameKey, name, 80); err != nil {
		return nil, err
	}
	tags, err := s.validateNewTags(p.Tags(), nil)
	if err != nil {
		return nil, err
	}
	rg := api.ResourceGroupOr(p.String("ResourceGroupId"))
	return &Certificate{ID: newCertID(req.AccountID, req.Now), Kind: kind, Name: name, RegionID: req.RegionID,
		ResourceGroupID: rg, StandardType: p.String("StandardType"), CreatedAt: req.Now, Tags: tags}, nil
}

// storeCert keeps an uploaded certificate, named after its common name when
// the upload gave no name.
func (s *Service) storeCert(c *Certificate) {
	if c.Name == "" {
		c.Name = c.CommonName
	}
	s.state.Certificates[c.ID] = c
}

func (s *Service) uploadServerCertificate(req *api.Request) (map[string]any, error) {
	p := req.Params
	c, err := s.newCert(req, "server", "ServerCertificateName")
	if err != nil {
		return nil, err
	}
	aliID := p.String("AliCloudCertificateId")
	if aliID != "" {
		// A certificate managed by the Certificate Management Service: the
		// emulator has no such service, so it records the reference.
		c.CommonName = p.String("AliCloudCertificateName")
		c.Fingerprint = certFingerprint([]byte(aliID))
		c.EncryptionAlgorithm, c.KeyLength = "RSA", 2048
		c.ExpiresAt = req.Now.AddDate(1, 0, 0)
	} else {
		pem, err := p.RequiredAll("ServerCertificate", "PrivateKey")
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair([]byte(pem[0]), []byte(pem[1]))
		if err != nil {
			return nil, api.InvalidParameter("ServerCertificate", "The server certificate or its private key is not valid: %v.", err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return nil, api.InvalidParameter("ServerCertificate", "The server certificate is not valid: %v.", err)
		}
		fillFromX509(c, leaf)
	}
	s.storeCert(c)
	// UploadServerCertificate's model has no tags, key facts or second id.
	out := api.WithoutKeys(serverCertView(c), "Tags", "CertificateId", "EncryptionAlgorithm", "EncryptionKeyLength", "StandardType")
	out["AliCloudCertificateId"] = aliID
	out["AliCloudCertificateName"] = p.String("AliCloudCertificateName")
	return out, nil
}

func (s *Service) describeServerCertificates(req *api.Request) (map[string]any, error) {
	return map[string]any{"ServerCertificates": map[string]any{"ServerCertificate": s.listCerts(req, "server", "ServerCertificateId", serverCertView)}}, nil
}

func (s *Service) describeCACertificates(req *api.Request) (map[string]any, error) {
	return map[string]any{"CACertificates": map[string]any{"CACertificate": s.listCerts(req, "ca", "CACertificateId", caCertView)}}, nil
}

func (s *Service) listCerts(req *api.Request, kind, idKey string, view func(*Certificate) map[string]any) []map[string]any {
	p := req.Params
	only, rg := p.String(idKey), p.String("ResourceGroupId")
	want := p.Tags()
	out := []map[string]any{}
	for _, id := range store.SortedKeys(s.state.Certificates) {
		c := s.state.Certificates[id]
		if c.Kind == kind && c.RegionID == req.RegionID && (only == "" || c.ID == only) &&
			(rg == "" || c.ResourceGroupID == rg) && api.MatchTags(c.Tags, want) {
			out = append(out, view(c))
		}
	}
	return out
}

// certInUse reports whether a listener or domain extension references a certificate.
func (s *Service) certInUse(id string) bool {
	for _, lb := range s.state.LoadBalancers {
		for _, l := range lb.Listeners {
			if l.Config["ServerCertificateId"] == id || l.Config["CACertificateId"] == id {
				return true
			}
		}
	}
	for _, d := range s.state.DomainExtensions {
		if d.ServerCertificateID == id {
			return true
		}
	}
	return false
}

func (s *Service) deleteCert(req *api.Request, key, kind string) (map[string]any, error) {
	c, err := s.cert(req, key, kind)
	if err != nil {
		return nil, err
	}
	if s.certInUse(c.ID) {
		return nil, errNotAllowed("The certificate %s is in use by a listener or domain extension.", c.ID)
	}
	delete(s.state.Certificates, c.ID)
	return map[string]any{}, nil
}

func (s *Service) deleteServerCertificate(req *api.Request) (map[string]any, error) {
	return s.deleteCert(req, "ServerCertificateId", "server")
}

func (s *Service) deleteCACertificate(req *api.Request) (map[string]any, error) {
	return s.deleteCert(req, "CACertificateId", "ca")
}

func (s *Service) renameCert(req *api.Request, key, kind, nameKey string) (map[string]any, error) {
	c, err := s.cert(req, key, kind)
	if err != nil {
		return nil, err
	}
	name, err := req.Params.Required(nameKey)
	if err != nil {
		return nil, err
	}
	if err := validName(nameKey, name, 80); err != nil {
		return nil, err
	}
	c.Name = name
	return map[string]any{}, nil
}

func (s *Service) setServerCertificateName(req *api.Request) (map[string]any, error) {
	return s.renameCert(req, "ServerCertificateId", "server", "ServerCertificateName")
}

func (s *Service) setCACertificateName(req *api.Request) (map[string]any, error) {
	return s.renameCert(req, "CACertificateId", "ca", "CACertificateName")
}

func (s *Service) uploadCACertificate(req *api.Request) (map[string]any, error) {
	c, err := s.newCert(req, "ca", "CACertificateName")
	if err != nil {
		return nil, err
	}
	data, err := req.Params.Required("CACertificate")
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode([]byte(data))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, api.InvalidParameter("CACertificate", "The CA certificate must be a PEM-encoded certificate.")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, api.InvalidParameter("CACertificate", "The CA certificate is not valid: %v.", err)
	}
	fillFromX509(c, leaf)
	s.storeCert(c)
	// UploadCACertificate's model has no tags, key facts or region.
	return api.WithoutKeys(caCertView(c), "Tags", "EncryptionAlgorithm", "EncryptionKeyLength", "StandardType", "RegionId"), nil
}

// Domain extensions of HTTPS listeners.

func errDomainExtensionNotFound(id string) error {
	return api.NotFound("ResourceNotFound.DomainExtension", "The specified DomainExtensionId %s does not exist.", id)
}

func (s *Service) domainExtension(req *api.Request) (*DomainExtension, error) {
	id, err := req.Params.Required("DomainExtensionId")
	if err != nil {
		return nil, err
	}
	d := s.state.DomainExtensions[id]
	if d == nil {
		return nil, errDomainExtensionNotFound(id)
	}
	if lb := s.state.LoadBalancers[d.LoadBalancerID]; lb == nil || lb.RegionID != req.RegionID {
		return nil, errDomainExtensionNotFound(id)
	}
	return d, nil
}

func (s *Service) domainExtensionViews(lbID string, port int, only string) []map[string]any {
	out := []map[string]any{}
	for _, id := range store.SortedKeys(s.state.DomainExtensions) {
		d := s.state.DomainExtensions[id]
		if d.LoadBalancerID != lbID || (port != 0 && d.ListenerPort != port) || (only != "" && d.ID != only) {
			continue
		}
		certs := []map[string]any{}
		if c := s.state.Certificates[d.ServerCertificateID]; c != nil {
			certs = append(certs, serverCertView(c))
		}
		out = append(out, map[string]any{
			"DomainExtensionId":   d.ID,
			"Domain":              d.Domain,
			"ServerCertificateId": d.ServerCertificateID,
			"ServerCertificates":  map[string]any{"ServerCertificate": certs},
			"Certificates":        map[string]any{"Certificate": []any{}},
		})
	}
	return out
}

func (s *Service) createDomainExtension(req *api.Request) (map[string]any, error) {
	lb, l, err := s.listenerOf(req, "https")
	if err != nil {
		return nil, err
	}
	domain, err := req.Params.Required("Domain")
	if err != nil {
		return nil, err
	}
	if len(domain) > 80 || strings.ContainsAny(domain, " /") {
		return nil, api.InvalidParameter("Domain", "The domain %q is not valid.", domain)
	}
	c, err := s.cert(req, "ServerCertificateId", "server")
	if err != nil {
		return nil, err
	}
	for _, d := range s.state.DomainExtensions {
		if d.LoadBalancerID == lb.ID && d.ListenerPort == l.Port && strings.EqualFold(d.Domain, domain) {
			return nil, api.InvalidParameter("Domain", "The domain %s already has an extension on listener %d.", domain, l.Port)
		}
	}
	d := &DomainExtension{ID: store.NewID("de"), LoadBalancerID: lb.ID, ListenerPort: l.Port, Domain: domain, ServerCertificateID: c.ID}
	s.state.DomainExtensions[d.ID] = d
	return map[string]any{"DomainExtensionId": d.ID, "ListenerPort": l.Port}, nil
}

func (s *Service) deleteDomainExtension(req *api.Request) (map[string]any, error) {
	d, err := s.domainExtension(req)
	if err != nil {
		return nil, err
	}
	return removed(s.state.DomainExtensions, d.ID)
}

func (s *Service) setDomainExtensionAttribute(req *api.Request) (map[string]any, error) {
	d, err := s.domainExtension(req)
	if err != nil {
		return nil, err
	}
	c, err := s.cert(req, "ServerCertificateId", "server")
	if err != nil {
		return nil, err
	}
	d.ServerCertificateID = c.ID
	return map[string]any{}, nil
}

func (s *Service) describeDomainExtensions(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	port := 0
	if req.Params.String("ListenerPort") != "" {
		if port, err = req.Params.IntRange("ListenerPort", 0, 1, 65535); err != nil {
			return nil, err
		}
	}
	views := s.domainExtensionViews(lb.ID, port, req.Params.String("DomainExtensionId"))
	return map[string]any{"DomainExtensions": map[string]any{"DomainExtension": views}}, nil
}

// Seed creates the seed's certificates (server unless Type is ca) and
// returns their ids under "certificate".
func (s *Service) Seed(region string, sd *api.Seed) (map[string][]string, error) {
	var ids []string
	now := time.Now()
	for i, sc := range sd.Certificates {
		kind := strings.ToLower(sc.Type)
		if kind == "" {
			kind = "server"
		}
		if kind != "server" && kind != "ca" {
			return nil, fmt.Errorf("seed certificate %d: type must be server or ca, got %q", i, sc.Type)
		}
		id := sc.ID
		if id == "" {
			id = newCertID("1234567890123456", now)
		}
		if _, dup := s.state.Certificates[id]; dup {
			return nil, fmt.Errorf("seed certificate %d: id %s already exists", i, id)
		}
		domain := sc.Domain
		if domain == "" {
			domain = "example.com"
		}
		name := sc.Name
		if name == "" {
			name = domain
		}
		c := &Certificate{
			ID: id, Kind: kind, Name: name, RegionID: region, ResourceGroupID: api.DefaultResourceGroupID,
			CommonName: domain, SubjectAltNames: []string{domain}, Fingerprint: certFingerprint([]byte(id)),
			EncryptionAlgorithm: "RSA", KeyLength: 2048, CreatedAt: now, ExpiresAt: now.AddDate(1, 0, 0),
		}
		s.state.Certificates[id] = c
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return map[string][]string{"certificate": ids}, nil
}
