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

// The table's forms, one constructor each, so that a rule names only what
// its form uses and reads on one line.

// enumFact accepts the values only, spelled as the API spells them.
func enumFact(key string, values []string, source string) CloudFact {
	return CloudFact{Key: key, Values: values, Source: source}
}

// rangeFact bounds an integer or a count, inclusive.
func rangeFact(key string, min, max int, source string) CloudFact {
	return CloudFact{Key: key, Min: min, Max: max, Source: source}
}

// nameFact is a name rule of min to max characters.
func nameFact(key string, min, max int, valid func(string) bool, source string) CloudFact {
	return CloudFact{Key: key, Min: min, Max: max, Valid: valid, Source: source}
}

// CloudFacts are the rules, by product.
var CloudFacts = []CloudFact{
	// CLB.
	nameFact("slb:LoadBalancerName", 1, 80, validCLBName, refCLB+"CreateLoadBalancer.LoadBalancerName (1-80 characters, starting with a letter; letters, digits, '.', '_', '-'), and "+terraform+"website/docs/r/slb_load_balancer.html.markdown load_balancer_name, which also allows '/'"),
	enumFact("slb:AddressType", []string{"internet", "intranet"}, refCLB+"CreateLoadBalancer.AddressType"),
	enumFact("slb:AddressIPVersion", []string{"ipv4", "ipv6"}, refCLB+"CreateLoadBalancer.AddressIPVersion"),
	enumFact("slb:InternetChargeType", []string{"paybytraffic", "paybybandwidth"}, refCLB+"CreateLoadBalancer.InternetChargeType ("+terraform+"accepted PayByTraffic/PayByBandwidth and lower-cases them)"),
	enumFact("slb:InstanceChargeType", []string{"PayBySpec", "PayByCLCU"}, refCLB+"CreateLoadBalancer.InstanceChargeType"),
	enumFact("slb:LoadBalancerSpec", []string{"slb.s1.small", "slb.s2.small", "slb.s2.medium", "slb.s3.small", "slb.s3.medium", "slb.s3.large", "slb.s3.xlarge", "slb.s3.xxlarge"}, refCLB+"CreateLoadBalancer.LoadBalancerSpec (the first six); Resource Orchestration Service ALIYUN::SLB::LoadBalancer.LoadBalancerSpec (all eight: slb.s3.xlarge, slb.s3.xxlarge too)"),
	rangeFact("slb:Bandwidth", 1, 5120, refCLB+"CreateLoadBalancer.Bandwidth"),
	enumFact("slb:ModificationProtectionStatus", []string{"ConsoleProtection", "NonProtection"}, refCLB+"SetLoadBalancerModificationProtection.ModificationProtectionStatus"),
	enumFact("slb:Scheduler/tcp", []string{"wrr", "rr", "sch", "tch"}, refCLB+"CreateLoadBalancerTCPListener.Scheduler"),
	enumFact("slb:Scheduler/udp", []string{"wrr", "rr", "sch", "tch"}, refCLB+"CreateLoadBalancerUDPListener.Scheduler"),
	enumFact("slb:Scheduler/http", []string{"wrr", "rr"}, refCLB+"CreateLoadBalancerHTTPListener.Scheduler"),
	enumFact("slb:Scheduler/https", []string{"wrr", "rr"}, refCLB+"CreateLoadBalancerHTTPSListener.Scheduler"),
	rangeFact("slb:HealthyThreshold", 2, 10, refCLB+"CreateLoadBalancerTCPListener.HealthyThreshold"),
	rangeFact("slb:UnhealthyThreshold", 2, 10, refCLB+"CreateLoadBalancerTCPListener.UnhealthyThreshold"),
	rangeFact("slb:HealthCheckInterval", 1, 50, refCLB+"CreateLoadBalancerTCPListener.HealthCheckInterval"),
	rangeFact("slb:HealthCheckConnectTimeout", 1, 300, refCLB+"CreateLoadBalancerTCPListener.HealthCheckConnectTimeout"),
	rangeFact("slb:HealthCheckTimeout", 1, 300, refCLB+"CreateLoadBalancerHTTPListener.HealthCheckTimeout"),
	enumFact("slb:HealthCheckType", []string{"tcp", "http"}, refCLB+"CreateLoadBalancerTCPListener.HealthCheckType"),
	enumFact("slb:HealthCheckMethod", []string{"head", "get"}, refCLB+"CreateLoadBalancerHTTPListener.HealthCheckMethod"),
	rangeFact("slb:PersistenceTimeout", 0, 3600, refCLB+"CreateLoadBalancerTCPListener.PersistenceTimeout"),
	rangeFact("slb:ConnectionDrainTimeout", 10, 900, refCLB+"CreateLoadBalancerTCPListener.ConnectionDrainTimeout"),
	rangeFact("slb:EstablishedTimeout", 10, 900, refCLB+"CreateLoadBalancerTCPListener.EstablishedTimeout"),
	rangeFact("slb:IdleTimeout", 1, 60, refCLB+"CreateLoadBalancerHTTPListener.IdleTimeout"),
	rangeFact("slb:RequestTimeout", 1, 180, refCLB+"CreateLoadBalancerHTTPListener.RequestTimeout"),
	rangeFact("slb:CookieTimeout", 1, 86400, refCLB+"CreateLoadBalancerHTTPListener.CookieTimeout"),
	enumFact("slb:StickySessionType", []string{"insert", "server"}, refCLB+"CreateLoadBalancerHTTPListener.StickySessionType"),
	enumFact("slb:TLSCipherPolicy", []string{"tls_cipher_policy_1_0", "tls_cipher_policy_1_1", "tls_cipher_policy_1_2", "tls_cipher_policy_1_2_strict", "tls_cipher_policy_1_2_strict_with_1_3"}, refCLB+"CreateLoadBalancerHTTPSListener.TLSCipherPolicy"),
	enumFact("slb:AclType", []string{"white", "black"}, refCLB+"CreateLoadBalancerTCPListener.AclType"),
	rangeFact("slb:Weight", 0, 100, refCLB+"AddVServerGroupBackendServers.BackendServers Weight"),
	rangeFact("slb:TagKeyLength", 1, 64, refCLB+"TagResources.Tag.N.Key (up to 64 characters)"),
	rangeFact("slb:TagValueLength", 0, 128, refCLB+"TagResources.Tag.N.Value (up to 128 characters)"),

	// NLB.
	nameFact("nlb:LoadBalancerName", 2, 128, validNLBName, refNLB+"CreateLoadBalancer.LoadBalancerName and "+terraform+"website/docs/r/nlb_load_balancer.html.markdown load_balancer_name (2-128 characters, starting with a letter; letters, digits, '.', '_', '-')"),
	enumFact("nlb:AddressIpVersion", []string{"ipv4", "DualStack"}, refNLB+"CreateLoadBalancer.AddressIpVersion"),
	rangeFact("nlb:ZoneMappings", 2, 10, refNLB+"CreateLoadBalancer.ZoneMappings; "+terraform+"nlb_load_balancer zone_mappings (at least two, at most 10)"),
	enumFact("nlb:Scheduler", []string{"Wrr", "Rr", "Sch", "Tch", "Qch", "Wlc"}, refNLB+"CreateServerGroup.Scheduler (any case)"),
	rangeFact("nlb:HealthyThreshold", 2, 10, refNLB+"CreateServerGroup.HealthCheckConfig.HealthyThreshold"),
	rangeFact("nlb:UnhealthyThreshold", 2, 10, refNLB+"CreateServerGroup.HealthCheckConfig.UnhealthyThreshold"),
	rangeFact("nlb:HealthCheckInterval", 1, 50, refNLB+"CreateServerGroup.HealthCheckConfig.HealthCheckInterval (TCP and HTTP checks)"),
	rangeFact("nlb:HealthCheckConnectTimeout", 1, 300, refNLB+"CreateServerGroup.HealthCheckConfig.HealthCheckConnectTimeout"),
	rangeFact("nlb:ConnectionDrainTimeout", 0, 900, refNLB+"CreateServerGroup.ConnectionDrainTimeout"),
	rangeFact("nlb:IdleTimeout/TCP", 10, 900, refNLB+"CreateListener.IdleTimeout (TCP and TCPSSL listeners)"),
	rangeFact("nlb:IdleTimeout/UDP", 10, 20, refNLB+"CreateListener.IdleTimeout (UDP listeners)"),
	rangeFact("nlb:Cps", 0, 1000000, refNLB+"CreateListener.Cps"),
	enumFact("nlb:AlpnPolicy", []string{"HTTP1Only", "HTTP2Only", "HTTP2Preferred", "HTTP2Optional"}, refNLB+"CreateListener.AlpnPolicy"),
	rangeFact("nlb:Weight", 0, 100, refNLB+"AddServersToServerGroup.Servers.N.Weight"),
	rangeFact("nlb:TagKeyLength", 1, 64, refNLB+"TagResources.Tag.N.Key (1-64 characters)"),
	rangeFact("nlb:TagValueLength", 0, 128, refNLB+"TagResources.Tag.N.Value (up to 128 characters)"),
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
