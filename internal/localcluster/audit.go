package localcluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// auditPolicy records the writes to Nodes (and their status) and Events,
// and nothing else: what initializing a Node costs each client, without
// the read traffic that would dwarf it. Events are recorded with their
// body, whose reason tells apart two recorders that share a client name.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["events"]
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: ""
    resources: ["nodes", "nodes/status", "events"]
- level: None
`

// auditArgs writes the audit policy into dir and returns the API
// server's flags for it, and the log's path.
func auditArgs(dir string) ([]string, string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, "", fmt.Errorf("write audit policy: %w", err)
	}
	log := filepath.Join(dir, "audit.log")
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + log, "--audit-log-format=json", "--audit-log-maxsize=0"}, log, nil
}

// WriteCount is the number of writes one client made with one verb on
// one resource.
type WriteCount struct {
	// Program is the user agent's first segment, the client's binary
	// ("cloud-controller-manager", "kwok").
	Program string
	// Client is the last segment of the request's user agent: the name a
	// controller-manager's client builder appends ("cloud-node-controller").
	Client string
	// Verb is the audit verb: create, update, patch or delete.
	Verb string
	// Resource is the resource, with "/subresource" when there is one,
	// and for an Event created, " (reason)".
	Resource string
	// Count is how many such requests completed.
	Count int
}

// AuditedWrites counts the audited writes (Options.AuditWrites) whose
// response completed in [from, to), by client, verb and resource.
func (c *Cluster) AuditedWrites(from, to time.Time) ([]WriteCount, error) {
	if c.auditLog == "" {
		return nil, fmt.Errorf("the cluster was started without AuditWrites")
	}
	f, err := os.Open(c.auditLog)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	defer f.Close()
	type key struct{ program, client, verb, resource string }
	counts := map[key]int{}
	var order []key
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Stage     string    `json:"stage"`
			Verb      string    `json:"verb"`
			UserAgent string    `json:"userAgent"`
			StageTime time.Time `json:"stageTimestamp"`
			ObjectRef struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
			RequestObject struct {
				Reason string `json:"reason"`
			} `json:"requestObject"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log line: %w", err)
		}
		if ev.Stage != "ResponseComplete" || ev.StageTime.Before(from) || !ev.StageTime.Before(to) {
			continue
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		if r := ev.RequestObject.Reason; r != "" {
			res += " (" + r + ")"
		}
		program, _, _ := strings.Cut(ev.UserAgent, "/")
		k := key{program, clientName(ev.UserAgent), ev.Verb, res}
		if _, ok := counts[k]; !ok {
			order = append(order, k)
		}
		counts[k]++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	out := make([]WriteCount, 0, len(order))
	for _, k := range order {
		out = append(out, WriteCount{Program: k.program, Client: k.client, Verb: k.verb, Resource: k.resource, Count: counts[k]})
	}
	return out, nil
}

// clientName is the last "/" segment of a user agent, which client
// builders append to the default agent ("prog/version (os/arch)
// kubernetes/commit") as the controller's name; "" when there is none.
func clientName(agent string) string {
	if strings.Count(agent, "/") < 4 {
		return ""
	}
	return agent[strings.LastIndex(agent, "/")+1:]
}
