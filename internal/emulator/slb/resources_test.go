package slb_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
)

func TestAccessControlLists(t *testing.T) {
	_, c := newEnv(t)
	cr := slb.CreateCreateAccessControlListRequest()
	cr.AclName = "office"
	cr.Tag = &[]slb.CreateAccessControlListTag{{Key: "k", Value: "v"}}
	created, err := c.CreateAccessControlList(cr)
	must(t, err)
	acl := created.AclId
	if !strings.HasPrefix(acl, "acl-") {
		t.Fatalf("AclId %s", acl)
	}

	add := slb.CreateAddAccessControlListEntryRequest()
	add.AclId, add.AclEntrys = acl, `[{"entry":"10.0.0.0/24","comment":"office"},{"entry":"192.168.1.1","comment":"vpn"}]`
	_, err = c.AddAccessControlListEntry(add)
	must(t, err)
	_, err = c.AddAccessControlListEntry(add)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest) // duplicates
	bad := slb.CreateAddAccessControlListEntryRequest()
	bad.AclId, bad.AclEntrys = acl, `[{"entry":"2001:db8::/32"}]`
	_, err = c.AddAccessControlListEntry(bad)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest) // IPv6 entry in an IPv4 ACL
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf(`{"entry":"172.16.%d.0/24"}`, i)
	}
	bad.AclEntrys = "[" + strings.Join(many, ",") + "]"
	_, err = c.AddAccessControlListEntry(bad)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)

	set := slb.CreateSetAccessControlListAttributeRequest()
	set.AclId, set.AclName = acl, "office2"
	_, err = c.SetAccessControlListAttribute(set)
	must(t, err)

	lb := createLB(t, c, nil).LoadBalancerId
	createTCP(t, c, lb, 80, func(r *slb.CreateLoadBalancerTCPListenerRequest) {
		r.AclId, r.AclStatus, r.AclType = acl, "on", "white"
	})

	attrReq := slb.CreateDescribeAccessControlListAttributeRequest()
	attrReq.AclId = acl
	attr, err := c.DescribeAccessControlListAttribute(attrReq)
	must(t, err)
	if attr.AclName != "office2" || attr.AddressIPVersion != "ipv4" || attr.TotalAclEntry != 2 ||
		attr.AclEntrys.AclEntry[1].AclEntryIP != "192.168.1.1/32" || len(attr.RelatedListeners.RelatedListener) != 1 ||
		attr.RelatedListeners.RelatedListener[0].ListenerPort != 80 || attr.RelatedListeners.RelatedListener[0].AclType != "white" {
		t.Fatalf("unexpected attribute %+v", attr)
	}

	list := slb.CreateDescribeAccessControlListsRequest()
	list.AclName = "office2"
	lr, err := c.DescribeAccessControlLists(list)
	must(t, err)
	if lr.TotalCount != 1 || lr.Acls.Acl[0].AclId != acl || len(lr.Acls.Acl[0].Tags.Tag) != 1 {
		t.Fatalf("unexpected list %+v", lr)
	}

	del := slb.CreateDeleteAccessControlListRequest()
	del.AclId = acl
	_, err = c.DeleteAccessControlList(del)
	wantErr(t, err, "Operation.NotAllowed", http.StatusBadRequest)
	dl := slb.CreateDeleteLoadBalancerListenerRequest()
	dl.LoadBalancerId, dl.ListenerPort = lb, requests.NewInteger(80)
	_, err = c.DeleteLoadBalancerListener(dl)
	must(t, err)

	rm := slb.CreateRemoveAccessControlListEntryRequest()
	rm.AclId, rm.AclEntrys = acl, `[{"entry":"10.0.0.0/24"}]`
	_, err = c.RemoveAccessControlListEntry(rm)
	must(t, err)
	attr, err = c.DescribeAccessControlListAttribute(attrReq)
	must(t, err)
	if attr.TotalAclEntry != 1 {
		t.Fatalf("entries after remove: %d", attr.TotalAclEntry)
	}
	_, err = c.DeleteAccessControlList(del)
	must(t, err)
	_, err = c.DescribeAccessControlListAttribute(attrReq)
	wantErr(t, err, "ResourceNotFound.Acl", http.StatusNotFound)
}

