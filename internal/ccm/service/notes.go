package service

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Events of a sync: repeated Warnings recorded once per change or resync
// interval, and the outcome of a sync that did not finish.

// note is when a repeated Warning was last recorded, and for which
// version of the Service.
type note struct {
	hash string
	at   time.Time
}

func noteKey(key, reason string) string { return key + "|" + reason }

// warnOnce records a Warning that would otherwise repeat on every sync:
// again when the Service changed, or once per resync interval.
func (c *Controller) warnOnce(svc *corev1.Service, key, reason, message string) {
	k := noteKey(key, reason)
	h := naming.Hash(svc) + "|" + message
	now := time.Now()
	if v, ok := c.notes.Load(k); ok {
		n := v.(note)
		if n.hash == h && now.Sub(n.at) < c.opts.ResyncPeriod/2 {
			return
		}
	}
	c.recorder.Event(svc, corev1.EventTypeWarning, reason, message)
	c.notes.Store(k, note{hash: h, at: now})
}

// clearNote forgets the Warning of reason, so that it is recorded at once
// when its cause comes back.
func (c *Controller) clearNote(key, reason string) { c.notes.Delete(noteKey(key, reason)) }

// noBackends warns that the load balancer has nothing to forward to, on
// full and backend-only passes alike, at the warnOnce rate; once backends
// are back the note is dropped, so the next time they all go is reported
// at once.
func (c *Controller) noBackends(svc *corev1.Service, backends map[int32][]Target) {
	key := cache.MetaObjectToName(svc).String()
	if !empty(backends) {
		c.notes.Delete(noteKey(key, EventUnavailable))
		return
	}
	c.warnOnce(svc, key, EventUnavailable, "There are no available backends for the load balancer")
}

// failed reports a sync that did not finish. A cloud still configuring (a
// load balancer Provisioning, a busy listener) is progress, not a failure:
// a Normal event, so alerts on Warning events stay quiet for it.
func (c *Controller) failed(svc *corev1.Service, err error) {
	if waiting(err) {
		c.recorder.Eventf(svc, corev1.EventTypeNormal, EventEnsuring, "Waiting for the cloud: %s", cloud.StableMessage(err))
		return
	}
	c.recorder.Eventf(svc, corev1.EventTypeWarning, EventSyncFailed, "Error syncing load balancer: %s", cloud.StableMessage(err))
}

// waiting reports whether err only says the cloud is still working on it.
func waiting(err error) bool {
	var retry *RetryError
	return errors.As(err, &retry) || cloud.ClassOf(err) == cloud.ClassConflict
}

func (c *Controller) warn(svc *corev1.Service, res *Result) {
	if res == nil {
		return
	}
	for _, w := range res.Warnings {
		c.recorder.Event(svc, corev1.EventTypeWarning, w.Reason, w.Message)
	}
}

func empty(b map[int32][]Target) bool {
	for _, t := range b {
		if len(t) > 0 {
			return false
		}
	}
	return true
}
