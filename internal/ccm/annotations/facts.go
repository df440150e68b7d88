package annotations

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// CloudFact is one value rule of an Alibaba Cloud API parameter that the
// annotation parser checks before the CCM sends the value, so that a value
// the cloud would refuse becomes a Warning event naming the annotation
// instead of a failed call. The emulator keeps its own table
// (internal/emulator/facts); internal/factcheck's test crosses the two, so
// neither can carry a wrong rule unnoticed.
type CloudFact struct {
	// Key names the parameter as product:Parameter, with a /qualifier
	// where the rule depends on it (e.g. slb:Scheduler/http).
	Key string
	// Min and Max bound an integer, a count, or a name's length.
	Min, Max int
	// Values are the accepted values of an enumeration, as the API spells
	// them.
	Values []string
	// Valid reports whether a name is accepted.
	Valid func(string) bool
	// Source says where the rule was read.
	Source string
}

// Sources: the API reference pages (as the darabonba-generated SDK models
// carry them in their comments) and the Terraform provider for Alibaba
// Cloud.
const (
	refCLB    = "CLB API reference (github.com/alibabacloud-go/slb-20140515 model comments) "
	refNLB    = "NLB API reference (github.com/alibabacloud-go/nlb-20220430 model comments) "
	terraform = "github.com/aliyun/terraform-provider-alicloud "
)