func TestCertificates(t *testing.T) {
	_, c := newEnv(t)
	certPEM, keyPEM := selfSigned(t, "shop.example.com", false)
	up := slb.CreateUploadServerCertificateRequest()
	up.ServerCertificate, up.PrivateKey, up.ServerCertificateName = certPEM, keyPEM, "shop"
	cert, err := c.UploadServerCertificate(up)
	must(t, err)
	if cert.CommonName != "shop.example.com" || cert.ServerCertificateName != "shop" || strings.Count(cert.Fingerprint, ":") != 19 ||
		cert.ExpireTimeStamp <= cert.CreateTimeStamp || len(strings.Split(cert.ServerCertificateId, "_")) != 4 ||
		len(cert.SubjectAlternativeNames.SubjectAlternativeName) != 1 {
		t.Fatalf("unexpected upload response %+v", cert)
	}
	_, otherKey := selfSigned(t, "other.example.com", false)
	mismatch := slb.CreateUploadServerCertificateRequest()
	mismatch.ServerCertificate, mismatch.PrivateKey = certPEM, otherKey
	_, err = c.UploadServerCertificate(mismatch)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)

	ren := slb.CreateSetServerCertificateNameRequest()
	ren.ServerCertificateId, ren.ServerCertificateName = cert.ServerCertificateId, "shop2"
	_, err = c.SetServerCertificateName(ren)
	must(t, err)
	list := slb.CreateDescribeServerCertificatesRequest()
	all, err := c.DescribeServerCertificates(list)
	must(t, err)
	if len(all.ServerCertificates.ServerCertificate) != 2 {
		t.Fatalf("want the seeded and the uploaded certificate, got %+v", all.ServerCertificates)
	}
	list.ServerCertificateId = cert.ServerCertificateId
	one, err := c.DescribeServerCertificates(list)
	must(t, err)
	if one.ServerCertificates.ServerCertificate[0].ServerCertificateName != "shop2" || one.ServerCertificates.ServerCertificate[0].EncryptionAlgorithm != "ECC" {
		t.Fatalf("unexpected certificate %+v", one.ServerCertificates.ServerCertificate[0])
	}

	caPEM, _ := selfSigned(t, "My CA", true)
	ca := slb.CreateUploadCACertificateRequest()
	ca.CACertificate, ca.CACertificateName = caPEM, "ca"
	caResp, err := c.UploadCACertificate(ca)
	must(t, err)
	if caResp.CommonName != "My CA" || caResp.CACertificateId == "" {
		t.Fatalf("unexpected CA upload %+v", caResp)
	}
	badCA := slb.CreateUploadCACertificateRequest()
	badCA.CACertificate = "not a pem"
	_, err = c.UploadCACertificate(badCA)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
	caRen := slb.CreateSetCACertificateNameRequest()
	caRen.CACertificateId, caRen.CACertificateName = caResp.CACertificateId, "ca2"
	_, err = c.SetCACertificateName(caRen)
	must(t, err)
	cas, err := c.DescribeCACertificates(slb.CreateDescribeCACertificatesRequest())
	must(t, err)
	if len(cas.CACertificates.CACertificate) != 2 {
		t.Fatalf("CA certificates %+v", cas.CACertificates)
	}

	// In use by an HTTPS listener: refused.
	lb := createLB(t, c, nil).LoadBalancerId
	hs := slb.CreateCreateLoadBalancerHTTPSListenerRequest()
	hs.LoadBalancerId, hs.ListenerPort, hs.BackendServerPort = lb, requests.NewInteger(443), requests.NewInteger(80)
	hs.StickySession, hs.HealthCheck, hs.ServerCertificateId = "off", "off", cert.ServerCertificateId
	_, err = c.CreateLoadBalancerHTTPSListener(hs)
	must(t, err)
	del := slb.CreateDeleteServerCertificateRequest()
	del.ServerCertificateId = cert.ServerCertificateId
	_, err = c.DeleteServerCertificate(del)
	wantErr(t, err, "Operation.NotAllowed", http.StatusBadRequest)
	dl := slb.CreateDeleteLoadBalancerListenerRequest()
	dl.LoadBalancerId, dl.ListenerPort = lb, requests.NewInteger(443)
	_, err = c.DeleteLoadBalancerListener(dl)
	must(t, err)
	_, err = c.DeleteServerCertificate(del)
	must(t, err)
	_, err = c.DeleteServerCertificate(del)
	wantErr(t, err, "ResourceNotFound.ServerCertificate", http.StatusNotFound)

	cdel := slb.CreateDeleteCACertificateRequest()
	cdel.CACertificateId = caResp.CACertificateId
	_, err = c.DeleteCACertificate(cdel)
	must(t, err)
	_, err = c.DeleteCACertificate(cdel)
	wantErr(t, err, "ResourceNotFound.CACertificate", http.StatusNotFound)
}

