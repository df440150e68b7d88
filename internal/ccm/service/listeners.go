package service

// ListenerChanges is what must happen to a load balancer's listeners, in
// order: Delete, Create, Update, Start. A provider's listener plan embeds
// it with its own listener types: C as read from the cloud, L as desired,
// U an update of one.
type ListenerChanges[C, L, U any] struct {
	// Delete are our listeners that are no longer wanted or must be
	// recreated (another protocol or port span).
	Delete []C
	// Create are missing listeners.
	Create []L
	// Update are listeners whose settings or group differ.
	Update []U
	// Start are stopped listeners that must run.
	Start []C
	// Conflicts describe desired ports held by listeners we must not touch.
	Conflicts []string
}

// Empty reports whether the plan changes nothing; conflicts are reported,
// not changed.
func (p ListenerChanges[C, L, U]) Empty() bool {
	return len(p.Delete)+len(p.Create)+len(p.Update)+len(p.Start) == 0
}

// DeleteUnmatched plans the deletion of each current listener that no
// desired one matched (matched holds indexes into current) and that ours
// proves ours: a listener we cannot prove ours is never deleted.
func (p *ListenerChanges[C, L, U]) DeleteUnmatched(current []C, matched map[int]bool, ours func(C) bool) {
	for i, c := range current {
		if !matched[i] && ours(c) {
			p.Delete = append(p.Delete, c)
		}
	}
}
