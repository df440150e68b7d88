package api

// Ledger is the bookkeeping a product's state carries besides its
// resources: the ClientToken records and the creation counter that orders
// listings. Embedded without a JSON tag, its fields serialise as the
// state's own "tokens" and "seq".
type Ledger struct {
	// Tokens remember ClientToken results per action for idempotency.
	Tokens TokenRecords `json:"tokens"`
	// Seq orders resources by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// ResetLedger forgets every ClientToken and restarts the creation counter,
// as on a fresh account.
func (l *Ledger) ResetLedger() {
	l.Tokens = TokenRecords{}
	l.Seq = 0
}

// Next returns the next creation sequence number.
func (l *Ledger) Next() int64 {
	l.Seq++
	return l.Seq
}
