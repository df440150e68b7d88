package service

// Event reasons both providers report, named once so that CLB and NLB
// Services read the same in `kubectl get events`.
const (
	// EventImmutable reports an annotation that asks for an attribute the
	// existing load balancer cannot change.
	EventImmutable = "ImmutableAttributeChanged"
	// EventListenerConflict reports a port held by a listener we must not touch.
	EventListenerConflict = "ListenerPortConflict"
)
