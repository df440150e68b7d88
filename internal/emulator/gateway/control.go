package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// ControlPrefix is where the control API lives on the emulator's listener.
const ControlPrefix = "/_emulator/"

// SettingsDoc is the JSON form of the store's delays and quotas used by
// GET/PUT /_emulator/settings.
type SettingsDoc struct {
	// Timing is the timing mode: cloud (the default) or zero, applied
	// before Delays; read back, it names the mode the delays match
	// (custom when they match none).
	Timing string `json:"timing,omitempty"`
	// Delays are named asynchronous delays, as duration strings.
	Delays map[string]Duration `json:"delays,omitempty"`
	// Quotas are named limits.
	Quotas map[string]int `json:"quotas,omitempty"`
}

// ParseSeed reads a seed in JSON or YAML (JSON is YAML); unknown fields are
// errors so that a typo does not silently seed nothing.
func ParseSeed(data []byte) (*api.Seed, error) {
	var s api.Seed
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("parse seed: %w", err)
	}
	return &s, nil
}

// ruleRoutes serves one kind of injected rule (faults, throttles) at path:
// GET lists, POST adds, DELETE clears, DELETE path/{id} removes one.
func ruleRoutes[R any](mux *http.ServeMux, path, listKey, kind string,
	list func() []R, add func(R) (R, error), clearAll func(), remove func(string) bool) {
	mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
		ctlJSON(w, http.StatusOK, map[string]any{listKey: list()})
	})
	mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		var rule R
		if !ctlDecode(w, r, &rule) {
			return
		}
		added, err := add(rule)
		if err != nil {
			ctlError(w, http.StatusBadRequest, err)
			return
		}
		ctlJSON(w, http.StatusCreated, added)
	})
	mux.HandleFunc("DELETE "+path, func(w http.ResponseWriter, r *http.Request) {
		clearAll()
		ctlJSON(w, http.StatusOK, map[string]any{"status": "cleared"})
	})
	mux.HandleFunc("DELETE "+path+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !remove(r.PathValue("id")) {
			ctlError(w, http.StatusNotFound, fmt.Errorf("no %s rule %q", kind, r.PathValue("id")))
			return
		}
		ctlJSON(w, http.StatusOK, map[string]any{"status": "deleted"})
	})
}

func (g *Gateway) controlMux() *http.ServeMux {
	mux := http.NewServeMux()
	p := "/_emulator"
	mux.HandleFunc("GET "+p+"/health", g.ctlHealth)
	mux.HandleFunc("POST "+p+"/reset", g.ctlReset)
	mux.HandleFunc("POST "+p+"/seed", g.ctlSeed)
	mux.HandleFunc("GET "+p+"/state", g.ctlGetState)
	mux.HandleFunc("PUT "+p+"/state", g.ctlPutState)
	mux.HandleFunc("POST "+p+"/state", g.ctlPutState)
	mux.HandleFunc("GET "+p+"/requests", g.ctlGetRequests)
	mux.HandleFunc("DELETE "+p+"/requests", func(w http.ResponseWriter, r *http.Request) {
		g.ResetRequests()
		ctlJSON(w, http.StatusOK, map[string]any{"status": "cleared"})
	})
	mux.HandleFunc("GET "+p+"/counters", func(w http.ResponseWriter, r *http.Request) {
		ctlJSON(w, http.StatusOK, map[string]any{"counters": g.Counters()})
	})
	mux.HandleFunc("DELETE "+p+"/counters", func(w http.ResponseWriter, r *http.Request) {
		g.ResetCounters()
		ctlJSON(w, http.StatusOK, map[string]any{"status": "cleared"})
	})
	ruleRoutes(mux, p+"/faults", "faults", "fault", g.Faults, g.AddFault, g.ClearFaults, g.RemoveFault)
	ruleRoutes(mux, p+"/throttles", "throttles", "throttle", g.Throttles, g.AddThrottle, g.ClearThrottles, g.RemoveThrottle)
	mux.HandleFunc("GET "+p+"/settings", func(w http.ResponseWriter, r *http.Request) {
		ctlJSON(w, http.StatusOK, g.Settings())
	})
	mux.HandleFunc("PUT "+p+"/settings", func(w http.ResponseWriter, r *http.Request) {
		var doc SettingsDoc
		if !ctlDecode(w, r, &doc) {
			return
		}
		if err := g.UpdateSettings(doc); err != nil {
			ctlError(w, http.StatusBadRequest, err)
			return
		}
		ctlJSON(w, http.StatusOK, g.Settings())
	})
	mux.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		ctlError(w, http.StatusNotFound, fmt.Errorf("no control endpoint %s %s", r.Method, r.URL.Path))
	})
	return mux
}

