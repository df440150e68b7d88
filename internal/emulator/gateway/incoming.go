package gateway

import (
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// readIncoming merges the URL query and a form-encoded body, keeping the
// decoded pairs for signature checks.
func readIncoming(r *http.Request) (*incoming, error) {
	in := &incoming{params: api.Params{}}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return in, api.Errorf(http.StatusBadRequest, "InvalidParameter", "The request query could not be parsed: %v", err)
	}
	add := func(vals url.Values) {
		for k, vs := range vals {
			for _, v := range vs {
				in.pairs = append(in.pairs, pair{k, v})
			}
			if len(vs) > 0 {
				in.params[k] = vs[0]
			}
		}
	}
	add(q)
	if r.Body != nil {
		data, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			return in, api.Errorf(http.StatusBadRequest, "InvalidParameter", "The request body could not be read: %v", err)
		}
		in.body = data
		ct := strings.ToLower(r.Header.Get("Content-Type"))
		if len(data) > 0 && (ct == "" || strings.HasPrefix(ct, "application/x-www-form-urlencoded")) {
			form, err := url.ParseQuery(string(data))
			if err != nil {
				return in, api.Errorf(http.StatusBadRequest, "InvalidParameter", "The request body could not be parsed: %v", err)
			}
			add(form)
		}
	}
	return in, nil
}
