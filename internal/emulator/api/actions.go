package api

// Actions builds a product's action table from its handlers, marking an
// action read-only by its name (IsReadOnlyAction). mutating, when not nil,
// wraps every state-changing handler, e.g. for ClientToken replay.
func Actions(handlers map[string]Handler, mutating func(Handler) Handler) map[string]Action {
	actions := make(map[string]Action, len(handlers))
	for name, h := range handlers {
		ro := IsReadOnlyAction(name)
		if !ro && mutating != nil {
			h = mutating(h)
		}
		actions[name] = Action{Handler: h, ReadOnly: ro}
	}
	return actions
}
