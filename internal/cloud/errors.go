// Package cloud is the one layer between the CCM and Alibaba Cloud's
// OpenAPIs: it builds the official SDK clients from the current
// credentials, and wraps every call with a per-product rate limiter, a
// timeout, retries with jittered exponential backoff for transient errors,
// error classification by the API's error Code, and Prometheus metrics.
package cloud

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
)

// Class is what kind of failure an API error is; callers decide by Class,
// never by message text.
type Class int

const (
	// ClassOther is an error that fits no other class.
	ClassOther Class = iota
	// ClassNotFound means the resource does not exist.
	ClassNotFound
	// ClassThrottled means the request was rate-limited (retried).
	ClassThrottled
	// ClassConflict means the resource is busy (retried): TaskConflict, Conflict.Lock, ...
	ClassConflict
	// ClassQuota means a quota or limit is exhausted.
	ClassQuota
	// ClassInvalid means the request itself is wrong; retrying cannot help.
	ClassInvalid
	// ClassUnavailable is a 5xx or transport failure (retried).
	ClassUnavailable
	// ClassAuth means the credentials were refused.
	ClassAuth
)

var classNames = map[Class]string{
	ClassOther: "other", ClassNotFound: "not_found", ClassThrottled: "throttled", ClassConflict: "conflict",
	ClassQuota: "quota", ClassInvalid: "invalid", ClassUnavailable: "unavailable", ClassAuth: "auth",
}

// String implements fmt.Stringer.
func (c Class) String() string { return classNames[c] }

// Retryable reports whether a call failing with this class may succeed later.
func (c Class) Retryable() bool {
	return c == ClassThrottled || c == ClassConflict || c == ClassUnavailable
}

// Error is a failed API call.
type Error struct {
	// Product is the product called (ECS, VPC, SLB or NLB).
	Product Product
	// Action is the API action, e.g. CreateLoadBalancer.
	Action string
	// Code is the cloud's error code, e.g. Throttling.User; empty when no
	// response was decoded (transport error).
	Code string
	// Message is the cloud's error message.
	Message string
	// RequestID is the response's RequestId, for support cases.
	RequestID string
	// HTTPStatus is the response's HTTP status code (0 without a response).
	HTTPStatus int
	// Class is what the CCM does about the error (retry, treat as gone,
	// report quota...), derived from Code and HTTPStatus.
	Class Class
	// Err is the underlying SDK or transport error.
	Err error
}

// Error implements error; the RequestId is always included so support
// cases can be traced.
func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("%s %s: %v", e.Product, e.Action, e.Err)
	}
	return fmt.Sprintf("%s %s: %s: %s (HTTP %d, RequestId: %s)", e.Product, e.Action, e.Code, e.Message, e.HTTPStatus, e.RequestID)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// conflictCodes are busy states that clear by themselves.
var conflictCodes = map[string]bool{
	"SystemBusy": true, "TaskConflict": true, "Conflict.Lock": true, "OperationBusy": true,
	"VServerGroupProcessing": true, "ServiceIsConfiguring": true, "BackendServer.configuring": true,
	"ServiceIsStopping": true, "ListenerProcessing": true, "InvalidOperation.Conflict": true,
	"IncorrectRouteEntryStatus": true, "ResourceInConfiguring.loadbalancer": true,
	"ResourceInCreating.loadbalancer": true, "IncorrectStatus.loadbalancer": true,
	"IncorrectStatus.serverGroup": true, "IncorrectStatus.listener": true, "LastTokenProcessing": true,
	"IdempotenceProcessing": true, "OperationConflict": true,
}

var authCodes = map[string]bool{
	"SignatureDoesNotMatch": true, "InvalidAccessKeyId.NotFound": true, "InvalidAccessKeyId.Inactive": true,
	"IncompleteSignature": true, "InvalidSecurityToken.Expired": true, "InvalidSecurityToken.Malformed": true,
	"InvalidSecurityToken.MismatchWithAccessKey": true, "Forbidden.RAM": true, "Forbidden": true,
	"Forbidden.NoPermission": true, "NoPermission": true,
}

// Classify maps an API error Code and HTTP status to a Class.
func Classify(code string, status int) Class {
	switch {
	case code == "":
		if status >= 500 || status == 0 {
			return ClassUnavailable
		}
		return ClassOther
	case strings.HasPrefix(code, "Throttling"):
		return ClassThrottled
	case conflictCodes[code]:
		return ClassConflict
	case authCodes[code]:
		return ClassAuth
	case strings.HasSuffix(code, ".NotFound") || strings.HasSuffix(code, "NotFound") ||
		strings.HasPrefix(code, "ResourceNotFound") || code == "InvalidLoadBalancerId.NotFound":
		return ClassNotFound
	case strings.HasPrefix(code, "QuotaExceeded") || strings.HasPrefix(code, "QuotaInsufficient") ||
		strings.HasSuffix(code, "OverLimit") || strings.HasPrefix(code, "Quota"):
		return ClassQuota
	case status >= 500 || code == "InternalError" || code == "ServiceUnavailable" || code == "UnknownError":
		return ClassUnavailable
	case strings.HasPrefix(code, "Invalid") || strings.HasPrefix(code, "Missing") ||
		strings.HasPrefix(code, "OperationDenied") || strings.HasPrefix(code, "Duplicated") ||
		strings.HasPrefix(code, "DependencyViolation") || status == http.StatusBadRequest:
		return ClassInvalid
	}
	return ClassOther
}

// wrap converts an SDK error into *Error.
func wrap(product Product, action string, err error) *Error {
	var se *sdkerrors.ServerError
	if errors.As(err, &se) {
		return &Error{
			Product: product, Action: action, Code: se.ErrorCode(), Message: se.Message(),
			RequestID: se.RequestId(), HTTPStatus: se.HttpStatus(), Class: Classify(se.ErrorCode(), se.HttpStatus()), Err: err,
		}
	}
	// Client-side failures (connection refused, timeout, unreadable body)
	// are transient from the caller's point of view.
	return &Error{Product: product, Action: action, Class: ClassUnavailable, Err: err}
}

// ClassOf returns the Class of err, ClassOther when it is not an *Error.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ClassOther
}

// CodeOf returns the API error Code of err, "" when there is none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsNotFound reports whether err says the resource does not exist.
func IsNotFound(err error) bool { return ClassOf(err) == ClassNotFound }

// IsThrottled reports whether err is a throttling refusal.
func IsThrottled(err error) bool { return ClassOf(err) == ClassThrottled }

// IsQuota reports whether err is an exhausted quota or limit.
func IsQuota(err error) bool { return ClassOf(err) == ClassQuota }
