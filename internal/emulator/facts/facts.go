// Package facts holds the value rules of the Alibaba Cloud APIs that the
// emulator enforces: parameter ranges, enumerations, name patterns and
// limits, each with the source it was read from. The CCM keeps its own,
// independent table (internal/ccm/annotations/facts.go); neither imports
// the other, and internal/factcheck's test crosses the two value by value,
// so a wrong rule on one side shows up as a disagreement instead of being
// accepted by both.
package facts

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Rule is one value rule of an API parameter. Exactly one of its forms is
// used: Values (an enumeration, with the documented case), Valid (a name
// pattern; Min and Max then bound its length in characters), or Min and
// Max alone (an inclusive integer range, or a count limit).
type Rule struct {
	// Key names the parameter as product:Parameter, with a /qualifier
	// where the rule depends on it (e.g. slb:Scheduler/http).
	Key string
	// Min and Max bound an integer, a count, or a name's length.
	Min, Max int
	// Values are the accepted values of an enumeration.
	Values []string
	// Valid reports whether a name is accepted.
	Valid func(string) bool
	// Source says where the rule was read.
	Source string
}

// Sources. The darabonba-generated SDKs carry the API reference's
// parameter descriptions ("Valid values: …") in their model comments.
const (
	slbSDK  = "github.com/alibabacloud-go/slb-20140515 client/"
	nlbSDK  = "github.com/alibabacloud-go/nlb-20220430 client/client.go "
	tfDocs  = "github.com/aliyun/terraform-provider-alicloud website/docs/r/"
	apiNote = "alibaba-openapi.md §3.1 (the project's notes of the API reference)"
)

