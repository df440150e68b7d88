package emulator

import (
	"encoding/json"
	"net/http"
)

// ListeningPath is the control API path of the health model's listening
// ports: PUT {"instanceId":"i-…","ports":[80,30080]} makes only those ports
// listen on the instance (a load balancer's check of another port fails);
// "ports": null restores the default, every port listening.
const ListeningPath = "/_emulator/listening"

// listeningDoc is the body of PUT ListeningPath.
type listeningDoc struct {
	InstanceID string `json:"instanceId"`
	Ports      []int  `json:"ports"`
}

// SetListeningPorts tells the health model which ports listen on an
// instance (nil: every port); false when the instance does not exist.
func (e *Emulator) SetListeningPorts(instanceID string, ports []int) bool {
	e.Store.Lock()
	defer e.Store.Unlock()
	if !e.ECS.SetListeningPorts(instanceID, ports) {
		return false
	}
	_ = e.Store.SaveLocked()
	return true
}

func (e *Emulator) serveListening(w http.ResponseWriter, r *http.Request) {
	var doc listeningDoc
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	answer := func(status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	if err := dec.Decode(&doc); err != nil || doc.InstanceID == "" {
		answer(http.StatusBadRequest, map[string]string{"error": `want {"instanceId":"i-…","ports":[…] or null}`})
		return
	}
	for _, p := range doc.Ports {
		if p < 1 || p > 65535 {
			answer(http.StatusBadRequest, map[string]string{"error": "ports must be between 1 and 65535"})
			return
		}
	}
	if !e.SetListeningPorts(doc.InstanceID, doc.Ports) {
		answer(http.StatusNotFound, map[string]string{"error": "no instance " + doc.InstanceID})
		return
	}
	answer(http.StatusOK, doc)
}
