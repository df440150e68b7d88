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
	"unicode/utf8"
)

// Rule is one value rule of an API parameter. Exactly one of its forms is
// used: Values (an enumeration, with the documented case), Valid (a name
// pattern; Min and Max then bound its length in characters), or Min and
// Max alone (an inclusive integer range, or a count limit).
type Rule struct {
	// Key names the parameter as product:Parameter, with a /qualifier
	// where the rule depends on it (e.g. slb:Scheduler/http).
	Key string
	// Source says where the rule was read.
	Source string
	// Values are the accepted values of an enumeration.
	Values []string
	// Min and Max bound an integer, a count, or a name's length.
	Min, Max int
	// Valid reports whether a name is accepted.
	Valid func(string) bool
	// punct are the characters a name may hold besides letters and
	// digits, in the order NameRule lists them.
	punct string
}

// The table's three forms, one constructor each, so that a rule states
// only what its form uses and a line reads as one rule.

// enum is a rule that accepts the values only, as documented.
func enum(key, source string, values ...string) Rule {
	return Rule{Key: key, Source: source, Values: values}
}

// between is an inclusive integer range or a count limit.
func between(key, source string, min, max int) Rule {
	return Rule{Key: key, Source: source, Min: min, Max: max}
}

// pattern is a name rule: min to max characters, starting with a letter,
// then letters, digits and the characters of punct.
func pattern(key, source string, min, max int, punct string) Rule {
	valid := func(v string) bool { return name(v, min, max, punct) }
	return Rule{Key: key, Source: source, Min: min, Max: max, Valid: valid, punct: punct}
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
	pattern("slb:LoadBalancerName", slbSDK+"create_load_balancer_request_model.go LoadBalancerName (1-80 characters, starts with a letter; letters, digits, '.', '_', '-'); "+tfDocs+"slb_load_balancer.html.markdown load_balancer_name (also '/')", 1, 80, "._/-"),
	enum("slb:AddressType", slbSDK+"create_load_balancer_request_model.go AddressType", "internet", "intranet"),
	enum("slb:AddressIPVersion", slbSDK+"create_load_balancer_request_model.go AddressIPVersion", "ipv4", "ipv6"),
	enum("slb:InternetChargeType", slbSDK+"create_load_balancer_request_model.go InternetChargeType", "paybytraffic", "paybybandwidth"),
	enum("slb:InstanceChargeType", slbSDK+"create_load_balancer_request_model.go InstanceChargeType", "PayBySpec", "PayByCLCU"),
	enum("slb:LoadBalancerSpec", slbSDK+"create_load_balancer_request_model.go LoadBalancerSpec (the first six); Alibaba's Resource Orchestration Service, ALIYUN::SLB::LoadBalancer LoadBalancerSpec (github.com/aliyun/Resource-Orchestration-Service-Cloud-Development-Kit: all eight)", "slb.s1.small", "slb.s2.small", "slb.s2.medium", "slb.s3.small", "slb.s3.medium", "slb.s3.large", "slb.s3.xlarge", "slb.s3.xxlarge"),
	between("slb:Bandwidth", slbSDK+"create_load_balancer_request_model.go Bandwidth (1-5120)", 1, 5120),
	enum("slb:ModificationProtectionStatus", slbSDK+"set_load_balancer_modification_protection_request_model.go ModificationProtectionStatus", "NonProtection", "ConsoleProtection"),

	// CLB listeners.
	enum("slb:Scheduler/tcp", slbSDK+"create_load_balancer_tcplistener_request_model.go Scheduler; "+apiNote+" Scheduler(wrr|rr|sch|tch)", "wrr", "rr", "sch", "tch"),
	enum("slb:Scheduler/udp", slbSDK+"create_load_balancer_udplistener_request_model.go Scheduler", "wrr", "rr", "sch", "tch"),
	enum("slb:Scheduler/http", slbSDK+"create_load_balancer_httplistener_request_model.go Scheduler", "wrr", "rr"),
	enum("slb:Scheduler/https", slbSDK+"create_load_balancer_httpslistener_request_model.go Scheduler", "wrr", "rr"),
	between("slb:ListenerBandwidth", slbSDK+"create_load_balancer_tcplistener_request_model.go Bandwidth (-1, or 1-5120)", -1, 5120),
	between("slb:HealthyThreshold", slbSDK+"create_load_balancer_tcplistener_request_model.go HealthyThreshold", 2, 10),
	between("slb:UnhealthyThreshold", slbSDK+"create_load_balancer_tcplistener_request_model.go UnhealthyThreshold", 2, 10),
	between("slb:HealthCheckInterval", slbSDK+"create_load_balancer_tcplistener_request_model.go HealthCheckInterval", 1, 50),
	between("slb:HealthCheckConnectTimeout", slbSDK+"create_load_balancer_tcplistener_request_model.go HealthCheckConnectTimeout", 1, 300),
	between("slb:HealthCheckTimeout", slbSDK+"create_load_balancer_httplistener_request_model.go HealthCheckTimeout", 1, 300),
	enum("slb:HealthCheckType", slbSDK+"create_load_balancer_tcplistener_request_model.go HealthCheckType", "tcp", "http"),
	enum("slb:HealthCheckMethod", slbSDK+"create_load_balancer_httplistener_request_model.go HealthCheckMethod", "head", "get"),
	between("slb:PersistenceTimeout", slbSDK+"create_load_balancer_tcplistener_request_model.go PersistenceTimeout", 0, 3600),
	between("slb:ConnectionDrainTimeout", slbSDK+"create_load_balancer_tcplistener_request_model.go ConnectionDrainTimeout", 10, 900),
	between("slb:EstablishedTimeout", slbSDK+"create_load_balancer_tcplistener_request_model.go EstablishedTimeout", 10, 900),
	between("slb:IdleTimeout", slbSDK+"create_load_balancer_httplistener_request_model.go IdleTimeout", 1, 60),
	between("slb:RequestTimeout", slbSDK+"create_load_balancer_httplistener_request_model.go RequestTimeout", 1, 180),
	between("slb:CookieTimeout", slbSDK+"create_load_balancer_httplistener_request_model.go CookieTimeout", 1, 86400),
	enum("slb:StickySessionType", slbSDK+"create_load_balancer_httplistener_request_model.go StickySessionType", "insert", "server"),
	enum("slb:TLSCipherPolicy", slbSDK+"create_load_balancer_httpslistener_request_model.go TLSCipherPolicy", "tls_cipher_policy_1_0", "tls_cipher_policy_1_1", "tls_cipher_policy_1_2", "tls_cipher_policy_1_2_strict", "tls_cipher_policy_1_2_strict_with_1_3"),
	enum("slb:AclType", slbSDK+"create_load_balancer_tcplistener_request_model.go AclType", "white", "black"),

	// CLB backends and tags.
	between("slb:Weight", slbSDK+"add_vserver_group_backend_servers_request_model.go BackendServers Weight (0-100)", 0, 100),
	between("slb:TagKeyLength", slbSDK+"tag_resources_request_model.go Tag.Key (1-64 characters, not aliyun or acs:, no http(s)://)", 1, 64),
	between("slb:TagValueLength", slbSDK+"tag_resources_request_model.go Tag.Value (up to 128 characters)", 0, 128),

	// NLB load balancer.
	pattern("nlb:LoadBalancerName", nlbSDK+"CreateLoadBalancerRequest.LoadBalancerName (2-128 characters, starts with a letter; letters, digits, '.', '_', '-'); "+tfDocs+"nlb_load_balancer.html.markdown load_balancer_name (the same)", 2, 128, "._-"),
	pattern("nlb:ServerGroupName", nlbSDK+"CreateServerGroupRequest.ServerGroupName (2-128 characters, starts with a letter)", 2, 128, "._-"),
	enum("nlb:AddressType", nlbSDK+"CreateLoadBalancerRequest.AddressType", "Internet", "Intranet"),
	enum("nlb:AddressIpVersion", nlbSDK+"CreateLoadBalancerRequest.AddressIpVersion", "ipv4", "DualStack"),
	between("nlb:ZoneMappings", nlbSDK+"CreateLoadBalancerRequest.ZoneMappings (up to 10 zones, at least two where the region has two); "+tfDocs+"nlb_load_balancer.html.markdown zone_mappings", 2, 10),

	// NLB listeners.
	enum("nlb:ListenerProtocol", nlbSDK+"CreateListenerRequest.ListenerProtocol", "TCP", "UDP", "TCPSSL"),
	between("nlb:IdleTimeout/TCP", nlbSDK+"CreateListenerRequest.IdleTimeout (TCP and TCPSSL: 10-900)", 10, 900),
	between("nlb:IdleTimeout/UDP", nlbSDK+"CreateListenerRequest.IdleTimeout (UDP: 10-20)", 10, 20),
	between("nlb:Cps", nlbSDK+"CreateListenerRequest.Cps", 0, 1000000),
	enum("nlb:AlpnPolicy", nlbSDK+"CreateListenerRequest.AlpnPolicy", "HTTP1Only", "HTTP2Only", "HTTP2Preferred", "HTTP2Optional"),

	// NLB server groups.
	enum("nlb:Scheduler", nlbSDK+"CreateServerGroupRequest.Scheduler (documented as Wrr, Wlc, rr, sch, tch, qch: the case differs between values and pages, and the API takes any case)", "Wrr", "Rr", "Sch", "Tch", "Qch", "Wlc"),
	enum("nlb:ServerGroupType", nlbSDK+"CreateServerGroupRequest.ServerGroupType", "Instance", "Ip"),
	enum("nlb:HealthCheckType", nlbSDK+"CreateServerGroupRequestHealthCheckConfig.HealthCheckType", "TCP", "HTTP", "UDP"),
	enum("nlb:HttpCheckMethod", nlbSDK+"CreateServerGroupRequestHealthCheckConfig.HttpCheckMethod", "GET", "HEAD"),
	between("nlb:HealthCheckConnectPort", nlbSDK+"CreateServerGroupRequestHealthCheckConfig.HealthCheckConnectPort", 0, 65535),
	between("nlb:HealthCheckConnectTimeout", nlbSDK+"CreateServerGroupRequestHealthCheckConfig.HealthCheckConnectTimeout", 1, 300),
	between("nlb:HealthCheckInterval", nlbSDK+"CreateServerGroupRequestHealthCheckConfig.HealthCheckInterval (TCP and HTTP checks: 1-50)", 1, 50),
	between("nlb:HealthyThreshold", nlbSDK+"CreateServerGroupRequestHealthCheckConfig.HealthyThreshold", 2, 10),
	between("nlb:UnhealthyThreshold", nlbSDK+"CreateServerGroupRequestHealthCheckConfig.UnhealthyThreshold", 2, 10),
	between("nlb:ConnectionDrainTimeout", nlbSDK+"CreateServerGroupRequest.ConnectionDrainTimeout", 0, 900),
	between("nlb:PersistenceTimeout", nlbSDK+"CreateServerGroupRequest.PersistenceTimeout", 0, 3600),
	between("nlb:Weight", nlbSDK+"AddServersToServerGroupRequestServers.Weight (0-100)", 0, 100),
	between("nlb:TagKeyLength", nlbSDK+"CreateLoadBalancerRequestTag.Key (1-64 characters, not aliyun or acs:, no http(s)://)", 1, 64),
	between("nlb:TagValueLength", nlbSDK+"CreateLoadBalancerRequestTag.Value (1-128 characters; an empty value is accepted)", 0, 128),
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
	var kinds []string
	for _, c := range r.punct {
		kinds = append(kinds, punctNames[c])
	}
	last := len(kinds) - 1
	return fmt.Sprintf("%d to %d characters, starting with a letter, then letters, digits, %s and %s",
		r.Min, r.Max, strings.Join(kinds[:last], ", "), kinds[last])
}

// punctNames name the characters a name rule may allow, as messages say
// them.
var punctNames = map[rune]string{'.': "periods (.)", '_': "underscores (_)", '/': "slashes (/)", '-': "hyphens (-)"}

// name checks a name of min to max characters that starts with a letter
// (Chinese characters count as letters, as the console shows) and
// otherwise holds letters, digits and the characters of extra.
func name(v string, min, max int, extra string) bool {
	n := utf8.RuneCountInString(v)
	first, _ := utf8.DecodeRuneInString(v)
	if n < min || n > max || !unicode.IsLetter(first) {
		return false
	}
	other := func(c rune) bool {
		return !unicode.IsLetter(c) && !unicode.IsDigit(c) && !strings.ContainsRune(extra, c)
	}
	return strings.IndexFunc(v, other) < 0
}