func TestDomainExtensions(t *testing.T) {
	_, c := newEnv(t)
	lb := createLB(t, c, nil).LoadBalancerId
	hs := slb.CreateCreateLoadBalancerHTTPSListenerRequest()
	hs.LoadBalancerId, hs.ListenerPort, hs.BackendServerPort = lb, requests.NewInteger(443), requests.NewInteger(80)
	hs.StickySession, hs.HealthCheck, hs.ServerCertificateId = "off", "off", seedCert
	_, err := c.CreateLoadBalancerHTTPSListener(hs)
	must(t, err)
	certPEM, keyPEM := selfSigned(t, "api.example.com", false)
	up := slb.CreateUploadServerCertificateRequest()
	up.ServerCertificate, up.PrivateKey = certPEM, keyPEM
	cert, err := c.UploadServerCertificate(up)
	must(t, err)

	cr := slb.CreateCreateDomainExtensionRequest()
	cr.LoadBalancerId, cr.ListenerPort, cr.Domain, cr.ServerCertificateId = lb, requests.NewInteger(443), "api.example.com", seedCert
	de, err := c.CreateDomainExtension(cr)
	must(t, err)
	if !strings.HasPrefix(de.DomainExtensionId, "de-") || de.ListenerPort != 443 {
		t.Fatalf("unexpected create %+v", de)
	}
	_, err = c.CreateDomainExtension(cr)
	wantErr(t, err, "InvalidParameter", http.StatusBadRequest)
	cr.ListenerPort = requests.NewInteger(8443)
	_, err = c.CreateDomainExtension(cr)
	wantErr(t, err, "ListenerNotFound", http.StatusNotFound)

	set := slb.CreateSetDomainExtensionAttributeRequest()
	set.DomainExtensionId, set.ServerCertificateId = de.DomainExtensionId, cert.ServerCertificateId
	_, err = c.SetDomainExtensionAttribute(set)
	must(t, err)

	d := slb.CreateDescribeDomainExtensionsRequest()
	d.LoadBalancerId, d.ListenerPort = lb, requests.NewInteger(443)
	list, err := c.DescribeDomainExtensions(d)
	must(t, err)
	ext := list.DomainExtensions.DomainExtension
	if len(ext) != 1 || ext[0].Domain != "api.example.com" || ext[0].ServerCertificateId != cert.ServerCertificateId {
		t.Fatalf("unexpected extensions %+v", ext)
	}
	sd := slb.CreateDescribeLoadBalancerHTTPSListenerAttributeRequest()
	sd.LoadBalancerId, sd.ListenerPort = lb, requests.NewInteger(443)
	attr, err := c.DescribeLoadBalancerHTTPSListenerAttribute(sd)
	must(t, err)
	if len(attr.DomainExtensions.DomainExtension) != 1 {
		t.Fatalf("listener misses its domain extension: %+v", attr.DomainExtensions)
	}

	del := slb.CreateDeleteDomainExtensionRequest()
	del.DomainExtensionId = de.DomainExtensionId
	_, err = c.DeleteDomainExtension(del)
	must(t, err)
	_, err = c.DeleteDomainExtension(del)
	wantErr(t, err, "ResourceNotFound.DomainExtension", http.StatusNotFound)
}

