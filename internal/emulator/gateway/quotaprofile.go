package gateway

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// QuotaProfileAlibaba is the profile modelled on Alibaba Cloud's published
// per-API rate limits (docs/performance.md, "Quota profile").
const QuotaProfileAlibaba = "alibaba"

// QuotaClass is the default per-minute limit of a product's read-only and
// mutating actions, for the actions a profile does not list.
type QuotaClass struct {
	// ReadPerMinute limits each read-only action (Describe*, List*, Get*).
	ReadPerMinute float64
	// WritePerMinute limits each mutating action.
	WritePerMinute float64
}

// QuotaProfile is a named set of per-action rate limits. Each action gets
// its own token bucket (scope api), as the real gateway limits each API of
// each product on its own ("regionId, API, ParentUid").
type QuotaProfile struct {
	// Name selects the profile (--quota-profile).
	Name string
	// Classes are the per-product defaults by action kind.
	Classes map[string]QuotaClass
	// PerMinute are the limits the published tables list, by
	// "product/Action"; they override the class defaults.
	PerMinute map[string]float64
}

// quotaProfiles are the known profiles. The numbers are the Quota Center
// API rate limits of a new account (calls per 60 s, per region, API and
// account) as the product documentation pages "API rate limits"
// (api-slb-2014-05-15-quota, api-nlb-2022-04-30-quota,
// api-vpc-2016-04-28-quota) list them; docs/performance.md says which are
// listed and which are the class default of their product.
var quotaProfiles = map[string]QuotaProfile{
	QuotaProfileAlibaba: {
		Name: QuotaProfileAlibaba,
		Classes: map[string]QuotaClass{
			// CLB: reads 3000/60 s, writes 90/60 s.
			"slb": {ReadPerMinute: 3000, WritePerMinute: 90},
			// NLB: reads 20/s, writes 200/60 s.
			"nlb": {ReadPerMinute: 1200, WritePerMinute: 200},
			// VPC: reads 600/60 s, writes 300/60 s.
			"vpc": {ReadPerMinute: 600, WritePerMinute: 300},
			// ECS publishes no table; assumed like VPC's reads and writes.
			"ecs": {ReadPerMinute: 1200, WritePerMinute: 300},
		},
		PerMinute: map[string]float64{
			"slb/AddBackendServers":                        90,
			"slb/SetBackendServers":                        90,
			"slb/RemoveVServerGroupBackendServers":         90,
			"slb/DeleteLoadBalancerListener":               90,
			"slb/CreateLoadBalancerHTTPListener":           90,
			"slb/SetLoadBalancerHTTPSListenerAttribute":    90,
			"slb/CreateAccessControlList":                  90,
			"slb/UploadServerCertificate":                  90,
			"slb/SetDomainExtensionAttribute":              400,
			"slb/DeleteMasterSlaveServerGroup":             400,
			"slb/DescribeLoadBalancerTCPListenerAttribute": 3000,
			"slb/DescribeDomainExtensionAttribute":         3000,
			"slb/DescribeListenerAccessControlAttribute":   3000,
			"slb/DescribeAvailableResource":                3000,
			"nlb/CreateListener":                           200,
			"nlb/DeleteListener":                           200,
			"nlb/AddServersToServerGroup":                  200,
			"nlb/DeleteServerGroup":                        200,
			"nlb/UpdateServerGroupAttribute":               200,
			"nlb/UpdateServerGroupServersAttribute":        200,
			"nlb/UntagResources":                           200,
			"nlb/ListLoadBalancers":                        1200,
			"nlb/ListTagResources":                         1200,
			"nlb/ListListenerCertificates":                 1200,
			"nlb/DescribeZones":                            1200,
			"nlb/DescribeRegions":                          1200,
			"vpc/ModifyRouteEntry":                         300,
		},
	},
}

// QuotaProfileNames lists the known profiles.
func QuotaProfileNames() []string {
	out := make([]string, 0, len(quotaProfiles))
	for n := range quotaProfiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// LookupQuotaProfile returns a profile by name.
func LookupQuotaProfile(name string) (QuotaProfile, error) {
	p, ok := quotaProfiles[strings.ToLower(name)]
	if !ok {
		return QuotaProfile{}, fmt.Errorf("unknown quota profile %q; known: %s", name, strings.Join(QuotaProfileNames(), ", "))
	}
	return p, nil
}

// QPS is the sustained limit of product/action in calls per second, times
// scale; readOnly picks the class default for actions the table does not
// list. 0 means the product is not limited by the profile.
func (p QuotaProfile) QPS(product, action string, readOnly bool, scale float64) float64 {
	if scale <= 0 {
		scale = 1
	}
	if v, ok := p.PerMinute[product+"/"+action]; ok {
		return v / 60 * scale
	}
	c, ok := p.Classes[product]
	if !ok {
		return 0
	}
	if readOnly {
		return c.ReadPerMinute / 60 * scale
	}
	return c.WritePerMinute / 60 * scale
}

// QuotaProfileRules are the throttle rules of profile name for every
// action the gateway serves, each limit multiplied by scale (a raised
// quota, or a benchmark compressed in time). The burst is one second's
// worth of calls (at least 1): the real limits are counted per minute, but
// a burst of a whole minute would hide the sustained rate a large
// reconcile runs into.
func (g *Gateway) QuotaProfileRules(name string, scale float64) ([]ThrottleRule, error) {
	p, err := LookupQuotaProfile(name)
	if err != nil {
		return nil, err
	}
	if scale <= 0 || math.IsInf(scale, 0) || math.IsNaN(scale) {
		return nil, fmt.Errorf("quota scale must be a positive number, got %v", scale)
	}
	var out []ThrottleRule
	for _, prod := range g.cfg.Products {
		actions := make([]string, 0, len(prod.Actions))
		for a := range prod.Actions {
			actions = append(actions, a)
		}
		sort.Strings(actions)
		for _, a := range actions {
			qps := p.QPS(prod.Name, a, prod.Actions[a].ReadOnly, scale)
			if qps <= 0 {
				continue
			}
			out = append(out, ThrottleRule{Scope: ThrottleScopeAPI, Product: prod.Name, Action: a, QPS: qps,
				Burst: int(math.Max(1, math.Ceil(qps)))})
		}
	}
	return out, nil
}

// ApplyQuotaProfile adds the throttle rules of profile name (see
// QuotaProfileRules) and returns them with their ids. A reset removes them
// with every other throttle rule.
func (g *Gateway) ApplyQuotaProfile(name string, scale float64) ([]ThrottleRule, error) {
	rules, err := g.QuotaProfileRules(name, scale)
	if err != nil {
		return nil, err
	}
	for i, r := range rules {
		added, err := g.AddThrottle(r)
		if err != nil {
			return nil, fmt.Errorf("quota profile %s: %s/%s: %w", name, r.Product, r.Action, err)
		}
		rules[i] = added
	}
	return rules, nil
}

// ActionReadOnly reports whether the gateway serves product's action and
// whether it only reads, so that callers class calls as the quota profile
// does.
func (g *Gateway) ActionReadOnly(product, action string) (readOnly, served bool) {
	for _, p := range g.cfg.Products {
		if p.Name == product {
			if a, ok := p.Actions[action]; ok {
				return a.ReadOnly, true
			}
		}
	}
	return false, false
}
