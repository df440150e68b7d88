package service

// HasPodTargets reports whether any target is a pod address (a pod on a
// virtual Node, or an eni backend): those have no kube-proxy, so a
// listener or group serving them cannot be checked on the Service's
// healthCheckNodePort.
func HasPodTargets(ts []Target) bool {
	for _, t := range ts {
		if t.IP != "" {
			return true
		}
	}
	return false
}
