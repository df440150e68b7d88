// Package cloud is the one layer between the CCM and Alibaba Cloud's
// OpenAPIs: it builds the official SDK clients from the current
// credentials, and wraps every call with a per-product rate limiter, a
// timeout, retries with jittered exponential backoff for transient errors,
// error classification by the API's error Code, and Prometheus metrics.
//
// # Retries
//
// Do retries a call that failed with a retryable Class (throttled, busy,
// unavailable) up to Options.MaxAttempts tries. Client-side SDK errors (a
// bad or missing parameter, a 2xx body that does not decode) are
// ClassInvalid and never retried; only transport failures (refused, reset,
// EOF, timeout) and 5xx answers are ClassUnavailable.
//
// # Calls that must not be replayed blindly
//
// When a write fails without a definite answer (Error.OutcomeUnknown: a
// transport failure after the request was sent, a 5xx, an attempt
// abandoned on cancellation) it may have been applied. Replaying a create
// then makes a second resource, so Do does not retry such a failure of a
// call that is not idempotent (see NotIdempotent: Create*, Add*, Upload*,
// Allocate*, Run*... actions) unless the request carries a non-empty
// ClientToken, declared with the ClientTokenOf option; NoReplay marks any
// other call. Throttling and busy codes are refusals of a call that was
// not applied, so they are retried for every call. The caller gets the
// error and re-reads on its next reconcile before creating again.
//
// # Retry budget
//
// WithRetryBudget gives a context a number of retries shared by every Do
// call made under it (one reconcile): once spent, Do returns the error at
// once instead of backing off, so that a reconcile facing an unhealthy
// cloud fails fast and the controller's workqueue backs off instead.
// Options.MaxAttempts still bounds each call. RetryBudgetLeft reads what is
// left, for logs.
//
// # Cancellation
//
// The SDK takes no context, so Do runs each attempt in a goroutine and
// returns as soon as the context is done, with an OutcomeUnknown error; the
// abandoned attempt ends by itself within Options.Timeout.
package cloud
