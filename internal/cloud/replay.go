package cloud

import (
	"strings"

	sdkrequests "github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
)

// nonIdempotentPrefixes start the names of actions that make something new
// on every call they are applied (a resource, a listener, an address, a
// member, a certificate, a renewal), across ECS, VPC, CLB and NLB: applied
// twice, they make two, or fail in a way the caller did not ask for. A
// prefix rule, rather than a list of the actions called today, also covers
// a create added to the CCM later.
var nonIdempotentPrefixes = []string{
	"Create", "Add", "Upload", "Allocate", "Run", "Copy", "Import", "Purchase", "Renew", "Assign",
}

// idempotentExceptions are actions that match a prefix above but converge:
// applying them twice leaves the same state as once.
var idempotentExceptions = map[Product]map[string]bool{
	SLB: {"AddTags": true},
	ECS: {"AddTags": true},
}

// NotIdempotent reports whether action of product may make a second
// resource (or a second change) when replayed after an unknown outcome
// unless its request carries a ClientToken: Create*, Add*, Upload*,
// Allocate*, Run*, Copy*, Import*, Purchase*, Renew* and Assign* actions,
// except AddTags of CLB and ECS. Among the calls the CCM makes these are
// CLB CreateLoadBalancer (has a ClientToken), CreateVServerGroup,
// CreateLoadBalancer{TCP,UDP,HTTP,HTTPS}Listener, CreateDomainExtension,
// CreateAccessControlList, AddVServerGroupBackendServers and
// UploadServerCertificate (no ClientToken); VPC CreateRouteEntries (no
// ClientToken); NLB CreateLoadBalancer, CreateServerGroup, CreateListener
// and AddServersToServerGroup (all with a ClientToken).
func NotIdempotent(product Product, action string) bool {
	if idempotentExceptions[product][action] {
		return false
	}
	for _, p := range nonIdempotentPrefixes {
		if strings.HasPrefix(action, p) {
			return true
		}
	}
	return false
}

// CallOption adjusts one Do call.
type CallOption func(*callOptions)

type callOptions struct {
	noReplay bool
	req      sdkrequests.AcsRequest
}

// NoReplay marks a call as unsafe to replay after an unknown outcome, for
// a write that NotIdempotent does not know (a CommonRequest, an action
// whose name hides what it does). Throttled and busy answers are still
// retried.
func NoReplay() CallOption { return func(o *callOptions) { o.noReplay = true } }

// ClientTokenOf names the SDK request the call sends, so that Do can read
// its ClientToken after a failed attempt: a NotIdempotent action is
// replayed after an unknown outcome only when the request sent a non-empty
// ClientToken (the cloud then answers a replay with the first result).
// Set the token before calling Do, and keep it across attempts.
func ClientTokenOf(req sdkrequests.AcsRequest) CallOption {
	return func(o *callOptions) { o.req = req }
}

// replaySafe reports whether a call whose last attempt has an unknown
// outcome may be sent again. It runs only after an attempt returned, when
// the SDK has copied the request's fields into its parameter maps.
func (o callOptions) replaySafe(product Product, action string) bool {
	if o.noReplay {
		return false
	}
	if !NotIdempotent(product, action) {
		return true
	}
	return o.req != nil && (o.req.GetQueryParams()["ClientToken"] != "" || o.req.GetFormParams()["ClientToken"] != "")
}
