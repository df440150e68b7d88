// Package apifacts holds the value rules of the Alibaba Cloud APIs that
// both the CCM's annotation parser and the emulator enforce, so that a
// value the parser accepts is never refused by the (emulated) cloud: one
// table each, with its source, instead of one copy per side.
package apifacts

import (
	"slices"
	"strings"
	"unicode"
)

// clbSchedulers are the Scheduler values of the CLB listener actions
// (Create/SetLoadBalancer<P>Listener[Attribute]) per listener protocol.
//
// Source: alibaba-openapi.md §3.1, CreateLoadBalancerTCPListener
// "Scheduler(wrr|rr|sch|tch)", and CreateLoadBalancerUDPListener "as TCP".
// HTTP and HTTPS listeners balance by request and take only the weighted
// and plain round robins (the CLB API reference of
// CreateLoadBalancerHTTP(S)Listener: "wrr, rr"); alibaba-openapi.md does
// not enumerate them. Neither lists wlc (dropped from the CLB API) nor qch.
var clbSchedulers = map[string][]string{
	"tcp":   {"wrr", "rr", "sch", "tch"},
	"udp":   {"wrr", "rr", "sch", "tch"},
	"http":  {"wrr", "rr"},
	"https": {"wrr", "rr"},
}

// CLBSchedulers returns the Scheduler values a CLB listener of protocol
// (tcp, udp, http, https; any case) accepts, nil for another protocol.
func CLBSchedulers(protocol string) []string {
	return slices.Clone(clbSchedulers[strings.ToLower(protocol)])
}

// AllCLBSchedulers returns every Scheduler value some CLB listener
// protocol accepts, in the order of the TCP table.
func AllCLBSchedulers() []string {
	var out []string
	for _, p := range []string{"tcp", "udp", "http", "https"} {
		for _, v := range clbSchedulers[p] {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// CLBNameRule describes ValidCLBName for messages and docs.
const CLBNameRule = "1 to 80 characters, starting with a letter, then letters, digits, periods (.), underscores (_) and hyphens (-)"

// ValidCLBName reports whether a CLB LoadBalancerName is valid.
//
// Source: the CLB API reference of CreateLoadBalancer and
// SetLoadBalancerName ("1 to 80 characters … letters, digits, periods (.),
// underscores (_), and hyphens (-)", starting with a letter; Chinese
// characters count as letters). alibaba-openapi.md §3.1 names the
// parameter without a rule.
func ValidCLBName(v string) bool {
	r := []rune(v)
	if len(r) < 1 || len(r) > 80 || !unicode.IsLetter(r[0]) {
		return false
	}
	for _, c := range r {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && !strings.ContainsRune("._-", c) {
			return false
		}
	}
	return true
}