// The rules, grouped by product.
var rules = []Rule{
	// CLB load balancer.
	{Key: "slb:LoadBalancerName", Min: 1, Max: 80, Valid: clbName,
		Source: slbSDK + "create_load_balancer_request_model.go LoadBalancerName (1-80 characters, starts with a letter; letters, digits, '.', '_', '-'); " +
			tfDocs + "slb_load_balancer.html.markdown load_balancer_name (also '/')"},
	{Key: "slb:AddressType", Values: []string{"internet", "intranet"},
		Source: slbSDK + "create_load_balancer_request_model.go AddressType"},
	{Key: "slb:AddressIPVersion", Values: []string{"ipv4", "ipv6"},
		Source: slbSDK + "create_load_balancer_request_model.go AddressIPVersion"},
	{Key: "slb:InternetChargeType", Values: []string{"paybytraffic", "paybybandwidth"},
		Source: slbSDK + "create_load_balancer_request_model.go InternetChargeType"},
	{Key: "slb:InstanceChargeType", Values: []string{"PayBySpec", "PayByCLCU"},
		Source: slbSDK + "create_load_balancer_request_model.go InstanceChargeType"},
	{Key: "slb:LoadBalancerSpec", Values: []string{"slb.s1.small", "slb.s2.small", "slb.s2.medium", "slb.s3.small", "slb.s3.medium", "slb.s3.large", "slb.s3.xlarge", "slb.s3.xxlarge"},
		Source: slbSDK + "create_load_balancer_request_model.go LoadBalancerSpec (the first six); Alibaba's Resource Orchestration Service, ALIYUN::SLB::LoadBalancer LoadBalancerSpec (github.com/aliyun/Resource-Orchestration-Service-Cloud-Development-Kit: all eight)"},
	{Key: "slb:Bandwidth", Min: 1, Max: 5120,
		Source: slbSDK + "create_load_balancer_request_model.go Bandwidth (1-5120)"},
	{Key: "slb:ModificationProtectionStatus", Values: []string{"NonProtection", "ConsoleProtection"},
		Source: slbSDK + "set_load_balancer_modification_protection_request_model.go ModificationProtectionStatus"},

	// CLB listeners.
	{Key: "slb:Scheduler/tcp", Values: []string{"wrr", "rr", "sch", "tch"},
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go Scheduler; " + apiNote + " Scheduler(wrr|rr|sch|tch)"},
	{Key: "slb:Scheduler/udp", Values: []string{"wrr", "rr", "sch", "tch"},
		Source: slbSDK + "create_load_balancer_udplistener_request_model.go Scheduler"},
	{Key: "slb:Scheduler/http", Values: []string{"wrr", "rr"},
		Source: slbSDK + "create_load_balancer_httplistener_request_model.go Scheduler"},
	{Key: "slb:Scheduler/https", Values: []string{"wrr", "rr"},
		Source: slbSDK + "create_load_balancer_httpslistener_request_model.go Scheduler"},
	{Key: "slb:ListenerBandwidth", Min: -1, Max: 5120,
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go Bandwidth (-1, or 1-5120)"},
	{Key: "slb:HealthyThreshold", Min: 2, Max: 10,
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go HealthyThreshold"},
	{Key: "slb:UnhealthyThreshold", Min: 2, Max: 10,
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go UnhealthyThreshold"},
	{Key: "slb:HealthCheckInterval", Min: 1, Max: 50,
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go HealthCheckInterval"},
	{Key: "slb:HealthCheckConnectTimeout", Min: 1, Max: 300,
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go HealthCheckConnectTimeout"},
	{Key: "slb:HealthCheckTimeout", Min: 1, Max: 300,
		Source: slbSDK + "create_load_balancer_httplistener_request_model.go HealthCheckTimeout"},
	{Key: "slb:HealthCheckType", Values: []string{"tcp", "http"},
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go HealthCheckType"},
	{Key: "slb:HealthCheckMethod", Values: []string{"head", "get"},
		Source: slbSDK + "create_load_balancer_httplistener_request_model.go HealthCheckMethod"},
	{Key: "slb:PersistenceTimeout", Min: 0, Max: 3600,
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go PersistenceTimeout"},
	{Key: "slb:ConnectionDrainTimeout", Min: 10, Max: 900,
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go ConnectionDrainTimeout"},
	{Key: "slb:EstablishedTimeout", Min: 10, Max: 900,
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go EstablishedTimeout"},
	{Key: "slb:IdleTimeout", Min: 1, Max: 60,
		Source: slbSDK + "create_load_balancer_httplistener_request_model.go IdleTimeout"},
	{Key: "slb:RequestTimeout", Min: 1, Max: 180,
		Source: slbSDK + "create_load_balancer_httplistener_request_model.go RequestTimeout"},
	{Key: "slb:CookieTimeout", Min: 1, Max: 86400,
		Source: slbSDK + "create_load_balancer_httplistener_request_model.go CookieTimeout"},
	{Key: "slb:StickySessionType", Values: []string{"insert", "server"},
		Source: slbSDK + "create_load_balancer_httplistener_request_model.go StickySessionType"},
	{Key: "slb:TLSCipherPolicy", Values: []string{"tls_cipher_policy_1_0", "tls_cipher_policy_1_1", "tls_cipher_policy_1_2", "tls_cipher_policy_1_2_strict", "tls_cipher_policy_1_2_strict_with_1_3"},
		Source: slbSDK + "create_load_balancer_httpslistener_request_model.go TLSCipherPolicy"},
	{Key: "slb:AclType", Values: []string{"white", "black"},
		Source: slbSDK + "create_load_balancer_tcplistener_request_model.go AclType"},

	// CLB backends and tags.
	{Key: "slb:Weight", Min: 0, Max: 100,
		Source: slbSDK + "add_vserver_group_backend_servers_request_model.go BackendServers Weight (0-100)"},
	{Key: "slb:TagKeyLength", Min: 1, Max: 64,
		Source: slbSDK + "tag_resources_request_model.go Tag.Key (1-64 characters, not aliyun or acs:, no http(s)://)"},
	{Key: "slb:TagValueLength", Min: 0, Max: 128,
		Source: slbSDK + "tag_resources_request_model.go Tag.Value (up to 128 characters)"},

	// NLB load balancer.
	{Key: "nlb:LoadBalancerName", Min: 2, Max: 128, Valid: nlbName,
		Source: nlbSDK + "CreateLoadBalancerRequest.LoadBalancerName (2-128 characters, starts with a letter; letters, digits, '.', '_', '-'); " +
			tfDocs + "nlb_load_balancer.html.markdown load_balancer_name (the same)"},
	{Key: "nlb:ServerGroupName", Min: 2, Max: 128, Valid: nlbName,
		Source: nlbSDK + "CreateServerGroupRequest.ServerGroupName (2-128 characters, starts with a letter)"},
	{Key: "nlb:AddressType", Values: []string{"Internet", "Intranet"},
		Source: nlbSDK + "CreateLoadBalancerRequest.AddressType"},
	{Key: "nlb:AddressIpVersion", Values: []string{"ipv4", "DualStack"},
		Source: nlbSDK + "CreateLoadBalancerRequest.AddressIpVersion"},
	{Key: "nlb:ZoneMappings", Min: 2, Max: 10,
		Source: nlbSDK + "CreateLoadBalancerRequest.ZoneMappings (up to 10 zones, at least two where the region has two); " + tfDocs + "nlb_load_balancer.html.markdown zone_mappings"},

	// NLB listeners.
	{Key: "nlb:ListenerProtocol", Values: []string{"TCP", "UDP", "TCPSSL"},
		Source: nlbSDK + "CreateListenerRequest.ListenerProtocol"},
	{Key: "nlb:IdleTimeout/TCP", Min: 10, Max: 900,
		Source: nlbSDK + "CreateListenerRequest.IdleTimeout (TCP and TCPSSL: 10-900)"},
	{Key: "nlb:IdleTimeout/UDP", Min: 10, Max: 20,
		Source: nlbSDK + "CreateListenerRequest.IdleTimeout (UDP: 10-20)"},
	{Key: "nlb:Cps", Min: 0, Max: 1000000,
		Source: nlbSDK + "CreateListenerRequest.Cps"},
	{Key: "nlb:AlpnPolicy", Values: []string{"HTTP1Only", "HTTP2Only", "HTTP2Preferred", "HTTP2Optional"},
		Source: nlbSDK + "CreateListenerRequest.AlpnPolicy"},

	// NLB server groups.
	{Key: "nlb:Scheduler", Values: []string{"Wrr", "Rr", "Sch", "Tch", "Qch", "Wlc"},
		Source: nlbSDK + "CreateServerGroupRequest.Scheduler (documented as Wrr, Wlc, rr, sch, tch, qch: the case differs between values and pages, and the API takes any case)"},
	{Key: "nlb:ServerGroupType", Values: []string{"Instance", "Ip"},
		Source: nlbSDK + "CreateServerGroupRequest.ServerGroupType"},
	{Key: "nlb:HealthCheckType", Values: []string{"TCP", "HTTP", "UDP"},
		Source: nlbSDK + "CreateServerGroupRequestHealthCheckConfig.HealthCheckType"},
	{Key: "nlb:HttpCheckMethod", Values: []string{"GET", "HEAD"},
		Source: nlbSDK + "CreateServerGroupRequestHealthCheckConfig.HttpCheckMethod"},
	{Key: "nlb:HealthCheckConnectPort", Min: 0, Max: 65535,
		Source: nlbSDK + "CreateServerGroupRequestHealthCheckConfig.HealthCheckConnectPort"},
	{Key: "nlb:HealthCheckConnectTimeout", Min: 1, Max: 300,
		Source: nlbSDK + "CreateServerGroupRequestHealthCheckConfig.HealthCheckConnectTimeout"},
	{Key: "nlb:HealthCheckInterval", Min: 1, Max: 50,
		Source: nlbSDK + "CreateServerGroupRequestHealthCheckConfig.HealthCheckInterval (TCP and HTTP checks: 1-50)"},
	{Key: "nlb:HealthyThreshold", Min: 2, Max: 10,
		Source: nlbSDK + "CreateServerGroupRequestHealthCheckConfig.HealthyThreshold"},
	{Key: "nlb:UnhealthyThreshold", Min: 2, Max: 10,
		Source: nlbSDK + "CreateServerGroupRequestHealthCheckConfig.UnhealthyThreshold"},
	{Key: "nlb:ConnectionDrainTimeout", Min: 0, Max: 900,
		Source: nlbSDK + "CreateServerGroupRequest.ConnectionDrainTimeout"},
	{Key: "nlb:PersistenceTimeout", Min: 0, Max: 3600,
		Source: nlbSDK + "CreateServerGroupRequest.PersistenceTimeout"},
	{Key: "nlb:Weight", Min: 0, Max: 100,
		Source: nlbSDK + "AddServersToServerGroupRequestServers.Weight (0-100)"},
	{Key: "nlb:TagKeyLength", Min: 1, Max: 64,
		Source: nlbSDK + "CreateLoadBalancerRequestTag.Key (1-64 characters, not aliyun or acs:, no http(s)://)"},
	{Key: "nlb:TagValueLength", Min: 0, Max: 128,
		Source: nlbSDK + "CreateLoadBalancerRequestTag.Value (1-128 characters; an empty value is accepted)"},
}

// byKey indexes rules; a duplicate key is a bug in the table.
var byKey = func() map[string]Rule {
	m := map[string]Rule{}
	for _, r := range rules {
		if _, dup := m[r.Key]; dup {
			panic("facts: duplicate rule " + r.Key)
		}
		m[r.Key] = r
	}
	return m
}()

// All returns every rule, in table order.
func All() []Rule { return slices.Clone(rules) }

// Get returns the rule of key; a missing key is a bug in the caller.
func Get(key string) Rule {
	r, ok := byKey[key]
	if !ok {
		panic("facts: no rule " + key)
	}
	return r
}

// Enum returns a copy of the values of the enumeration key.
func Enum(key string) []string {
	r := Get(key)
	if r.Values == nil {
		panic("facts: " + key + " is not an enumeration")
	}
	return slices.Clone(r.Values)
}

// Range returns the bounds of the range key.
func Range(key string) (min, max int) {
	r := Get(key)
	if r.Values != nil || r.Valid != nil {
		panic("facts: " + key + " is not a range")
	}
	return r.Min, r.Max
}

// ValidName reports whether name passes the name rule key.
func ValidName(key, name string) bool {
	r := Get(key)
	if r.Valid == nil {
		panic("facts: " + key + " is not a name rule")
	}
	return r.Valid(name)
}

// NameRule describes the name rule key for error messages.
func NameRule(key string) string {
	r := Get(key)
	extra := ""
	if key == "slb:LoadBalancerName" {
		extra = ", slashes (/)"
	}
	return fmt.Sprintf("%d to %d characters, starting with a letter, then letters, digits, periods (.), underscores (_)%s and hyphens (-)", r.Min, r.Max, extra)
}

// name checks a name of min to max characters that starts with a letter
// (Chinese characters count as letters, as the console shows) and
// otherwise holds letters, digits and the characters of extra.
func name(v string, min, max int, extra string) bool {
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

func clbName(v string) bool { return name(v, 1, 80, "._-/") }
func nlbName(v string) bool { return name(v, 2, 128, "._-") }