func (g *Gateway) ctlHealth(w http.ResponseWriter, r *http.Request) {
	products := map[string]string{}
	for _, p := range g.cfg.Products {
		products[p.Name] = p.Version
	}
	ctlJSON(w, http.StatusOK, map[string]any{
		"status":   "ok",
		"region":   g.cfg.Region,
		"products": products,
		"auth":     !g.cfg.DisableAuth,
		"uptime":   Duration(time.Since(g.started).Round(time.Millisecond)),
	})
}

func (g *Gateway) ctlReset(w http.ResponseWriter, r *http.Request) {
	if err := g.Reset(); err != nil {
		ctlError(w, http.StatusInternalServerError, err)
		return
	}
	ctlJSON(w, http.StatusOK, map[string]any{"status": "reset"})
}

func (g *Gateway) ctlSeed(w http.ResponseWriter, r *http.Request) {
	if g.cfg.Seed == nil {
		ctlError(w, http.StatusNotImplemented, fmt.Errorf("this gateway has no seeder"))
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		ctlError(w, http.StatusBadRequest, err)
		return
	}
	s, err := ParseSeed(data)
	if err != nil {
		ctlError(w, http.StatusBadRequest, err)
		return
	}
	ids, err := g.cfg.Seed(s)
	if err != nil {
		ctlError(w, http.StatusBadRequest, fmt.Errorf("seed: %w", err))
		return
	}
	ctlJSON(w, http.StatusOK, map[string]any{"ids": ids})
}

func (g *Gateway) ctlGetState(w http.ResponseWriter, r *http.Request) {
	dump, err := g.cfg.Store.Dump()
	if err != nil {
		ctlError(w, http.StatusInternalServerError, err)
		return
	}
	ctlJSON(w, http.StatusOK, dump)
}

func (g *Gateway) ctlPutState(w http.ResponseWriter, r *http.Request) {
	var dump map[string]json.RawMessage
	if !ctlDecode(w, r, &dump) {
		return
	}
	if err := g.cfg.Store.Restore(dump); err != nil {
		ctlError(w, http.StatusBadRequest, err)
		return
	}
	ctlJSON(w, http.StatusOK, map[string]any{"status": "restored", "parts": g.cfg.Store.PartNames()})
}

func (g *Gateway) ctlGetRequests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := RequestFilter{Product: q.Get("product"), Action: q.Get("action"), AccessKeyID: q.Get("accessKeyId")}
	if s := q.Get("since"); s != "" {
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			f.AfterSeq = n
		} else if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			f.Since = t
		} else {
			ctlError(w, http.StatusBadRequest, fmt.Errorf("since must be a sequence number or an RFC 3339 time, got %q", s))
			return
		}
	}
	ctlJSON(w, http.StatusOK, map[string]any{"requests": g.Requests(f)})
}

func ctlDecode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		ctlError(w, http.StatusBadRequest, fmt.Errorf("decode body: %w", err))
		return false
	}
	return true
}

func ctlJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"error":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

func ctlError(w http.ResponseWriter, status int, err error) {
	ctlJSON(w, status, map[string]string{"error": err.Error()})
}
