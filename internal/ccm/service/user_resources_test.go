package service_test

import (
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
)

// uploadCert uploads a self-signed server certificate as a user would
// before naming it in an annotation, and returns its id.
func uploadCert(t *testing.T) string {
	t.Helper()
	certPEM, keyPEM := selfSigned(t)
	req := slb.CreateUploadServerCertificateRequest()
	req.ServerCertificate, req.PrivateKey, req.ServerCertificateName = certPEM, keyPEM, "svc-test"
	resp, err := slbClient(t).UploadServerCertificate(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.ServerCertificateId
}

// userLB creates a load balancer as a user would, with a listener of
// their own on port 80.
func userLB(t *testing.T) *slb.CreateLoadBalancerResponse {
	t.Helper()
	c := slbClient(t)
	cr := slb.CreateCreateLoadBalancerRequest()
	cr.LoadBalancerName, cr.LoadBalancerSpec = "user-lb", "slb.s1.small"
	lb, err := c.CreateLoadBalancer(cr)
	if err != nil {
		t.Fatal(err)
	}
	lr := slb.CreateCreateLoadBalancerTCPListenerRequest()
	lr.LoadBalancerId, lr.ListenerPort, lr.BackendServerPort, lr.Bandwidth, lr.Description = lb.LoadBalancerId, requests.NewInteger(80), requests.NewInteger(80), requests.NewInteger(-1), "user-80"
	if _, err := c.CreateLoadBalancerTCPListener(lr); err != nil {
		t.Fatal(err)
	}
	return lb
}
