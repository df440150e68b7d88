package cloud

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

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
	// ClassInvalid means the request itself is wrong, or the SDK refused or
	// could not decode it (a client-side SDK error); retrying cannot help.
	ClassInvalid
	// ClassUnavailable is a 5xx, a transport failure or an abandoned
	// attempt (retried unless the call is unsafe to replay).
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
	// OutcomeUnknown means the call may have been applied although it
	// failed: the request may have reached the cloud and no definite answer
	// came back (a transport failure after sending, a 5xx, an attempt
	// abandoned on cancellation). Re-read before creating again.
	OutcomeUnknown bool
	// Err is the underlying SDK or transport error, with request URLs
	// (which carry the signature and STS token) redacted.
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
		class := Classify(se.ErrorCode(), se.HttpStatus())
		if class == ClassInvalid && se.ErrorCode() == "InvalidParameter" && strings.Contains(se.Message(), "does not exist") {
			// CLB names a missing vServer group so ("The specified
			// VServerGroupId does not exist."): a retried delete whose
			// first answer was lost must count as done.
			class = ClassNotFound
		}
		return &Error{
			Product: product, Action: action, Code: se.ErrorCode(), Message: redactStringToSign(se.Message()),
			RequestID: se.RequestId(), HTTPStatus: se.HttpStatus(), Class: class,
			// A 5xx does not say whether the call was applied before it failed;
			// throttling and busy codes are refusals of a call that was not.
			OutcomeUnknown: class == ClassUnavailable, Err: err,
		}
	}
	class, unknown := classifyClientSide(err)
	return &Error{Product: product, Action: action, Class: class, OutcomeUnknown: unknown, Err: redact(err)}
}

// classifyClientSide classifies an error that carries no server response,
// by the SDK's ClientError code and by the type of the network error, never
// by message text. It also reports whether the request may have reached the
// cloud (outcome unknown) or certainly did not (it failed while dialing).
func classifyClientSide(err error) (class Class, outcomeUnknown bool) {
	// The SDK's own errors (bad parameter, unsupported credential, a 2xx
	// body that does not decode...) repeat identically on a retry. Only its
	// timeout code, which it uses when it retries by itself, is transport.
	var ce *sdkerrors.ClientError
	if errors.As(err, &ce) {
		if ce.ErrorCode() == sdkerrors.TimeoutErrorCode {
			return ClassUnavailable, true
		}
		return ClassInvalid, false
	}
	// The SDK returns net/http's *url.Error as is; look at what it wraps so
	// that a configuration error (unsupported scheme, bad certificate) is
	// not taken for a transient one (*url.Error itself is a net.Error).
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	if isTLSConfigError(inner) {
		return ClassInvalid, false
	}
	var oe *net.OpError
	var dns *net.DNSError
	switch {
	case errors.As(inner, &oe) && oe.Op == "dial", errors.As(inner, &dns),
		errors.Is(inner, syscall.ECONNREFUSED), errors.Is(inner, syscall.EHOSTUNREACH), errors.Is(inner, syscall.ENETUNREACH):
		// Nothing was sent: safe to send again, whatever the call.
		return ClassUnavailable, false
	case errors.Is(inner, io.EOF), errors.Is(inner, io.ErrUnexpectedEOF),
		errors.Is(inner, syscall.ECONNRESET), errors.Is(inner, syscall.ECONNABORTED),
		errors.Is(inner, syscall.EPIPE), errors.Is(inner, syscall.ETIMEDOUT):
		return ClassUnavailable, true
	}
	var ne net.Error
	if errors.As(inner, &ne) {
		return ClassUnavailable, true
	}
	return ClassOther, false
}

// isTLSConfigError reports a certificate or protocol mismatch: retrying
// cannot fix the endpoint's configuration.
func isTLSConfigError(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) || errors.As(err, &rh)
}

// redact removes the query of request URLs from err's text: the SDK signs
// RPC calls in the query string, so net/http's *url.Error would otherwise
// print the Signature and the STS SecurityToken into logs and events.
func redact(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	clean := redactURL(ue.URL)
	if clean == ue.URL {
		return err
	}
	if err == error(ue) {
		return &url.Error{Op: ue.Op, URL: clean, Err: ue.Err}
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), ue.URL, clean), err: err}
}

// redactURL keeps scheme, host and path.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	if u.RawQuery == "" && u.User == nil {
		return raw
	}
	u.RawQuery, u.User = "", nil
	return u.String() + "?<redacted>"
}

// stringToSignMarker starts the part of a signature mismatch message
// (SignatureDoesNotMatch, or IncompleteSignature from ECS)
// that echoes the canonical request, STS SecurityToken included.
const stringToSignMarker = "server string to sign is:"

// redactStringToSign cuts the echoed string to sign from a message.
func redactStringToSign(msg string) string {
	if i := strings.Index(msg, stringToSignMarker); i >= 0 {
		return msg[:i+len(stringToSignMarker)] + " <redacted>"
	}
	return msg
}

// redactedError is err with a redacted message.
type redactedError struct {
	msg string
	err error
}

// Error implements error.
func (e *redactedError) Error() string { return e.msg }

// Unwrap returns the original error for errors.Is and errors.As.
func (e *redactedError) Unwrap() error { return e.err }

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

// IsOutcomeUnknown reports whether err left the call possibly applied (see
// Error.OutcomeUnknown): the caller must re-read before creating again.
func IsOutcomeUnknown(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.OutcomeUnknown
}
