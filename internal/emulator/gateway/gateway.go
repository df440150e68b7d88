// Package gateway is the emulator's HTTP front door: it parses RPC-style
// OpenAPI calls, authenticates them, applies throttling and fault rules,
// routes them to a product by Version and Action under the store's lock, and
// writes responses and errors in the shapes the SDKs parse.
package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Config configures a Gateway.
type Config struct {
	// Region is the default region for requests without RegionId.
	Region string
	// Store is the state shared by every product.
	Store *store.Store
	// Products are the emulated products; their Versions must be distinct.
	Products []api.Product
}

// Gateway is an http.Handler serving every product.
type Gateway struct {
	cfg       Config
	byVersion map[string]*api.Product
}

// New returns a gateway over the given products.
func New(cfg Config) (*Gateway, error) {
	g := &Gateway{cfg: cfg, byVersion: map[string]*api.Product{}}
	for i := range cfg.Products {
		p := &cfg.Products[i]
		if _, dup := g.byVersion[p.Version]; dup {
			return nil, fmt.Errorf("two products answer version %s", p.Version)
		}
		g.byVersion[p.Version] = p
	}
	return g, nil
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := strings.ToUpper(uuid.NewString())
	host := "emulator"
	params, err := mergedParams(r)
	if err != nil {
		writeError(w, reqID, host, api.Errorf(http.StatusBadRequest, "InvalidParameter", "The request body could not be parsed: %v", err))
		return
	}
	action, version := params.String("Action"), params.String("Version")
	if strings.HasPrefix(r.Header.Get("Authorization"), "ACS3-") || action == "" {
		if a := r.Header.Get("x-acs-action"); a != "" {
			action = a
		}
		if v := r.Header.Get("x-acs-version"); v != "" {
			version = v
		}
	}
	if action == "" {
		writeError(w, reqID, host, api.MissingParameter("Action"))
		return
	}
	if version == "" {
		writeError(w, reqID, host, api.MissingParameter("Version"))
		return
	}
	prod, ok := g.byVersion[version]
	if !ok {
		writeError(w, reqID, host, api.Errorf(http.StatusNotFound, "InvalidApi.NotFound", "Specified api is not found, please check your url and method."))
		return
	}
	host = prod.Host
	act, ok := prod.Actions[action]
	if !ok {
		writeError(w, reqID, host, api.Errorf(http.StatusNotFound, "InvalidApi.NotFound", "Specified api is not found, please check your url and method."))
		return
	}
	region := params.String("RegionId")
	if region == "" {
		region = g.cfg.Region
	}
	req := &api.Request{
		Product:     prod.Name,
		Action:      action,
		Version:     version,
		RegionID:    region,
		AccountID:   "1234567890123456",
		AccessKeyID: params.String("AccessKeyId"),
		RequestID:   reqID,
		Now:         time.Now(),
		Params:      params,
	}
	body, err := g.run(act, req)
	if err != nil {
		writeError(w, reqID, host, err)
		return
	}
	if body == nil {
		body = map[string]any{}
	}
	body["RequestId"] = reqID
	writeJSON(w, http.StatusOK, body)
}

func (g *Gateway) run(act api.Action, req *api.Request) (map[string]any, error) {
	st := g.cfg.Store
	if act.ReadOnly {
		st.RLock()
		defer st.RUnlock()
		return act.Handler(req)
	}
	st.Lock()
	defer st.Unlock()
	body, err := act.Handler(req)
	if err != nil {
		return nil, err
	}
	if err := st.SaveLocked(); err != nil {
		return nil, api.Errorf(http.StatusInternalServerError, "InternalError", "The request processing has failed due to some unknown error: %v", err)
	}
	return body, nil
}

// mergedParams merges the URL query and a form-encoded body.
func mergedParams(r *http.Request) (api.Params, error) {
	p := api.Params{}
	for k, v := range r.URL.Query() {
		if len(v) > 0 {
			p[k] = v[0]
		}
	}
	if r.Body != nil && r.Method != http.MethodGet {
		data, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			return nil, err
		}
		if len(data) > 0 {
			form, err := url.ParseQuery(string(data))
			if err != nil {
				return nil, err
			}
			for k, v := range form {
				if len(v) > 0 {
					p[k] = v[0]
				}
			}
		}
	}
	return p, nil
}

func writeError(w http.ResponseWriter, reqID, host string, err error) {
	e, ok := err.(*api.Error)
	if !ok {
		e = api.Errorf(http.StatusInternalServerError, "InternalError", "The request processing has failed due to some unknown error, exception or failure.")
	}
	for k, v := range e.Headers {
		w.Header().Set(k, v)
	}
	writeJSON(w, e.Status, map[string]any{
		"RequestId": reqID,
		"HostId":    host,
		"Code":      e.Code,
		"Message":   e.Message,
		"Recommend": "https://api.aliyun.com/troubleshoot?q=" + url.QueryEscape(e.Code),
	})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	data, err := json.Marshal(body)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"Code":"InternalError","Message":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
