// Package api holds the contract between the emulator's gateway and its
// product packages: the parsed request, the error type that becomes an
// Alibaba Cloud error response, and the product registration.
package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Handler serves one action. The returned map is encoded as the JSON response
// body; the gateway adds RequestId. Returning an *Error yields an error
// response with that code and HTTP status.
type Handler func(req *Request) (map[string]any, error)

// Action describes one API action of a product.
type Action struct {
	// Handler serves the action.
	Handler Handler
	// ReadOnly actions run under the store's read lock and never persist.
	ReadOnly bool
	// Anonymous actions are served without a signature: the caller's proof
	// is a parameter (AssumeRoleWithOIDC's OIDCToken), as on the real
	// service. Such a call has no account until the action names one.
	Anonymous bool
}

// Product is one emulated OpenAPI product (ECS, VPC, SLB or NLB).
type Product struct {
	// Name is the lower-case product code used in logs, faults and metrics: ecs, vpc, slb, nlb.
	Name string
	// Version is the API version the product answers, e.g. 2014-05-15.
	Version string
	// Host is the HostId reported in error responses, e.g. slb.aliyuncs.com.
	Host string
	// Actions maps an action name to its implementation.
	Actions map[string]Action
	// RegionRequired refuses calls without RegionId (MissingParameter), as
	// the ECS, VPC and CLB APIs do; NLB takes its region from the endpoint.
	RegionRequired bool
	// RegionOptional are the actions exempt from RegionRequired: their API
	// models make RegionId optional or lack it, the endpoint naming the
	// region.
	RegionOptional map[string]bool
	// UnknownRegion, when set, is the product's answer to a RegionId that
	// is not in the emulator's region table.
	UnknownRegion func(id string) *Error
}

// Request is one parsed and authenticated API call.
type Request struct {
	// Product is the lower-case product name.
	Product string
	// Action is the action name, e.g. DescribeLoadBalancers.
	Action string
	// Version is the API version sent by the client.
	Version string
	// RegionID is the RegionId parameter, or the emulator's default region.
	RegionID string
	// Regions is the emulator's region table (nil: every region exists,
	// with the zones of RegionFor).
	Regions *Regions
	// AccountID is the account owning the AccessKey that signed the request.
	AccountID string
	// AccessKeyID is the AccessKey (or STS key) that signed the request.
	AccessKeyID string
	// RequestID is the id returned to the client.
	RequestID string
	// Now is the time the request was received.
	Now time.Time
	// Params holds the query and form-body parameters merged.
	Params Params
	// FailJob asks the product to let the asynchronous job this call
	// starts fail (a fault rule's failJob).
	FailJob bool
}

// Error is an Alibaba Cloud API error: an HTTP status and a Code and Message.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Code is the API error code, e.g. InvalidParameter.
	Code string
	// Message is the human-readable message.
	Message string
	// Headers are extra response headers (e.g. rate-limit hints).
	Headers map[string]string
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf builds an *Error with a formatted message.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// MissingParameter is the gateway's answer to an absent required parameter.
func MissingParameter(name string) *Error {
	return Errorf(http.StatusBadRequest, "MissingParameter", "The input parameter %q that is mandatory for processing this request is not supplied.", name)
}

// InvalidParameter reports a parameter whose value is not accepted.
func InvalidParameter(name, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if msg == "" {
		msg = fmt.Sprintf("The specified parameter %q is not valid.", name)
	}
	return &Error{Status: http.StatusBadRequest, Code: "InvalidParameter", Message: msg}
}

// NotFound reports a missing resource with the product-specific code.
func NotFound(code, format string, args ...any) *Error {
	return Errorf(http.StatusNotFound, code, format, args...)
}

// IsReadOnlyAction reports whether an action name only reads state, by the
// naming convention every Alibaba Cloud RPC API follows.
func IsReadOnlyAction(action string) bool {
	for _, p := range []string{"Describe", "List", "Get", "Query", "Check"} {
		if strings.HasPrefix(action, p) {
			return true
		}
	}
	return false
}

// InstanceIdentity is what the instance metadata service serves for one ECS
// instance.
type InstanceIdentity struct {
	// InstanceID is the instance id (i-...), served as /instance-id.
	InstanceID string
	// RegionID is the region id, served as /region-id.
	RegionID string
	// ZoneID is the zone id (e.g. cn-hangzhou-h), served as /zone-id.
	ZoneID string
	// VpcID is the instance's VPC (vpc-...), served as /vpc-id.
	VpcID string
	// VSwitchID is the instance's vSwitch (vsw-...), served as /vswitch-id.
	VSwitchID string
	// PrivateIPv4 is the primary private address, served as /private-ipv4.
	PrivateIPv4 string
	// VpcCIDRBlock is the VPC's CIDR block, served as /vpc-cidr-block.
	VpcCIDRBlock string
	// Hostname is the instance's host name, served as /hostname.
	Hostname string
	// InstanceType is e.g. ecs.g7.large, served as /instance/instance-type.
	InstanceType string
	// MAC is the primary ENI's MAC address (aa:bb:...), served as /mac.
	MAC string
}
