package cloud

import (
	"errors"
	"fmt"
	"regexp"
)

// requestIDText matches the RequestId that Error.Error adds to every cloud
// error; it differs on each call.
var requestIDText = regexp.MustCompile(`, RequestId: [^)]*\)`)

// StableMessage is err's text for users (events, conditions): the cloud's
// code and message first, without the per-call RequestId, so the same
// failure repeated reads the same and the event recorder counts one event
// instead of writing a new one per retry. Logs keep the full error, whose
// RequestId support cases need.
func StableMessage(err error) string {
	if err == nil {
		return ""
	}
	text := requestIDText.ReplaceAllString(err.Error(), ")")
	var ce *Error
	if errors.As(err, &ce) && ce.Code != "" {
		return fmt.Sprintf("[%s] %s (%s %s): %s", ce.Code, ce.Message, ce.Product, ce.Action, text)
	}
	return text
}
