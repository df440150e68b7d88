package api

import (
	"slices"
	"sort"
	"strings"
)

// envelopeParams are the signature and protocol parameters that differ
// between retries of the same logical call, so ClientToken checks ignore them.
var envelopeParams = map[string]bool{
	"signature": true, "signaturenonce": true, "timestamp": true, "signaturemethod": true,
	"signatureversion": true, "signaturetype": true, "accesskeyid": true, "securitytoken": true,
	"format": true, "version": true, "action": true,
}

// Fingerprint identifies a call's business parameters, so that a reused
// ClientToken with different parameters can be refused as the cloud does.
// ignore names further parameters (lower case) a product leaves out, e.g.
// regionid; products persist fingerprints, so each keeps its own list.
func Fingerprint(p Params, ignore ...string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		lk := strings.ToLower(k)
		if !envelopeParams[lk] && !slices.Contains(ignore, lk) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(p[k])
		b.WriteByte('&')
	}
	return b.String()
}
