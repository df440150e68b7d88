package nlb

import (
	"fmt"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// reuseVPCProblem refuses a reused NLB in another VPC than the cluster's
// when the Service's server groups would be Instance groups, before any
// listener or group is written, as a *service.RefusedError (a Warning
// ReuseLoadBalancerRefused, not a failure retried with backoff).
//
// An NLB's server groups are in its VPC (the groups are created with the
// load balancer's VpcId), and an Instance server group takes only ECS
// instances, ENIs and ECIs of its own VPC; an Ip group takes private
// addresses of other VPCs too, reached through CEN or a transit router
// (https://www.alibabacloud.com/help/en/slb/network-load-balancer/user-guide/overview-of-nlb-server-groups,
// "Server group types"). So only server-group-type ip can serve the
// cluster's Nodes or pods from an NLB of another VPC.
func reuseVPCProblem(lbID, lbVPC, clusterVPC string, s *annotations.Settings) error {
	if lbVPC == "" || clusterVPC == "" || lbVPC == clusterVPC || groupType(s) == GroupIP {
		return nil
	}
	return &service.RefusedError{Reason: service.EventReuseRefused, Message: fmt.Sprintf("%s %s is in VPC %s, the cluster's is %s: its server groups are in %s and Instance server groups take only servers of their own VPC; reuse an NLB of %s, or set %s: ip (addresses across VPCs need CEN or a transit router)",
		s.Key("id"), lbID, lbVPC, clusterVPC, lbVPC, clusterVPC, s.Key("server-group-type"))}
}