// CloudFacts are the rules, by product.
var CloudFacts = []CloudFact{
	// CLB.
	{Key: "slb:LoadBalancerName", Min: 1, Max: 80, Valid: validCLBName,
		Source: refCLB + "CreateLoadBalancer.LoadBalancerName (1-80 characters, starting with a letter; letters, digits, '.', '_', '-'), and " +
			terraform + "website/docs/r/slb_load_balancer.html.markdown load_balancer_name, which also allows '/'"},
	{Key: "slb:AddressType", Values: []string{"internet", "intranet"}, Source: refCLB + "CreateLoadBalancer.AddressType"},
	{Key: "slb:AddressIPVersion", Values: []string{"ipv4", "ipv6"}, Source: refCLB + "CreateLoadBalancer.AddressIPVersion"},
	{Key: "slb:InternetChargeType", Values: []string{"paybytraffic", "paybybandwidth"},
		Source: refCLB + "CreateLoadBalancer.InternetChargeType (" + terraform + "accepted PayByTraffic/PayByBandwidth and lower-cases them)"},
	{Key: "slb:InstanceChargeType", Values: []string{"PayBySpec", "PayByCLCU"}, Source: refCLB + "CreateLoadBalancer.InstanceChargeType"},
	{Key: "slb:LoadBalancerSpec", Values: []string{"slb.s1.small", "slb.s2.small", "slb.s2.medium", "slb.s3.small", "slb.s3.medium", "slb.s3.large", "slb.s3.xlarge", "slb.s3.xxlarge"},
		Source: refCLB + "CreateLoadBalancer.LoadBalancerSpec (the first six); Resource Orchestration Service ALIYUN::SLB::LoadBalancer.LoadBalancerSpec (all eight: slb.s3.xlarge, slb.s3.xxlarge too)"},
	{Key: "slb:Bandwidth", Min: 1, Max: 5120, Source: refCLB + "CreateLoadBalancer.Bandwidth"},
	{Key: "slb:ModificationProtectionStatus", Values: []string{"ConsoleProtection", "NonProtection"}, Source: refCLB + "SetLoadBalancerModificationProtection.ModificationProtectionStatus"},
	{Key: "slb:Scheduler/tcp", Values: []string{"wrr", "rr", "sch", "tch"}, Source: refCLB + "CreateLoadBalancerTCPListener.Scheduler"},
	{Key: "slb:Scheduler/udp", Values: []string{"wrr", "rr", "sch", "tch"}, Source: refCLB + "CreateLoadBalancerUDPListener.Scheduler"},
	{Key: "slb:Scheduler/http", Values: []string{"wrr", "rr"}, Source: refCLB + "CreateLoadBalancerHTTPListener.Scheduler"},
	{Key: "slb:Scheduler/https", Values: []string{"wrr", "rr"}, Source: refCLB + "CreateLoadBalancerHTTPSListener.Scheduler"},
	{Key: "slb:HealthyThreshold", Min: 2, Max: 10, Source: refCLB + "CreateLoadBalancerTCPListener.HealthyThreshold"},
	{Key: "slb:UnhealthyThreshold", Min: 2, Max: 10, Source: refCLB + "CreateLoadBalancerTCPListener.UnhealthyThreshold"},
	{Key: "slb:HealthCheckInterval", Min: 1, Max: 50, Source: refCLB + "CreateLoadBalancerTCPListener.HealthCheckInterval"},
	{Key: "slb:HealthCheckConnectTimeout", Min: 1, Max: 300, Source: refCLB + "CreateLoadBalancerTCPListener.HealthCheckConnectTimeout"},
	{Key: "slb:HealthCheckTimeout", Min: 1, Max: 300, Source: refCLB + "CreateLoadBalancerHTTPListener.HealthCheckTimeout"},
	{Key: "slb:HealthCheckType", Values: []string{"tcp", "http"}, Source: refCLB + "CreateLoadBalancerTCPListener.HealthCheckType"},
	{Key: "slb:HealthCheckMethod", Values: []string{"head", "get"}, Source: refCLB + "CreateLoadBalancerHTTPListener.HealthCheckMethod"},
	{Key: "slb:PersistenceTimeout", Min: 0, Max: 3600, Source: refCLB + "CreateLoadBalancerTCPListener.PersistenceTimeout"},
	{Key: "slb:ConnectionDrainTimeout", Min: 10, Max: 900, Source: refCLB + "CreateLoadBalancerTCPListener.ConnectionDrainTimeout"},
	{Key: "slb:EstablishedTimeout", Min: 10, Max: 900, Source: refCLB + "CreateLoadBalancerTCPListener.EstablishedTimeout"},
	{Key: "slb:IdleTimeout", Min: 1, Max: 60, Source: refCLB + "CreateLoadBalancerHTTPListener.IdleTimeout"},
	{Key: "slb:RequestTimeout", Min: 1, Max: 180, Source: refCLB + "CreateLoadBalancerHTTPListener.RequestTimeout"},
	{Key: "slb:CookieTimeout", Min: 1, Max: 86400, Source: refCLB + "CreateLoadBalancerHTTPListener.CookieTimeout"},
	{Key: "slb:StickySessionType", Values: []string{"insert", "server"}, Source: refCLB + "CreateLoadBalancerHTTPListener.StickySessionType"},
	{Key: "slb:TLSCipherPolicy", Values: []string{"tls_cipher_policy_1_0", "tls_cipher_policy_1_1", "tls_cipher_policy_1_2", "tls_cipher_policy_1_2_strict", "tls_cipher_policy_1_2_strict_with_1_3"},
		Source: refCLB + "CreateLoadBalancerHTTPSListener.TLSCipherPolicy"},
	{Key: "slb:AclType", Values: []string{"white", "black"}, Source: refCLB + "CreateLoadBalancerTCPListener.AclType"},
	{Key: "slb:Weight", Min: 0, Max: 100, Source: refCLB + "AddVServerGroupBackendServers.BackendServers Weight"},
	{Key: "slb:TagKeyLength", Min: 1, Max: 64, Source: refCLB + "TagResources.Tag.N.Key (up to 64 characters)"},
	{Key: "slb:TagValueLength", Min: 0, Max: 128, Source: refCLB + "TagResources.Tag.N.Value (up to 128 characters)"},

	// NLB.
	{Key: "nlb:LoadBalancerName", Min: 2, Max: 128, Valid: validNLBName,
		Source: refNLB + "CreateLoadBalancer.LoadBalancerName and " + terraform + "website/docs/r/nlb_load_balancer.html.markdown load_balancer_name (2-128 characters, starting with a letter; letters, digits, '.', '_', '-')"},
	{Key: "nlb:AddressIpVersion", Values: []string{"ipv4", "DualStack"}, Source: refNLB + "CreateLoadBalancer.AddressIpVersion"},
	{Key: "nlb:ZoneMappings", Min: 2, Max: 10, Source: refNLB + "CreateLoadBalancer.ZoneMappings; " + terraform + "nlb_load_balancer zone_mappings (at least two, at most 10)"},
	{Key: "nlb:Scheduler", Values: []string{"Wrr", "Rr", "Sch", "Tch", "Qch", "Wlc"}, Source: refNLB + "CreateServerGroup.Scheduler (any case)"},
	{Key: "nlb:HealthyThreshold", Min: 2, Max: 10, Source: refNLB + "CreateServerGroup.HealthCheckConfig.HealthyThreshold"},
	{Key: "nlb:UnhealthyThreshold", Min: 2, Max: 10, Source: refNLB + "CreateServerGroup.HealthCheckConfig.UnhealthyThreshold"},
	{Key: "nlb:HealthCheckInterval", Min: 1, Max: 50, Source: refNLB + "CreateServerGroup.HealthCheckConfig.HealthCheckInterval (TCP and HTTP checks)"},
	{Key: "nlb:HealthCheckConnectTimeout", Min: 1, Max: 300, Source: refNLB + "CreateServerGroup.HealthCheckConfig.HealthCheckConnectTimeout"},
	{Key: "nlb:ConnectionDrainTimeout", Min: 0, Max: 900, Source: refNLB + "CreateServerGroup.ConnectionDrainTimeout"},
	{Key: "nlb:IdleTimeout/TCP", Min: 10, Max: 900, Source: refNLB + "CreateListener.IdleTimeout (TCP and TCPSSL listeners)"},
	{Key: "nlb:IdleTimeout/UDP", Min: 10, Max: 20, Source: refNLB + "CreateListener.IdleTimeout (UDP listeners)"},
	{Key: "nlb:Cps", Min: 0, Max: 1000000, Source: refNLB + "CreateListener.Cps"},
	{Key: "nlb:AlpnPolicy", Values: []string{"HTTP1Only", "HTTP2Only", "HTTP2Preferred", "HTTP2Optional"}, Source: refNLB + "CreateListener.AlpnPolicy"},
	{Key: "nlb:Weight", Min: 0, Max: 100, Source: refNLB + "AddServersToServerGroup.Servers.N.Weight"},
	{Key: "nlb:TagKeyLength", Min: 1, Max: 64, Source: refNLB + "TagResources.Tag.N.Key (1-64 characters)"},
	{Key: "nlb:TagValueLength", Min: 0, Max: 128, Source: refNLB + "TagResources.Tag.N.Value (up to 128 characters)"},
}