func TestTagResources(t *testing.T) {
	_, c := newEnv(t)
	lb := createLB(t, c, nil).LoadBalancerId
	lb2 := createLB(t, c, nil).LoadBalancerId
	createTCP(t, c, lb, 80, nil)
	gid := createGroup(t, c, lb, "")
	listenerID := lb + "_tcp_80"

	tag := func(rtype string, ids []string, tags ...slb.TagResourcesTag) error {
		r := slb.CreateTagResourcesRequest()
		r.ResourceType, r.ResourceId, r.Tag = rtype, &ids, &tags
		_, err := c.TagResources(r)
		return err
	}
	must(t, tag("instance", []string{lb, lb2}, slb.TagResourcesTag{Key: "env", Value: "prod"}, slb.TagResourcesTag{Key: "team", Value: "a"}))
	must(t, tag("listener", []string{listenerID}, slb.TagResourcesTag{Key: "env", Value: "prod"}))
	must(t, tag("vservergroup", []string{gid}, slb.TagResourcesTag{Key: "env", Value: "dev"}))
	must(t, tag("certificate", []string{seedCert}, slb.TagResourcesTag{Key: "env", Value: "prod"}))

	errTests := []struct {
		name   string
		err    error
		code   string
		status int
	}{
		{"unknown instance", tag("instance", []string{"lb-nope"}, slb.TagResourcesTag{Key: "a", Value: "b"}), "InvalidLoadBalancerId.NotFound", 404},
		{"unknown listener", tag("listener", []string{lb + "_udp_80"}, slb.TagResourcesTag{Key: "a", Value: "b"}), "ListenerNotFound", 404},
		{"bad type", tag("bucket", []string{lb}, slb.TagResourcesTag{Key: "a", Value: "b"}), "InvalidParameter", 400},
		{"reserved key", tag("instance", []string{lb}, slb.TagResourcesTag{Key: "acs:x", Value: "b"}), "InvalidParameter", 400},
	}
	many := make([]slb.TagResourcesTag, 19)
	for i := range many {
		many[i] = slb.TagResourcesTag{Key: fmt.Sprintf("k%d", i), Value: "v"}
	}
	errTests = append(errTests, struct {
		name   string
		err    error
		code   string
		status int
	}{"over 20 tags", tag("instance", []string{lb}, many...), "QuotaExceeded.TagsPerResource", 400})
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) { wantErr(t, tt.err, tt.code, tt.status) })
	}

	list := func(rtype string, ids []string, tags ...slb.ListTagResourcesTag) []slb.TagResource {
		r := slb.CreateListTagResourcesRequest()
		r.ResourceType = rtype
		if ids != nil {
			r.ResourceId = &ids
		}
		if tags != nil {
			r.Tag = &tags
		}
		resp, err := c.ListTagResources(r)
		must(t, err)
		return resp.TagResources.TagResource
	}
	if got := list("instance", []string{lb}); len(got) != 2 || got[0].ResourceId != lb || got[0].ResourceType != "instance" {
		t.Fatalf("instance tags %+v", got)
	}
	if got := list("instance", nil, slb.ListTagResourcesTag{Key: "team", Value: "a"}); len(got) != 4 {
		t.Fatalf("tag filter found %+v", got)
	}
	if got := list("listener", nil, slb.ListTagResourcesTag{Key: "env", Value: "prod"}); len(got) != 1 || got[0].ResourceId != listenerID {
		t.Fatalf("listener tags %+v", got)
	}
	if got := list("vservergroup", []string{gid}); len(got) != 1 || got[0].TagValue != "dev" {
		t.Fatalf("group tags %+v", got)
	}
	if got := list("certificate", []string{seedCert}); len(got) != 1 {
		t.Fatalf("certificate tags %+v", got)
	}

	un := slb.CreateUntagResourcesRequest()
	un.ResourceType, un.ResourceId, un.TagKey = "instance", &[]string{lb}, &[]string{"team"}
	_, err := c.UntagResources(un)
	must(t, err)
	if got := list("instance", []string{lb}); len(got) != 1 || got[0].TagKey != "env" {
		t.Fatalf("after untag %+v", got)
	}
	all := slb.CreateUntagResourcesRequest()
	all.ResourceType, all.ResourceId, all.All = "instance", &[]string{lb2}, requests.NewBoolean(true)
	_, err = c.UntagResources(all)
	must(t, err)
	if got := list("instance", []string{lb2}); len(got) != 0 {
		t.Fatalf("after untag all %+v", got)
	}
	none := slb.CreateUntagResourcesRequest()
	none.ResourceType, none.ResourceId = "instance", &[]string{lb2}
	_, err = c.UntagResources(none)
	wantErr(t, err, "MissingParameter", http.StatusBadRequest)
}

func TestLegacyTags(t *testing.T) {
	_, c := newEnv(t)
	lb := createLB(t, c, nil).LoadBalancerId
	lb2 := createLB(t, c, nil).LoadBalancerId
	for _, id := range []string{lb, lb2} {
		add := slb.CreateAddTagsRequest()
		add.LoadBalancerId, add.Tags = id, `[{"TagKey":"env","TagValue":"prod"},{"TagKey":"owner","TagValue":"`+id+`"}]`
		_, err := c.AddTags(add)
		must(t, err)
	}
	d := slb.CreateDescribeTagsRequest()
	d.DistinctKey = requests.NewBoolean(true)
	resp, err := c.DescribeTags(d)
	must(t, err)
	counts := map[string]int{}
	for _, s := range resp.TagSets.TagSet {
		counts[s.TagKey] = s.InstanceCount
	}
	if resp.TotalCount != 2 || counts["env"] != 2 || counts["owner"] != 2 {
		t.Fatalf("distinct tag sets %+v", resp.TagSets)
	}
	d = slb.CreateDescribeTagsRequest()
	d.LoadBalancerId = lb
	resp, err = c.DescribeTags(d)
	must(t, err)
	if resp.TotalCount != 2 {
		t.Fatalf("tag sets of one load balancer %+v", resp.TagSets)
	}
	rm := slb.CreateRemoveTagsRequest()
	rm.LoadBalancerId, rm.Tags = lb, `[{"TagKey":"owner"}]`
	_, err = c.RemoveTags(rm)
	must(t, err)
	lbs := slb.CreateDescribeLoadBalancersRequest()
	lbs.Tags = `[{"TagKey":"owner"}]`
	found, err := c.DescribeLoadBalancers(lbs)
	must(t, err)
	if found.TotalCount != 1 || found.LoadBalancers.LoadBalancer[0].LoadBalancerId != lb2 {
		t.Fatalf("owner-tagged load balancers %+v", found.LoadBalancers)
	}
	add := slb.CreateAddTagsRequest()
	add.LoadBalancerId = lb
	_, err = c.AddTags(add)
	wantErr(t, err, "MissingParameter", http.StatusBadRequest)
}
