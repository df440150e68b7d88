// Package cloud is the one layer between the CCM and Alibaba Cloud's
// OpenAPIs: it builds the official SDK clients from the current
// credentials, and wraps every call with an adaptive rate limiter, a
// timeout, retries with jittered exponential backoff for transient errors,
// error classification by the API's error Code, and Prometheus metrics.
// Call sends one typed SDK request that way, named after the request's own
// product and action; Do runs any function of the SDK clients (a
// CommonRequest, say).
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
// # Adaptive throttling
//
// Every call waits for its action's limiter and for its product's shared
// one (Throttle). An action starts at Options.QPS (--cloud-api-qps); a
// product starts at Options.ProductQPS (--cloud-api-product-qps), the
// ceiling of both. A Throttling answer lowers only the scope the cloud
// named (the action for Throttling.Api, the product for Throttling.User
// and others): to the Limit its x-ratelimit header advertises, which caps
// the scope for ten minutes, or by half without one; its TimeLeft holds
// the limiter, and calls queued at the old rate book again. Seconds
// without throttling in which calls queued raise the rate: quickly back
// towards where it was throttled, gently near it, by doubling steps past
// it. Rates are exported as alicloud_api_client_rate_limit and refusals as
// alicloud_api_throttled_total.
//
// # Cancellation
//
// The SDK takes no context, so Do runs each attempt in a goroutine and
// returns as soon as the context is done, with an OutcomeUnknown error; the
// abandoned attempt ends by itself within Options.Timeout.
package cloud
