package api

import "net/http"

// TokenRecord is what a create call made with a ClientToken produced: the
// ids it created and the fingerprint of its parameters. Products keep these
// in their persisted state, so the JSON names are part of the state format.
type TokenRecord struct {
	// IDs are the resource ids the call created, returned again on a replay.
	IDs []string `json:"ids"`
	// Fingerprint is Fingerprint(params) of the call; a replay with another
	// fingerprint is IdempotentParameterMismatch.
	Fingerprint string `json:"fingerprint"`
}

// TokenRecords holds a product's ClientToken records keyed by action and
// token, so the same token may be used once per action.
type TokenRecords map[string]*TokenRecord

// Replay returns the ids an earlier call of req's action with the same
// ClientToken created (ok true), or IdempotentParameterMismatch when the
// token was used with other parameters. A token whose resources no longer
// all exist (alive reports false) is spent, and the call runs again.
func (r TokenRecords) Replay(req *Request, alive func(id string) bool) (ids []string, ok bool, err error) {
	tok := req.Params.String("ClientToken")
	if tok == "" {
		return nil, false, nil
	}
	rec, found := r[req.Action+"/"+tok]
	if !found {
		return nil, false, nil
	}
	if rec.Fingerprint != Fingerprint(req.Params) {
		return nil, false, Errorf(http.StatusBadRequest, "IdempotentParameterMismatch", "The request uses the same client token as a previous, but non-identical request.")
	}
	for _, id := range rec.IDs {
		if !alive(id) {
			return nil, false, nil
		}
	}
	return rec.IDs, true, nil
}

// ReplayID is Replay for an action that creates one resource and answers
// its id under key: done when out (or err) is the call's final answer.
func (r TokenRecords) ReplayID(req *Request, alive func(id string) bool, key string) (out map[string]any, done bool, err error) {
	ids, ok, err := r.Replay(req, alive)
	if err != nil || !ok {
		return nil, err != nil, err
	}
	return map[string]any{key: ids[0]}, true, nil
}

// Remember records the ids a successful call created under its ClientToken
// (nothing when the call sent none).
func (r TokenRecords) Remember(req *Request, ids ...string) {
	if tok := req.Params.String("ClientToken"); tok != "" {
		r[req.Action+"/"+tok] = &TokenRecord{IDs: ids, Fingerprint: Fingerprint(req.Params)}
	}
}