// The longest tag key and value, in characters: the same for CLB and NLB
// (facts_test.go checks).
var (
	tagKeyMax   = cloudFact("slb:TagKeyLength").Max
	tagValueMax = cloudFact("slb:TagValueLength").Max
)

// cloudFact returns the rule of key; a missing key is a bug in the caller.
func cloudFact(key string) CloudFact {
	for _, f := range CloudFacts {
		if f.Key == key {
			return f
		}
	}
	panic("annotations: no cloud fact " + key)
}

// factValues is the registry option of an enumeration taken from the
// facts.
func factValues(key string) func(*Annotation) {
	f := cloudFact(key)
	if f.Values == nil {
		panic("annotations: " + key + " is not an enumeration")
	}
	return values(slices.Clone(f.Values)...)
}

// factRange is the registry option of a range taken from the facts.
func factRange(key string) func(*Annotation) {
	f := cloudFact(key)
	return rng(f.Min, f.Max)
}

// CLBSchedulers returns the Scheduler values a CLB listener of protocol
// (tcp, udp, http, https; any case) accepts, nil for another protocol.
func CLBSchedulers(protocol string) []string {
	for _, f := range CloudFacts {
		if f.Key == "slb:Scheduler/"+strings.ToLower(protocol) {
			return slices.Clone(f.Values)
		}
	}
	return nil
}

// allCLBSchedulers returns every Scheduler value some CLB listener
// protocol accepts, in the order of the TCP table.
func allCLBSchedulers() []string {
	var out []string
	for _, p := range []string{"tcp", "udp", "http", "https"} {
		for _, v := range CLBSchedulers(p) {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// nameRule describes the name rule of key for messages and docs.
func nameRule(key string) string {
	f := cloudFact(key)
	extra := ""
	if key == "slb:LoadBalancerName" {
		extra = ", slashes (/)"
	}
	return fmt.Sprintf("%d to %d characters, starting with a letter, then letters, digits, periods (.), underscores (_)%s and hyphens (-)", f.Min, f.Max, extra)
}

// validCLBName reports whether a CLB LoadBalancerName is valid; Chinese
// characters count as letters.
func validCLBName(v string) bool { return letterName(v, 1, 80, "._-/") }

// validNLBName reports whether an NLB LoadBalancerName is valid.
func validNLBName(v string) bool { return letterName(v, 2, 128, "._-") }

func letterName(v string, min, max int, extra string) bool {
	r := []rune(v)
	if len(r) < min || len(r) > max || !unicode.IsLetter(r[0]) {
		return false
	}
	for _, c := range r {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && !strings.ContainsRune(extra, c) {
			return false
		}
	}
	return true
}
