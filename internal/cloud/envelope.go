package cloud

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Some write actions answer a success with far more than their envelope:
// CLB's AddVServerGroupBackendServers, RemoveVServerGroupBackendServers and
// SetVServerGroupAttribute return the group's whole member list, on a
// 2,000-Node cluster ~200 kB in every 20-member call. The SDK reads an
// answer whole (io.ReadAll) and keeps it twice (bytes and string) in the
// response until it is decoded, so with 16 Services syncing at once these
// answers were the largest share of the heap held by syncs in flight (W4 at
// 10,000 Services: 17 of 120 MB live, docs/performance.md). For an action
// declared with AnswerEnvelopeOnly, the transport hands the SDK a 2xx JSON
// answer reduced to its RequestId, read from the body as it streams; any
// other answer (an error, another format) reaches the SDK unchanged.

// envelopeOnly holds the actions declared with AnswerEnvelopeOnly.
var envelopeOnly sync.Map

// AnswerEnvelopeOnly declares that no caller reads anything of a
// successful answer to these actions but its success (the typed response
// the caller decodes into has no field beyond the SDK's envelope), so the
// SDK is handed the envelope alone. A caller that needs the answer's
// fields must not declare its action.
func AnswerEnvelopeOnly(actions ...string) {
	for _, a := range actions {
		envelopeOnly.Store(a, true)
	}
}

// RoundTrip implements http.RoundTripper: it sends req through the
// wrapped transport and reduces the answer to its envelope for the
// actions declared with AnswerEnvelopeOnly.
func (t sdkTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 || !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return resp, err
	}
	if _, ok := envelopeOnly.Load(req.URL.Query().Get("Action")); !ok {
		return resp, nil
	}
	id, err := requestIDOf(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the answer to %s: %w", req.URL.Query().Get("Action"), err)
	}
	body, err := json.Marshal(map[string]string{"RequestId": id})
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("Content-Encoding")
	return resp, nil
}

// maxRequestID bounds the RequestId kept (the cloud's are 36 characters).
const maxRequestID = 256

// requestIDOf reads a JSON object to its end and returns its top-level
// RequestId string ("" when it has none), keeping nothing else: a scan of
// the bytes as they arrive, so an answer of any size costs a read buffer.
// The id is returned as written between its quotes (the cloud's ids need
// no escapes; an escaped one stays escaped, still valid in JSON).
func requestIDOf(r io.Reader) (string, error) {
	br := bufio.NewReaderSize(r, 4096)
	var (
		depth         int
		inString, esc bool
		expectKey     bool   // at depth 1, the next string is a key
		isIDKey       bool   // the last key at depth 1 was RequestId
		capturing     int    // 0: nothing; 1: a key at depth 1; 2: the RequestId value
		buf           []byte // the key or value being captured
		id            string
		seen          bool // the top-level object began
	)
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if inString {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inString = false
				switch capturing {
				case 1:
					isIDKey = string(buf) == "RequestId"
					expectKey = false
				case 2:
					id = string(buf)
				}
				capturing = 0
				continue
			}
			if capturing != 0 && len(buf) < maxRequestID {
				buf = append(buf, c)
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			buf = buf[:0]
			switch {
			case depth == 1 && expectKey:
				capturing = 1
			case depth == 1 && isIDKey:
				capturing = 2
			}
		case '{', '[':
			if depth == 0 {
				if c != '{' {
					return "", errors.New("the answer is not a JSON object")
				}
				seen, expectKey = true, true
			}
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return "", errors.New("the answer is not valid JSON")
			}
		case ',':
			if depth == 1 {
				expectKey, isIDKey = true, false
			}
		}
	}
	if !seen || depth != 0 || inString {
		return "", errors.New("the answer ends before its JSON object does")
	}
	return id, nil
}
