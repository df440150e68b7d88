package clb

import (
	"context"
	"fmt"
	"sort"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// EventEIPFailed reports that external-ip-type eip could not be honoured;
// the status then falls back to the load balancer's own address. The
// reason is the existing CCM's, so alerts written for it keep working.
const EventEIPFailed = "FailedSetEIPAddress"

// eipPageSize is the largest page DescribeEipAddresses serves.
const eipPageSize = 100

// wantsEIPs reports whether the status lists the EIPs bound to the load
// balancer: external-ip-type eip, unless hostname overrides everything.
func wantsEIPs(s *annotations.Settings) bool {
	return s.LoadBalancer.Hostname == nil && s.LoadBalancer.ExternalIPType != nil && *s.LoadBalancer.ExternalIPType == "eip"
}

// status is the Service status for lb: the hostname annotation, else with
// external-ip-type eip one entry per EIP bound to the load balancer, else
// (and whenever the EIPs cannot be had) the load balancer's address.
func (p *Provider) status(ctx context.Context, lb *slb.LoadBalancer, s *annotations.Settings) ([]corev1.LoadBalancerIngress, []service.Warning) {
	if !wantsEIPs(s) {
		return ingress(lb, s), nil
	}
	ips, err := p.api.eips(ctx, lb.LoadBalancerId)
	if err == nil && len(ips) > 0 {
		out := make([]corev1.LoadBalancerIngress, 0, len(ips))
		for _, ip := range ips {
			out = append(out, corev1.LoadBalancerIngress{IP: ip})
		}
		return out, nil
	}
	why := "no EIP is bound to it"
	if err != nil {
		why = describe(err)
	}
	w := service.Warning{Reason: EventEIPFailed, Message: fmt.Sprintf(
		"%s is eip but the EIPs of load balancer %s cannot be reported (%s); the status shows the load balancer address %s instead",
		s.Key("external-ip-type"), lb.LoadBalancerId, why, lb.Address)}
	return ingress(lb, s), []service.Warning{w}
}

// refreshStatus is the hash-gated pass's status check: only Services whose
// status lists EIPs need one, because an EIP can be bound or unbound
// without the Service changing. It reads the EIPs, and the load balancer's
// address only when it must fall back to it.
func (p *Provider) refreshStatus(ctx context.Context, lbID string, s *annotations.Settings) ([]corev1.LoadBalancerIngress, []service.Warning, error) {
	if !wantsEIPs(s) {
		return nil, nil, nil
	}
	ips, err := p.api.eips(ctx, lbID)
	if err == nil && len(ips) > 0 {
		out := make([]corev1.LoadBalancerIngress, 0, len(ips))
		for _, ip := range ips {
			out = append(out, corev1.LoadBalancerIngress{IP: ip})
		}
		return out, nil, nil
	}
	lb, lerr := p.api.lbByID(ctx, lbID)
	if lerr != nil {
		return nil, nil, fmt.Errorf("read the address of load balancer %s: %w", lbID, lerr)
	}
	if lb == nil {
		return nil, nil, service.ErrFullSyncNeeded
	}
	in, ws := p.status(ctx, lb, s)
	return in, ws, nil
}

// describe puts the cloud's code first, as the controller's events do.
func describe(err error) string {
	if code := cloud.CodeOf(err); code != "" {
		return fmt.Sprintf("[%s] %v", code, err)
	}
	return err.Error()
}

// eips lists the addresses of the EIPs bound to a load balancer, all pages.
func (a api) eips(ctx context.Context, lbID string) ([]string, error) {
	var out []string
	for page := 1; ; page++ {
		req := vpc.CreateDescribeEipAddressesRequest()
		req.AssociatedInstanceType = "SlbInstance"
		req.AssociatedInstanceId = lbID
		req.PageNumber = requests.NewInteger(page)
		req.PageSize = requests.NewInteger(eipPageSize)
		resp, err := cloud.Do(ctx, a.c, cloud.VPC, "DescribeEipAddresses", func(c *cloud.Clients) (*vpc.DescribeEipAddressesResponse, error) {
			return c.VPC.DescribeEipAddresses(req)
		})
		if err != nil {
			return nil, fmt.Errorf("list the EIPs of load balancer %s: %w", lbID, err)
		}
		for _, e := range resp.EipAddresses.EipAddress {
			out = append(out, e.IpAddress)
		}
		if len(resp.EipAddresses.EipAddress) < eipPageSize || len(out) >= resp.TotalCount {
			// Sorted, so that the status is written only when the set changes.
			sort.Strings(out)
			return out, nil
		}
	}
}
