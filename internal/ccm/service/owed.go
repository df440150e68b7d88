package service

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Owed is the set of Services (by UID) whose next sync owes a cleanup that
// nothing in the cloud points to any more, e.g. a source-range list or
// group already detached whose delete failed on a retryable error: their
// next sync looks it up although no listener or load balancer uses it. It
// lives in memory only; a Service's deletion looks such resources up by
// their tags whatever this set says.
type Owed struct{ m sync.Map }

// Mark records that uid's next sync owes the cleanup.
func (o *Owed) Mark(uid types.UID) { o.m.Store(uid, struct{}{}) }

// Clear records that uid owes nothing.
func (o *Owed) Clear(uid types.UID) { o.m.Delete(uid) }

// Has reports whether uid owes the cleanup.
func (o *Owed) Has(uid types.UID) bool {
	_, ok := o.m.Load(uid)
	return ok
}
