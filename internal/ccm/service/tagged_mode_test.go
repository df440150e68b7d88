package service_test

import (
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
)

// The suite's CCM runs loadBalancerReuse: any, the binary's default and
// the migration mode, which most tests borrowing a load balancer assume.
// A new install runs tagged (borrowing by grant): the tests whose point
// is two namespaces on one granted load balancer, and the grant rules
// themselves, run under one CCM restarted with tagged, in parallel with
// each other, and the suite's CCM again after (two restarts in all, not
// two per test). TestSharedBorrowedLoadBalancer keeps a run under any.

// Certificates of the SSL Certificates Service (NLB) granted in the tagged
// CCM's cloud config: one to team-a, one to team-b only.
const (
	nlbCertOfAttacker = "7001-cn-hangzhou"
	nlbCertOfVictim   = "7002-cn-hangzhou"
)

// taggedCloudConfig is the suite's cloud config under loadBalancerReuse:
// tagged, with the NLB certificates granted.
func taggedCloudConfig() string {
	return suiteCloudConfig() + "  loadBalancerReuse: tagged\n" +
		"  certificateGrants:\n" +
		"    " + nlbCertOfAttacker + ": " + attackerNS + "\n" +
		"    " + nlbCertOfVictim + ": [" + victimNS + "]\n"
}

// suiteCloudConfig is the cloud config the suite's CCM reads (startCCM).
func suiteCloudConfig() string {
	return "Global:\n  clusterID: " + clusterID + "\n  featureGates: LoadBalancerTypeAnnotation=true\n"
}

// TestUnderTagged runs the grant and shared-load-balancer tests under a
// CCM reading loadBalancerReuse: tagged.
func TestUnderTagged(t *testing.T) {
	tenants(t)
	restartCCM(t, taggedCloudConfig())
	t.Cleanup(func() { restartCCM(t, suiteCloudConfig()) })
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"GrantsCLBGroups", tenantGrantsCLBGroups},
		{"GrantsNLBGroups", tenantGrantsNLBGroups},
		{"GrantsCertificates", tenantGrantsCertificates},
		{"GrantsNLBCertificates", grantsNLBCertificates},
		{"SharedSettingsFrozen", sharedSettingsFrozen},
		{"SharedBoundMembersReleased", sharedBoundMembersReleased},
		{"SharedPortsLimited", sharedPortsLimited},
		{"SharedNLBPortsLimited", sharedNLBPortsLimited},
		{"SharedBorrowedLoadBalancer", func(t *testing.T) {
			sharedBorrowedLoadBalancer(t, "shared-tagged", map[string]string{service.TagReusable: ns})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}
